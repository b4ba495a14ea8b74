"""Hazard: a scalar kernel argument read from a tensor with `int(t[0])` (GC102, baked as GC402)."""

import torch
import triton
import triton.language as tl

import graphcheck
from graphcheck.inputs import rand_floats

BLOCK = 64


@triton.jit
def head_copy_host(x_ptr, out_ptr, n_valid, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.where(offs < n_valid, x, 0.0))


@triton.jit
def head_copy_dev(x_ptr, out_ptr, meta_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.where(offs < tl.load(meta_ptr), x, 0.0))


def head_bad(x, meta, out):
    n = int(meta[0])  # graphcheck: expect[GC102@trace+capture]
    head_copy_host[(1,)](x, out, n, BLOCK=BLOCK)  # graphcheck: expect[GC402@trace]
    return out


def head_fixed(x, meta, out):
    head_copy_dev[(1,)](x, out, meta, BLOCK=BLOCK)
    return out


def make_inputs(seed, device):
    return {"x": rand_floats(seed, BLOCK, device=device),
            "meta": torch.tensor([3 + 7 * (seed % 8)], dtype=torch.int32).to(device),
            "out": torch.empty(BLOCK, device=device)}


GRAPHCHECK_CASES = [
    graphcheck.Case("scalar_from_tensor_bad", head_bad, make_inputs, outputs=["out"]),
    graphcheck.Case("scalar_from_tensor_fixed", head_fixed, make_inputs, outputs=["out"]),
]
