"""Hazard: a CUDA kernel launched on the legacy default stream (GC201; seen by capture as GC204/GC203).

Capture "succeeds": PyTorch's capture stream is non-blocking, so a launch on the
legacy default stream is not an error. The kernel runs once, eagerly, during
capture and is not in the graph; every replay leaves the output stale. This is
the silent form of a ``<<<grid, block>>>`` launch without a stream in a C++
extension. The kernel is built with cupy, so the cases need a GPU (``cpu_ok=False``).
"""

import numpy as np
import torch

import graphcheck

N = 1000
_SOURCE = r"""
extern "C" __global__ void add_seven(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 7.0f;
}
"""
_kernel = None


def _add_seven():
    global _kernel
    if _kernel is None:
        import cupy

        _kernel = cupy.RawKernel(_SOURCE, "add_seven")
    return _kernel


def _grid_and_args(x, out):
    n = x.numel()
    return ((n + 255) // 256,), (256,), (np.uint64(x.data_ptr()), np.uint64(out.data_ptr()), np.int32(n))


def add_seven_bad(x, out):
    import cupy

    grid, block, args = _grid_and_args(x, out)
    # the legacy default stream: the launch escapes the capture
    _add_seven()(grid, block, args, stream=cupy.cuda.Stream.null)  # graphcheck: expect[GC204@capture]
    return out


def add_seven_fixed(x, out):
    import cupy

    grid, block, args = _grid_and_args(x, out)
    # Launch on PyTorch's current stream: during capture that is the capturing stream.
    _add_seven()(grid, block, args, stream=cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream))
    return out


def make_inputs(seed, device):
    gen = torch.Generator().manual_seed(seed)
    return {"x": torch.randn(N, generator=gen).to(device), "out": torch.empty(N, device=device)}


def graphcheck_cases():
    return [
        graphcheck.Case("legacy_stream_bad", add_seven_bad, make_inputs, outputs=["out"], cpu_ok=False,
                        description="cupy kernel on the legacy default stream"),
        graphcheck.Case("legacy_stream_fixed", add_seven_fixed, make_inputs, outputs=["out"], cpu_ok=False,
                        description="cupy kernel on the current stream"),
    ]
