"""GPU cases for the dynamic layers: escaped launches, and a stale host value only the value search finds."""

import torch
import triton
import triton.language as tl

import graphcheck
from graphcheck.inputs import rand_floats, rand_lengths

N = 1024
ROWS, CAP, BLOCK = 4, 256, 64


@triton.jit
def _twice(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def twice_on_default_stream(x, out):
    with torch.cuda.stream(torch.cuda.default_stream()):
        _twice[(triton.cdiv(N, 256),)](x, out, N, BLOCK=256)  # LAUNCH: default stream
    return out


def twice_on_current_stream(x, out):
    _twice[(triton.cdiv(N, 256),)](x, out, N, BLOCK=256)
    return out


def _xy(seed, device):
    return {"x": rand_floats(seed, N, device=device), "out": torch.zeros(N, device=device)}


@triton.jit
def _copy_prefix(x_ptr, out_ptr, lens_ptr, cap, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    n = tl.load(lens_ptr + row)
    tl.store(out_ptr + row * cap + offs, tl.load(x_ptr + row * cap + offs, mask=offs < n, other=0.0), mask=offs < cap)


_longest = {"value": 1}


def copy_prefix_stale(x, lens, out):
    # the longest length is refreshed on eager calls only: a graph keeps the grid of its capture
    if not torch.cuda.is_current_stream_capturing():
        _longest["value"] = max(int(lens.max()), 1)
    chunks = triton.cdiv(_longest["value"], BLOCK)
    out.zero_()
    _copy_prefix[(ROWS, chunks)](x, out, lens, CAP, BLOCK=BLOCK)  # LAUNCH: stale grid
    return out


def _prefix_inputs(seed, device):
    return {"x": rand_floats(seed, (ROWS, CAP), device=device), "lens": rand_lengths(seed, ROWS, 1, 60, device=device),
            "out": torch.zeros(ROWS, CAP, device=device)}


GRAPHCHECK_CASES = [
    graphcheck.Case("default_stream", twice_on_default_stream, _xy, outputs=["out"]),
    graphcheck.Case("current_stream", twice_on_current_stream, _xy, outputs=["out"]),
    graphcheck.Case("stale_seeds_only", copy_prefix_stale, _prefix_inputs, outputs=["out"]),
    graphcheck.Case("stale_searched", copy_prefix_stale, _prefix_inputs, outputs=["out"], strategies={"lens": "auto"}),
]
