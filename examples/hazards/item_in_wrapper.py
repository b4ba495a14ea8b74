"""Hazard: `.item()` in a kernel wrapper (GC101, and the value baked as a scalar: GC402)."""

import torch
import triton
import triton.language as tl

import graphcheck
from graphcheck.inputs import rand_floats

BLOCK = 32


@triton.jit
def scale_by_scalar(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


@triton.jit
def scale_by_tensor(x_ptr, out_ptr, n, factor_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    factor = tl.load(factor_ptr)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


def scale_bad(x, factor, out):
    f = factor.item()  # graphcheck: expect[GC101]
    n = x.numel()
    scale_by_scalar[(triton.cdiv(n, BLOCK),)](x, out, n, f, BLOCK=BLOCK)  # graphcheck: expect[GC402@static+trace]
    return out


def scale_fixed(x, factor, out):
    n = x.numel()
    scale_by_tensor[(triton.cdiv(n, BLOCK),)](x, out, n, factor, BLOCK=BLOCK)
    return out


def make_inputs(seed, device):
    return {
        "x": rand_floats(seed, 70, device=device),
        "factor": rand_floats(seed, 1, low=0.5, high=2.0, device=device, salt="factor"),
        "out": torch.empty(70, device=device),
    }


GRAPHCHECK_CASES = [
    graphcheck.Case("item_in_wrapper_bad", scale_bad, make_inputs, outputs=["out"]),
    graphcheck.Case("item_in_wrapper_fixed", scale_fixed, make_inputs, outputs=["out"]),
]
