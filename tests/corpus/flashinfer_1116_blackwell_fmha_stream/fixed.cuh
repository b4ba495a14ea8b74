// Fixed side of flashinfer-ai/flashinfer#1116: the caller's current stream is threaded through to
// `op.run(stream)`.
#pragma once
#include <cuda_runtime.h>

namespace flashinfer {

template <typename Kernel>
struct FwdRunner {
  using Operation = cutlass::fmha::device::FMHA<Kernel>;

  cudaError_t run(void* workspace, typename Operation::Arguments arguments, cudaStream_t stream) {
    Operation op;
    cutlass::Status status = op.can_implement(arguments);
    if (status != cutlass::Status::kSuccess) {
      return cudaErrorNotSupported;
    }
    status = op.initialize(arguments, workspace);
    if (status != cutlass::Status::kSuccess) {
      return cudaErrorUnknown;
    }
    status = op.run(stream);
    return status == cutlass::Status::kSuccess ? cudaSuccess : cudaErrorLaunchFailure;
  }
};

template <typename Kernel>
cudaError_t run_fmha_fwd(void* workspace, typename FwdRunner<Kernel>::Operation::Arguments arguments,
                         cudaStream_t stream) {
  FwdRunner<Kernel> runner;
  return runner.run(workspace, arguments, stream);
}

}  // namespace flashinfer
