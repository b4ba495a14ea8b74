// Reproduction of flashinfer-ai/flashinfer#1116 (commit ef8c054f7, "hotfix: fix the blackwell fmha
// stream"), written for graphcheck's corpus: the SM100 CUTLASS FMHA runner ran its operator with
// `op.run()`, so the kernel did not follow PyTorch's current stream (CUTLASS's stream parameter defaults
// to nullptr); sglang's integration saw wrong results until it was fixed.
#pragma once
#include <cuda_runtime.h>

namespace flashinfer {

template <typename Kernel>
struct FwdRunner {
  using Operation = cutlass::fmha::device::FMHA<Kernel>;

  cudaError_t run(void* workspace, typename Operation::Arguments arguments) {
    Operation op;
    cutlass::Status status = op.can_implement(arguments);
    if (status != cutlass::Status::kSuccess) {
      return cudaErrorNotSupported;
    }
    status = op.initialize(arguments, workspace);
    if (status != cutlass::Status::kSuccess) {
      return cudaErrorUnknown;
    }
    status = op.run();  // graphcheck: expect[GC201]
    return status == cutlass::Status::kSuccess ? cudaSuccess : cudaErrorLaunchFailure;
  }
};

template <typename Kernel>
cudaError_t run_fmha_fwd(void* workspace, typename FwdRunner<Kernel>::Operation::Arguments arguments) {
  FwdRunner<Kernel> runner;
  return runner.run(workspace, arguments);
}

}  // namespace flashinfer
