// Fixed side of usyd-fsalab/fp6_llm#16: the entry point launches on PyTorch's current stream, the one a
// CUDA graph is captured on.
#include <ATen/cuda/CUDAContext.h>
#include <cuda_fp16.h>
#include <torch/extension.h>

template <int EXPONENT, int MANTISSA>
__global__ void fpx_gemm_kernel(const uint4* weight, const half* scales, const half* in, half* out, size_t m,
                                size_t n, size_t k, float* workspace, int split_k) {}

template <int EXPONENT, int MANTISSA>
cudaError_t fpx_linear_kernel(cudaStream_t stream, const uint4* weight, const half* scales, const half* in,
                              half* out, size_t m, size_t n, size_t k, float* workspace, int split_k) {
  dim3 grid(n / 8, m / 256, split_k);
  dim3 block(128, 1, 1);
  fpx_gemm_kernel<EXPONENT, MANTISSA><<<grid, block, 0, stream>>>(weight, scales, in, out, m, n, k,
                                                                  workspace, split_k);
  return cudaGetLastError();
}

torch::Tensor fp_eXmY_linear_forward_cuda(int64_t exponent, int64_t mantissa, torch::Tensor in_feats,
                                          torch::Tensor weights, torch::Tensor scales, int64_t split_k) {
  const size_t k = in_feats.size(1), m = weights.size(0), n = in_feats.size(0);
  auto out_feats = torch::empty({static_cast<int64_t>(n), static_cast<int64_t>(m)}, in_feats.options());
  auto workspace = torch::empty({split_k, static_cast<int64_t>(n), static_cast<int64_t>(m)},
                                in_feats.options().dtype(torch::kFloat));
  auto weight = reinterpret_cast<const uint4*>(weights.data_ptr<int>());
  auto scale = reinterpret_cast<const half*>(scales.data_ptr<at::Half>());
  auto in = reinterpret_cast<const half*>(in_feats.data_ptr<at::Half>());
  auto out = reinterpret_cast<half*>(out_feats.data_ptr<at::Half>());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  if (exponent == 3 && mantissa == 2) {
    fpx_linear_kernel<3, 2>(stream,
                            weight, scale, in, out, m, n, k, workspace.data_ptr<float>(), split_k);
  } else if (exponent == 2 && mantissa == 2) {
    fpx_linear_kernel<2, 2>(stream,
                            weight, scale, in, out, m, n, k, workspace.data_ptr<float>(), split_k);
  } else {
    TORCH_CHECK(false, "unsupported FP6 format");
  }
  return out_feats;
}
