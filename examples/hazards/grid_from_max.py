"""Hazard: a grid computed from a tensor maximum (GC101 for the read, GC401 for the baked grid)."""

import torch
import triton
import triton.language as tl

import graphcheck
from graphcheck.inputs import rand_floats, rand_lengths

BLOCK = 16
MAX_LEN = 48


@triton.jit
def row_prefix_copy(x_ptr, lens_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    n = tl.load(lens_ptr + row)
    mask = offs < stride
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride + offs, tl.where(offs < n, x, 0.0), mask=mask)


def copy_bad(x, lens, out):
    max_len = lens.max().item()  # graphcheck: expect[GC101]
    grid = (x.shape[0], triton.cdiv(max_len, BLOCK))
    out.zero_()
    row_prefix_copy[grid](x, lens, out, x.shape[1], BLOCK=BLOCK)  # graphcheck: expect[GC401@static+trace]
    return out


def copy_fixed(x, lens, out):
    # Size the grid from the shape (the largest possible length); programs past a row's length store zeros.
    grid = (x.shape[0], triton.cdiv(x.shape[1], BLOCK))
    row_prefix_copy[grid](x, lens, out, x.shape[1], BLOCK=BLOCK)
    return out


def make_inputs(seed, device):
    return {
        "x": rand_floats(seed, (3, MAX_LEN), device=device),
        "lens": rand_lengths(seed, 3, 1, MAX_LEN, device=device),
        "out": torch.empty(3, MAX_LEN, device=device),
    }


GRAPHCHECK_CASES = [
    graphcheck.Case("grid_from_max_bad", copy_bad, make_inputs, outputs=["out"]),
    graphcheck.Case("grid_from_max_fixed", copy_fixed, make_inputs, outputs=["out"]),
]
