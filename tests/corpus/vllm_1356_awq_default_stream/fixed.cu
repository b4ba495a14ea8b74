// Fixed side of vllm-project/vllm#1356: both tile shapes launch on the current stream.
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>

namespace awq {
__global__ void gemm_4bit_m16n128k32(int split_k, const half* in, const int* kernel, const half* scales,
                                     const int* zeros, int m, int ic, int oc, half* out) {}
__global__ void gemm_4bit_m16n64k32(int split_k, const half* in, const int* kernel, const half* scales,
                                    const int* zeros, int m, int ic, int oc, half* out) {}
}  // namespace awq

torch::Tensor awq_gemm(torch::Tensor in_feats, torch::Tensor kernel, torch::Tensor scaling_factors,
                       torch::Tensor zeros, int split_k_iters) {
  int num_in_feats = in_feats.size(0), num_in_channels = in_feats.size(1);
  int num_out_channels = kernel.size(1) * 8;
  auto out_feats = torch::empty({split_k_iters, num_in_feats, num_out_channels}, in_feats.options());
  auto in = reinterpret_cast<half*>(in_feats.data_ptr<at::Half>());
  auto k = reinterpret_cast<int*>(kernel.data_ptr<int>());
  auto s = reinterpret_cast<half*>(scaling_factors.data_ptr<at::Half>());
  auto z = reinterpret_cast<int*>(zeros.data_ptr<int>());
  auto o = reinterpret_cast<half*>(out_feats.data_ptr<at::Half>());
  dim3 threads_per_block(32, 2);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  if (num_out_channels % 128 == 0) {
    dim3 num_blocks((num_in_feats + 15) / 16 * num_out_channels / 128 * split_k_iters);
    awq::gemm_4bit_m16n128k32<<<num_blocks, threads_per_block, 0, stream>>>(
        split_k_iters, in, k, s, z, num_in_feats, num_in_channels, num_out_channels, o);
  } else {
    dim3 num_blocks((num_in_feats + 15) / 16 * num_out_channels / 64 * split_k_iters);
    awq::gemm_4bit_m16n64k32<<<num_blocks, threads_per_block, 0, stream>>>(
        split_k_iters, in, k, s, z, num_in_feats, num_in_channels, num_out_channels, o);
  }
  return out_feats.sum(0);
}
