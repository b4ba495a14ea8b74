"""Hazard: a per-call value passed as a `tl.constexpr` (GC403).

`n_active` is the number of live rows this step, a host int that changes every
call. As a constexpr it triggers a recompile per value, and a captured graph
keeps the value of the capturing call forever.
"""

import torch
import triton
import triton.language as tl

import graphcheck
from graphcheck.inputs import rand_floats

ROWS, COLS = 6, 16


@triton.jit
def zero_inactive_const(x_ptr, out_ptr, N_ACTIVE: tl.constexpr, COLS: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, COLS)
    x = tl.load(x_ptr + row * COLS + cols)
    tl.store(out_ptr + row * COLS + cols, tl.where(row < N_ACTIVE, x, 0.0))


@triton.jit
def zero_inactive_dev(x_ptr, out_ptr, n_active_ptr, COLS: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, COLS)
    x = tl.load(x_ptr + row * COLS + cols)
    tl.store(out_ptr + row * COLS + cols, tl.where(row < tl.load(n_active_ptr), x, 0.0))


def mask_rows_bad(x, n_active, out):
    zero_inactive_const[(x.shape[0],)](x, out, N_ACTIVE=n_active, COLS=x.shape[1])  # graphcheck: expect[GC403@trace+capture]
    return out


def mask_rows_fixed(x, n_active, out):
    zero_inactive_dev[(x.shape[0],)](x, out, n_active, COLS=x.shape[1])
    return out


def make_inputs_bad(seed, device):
    return {"x": rand_floats(seed, (ROWS, COLS), device=device), "n_active": 1 + seed % ROWS,
            "out": torch.empty(ROWS, COLS, device=device)}


def make_inputs_fixed(seed, device):
    # The live-row count lives in a device tensor the engine updates in place before each replay.
    return {"x": rand_floats(seed, (ROWS, COLS), device=device),
            "n_active": torch.full((1,), 1 + seed % ROWS, dtype=torch.int32, device=device),
            "out": torch.empty(ROWS, COLS, device=device)}


GRAPHCHECK_CASES = [
    graphcheck.Case("constexpr_per_call_bad", mask_rows_bad, make_inputs_bad, outputs=["out"]),
    graphcheck.Case("constexpr_per_call_fixed", mask_rows_fixed, make_inputs_fixed, outputs=["out"]),
]
