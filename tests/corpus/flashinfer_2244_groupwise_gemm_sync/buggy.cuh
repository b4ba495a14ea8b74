// Reproduction of flashinfer-ai/flashinfer#2244 (commit f22c66155, "Remove cudaStreamSynchronize from
// gemm_groupwise_sm120.cuh for CUDA graph compatibility"), written for graphcheck's corpus: the SM120
// groupwise-scaled GEMM launcher ran the CUTLASS kernel on the caller's stream and then synchronized
// that stream, which is illegal while it is capturing.
#pragma once
#include <cuda_runtime.h>

namespace flashinfer {
namespace gemm {

template <typename Gemm>
cudaError_t GroupwiseScaledGemmSM120(void* workspace, size_t workspace_bytes, typename Gemm::Arguments args,
                                     cudaStream_t stream) {
  Gemm gemm;
  if (Gemm::get_workspace_size(args) > workspace_bytes) {
    return cudaErrorInsufficientDriver;
  }
  if (gemm.initialize(args, workspace) != cutlass::Status::kSuccess) {
    return cudaErrorNotSupported;
  }
  if (gemm.run(stream) != cutlass::Status::kSuccess) {
    return cudaErrorUnknown;
  }
  // wait for the kernel before returning
  cudaError_t err = cudaStreamSynchronize(stream);  // graphcheck: expect[GC110]
  if (err != cudaSuccess) {
    return err;
  }
  return cudaSuccess;
}

}  // namespace gemm
}  // namespace flashinfer
