// Reproduction of sgl-project/sglang#8611 (commit 5d15fb8c9, "using current cuda stream in the DCA's
// kernel for bugfix"), written for graphcheck's corpus: the sparse-attention index conversion op
// launched its kernel with `<<<dimGrid, dimBlock>>>`, off the current stream.
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
  convert_indexes_kernel<<<dimGrid, dimBlock>>>(  // graphcheck: expect[GC201]
      seqlens.data_ptr<int>(), vertical.data_ptr<int>(), slash.data_ptr<int>(),
      block_count.data_ptr<int>(), block_offset.data_ptr<int>(), n_rows);
}
