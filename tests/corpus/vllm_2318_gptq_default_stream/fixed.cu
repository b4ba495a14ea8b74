// Fixed side of vllm-project/vllm#2318: the GEMM and reconstruction launches take the current stream.
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>

__global__ void gemm_half_q_half_kernel(const half* a, const uint32_t* b_q, half* c, int m, int n, int k) {}
__global__ void reconstruct_kernel(const uint32_t* b_q, half* out, int k, int n) {}
__global__ void shuffle_kernel(uint32_t* q_weight, int height, int width) {}

void gemm_half_q_half_cuda_part(const half* a, const uint32_t* b_q, half* c, int m, int n, int k) {
  dim3 blockDim(128, 1, 1);
  dim3 gridDim((n + 127) / 128, (m + 7) / 8, 1);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  gemm_half_q_half_kernel<<<gridDim, blockDim, 0, stream>>>(a, b_q, c, m, n, k);
}

void reconstruct_gptq(const uint32_t* b_q, half* out, int k, int n) {
  dim3 blockDim(32, 1, 1);
  dim3 gridDim((n + 31) / 32, (k + 31) / 32, 1);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  reconstruct_kernel<<<gridDim, blockDim, 0, stream>>>(b_q, out, k, n);
}

void shuffle_exllama_weight(uint32_t* q_weight, int height, int width) {
  dim3 blockDim(256, 1, 1);
  dim3 gridDim(width / 256, 1, 1);
  shuffle_kernel<<<gridDim, blockDim>>>(q_weight, height, width);
}
