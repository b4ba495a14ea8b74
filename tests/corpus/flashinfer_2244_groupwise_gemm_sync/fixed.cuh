// Fixed side of flashinfer-ai/flashinfer#2244: no synchronize; the caller orders work on the stream.
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
  return cudaSuccess;
}

}  // namespace gemm
}  // namespace flashinfer
