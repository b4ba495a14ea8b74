// Fixed side of vllm-project/vllm#16693: the launcher takes the current stream (under a device guard)
// and the macro launches on it.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/all.h>

template <typename scalar_t, int NUM_THREADS>
__global__ void merge_kernel(scalar_t* out, float* out_lse, const scalar_t* pre, const float* pre_lse,
                             const scalar_t* suf, const float* suf_lse, int tokens, int heads, int dim) {}

#define LAUNCH_MERGE(scalar_t, NUM_THREADS)                                    \
  {                                                                            \
    merge_kernel<scalar_t, NUM_THREADS>                                        \
        <<<grid, block, 0, stream>>>(                                          \
            reinterpret_cast<scalar_t*>(output.data_ptr()), lse_ptr,           \
            reinterpret_cast<scalar_t*>(prefix_output.data_ptr()),             \
            reinterpret_cast<float*>(prefix_lse.data_ptr()),                   \
            reinterpret_cast<scalar_t*>(suffix_output.data_ptr()),             \
            reinterpret_cast<float*>(suffix_lse.data_ptr()), tokens, heads, dim); \
  }

template <typename scalar_t>
void merge_launcher(torch::Tensor& output, std::optional<torch::Tensor> output_lse,
                    const torch::Tensor& prefix_output, const torch::Tensor& prefix_lse,
                    const torch::Tensor& suffix_output, const torch::Tensor& suffix_lse) {
  constexpr uint NUM_THREADS = 128;
  const uint tokens = output.size(0), heads = output.size(1), dim = output.size(2);
  float* lse_ptr = output_lse.has_value() ? output_lse->data_ptr<float>() : nullptr;
  dim3 block(NUM_THREADS);
  dim3 grid((tokens * heads * dim / 8 + NUM_THREADS - 1) / NUM_THREADS);
  const c10::cuda::OptionalCUDAGuard device_guard(prefix_output.device());
  auto stream = at::cuda::getCurrentCUDAStream();
  LAUNCH_MERGE(scalar_t, NUM_THREADS);
}
