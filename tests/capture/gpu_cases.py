"""GPU-only cases for the capture tests: an escaped kernel next to captured work, a fault, a hang."""

import time

import numpy as np
import torch
import triton
import triton.language as tl

import graphcheck

N = 1000
_SOURCE = r"""
extern "C" __global__ void add_seven_mixed(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 7.0f;
}
"""
_kernel = None


def _inputs(seed, device):
    gen = torch.Generator().manual_seed(seed)
    return {"x": torch.randn(N, generator=gen).to(device), "out": torch.empty(N, device=device),
            "tmp": torch.empty(N, device=device)}


def escaped_next_to_captured_work(x, out, tmp):
    """tmp is captured (a torch op); the cupy kernel on the legacy stream escapes the graph."""
    global _kernel
    import cupy

    if _kernel is None:
        _kernel = cupy.RawKernel(_SOURCE, "add_seven_mixed")
    tmp.copy_(x * 2.0)
    args = (np.uint64(x.data_ptr()), np.uint64(out.data_ptr()), np.int32(N))
    _kernel(((N + 255) // 256,), (256,), args, stream=cupy.cuda.Stream.null)
    return out


@triton.jit
def store_far(x_ptr, out_ptr, far, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK).to(tl.int64)
    tl.store(out_ptr + offs + far, tl.load(x_ptr + offs))


def faults(x, out, tmp):
    """Writes about 4 TiB past ``out``: an illegal memory access, a sticky CUDA error."""
    store_far[(1,)](x, out, 1 << 40, BLOCK=128)
    torch.cuda.synchronize()
    return out


def hangs(x, out, tmp):
    time.sleep(3600)
    return out


def graphcheck_cases():
    return [
        graphcheck.Case("escaped_next_to_captured_work", escaped_next_to_captured_work, _inputs,
                        outputs=["out", "tmp"], cpu_ok=False),
        graphcheck.Case("faults", faults, _inputs, outputs=["out"], cpu_ok=False),
        graphcheck.Case("hangs", hangs, _inputs, outputs=["out"], cpu_ok=False),
    ]
