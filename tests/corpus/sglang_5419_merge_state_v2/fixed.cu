// Fixed side of sgl-project/sglang#5419: the launch goes to the current stream.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/extension.h>

template <typename T, uint THREADS>
__global__ void merge_states_kernel(T* o, float* o_lse, const T* a, const float* a_lse, const T* b,
                                    const float* b_lse, uint n, uint h, uint d) {}

#define DISPATCH_MERGE(T, THREADS)                                                    \
  {                                                                                   \
    merge_states_kernel<T, THREADS><<<grid, block, 0, stream>>>(                      \
        reinterpret_cast<T*>(v.data_ptr()), reinterpret_cast<float*>(s.data_ptr()),    \
        reinterpret_cast<T*>(v_a.data_ptr()), reinterpret_cast<float*>(s_a.data_ptr()), \
        reinterpret_cast<T*>(v_b.data_ptr()), reinterpret_cast<float*>(s_b.data_ptr()), \
        n, h, d);                                                                     \
  }

template <typename T>
void merge_state_v2_launcher(at::Tensor v_a, at::Tensor s_a, at::Tensor v_b, at::Tensor s_b,
                             at::Tensor v, at::Tensor s) {
  constexpr uint THREADS = 128;
  const uint n = v.size(0), h = v.size(1), d = v.size(2);
  dim3 block(THREADS);
  dim3 grid((n * h * (d / 8) + THREADS - 1) / THREADS);
  const c10::cuda::OptionalCUDAGuard device_guard(v_a.device());
  auto stream = at::cuda::getCurrentCUDAStream();
  DISPATCH_MERGE(T, THREADS);
}
