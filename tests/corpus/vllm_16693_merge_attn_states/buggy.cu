// Reproduction of vllm-project/vllm#16693 (commit e82ee40de, "fix potential cuda graph broken for
// merge_attn_states kernel"), written for graphcheck's corpus: csrc/attention/merge_attn_states.cu
// launched its kernel from a dispatch macro with `<<<grid, block>>>`, i.e. on the legacy default
// stream, so under CUDA graph capture the launch escapes the graph.
#include <ATen/cuda/CUDAContext.h>
#include <torch/all.h>

template <typename scalar_t, int NUM_THREADS>
__global__ void merge_kernel(scalar_t* out, float* out_lse, const scalar_t* pre, const float* pre_lse,
                             const scalar_t* suf, const float* suf_lse, int tokens, int heads, int dim) {}

#define LAUNCH_MERGE(scalar_t, NUM_THREADS)                                              \
  {                                                                                      \
    merge_kernel<scalar_t, NUM_THREADS><<<grid, block>>>(  /* graphcheck: expect[GC201] */ \
        reinterpret_cast<scalar_t*>(output.data_ptr()), lse_ptr,                         \
        reinterpret_cast<scalar_t*>(prefix_output.data_ptr()),                           \
        reinterpret_cast<float*>(prefix_lse.data_ptr()),                                 \
        reinterpret_cast<scalar_t*>(suffix_output.data_ptr()),                           \
        reinterpret_cast<float*>(suffix_lse.data_ptr()), tokens, heads, dim);            \
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
  LAUNCH_MERGE(scalar_t, NUM_THREADS);
}
