"""Hazard: a Triton grid computed from tensor values without any sync (GC401, seen by replay).

The valid length lives in a CPU tensor, so ``int(n_host[0])`` reads it without
touching the GPU: capture succeeds, and the grid (and the length argument) of the
capturing call are baked into the graph. Replaying with another length runs the
old grid: mutated replay differs from eager. The fix sizes the grid from the
shape and reads the length on the device. Needs CUDA for the capture check; the
kernel itself also runs under the Triton interpreter.
"""

import torch
import triton
import triton.language as tl

import graphcheck

N = 1000
BLOCK = 64


@triton.jit
def double_prefix(x_ptr, out_ptr, n, size, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < size
    x = tl.load(x_ptr + offs, mask=inside, other=0.0)
    tl.store(out_ptr + offs, tl.where(offs < n, 2.0 * x, 0.0), mask=inside)


@triton.jit
def double_prefix_dev(x_ptr, out_ptr, n_ptr, size, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < size
    x = tl.load(x_ptr + offs, mask=inside, other=0.0)
    n = tl.load(n_ptr)
    tl.store(out_ptr + offs, tl.where(offs < n, 2.0 * x, 0.0), mask=inside)


def double_prefix_bad(x, n_host, n_dev, out):
    # On the CPU the trace layer cannot tell this host tensor from a device one and
    # reports the read; on a GPU it does not: the expectation is optional.
    n = int(n_host[0])  # graphcheck: expect[GC102@trace?]
    out.zero_()
    double_prefix[(triton.cdiv(n, BLOCK),)](x, out, n, x.numel(), BLOCK=BLOCK)  # graphcheck: expect[GC401@trace+capture, GC402@trace]
    return out


def double_prefix_fixed(x, n_host, n_dev, out):
    double_prefix_dev[(triton.cdiv(x.numel(), BLOCK),)](x, out, n_dev, x.numel(), BLOCK=BLOCK)
    return out


def make_inputs(seed, device):
    gen = torch.Generator().manual_seed(seed)
    n = 1 + (seed * 397 + 129) % N
    return {
        "x": torch.randn(N, generator=gen).to(device),
        "n_host": torch.tensor([n], dtype=torch.int64),
        "n_dev": torch.tensor([n], dtype=torch.int32).to(device),
        "out": torch.empty(N, device=device),
    }


def graphcheck_cases():
    return [
        graphcheck.Case("grid_from_host_tensor_bad", double_prefix_bad, make_inputs, outputs=["out"]),
        graphcheck.Case("grid_from_host_tensor_fixed", double_prefix_fixed, make_inputs, outputs=["out"]),
    ]
