"""A baked grid that only breaks for lengths beyond what the seeds draw (used by test_value_search.py)."""

import torch
import triton
import triton.language as tl

import graphcheck
from graphcheck.inputs import rand_floats, rand_lengths

ROWS, CAP, BLOCK = 4, 256, 64


@triton.jit
def _copy_prefix(x_ptr, out_ptr, lens_ptr, cap, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    n = tl.load(lens_ptr + row)
    offs = chunk * BLOCK + tl.arange(0, BLOCK)
    vals = tl.load(x_ptr + row * cap + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + row * cap + offs, vals, mask=offs < cap)


def copy_prefix_baked(x, lens, out):
    longest = max(int(lens.max()), 1)  # a host sync, and the grid below is baked from it
    _copy_prefix[(ROWS, triton.cdiv(longest, BLOCK))](x, out, lens, CAP, BLOCK=BLOCK)
    out[:, triton.cdiv(longest, BLOCK) * BLOCK:] = 0
    return out


def copy_prefix_fixed(x, lens, out):
    _copy_prefix[(ROWS, triton.cdiv(CAP, BLOCK))](x, out, lens, CAP, BLOCK=BLOCK)
    return out


def make_inputs(seed, device):
    # every seed draws lengths 1..60: all within one block, so every seed launches the same grid
    return {"x": rand_floats(seed, (ROWS, CAP), device=device), "lens": rand_lengths(seed, ROWS, 1, 60, device=device),
            "out": torch.zeros(ROWS, CAP, device=device)}


GRAPHCHECK_CASES = [
    graphcheck.Case("seeds_only", copy_prefix_baked, make_inputs, outputs=["out"]),
    graphcheck.Case("searched", copy_prefix_baked, make_inputs, outputs=["out"], strategies={"lens": "auto"}),
    graphcheck.Case("searched_fixed", copy_prefix_fixed, make_inputs, outputs=["out"], strategies="auto"),
]
