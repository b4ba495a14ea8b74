// Fixed side of sgl-project/sglang#8611: the kernel runs on the current stream.
#include <ATen/cuda/CUDAContext.h>
#include <torch/all.h>

__global__ void convert_indexes_kernel(const int* seqlens, const int* vertical, const int* slash,
                                       int* block_count, int* block_offset, int n_rows) {}

void convert_vertical_slash_indexes(torch::Tensor& block_count, torch::Tensor& block_offset,
                                    torch::Tensor seqlens, torch::Tensor vertical, torch::Tensor slash) {
  const int n_rows = block_count.size(-1);
  const int threads = 64;
  const dim3 dimBlock(threads);
  const dim3 dimGrid(seqlens.size(0), vertical.size(1), (n_rows + threads - 1) / threads);
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  convert_indexes_kernel<<<dimGrid, dimBlock, 0, stream>>>(
      seqlens.data_ptr<int>(), vertical.data_ptr<int>(), slash.data_ptr<int>(),
      block_count.data_ptr<int>(), block_offset.data_ptr<int>(), n_rows);
}
