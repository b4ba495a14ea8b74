// Reproduction of vllm-project/vllm#4954 (commit 8674f9880, "Fixup for CUTLASS kernels in CUDA
// graphs"), written for graphcheck's corpus: the CUTLASS w8a8 scaled-mm dispatchers (c2x and c3x)
// ran the CUTLASS operator without a stream, so it launched on the default stream (CUTLASS's stream
// parameter defaults to nullptr).
#include <ATen/cuda/CUDAContext.h>
#include <torch/all.h>

template <typename Gemm>
void cutlass_scaled_mm_dq_c2x(torch::Tensor& out, torch::Tensor const& a, torch::Tensor const& b,
                              torch::Tensor const& a_scales, torch::Tensor const& b_scales) {
  typename Gemm::Arguments args{};
  Gemm gemm_op;
  size_t workspace_size = gemm_op.get_workspace_size(args);
  auto workspace = torch::empty(workspace_size, torch::TensorOptions().dtype(torch::kUInt8).device(a.device()));
  CUTLASS_CHECK(gemm_op.can_implement(args));
  cutlass::Status status = gemm_op(args, workspace.data_ptr());  // graphcheck: expect[GC201]
  CUTLASS_CHECK(status);
}

template <typename GemmSm90>
void cutlass_scaled_mm_dq_c3x(torch::Tensor& out, torch::Tensor const& a, torch::Tensor const& b) {
  typename GemmSm90::Arguments args{};
  GemmSm90 gemm_op;
  CUTLASS_CHECK(gemm_op.can_implement(args));
  cutlass::Status status = gemm_op.run(args);  // graphcheck: expect[GC201]
  CUTLASS_CHECK(status);
}
