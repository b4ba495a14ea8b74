"""Hazard: `torch.tensor(list)` built on every call and handed to a kernel (GC301).

On a GPU this is a pageable host-to-device copy, which aborts CUDA graph capture.
"""

import torch
import triton
import triton.language as tl

import graphcheck
from graphcheck.inputs import rand_floats

SEGMENTS = 4
SEG_LEN = 8


@triton.jit
def segment_sums(x_ptr, starts_ptr, out_ptr, SEG_LEN: tl.constexpr):
    seg = tl.program_id(0)
    start = tl.load(starts_ptr + seg)
    x = tl.load(x_ptr + start + tl.arange(0, SEG_LEN))
    tl.store(out_ptr + seg, tl.sum(x, axis=0))


def sums_bad(x, out):
    starts = torch.tensor([i * SEG_LEN for i in range(SEGMENTS)], device=x.device)  # graphcheck: expect[GC301]
    segment_sums[(SEGMENTS,)](x, starts, out, SEG_LEN=SEG_LEN)
    return out


def sums_fixed(x, out):
    starts = torch.arange(0, SEGMENTS * SEG_LEN, SEG_LEN, device=x.device)
    segment_sums[(SEGMENTS,)](x, starts, out, SEG_LEN=SEG_LEN)
    return out


def make_inputs(seed, device):
    return {"x": rand_floats(seed, SEGMENTS * SEG_LEN, device=device), "out": torch.empty(SEGMENTS, device=device)}


GRAPHCHECK_CASES = [
    graphcheck.Case("tensor_from_list_bad", sums_bad, make_inputs, outputs=["out"]),
    graphcheck.Case("tensor_from_list_fixed", sums_fixed, make_inputs, outputs=["out"]),
]
