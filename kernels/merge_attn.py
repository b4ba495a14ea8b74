"""merge_attn: combine two partial attention results by their log-sum-exp.

After split-KV or chunked-prefill attention each (token, head) has a prefix part
and a suffix part, each with its natural-log LSE. This module holds the Triton
kernel, its wrapper :func:`merge_attn_states` (vLLM's argument order, a drop-in
for ``vllm._custom_ops.merge_attn_states``; exported as
``graphcheck.kernels.merge_attn_states``), a pure-PyTorch reference
:func:`merge_attn_states_reference`, and the declared graphcheck cases.

Math per token t and head h (p = prefix LSE, s = suffix LSE)::

    +inf is read as -inf (FlashAttention-2 returns +inf for an empty part)
    p = -inf for t >= prefill_tokens_with_context   (no prefix)
    m = max(p, s); a = exp(p - m); b = exp(s - m); Z = a + b
    out = prefix_out * (a / Z) + suffix_out * (b / Z)     (fp32, cast on store)
    out_lse = log(Z) + m
    both parts empty (p = s = -inf): out = 0, out_lse = -inf (never NaN)

The kernel computes it with one exponential per row: one of a and b is 1, the
other e = exp(-|p - s|), so the larger part weighs 1 / (1 + e), the smaller
e / (1 + e), and out_lse = m + log(1 + e). On CUDA, exp, the reciprocal and the
log are the hardware approximations (``ex2``/``rcp``/``lg2.approx.ftz``; e below
2**-126 flushes to 0, which drops a part weighing less than that): the math is
most of a small merge's instructions after the PDL wait, and those instructions
set its time (H200 run merge-s16-1: N = 256 bf16 2.69-2.75 µs against 2.87-3.03
with the exact functions and two exponentials).

A part whose scale is exactly 0 contributes exactly 0, so garbage (NaN, inf) in
an empty part never leaks into the result: small programs (at most 2 KiB of each
input) load both parts without waiting for the LSEs (one memory round trip, not
two) and drop an empty part with a select; large programs do not read it at all.
Grids small enough to be resident all at once (at most ``_PREFETCH_PROGRAMS``
programs) prefetch their inputs into L2 before waiting for the kernel before
them (programmatic dependent launch), so that DRAM round trip overlaps it.

The launch (grid, constexprs, warps) depends on shapes, strides and dtypes
only; ``prefill_tokens_with_context`` and ``output_scale`` are runtime values
(an int kernel argument or a pointer the kernel loads), so one captured CUDA
graph stays correct for any of their values. The wrapper never reads tensor
values on the host and allocates nothing.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from graphcheck.kernels import _launch, _pdl
from graphcheck.kernels import ops as _ops  # registers torch.ops.graphcheck.*  # noqa: F401

__all__ = ["merge_attn_states", "merge_attn_states_reference", "graphcheck_cases"]

_FP8 = torch.float8_e4m3fn
_FP8_MAX = float(torch.finfo(_FP8).max)  # 448.0
_INPUT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_LAYOUTS = ("auto", "hn", "nh")

# LIMIT_MODE values: how the kernel learns prefill_tokens_with_context
_LIMIT_NONE, _LIMIT_INT, _LIMIT_PTR = 0, 1, 2

# from this many ~8 KiB programs on, big programs (four 16-byte accesses per thread per input) win;
# below it, ~2 KiB ones (one access per thread at four warps) do: H200 sweep, 2026-12-01 run 1
_LARGE_PROGRAMS = 16384
_PROGRAM_BYTES = 2048
# grids of at most this many ~2 KiB programs (about 8 per SM: all resident beside the kernel before them)
# prefetch their inputs into L2 before the PDL wait. H200 run merge-s15-2, H = 32, D = 128 bf16 (before the
# one-exponential math): N = 256 2.88 µs against 3.12 without (on other machines in two states, 2.88-2.94
# or 3.02-3.09, runs merge-s15-3 to -5), N = 16-192 10-24% faster; at 1536 and 2048 programs (N = 384, 512)
# 0.5-1.5% slower, at N = 4096 (16384 programs) 7-9% slower
_PREFETCH_PROGRAMS = 1024


_LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)
_LN2: tl.constexpr = tl.constexpr(0.6931471805599453)


@triton.jit
def _approx(x, PTX: tl.constexpr):
    """One approximate fp32 instruction on ``x`` (``PTX`` with $0 the result and $1 the operand): on CUDA the
    kernel takes ``ex2``, ``rcp`` and ``lg2.approx.ftz``, one MUFU instruction each (results below 2**-126 flush
    to zero); the interpreter, which cannot run PTX, takes Triton's own functions instead."""
    return tl.inline_asm_elementwise(PTX, "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)


@triton.jit
def _round_to_e4m3(x):
    """Round fp32 ``x`` (|x| <= 448) to the nearest float8_e4m3fn value, ties to even.

    Done in fp32 so that the final conversion is exact on every backend (the
    Triton interpreter's fp32 -> fp8 rounding does not carry a rounded-up
    mantissa into the exponent). e4m3 keeps 3 mantissa bits; exponents below
    -6 are subnormal with a fixed step of 2**-9.
    """
    bits = x.to(tl.int32, bitcast=True)
    exp = tl.maximum(((bits >> 23) & 0xFF) - 127, -6)
    # 2**(3 - exp) and its inverse, built from exponent bits (exact powers of two)
    up = ((127 + 3 - exp) << 23).to(tl.float32, bitcast=True)
    down = ((127 - 3 + exp) << 23).to(tl.float32, bitcast=True)
    q = tl.abs(x) * up  # q < 16: rounding it to an integer rounds |x| to the e4m3 grid
    q = (q + 12582912.0) - 12582912.0  # 1.5 * 2**23: fp32 addition rounds to an integer, ties to even
    r = q * down
    # the sign bit is put back with integer ops: a float select of -r and r may be folded (no signed zeros)
    # and lose -0.0 on the GPU
    sign = (bits >> 31) << 31  # 0x80000000 for a negative x (-0.0 included), else 0
    return (r.to(tl.int32, bitcast=True) | sign).to(tl.float32, bitcast=True)


@triton.jit
def _row_coords(rows, num_tokens, num_heads, HEAD_MAJOR: tl.constexpr, HEADS: tl.constexpr):
    """(in range, token, head) of row numbers: head-major (consecutive rows = consecutive tokens of one
    head) or token-major; HEADS > 0 is num_heads compiled in (no runtime divide)."""
    if HEAD_MAJOR:
        ok = rows < num_tokens * num_heads
        h = rows // num_tokens
        t = rows - h * num_tokens
    elif HEADS > 0:
        ok = rows < num_tokens * HEADS
        t = rows // HEADS
        h = rows - t * HEADS
    else:
        ok = rows < num_tokens * num_heads
        t = rows // num_heads
        h = rows - t * num_heads
    return ok, t, h


@triton.jit
def _prefetch_l2(addr, want):
    """``prefetch.global.L2`` of the 128-byte line at each ``addr`` where ``want``: a hint, it returns
    nothing and loads nothing into registers or L1."""
    tl.inline_asm_elementwise("{ .reg .pred p; setp.ne.b32 p, $2, 0; @p prefetch.global.L2 [$1]; mov.u32 $0, 0; }",
                              "=r,l,r", [addr.to(tl.int64, bitcast=True), want.to(tl.int32)], dtype=tl.int32,
                              is_pure=False, pack=1)


@triton.jit
def _prefetch_program(pre_ptr, suf_ptr, pre_lse_ptr, suf_lse_ptr, num_tokens, num_heads,
                      pre_st, pre_sh, suf_st, suf_sh, plse_st, plse_sh, slse_st, slse_sh,
                      HEAD_SIZE: tl.constexpr, ROWS: tl.constexpr, HEAD_MAJOR: tl.constexpr, HEADS: tl.constexpr,
                      SLOTS: tl.constexpr):
    """L2 prefetch of one program's inputs: every 128-byte line of its rows of both parts, then each row's two
    LSEs, one address per slot. SLOTS (a power of two) is at least the program's thread count, so that no
    thread repeats another's prefetch (a smaller tensor would be replicated across threads)."""
    ELEM: tl.constexpr = pre_ptr.dtype.element_ty.primitive_bitwidth // 8
    LINES: tl.constexpr = (HEAD_SIZE * ELEM + 127) // 128
    DATA: tl.constexpr = ROWS * LINES
    k = tl.arange(0, SLOTS)
    is_data = k < 2 * DATA
    j = tl.where(is_data, k % DATA, k - 2 * DATA)
    row = tl.where(is_data, j // LINES, j % ROWS)
    line = tl.where(is_data, j % LINES, 0)
    ok, t, h = _row_coords(tl.program_id(0) * ROWS + row, num_tokens, num_heads, HEAD_MAJOR, HEADS)
    t64 = t.to(tl.int64)
    h64 = h.to(tl.int64)
    pre8 = pre_ptr.to(tl.pointer_type(tl.int8)) + (t64 * pre_st + h64 * pre_sh) * ELEM + line * 128
    suf8 = suf_ptr.to(tl.pointer_type(tl.int8)) + (t64 * suf_st + h64 * suf_sh) * ELEM + line * 128
    pl8 = pre_lse_ptr.to(tl.pointer_type(tl.int8)) + (t64 * plse_st + h64 * plse_sh) * 4
    sl8 = suf_lse_ptr.to(tl.pointer_type(tl.int8)) + (t64 * slse_st + h64 * slse_sh) * 4
    addr = tl.where(k < DATA, pre8, tl.where(is_data, suf8, tl.where(k < 2 * DATA + ROWS, pl8, sl8)))
    _prefetch_l2(addr, ok & (k < 2 * DATA + 2 * ROWS))


@triton.jit(do_not_specialize=["limit_value"])
def _merge_attn_states_kernel(
    out_ptr, pre_ptr, suf_ptr,
    pre_lse_ptr, suf_lse_ptr, out_lse_ptr,
    limit_ptr, scale_ptr,
    limit_value, num_tokens, num_heads,
    out_st, out_sh, pre_st, pre_sh, suf_st, suf_sh,
    plse_st, plse_sh, slse_st, slse_sh, olse_st, olse_sh,
    HEAD_SIZE: tl.constexpr, BLOCK_D: tl.constexpr, ROWS: tl.constexpr,
    HEAD_MAJOR: tl.constexpr, HAS_OUT_LSE: tl.constexpr, LIMIT_MODE: tl.constexpr,
    FP8_OUT: tl.constexpr, FP8_MAX: tl.constexpr, LOAD_FIRST: tl.constexpr, PDL: tl.constexpr,
    HEADS: tl.constexpr, PREFETCH: tl.constexpr, PREFETCH_SLOTS: tl.constexpr, FAST_MATH: tl.constexpr,
):
    if PREFETCH and PDL:
        # Before waiting for the previous kernel: pull this program's inputs into L2. L2 is the point of
        # coherence, so a line the previous kernel still writes is updated there, and the loads after the
        # wait read the new values; with PDL this runs while the previous kernel finishes.
        _prefetch_program(pre_ptr, suf_ptr, pre_lse_ptr, suf_lse_ptr, num_tokens, num_heads,
                          pre_st, pre_sh, suf_st, suf_sh, plse_st, plse_sh, slse_st, slse_sh,
                          HEAD_SIZE, ROWS, HEAD_MAJOR, HEADS, PREFETCH_SLOTS)
    # One program merges ROWS (token, head) rows. Rows are numbered head-major
    # (consecutive rows = consecutive tokens of one head, matching the [H, N]
    # LSE layout) or token-major (matching [N, H] and the [N, H, D] outputs).
    # HEADS > 0 is num_heads as a compile-time constant (token-major division without a runtime divide).
    # Every address is computed before the PDL wait, so that after it only loads, math and stores remain.
    row_ok, t, h = _row_coords(tl.program_id(0) * ROWS + tl.arange(0, ROWS), num_tokens, num_heads, HEAD_MAJOR,
                               HEADS)
    t64 = t.to(tl.int64)
    h64 = h.to(tl.int64)
    d = tl.arange(0, BLOCK_D)
    if BLOCK_D == HEAD_SIZE:
        io_mask = row_ok[:, None]
    else:
        io_mask = row_ok[:, None] & (d < HEAD_SIZE)[None, :]
    pre_at = pre_ptr + (t64 * pre_st + h64 * pre_sh)[:, None] + d[None, :]
    suf_at = suf_ptr + (t64 * suf_st + h64 * suf_sh)[:, None] + d[None, :]
    out_at = out_ptr + (t64 * out_st + h64 * out_sh)[:, None] + d[None, :]
    plse_at = pre_lse_ptr + t64 * plse_st + h64 * plse_sh
    slse_at = suf_lse_ptr + t64 * slse_st + h64 * slse_sh
    _pdl.enter(PDL)

    p = tl.load(plse_at, mask=row_ok, other=float("-inf"))
    s = tl.load(slse_at, mask=row_ok, other=float("-inf"))
    if LOAD_FIRST:
        # small programs: the outputs are loaded without waiting for the LSEs (one memory round
        # trip instead of two; a select below drops empty parts)
        x = tl.load(pre_at, mask=io_mask, other=0.0).to(tl.float32)
        y = tl.load(suf_at, mask=io_mask, other=0.0).to(tl.float32)
    p = tl.where(p == float("inf"), float("-inf"), p)
    s = tl.where(s == float("inf"), float("-inf"), s)
    if LIMIT_MODE == 1:
        p = tl.where(t < limit_value, p, float("-inf"))
    elif LIMIT_MODE == 2:
        limit = tl.load(limit_ptr)
        p = tl.where(t < limit, p, float("-inf"))

    # The larger part has weight 1 / (1 + e) and the smaller e / (1 + e), with e = exp(-|p - s|): one
    # exponential per row. Both -inf (an empty row) makes e NaN; the selects give it weights 0.
    m = tl.maximum(p, s)
    empty = m == float("-inf")
    gap2 = tl.abs(p - s) * -_LOG2E
    e = _approx(gap2, "ex2.approx.ftz.f32 $0, $1;") if FAST_MATH else tl.exp2(gap2)
    z = 1.0 + e
    big = tl.where(empty, 0.0, _approx(z, "rcp.approx.ftz.f32 $0, $1;") if FAST_MATH else 1.0 / z)  # z in [1, 2]
    small = tl.where(empty, 0.0, e * big)
    sa = tl.where(p >= s, big, small)
    sb = tl.where(p >= s, small, big)

    if LOAD_FIRST:
        # a part with weight 0 may hold anything (NaN, inf): it is zeroed before the multiply-add
        o = tl.where(sa[:, None] > 0.0, x, 0.0) * sa[:, None] + tl.where(sb[:, None] > 0.0, y, 0.0) * sb[:, None]
    else:
        # large programs: an empty part (scale 0) is not even read
        x = tl.load(pre_at, mask=io_mask & (sa > 0.0)[:, None], other=0.0).to(tl.float32)
        y = tl.load(suf_at, mask=io_mask & (sb > 0.0)[:, None], other=0.0).to(tl.float32)
        o = x * sa[:, None] + y * sb[:, None]
    if FP8_OUT:
        o = o / tl.load(scale_ptr)
        o = _round_to_e4m3(tl.minimum(tl.maximum(o, -FP8_MAX), FP8_MAX))
    tl.store(out_at, o.to(out_ptr.dtype.element_ty), mask=io_mask)

    if HAS_OUT_LSE:
        log2_z = _approx(z, "lg2.approx.ftz.f32 $0, $1;") if FAST_MATH else tl.log2(z)
        lse = tl.where(empty, float("-inf"), m + log2_z * _LN2)
        tl.store(out_lse_ptr + t64 * olse_st + h64 * olse_sh, lse, mask=row_ok)


# --------------------------------------------------------------------------- wrapper

class _Plan:
    """Everything about one launch that follows from shapes, strides and dtypes."""

    __slots__ = ("grid", "args", "constexprs", "num_warps", "limit_mode", "num_tokens", "num_heads", "empty",
                 "launch")

    def __init__(self, grid, strides, constexprs, num_warps, limit_mode, num_tokens, num_heads, empty):
        self.grid = grid
        self.constexprs = constexprs
        # strides then constexprs, positionally, in the kernel's parameter order
        self.args = tuple(strides) + tuple(constexprs[k] for k in _CONSTEXPR_ORDER)
        self.num_warps = num_warps
        self.limit_mode = limit_mode
        self.num_tokens = num_tokens
        self.num_heads = num_heads
        self.empty = empty
        # launch options: programmatic dependent launch where the kernel waits for it
        self.launch = {"num_warps": num_warps, **({"launch_pdl": True} if constexprs["PDL"] else {})}


_PLANS: dict[tuple, _Plan] = {}
_CONSTEXPR_ORDER = ("HEAD_SIZE", "BLOCK_D", "ROWS", "HEAD_MAJOR", "HAS_OUT_LSE", "LIMIT_MODE", "FP8_OUT", "FP8_MAX",
                    "LOAD_FIRST", "PDL", "HEADS", "PREFETCH", "PREFETCH_SLOTS", "FAST_MATH")
# programs with at most this many bytes of each input load both parts before the LSE math
_LOAD_FIRST_BYTES = 2048


def default_config(num_tokens: int, num_heads: int, head_size: int, dtype: torch.dtype,
                   layout: str) -> tuple[int, int, bool]:
    """Shape-only launch heuristic: (rows per program, num_warps, head_major).

    Large problems (at least ``_LARGE_PROGRAMS`` programs of about 8 KiB of each
    input): about 8 KiB per program, four 16-byte accesses per thread per input.
    All others: about 2 KiB per program at four warps, one access per thread per
    input, so that many short programs spread the work and finish together (on an
    H200 at N = 4096, H = 32, D = 128 bf16: 26.7 µs against 28.6 µs for the big
    programs), in token-major order (25.1 µs against 26.2 µs head-major, with
    num_heads compiled in). Grids of at most ``_PREFETCH_PROGRAMS`` programs also
    prefetch their inputs into L2 before waiting for the previous kernel
    (:func:`default_prefetch`). Up to run merge-s15-2 the grids of at most 4096
    one-warp programs of 1 KiB took those (N = 256: 3.04-3.13 µs); the 2 KiB
    programs with the prefetch took 2.87-3.09 µs there and were faster at every N
    from 16 to 512 (H200, H = 32, D = 128 bf16; fp16, fp32, D = 64 and 256, [N, H]
    LSEs and H = 8 at N = 256 too; runs merge-s15-1 to -5); with the
    one-exponential math, 2.69-2.75 µs (run merge-s16-1).
    """
    elem = dtype.itemsize
    vec = max(1, 16 // elem)  # elements per 16-byte access
    block_d = _launch.next_pow2(max(1, head_size))
    target = max(1, min(64, (8192 // elem) // block_d))
    n_rows = num_tokens * num_heads
    if _launch.cdiv(n_rows, target) >= _LARGE_PROGRAMS:
        rows = target
        num_warps = max(1, min(8, (rows * block_d) // (vec * 32 * 4)))
        return rows, num_warps, layout == "hn"
    rows = max(1, min(target, _PROGRAM_BYTES // (block_d * elem)))
    num_warps = max(1, min(4, (rows * block_d) // (vec * 32)))
    # Token-major in both LSE layouts: with num_heads compiled in, its row index needs no runtime
    # divide (H200 run kernels-s3-1, N = 4096 H = 32 D = 128 bf16 [H, N] LSE: 25.1 µs against 26.2 µs
    # head-major).
    return rows, num_warps, False


def default_prefetch(programs: int) -> bool:
    """Whether a PDL launch of ``programs`` programs prefetches its inputs into L2 before the wait.

    Only a grid whose programs are all resident while the previous kernel still
    runs gains: its prefetches overlap that kernel's tail. With more programs the
    extra requests only compete with the loads.
    """
    return programs <= _PREFETCH_PROGRAMS


def _check_output_like(name: str, t: Any) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != 3:
        raise ValueError(f"{name} must be 3-D [num_tokens, num_heads, head_size], got shape {tuple(t.shape)}")
    n, h, d = t.shape
    if d > 1 and t.stride(2) != 1:
        raise ValueError(f"{name}: the innermost (head_size) stride must be 1, got strides {t.stride()}")
    if h > 1 and t.stride(1) < d:
        raise ValueError(f"{name}: head stride {t.stride(1)} is smaller than head_size {d} (rows overlap)")
    head_stride = t.stride(1) if h > 1 else d
    if n > 1 and t.stride(0) < h * head_stride:
        raise ValueError(
            f"{name}: token stride {t.stride(0)} is smaller than num_heads x head stride "
            f"({h} x {t.stride(1)}); expected a [N, H, D] layout with token stride >= H * head stride"
        )


def _check_lse(name: str, t: Any, shape: tuple[int, int], layout: str) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype != torch.float32:
        raise TypeError(f"{name} must be float32, got {t.dtype}")
    if tuple(t.shape) != shape:
        order = "[num_heads, num_tokens]" if layout == "hn" else "[num_tokens, num_heads]"
        raise ValueError(f"{name} must have shape {order} = {list(shape)} (lse_layout={layout!r}), got {list(t.shape)}")


def _resolve_layout(lse_layout: str, lse: Any, num_tokens: int, num_heads: int) -> str:
    if lse_layout not in _LAYOUTS:
        raise ValueError(f"lse_layout must be one of {_LAYOUTS}, got {lse_layout!r}")
    if lse_layout != "auto":
        return lse_layout
    if not isinstance(lse, torch.Tensor):
        raise TypeError(f"prefix_lse must be a torch.Tensor, got {type(lse).__name__}")
    shape = tuple(lse.shape)
    if shape == (num_heads, num_tokens):
        return "hn"  # also the N == H tie: vLLM's layout wins
    if shape == (num_tokens, num_heads):
        return "nh"
    raise ValueError(
        f"prefix_lse has shape {list(shape)}; expected [num_heads, num_tokens] = {[num_heads, num_tokens]} "
        f"or [num_tokens, num_heads] = {[num_tokens, num_heads]}"
    )


def _make_plan(output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse,
               limit, output_scale, lse_layout, config) -> _Plan:
    """Validate everything once per key and derive the launch parameters."""
    for name, t in (("output", output), ("prefix_output", prefix_output), ("suffix_output", suffix_output)):
        _check_output_like(name, t)
    if prefix_output.shape != suffix_output.shape or output.shape != prefix_output.shape:
        raise ValueError(
            "output, prefix_output and suffix_output must have the same shape [N, H, D], got "
            f"{list(output.shape)}, {list(prefix_output.shape)}, {list(suffix_output.shape)}"
        )
    if prefix_output.dtype not in _INPUT_DTYPES:
        raise TypeError(f"prefix_output must be float32, float16 or bfloat16, got {prefix_output.dtype}")
    if suffix_output.dtype != prefix_output.dtype:
        raise TypeError(f"suffix_output dtype {suffix_output.dtype} differs from prefix_output dtype "
                        f"{prefix_output.dtype}")
    fp8 = output.dtype == _FP8
    if output_scale is not None and not fp8:
        raise ValueError(f"output_scale is given but output is {output.dtype}; it applies only to a float8_e4m3fn "
                         "output")
    if fp8 and output_scale is None:
        raise ValueError("output is float8_e4m3fn but no output_scale is given")
    if not fp8 and output.dtype != prefix_output.dtype:
        raise TypeError(f"output dtype {output.dtype} must equal the input dtype {prefix_output.dtype} (or be "
                        "float8_e4m3fn with output_scale)")
    n, h, d = prefix_output.shape
    layout = _resolve_layout(lse_layout, prefix_lse, n, h)
    lse_shape = (h, n) if layout == "hn" else (n, h)
    _check_lse("prefix_lse", prefix_lse, lse_shape, layout)
    _check_lse("suffix_lse", suffix_lse, lse_shape, layout)
    if output_lse is not None:
        _check_lse("output_lse", output_lse, lse_shape, layout)

    limit_mode = _LIMIT_NONE
    if isinstance(limit, torch.Tensor):
        if limit.dtype.is_floating_point or limit.dtype.is_complex or limit.dtype == torch.bool:
            raise TypeError(f"prefill_tokens_with_context tensor must have an integer dtype, got {limit.dtype}")
        if limit.numel() != 1:
            raise ValueError(f"prefill_tokens_with_context tensor must hold one value, got shape {list(limit.shape)}")
        limit_mode = _LIMIT_PTR
    elif limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError("prefill_tokens_with_context must be None, an int or an integer tensor, got "
                            f"{type(limit).__name__}")
        limit_mode = _LIMIT_INT
    if output_scale is not None:
        if not isinstance(output_scale, torch.Tensor):
            raise TypeError(f"output_scale must be a float32 device tensor, got {type(output_scale).__name__}")
        if output_scale.dtype != torch.float32:
            raise TypeError(f"output_scale must be float32, got {output_scale.dtype}")
        if output_scale.numel() != 1:
            raise ValueError(f"output_scale must hold one value, got shape {list(output_scale.shape)}")

    named = [("output", output), ("prefix_output", prefix_output), ("prefix_lse", prefix_lse),
             ("suffix_output", suffix_output), ("suffix_lse", suffix_lse), ("output_lse", output_lse),
             ("prefill_tokens_with_context", limit if limit_mode == _LIMIT_PTR else None),
             ("output_scale", output_scale)]
    device = output.device
    for name, t in named:
        if t is not None and t.device != device:
            raise ValueError(f"{name} is on {t.device} but output is on {device}; all tensors must be on one device")
    if device.type not in ("cuda", "cpu"):
        raise ValueError(f"tensors are on {device}: the Triton kernel needs a CUDA device (or the CPU interpreter)")

    rows, num_warps, head_major, *rest = config or default_config(n, h, d, prefix_output.dtype, layout)
    pdl = bool(rest[0]) if rest else _pdl.use(device)
    pdl = pdl and _pdl.supported(device)
    # token-major launches compile num_heads in (a divide by a constant); head-major ones divide by
    # num_tokens, which changes per batch and stays a runtime argument
    const_heads = bool(rest[1]) if len(rest) > 1 else True
    heads_const = h if (const_heads and not head_major) else 0
    load_first = (bool(rest[2]) if len(rest) > 2 and rest[2] is not None
                  else rows * _launch.next_pow2(max(1, d)) * prefix_output.dtype.itemsize <= _LOAD_FIRST_BYTES)
    grid = (_launch.cdiv(n * h, rows),)
    prefetch = pdl and (bool(rest[3]) if len(rest) > 3 and rest[3] is not None else default_prefetch(grid[0]))
    # one prefetch per 128-byte line of each row of both parts, plus the rows' two LSEs
    wanted = 2 * rows * _launch.cdiv(d * prefix_output.dtype.itemsize, 128) + 2 * rows
    prefetch_slots = max(32 * num_warps, _launch.next_pow2(wanted)) if prefetch else 1
    def lse_strides(t):
        return (t.stride(1), t.stride(0)) if layout == "hn" else (t.stride(0), t.stride(1))
    olse = lse_strides(output_lse) if output_lse is not None else (0, 0)
    strides = (output.stride(0), output.stride(1), prefix_output.stride(0), prefix_output.stride(1),
               suffix_output.stride(0), suffix_output.stride(1),
               *lse_strides(prefix_lse), *lse_strides(suffix_lse), *olse)
    constexprs = dict(HEAD_SIZE=d, BLOCK_D=_launch.next_pow2(max(1, d)), ROWS=rows,
                      HEAD_MAJOR=bool(head_major), HAS_OUT_LSE=output_lse is not None,
                      LIMIT_MODE=limit_mode, FP8_OUT=fp8, FP8_MAX=_FP8_MAX,
                      LOAD_FIRST=load_first,
                      PDL=pdl, HEADS=heads_const, PREFETCH=prefetch, PREFETCH_SLOTS=prefetch_slots,
                      FAST_MATH=device.type == "cuda")
    return _Plan(grid, strides, constexprs, num_warps, limit_mode, n, h, n * h * d == 0)


def _desc(t: Any) -> Any:
    return (t.shape, t.stride(), t.dtype, t.device) if isinstance(t, torch.Tensor) else type(t)


def _merge(output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse=None,
           prefill_tokens_with_context=None, output_scale=None, lse_layout="auto", config=None) -> None:
    """The wrapper's body; ``config`` = (rows, num_warps, head_major[, pdl[, const_heads[, load_first[,
    prefetch]]]]) overrides the heuristic (``const_heads``, default True: num_heads compiled into a token-major
    launch; ``load_first``: both parts loaded before the LSE math, None for the size rule; ``prefetch``: the
    L2 prefetch before the PDL wait, None for :func:`default_prefetch`)."""
    limit = prefill_tokens_with_context
    # The plan key holds everything the checks and the launch depend on (shapes,
    # strides, dtypes, devices, which optional arguments are given) and no
    # tensor values; a hit skips validation. Written out inline: this runs per call.
    try:
        key = (output.shape, output.stride(), output.dtype, output.device,
               prefix_output.shape, prefix_output.stride(), prefix_output.dtype, prefix_output.device,
               suffix_output.shape, suffix_output.stride(), suffix_output.dtype, suffix_output.device,
               prefix_lse.shape, prefix_lse.stride(), prefix_lse.dtype, prefix_lse.device,
               suffix_lse.shape, suffix_lse.stride(), suffix_lse.dtype, suffix_lse.device,
               None if output_lse is None else _desc(output_lse),
               None if limit is None else _desc(limit),
               None if output_scale is None else _desc(output_scale),
               lse_layout, config)
        plan = _PLANS.get(key)
    except (AttributeError, TypeError):  # not tensors (or unhashable): let validation explain
        key, plan = None, None
    if plan is None:
        plan = _make_plan(output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse,
                          limit, output_scale, lse_layout, config)
        if key is not None:
            if len(_PLANS) > 4096:  # shapes are bounded in practice; keep a runaway caller bounded too
                _PLANS.clear()
            _PLANS[key] = plan
    if plan.empty:
        return
    mode = plan.limit_mode
    if mode == _LIMIT_INT:
        if limit < 0:
            raise ValueError(f"prefill_tokens_with_context must be >= 0, got {limit}")
        limit_value = limit if limit < plan.num_tokens else plan.num_tokens  # stays a 32-bit int
        limit_ptr = prefix_lse
    elif mode == _LIMIT_PTR:
        limit_value, limit_ptr = 0, limit
    else:
        limit_value, limit_ptr = 0, prefix_lse
    _merge_attn_states_kernel[plan.grid](
        output, prefix_output, suffix_output,
        prefix_lse, suffix_lse, prefix_lse if output_lse is None else output_lse,
        limit_ptr, prefix_lse if output_scale is None else output_scale,
        limit_value, plan.num_tokens, plan.num_heads, *plan.args,
        **plan.launch,
    )


def merge_attn_states(
    output: torch.Tensor,
    prefix_output: torch.Tensor,
    prefix_lse: torch.Tensor,
    suffix_output: torch.Tensor,
    suffix_lse: torch.Tensor,
    output_lse: torch.Tensor | None = None,
    prefill_tokens_with_context: int | torch.Tensor | None = None,
    output_scale: torch.Tensor | None = None,
    *,
    lse_layout: str = "auto",
) -> None:
    """Merge two partial attention results into ``output`` (and ``output_lse``), in place.

    Args:
        output: [N, H, D], same dtype as the inputs, or float8_e4m3fn when
            ``output_scale`` is given.
        prefix_output, suffix_output: [N, H, D] float32, float16 or bfloat16.
        prefix_lse, suffix_lse: float32 natural-log LSE, [H, N] (vLLM) or
            [N, H] (SGLang, FlashInfer); any strides.
        output_lse: optional float32 LSE output, in the same layout.
        prefill_tokens_with_context: tokens with index >= this value have no
            prefix (output = suffix_output, output_lse = suffix_lse). An int
            (passed to the kernel as a runtime argument) or a one-element
            integer tensor on the device (loaded by the kernel; no host sync).
            None means every token has a prefix.
        output_scale: one-element float32 device tensor; the FP8 output is
            clamp(out / scale, -448, 448).
        lse_layout: ``"hn"`` for [H, N], ``"nh"`` for [N, H], or ``"auto"``
            (default) to decide from the LSE shape. When N == H the shape is
            ambiguous and ``"auto"`` picks vLLM's [H, N]; pass ``"nh"`` there
            if your LSEs are [N, H].

    Head stride may be padded (stride(1) >= D) and the token stride may be any
    value >= H * stride(1); the innermost stride must be 1. Any head size.
    Validation runs once per (shapes, strides, dtypes, devices) and raises
    ``TypeError`` for wrong types or dtypes and ``ValueError`` for wrong shapes,
    layouts, devices or argument combinations.

    Calls the custom op ``torch.ops.graphcheck.merge_attn_states`` (which
    ``torch.compile`` treats as one opaque, in-place op); arguments the op's
    schema cannot hold go straight to the validation, which says what is wrong.
    """
    limit = prefill_tokens_with_context
    tensors = (output, prefix_output, prefix_lse, suffix_output, suffix_lse)
    if (all(isinstance(t, torch.Tensor) for t in tensors)
            and (output_lse is None or isinstance(output_lse, torch.Tensor))
            and (output_scale is None or isinstance(output_scale, torch.Tensor))
            and isinstance(lse_layout, str)
            and _launch.launchable_together(*tensors, output_lse, output_scale,
                                            limit if isinstance(limit, torch.Tensor) else None)):
        if isinstance(limit, torch.Tensor):
            torch.ops.graphcheck.merge_attn_states(output, prefix_output, prefix_lse, suffix_output, suffix_lse,
                                                   output_lse, None, limit, output_scale, lse_layout)
            return
        if limit is None or (isinstance(limit, int) and not isinstance(limit, bool)):
            torch.ops.graphcheck.merge_attn_states(output, prefix_output, prefix_lse, suffix_output, suffix_lse,
                                                   output_lse, limit, None, output_scale, lse_layout)
            return
    _merge(output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse, limit, output_scale, lse_layout)


# --------------------------------------------------------------------------- reference

def merge_attn_states_reference(
    prefix_output: torch.Tensor,
    prefix_lse: torch.Tensor,
    suffix_output: torch.Tensor,
    suffix_lse: torch.Tensor,
    prefill_tokens_with_context: int | torch.Tensor | None = None,
    output_scale: torch.Tensor | None = None,
    *,
    lse_layout: str = "hn",
    compute_dtype: torch.dtype = torch.float32,
    output_dtype: torch.dtype | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pure-PyTorch merge with the same rules as the kernel; returns (output, output_lse).

    Computes in ``compute_dtype`` (float64 for tests). ``output`` has
    ``output_dtype`` (default: the input dtype, or float8_e4m3fn when
    ``output_scale`` is given); ``output_lse`` is float32 in ``lse_layout``.
    Pass ``output_dtype=compute_dtype`` to keep full precision.
    """
    if lse_layout not in ("hn", "nh"):
        raise ValueError(f"lse_layout must be 'hn' or 'nh' for the reference, got {lse_layout!r}")
    n = prefix_output.shape[0]
    p = prefix_lse.to(compute_dtype)
    s = suffix_lse.to(compute_dtype)
    if lse_layout == "hn":
        p, s = p.t(), s.t()
    inf = float("inf")
    p = torch.where(p == inf, -inf, p)
    s = torch.where(s == inf, -inf, s)
    if prefill_tokens_with_context is not None:
        has_prefix = torch.arange(n, device=p.device) < prefill_tokens_with_context
        p = torch.where(has_prefix[:, None], p, -inf)
    m = torch.maximum(p, s)
    empty = m == -inf
    m = torch.where(empty, 0.0, m)
    a = torch.exp(p - m)
    b = torch.exp(s - m)
    z = torch.where(empty, 1.0, a + b)
    sa = (a / z)[..., None]
    sb = (b / z)[..., None]
    x = prefix_output.to(compute_dtype)
    y = suffix_output.to(compute_dtype)
    out = torch.where(sa > 0, x * sa, 0.0) + torch.where(sb > 0, y * sb, 0.0)
    if output_scale is not None:
        out = (out / output_scale.to(compute_dtype).reshape(())).clamp(-_FP8_MAX, _FP8_MAX)
    if output_dtype is None:
        output_dtype = _FP8 if output_scale is not None else prefix_output.dtype
    lse = torch.where(empty, -inf, torch.log(z) + m).to(torch.float32)
    if lse_layout == "hn":
        lse = lse.t().contiguous()
    return out.to(output_dtype), lse


# --------------------------------------------------------------------------- graphcheck cases

def _case_inputs(seed, device, *, n, h, d, dtype, layout, head_pad=0, limit=None, empty_rows=False,
                 inf_frac=0.1, fp8=False, with_lse=True):
    """Fresh random inputs for one case; the seed changes values only, never shapes."""
    g = torch.Generator().manual_seed(seed)
    stride_h = d + head_pad

    def part():
        buf = torch.randn(n, h, stride_h, generator=g).to(dtype)
        return buf[:, :, :d]

    lse_shape = (h, n) if layout == "hn" else (n, h)
    p = torch.randn(lse_shape, generator=g) * 4
    s = torch.randn(lse_shape, generator=g) * 4
    if inf_frac:
        pick = torch.rand(lse_shape, generator=g)
        p = torch.where(pick < inf_frac / 2, float("inf"), p)
        s = torch.where(pick > 1 - inf_frac / 2, float("inf"), s)
    if empty_rows:
        both = torch.rand(lse_shape, generator=g) < 0.2
        p = torch.where(both, float("-inf"), p)
        s = torch.where(both, float("inf"), s)  # +inf and -inf both mean empty
    out_dtype = _FP8 if fp8 else dtype
    inputs = {
        "output": torch.full((n, h, stride_h), float("nan")).to(out_dtype)[:, :, :d],
        "prefix_output": part(),
        "prefix_lse": p,
        "suffix_output": part(),
        "suffix_lse": s,
        "output_lse": torch.full(lse_shape, float("nan")) if with_lse else None,
    }
    if limit == "tensor":
        inputs["prefill_tokens_with_context"] = torch.randint(0, n + 1, (1,), generator=g, dtype=torch.int32)
    elif limit is not None:
        inputs["prefill_tokens_with_context"] = limit
    if fp8:
        inputs["output_scale"] = (torch.rand((), generator=g) * 0.5 + 0.05).reshape(1)
    out = {}
    for k, v in inputs.items():
        out[k] = v.to(device) if isinstance(v, torch.Tensor) else v
    # keep the padded views padded on the device
    for k in ("output", "prefix_output", "suffix_output"):
        if head_pad:
            full = torch.empty((n, h, stride_h), dtype=out[k].dtype, device=device)
            full[:, :, :d] = out[k]
            out[k] = full[:, :, :d]
    return out


def graphcheck_cases() -> list:
    """The declared cases `graphcheck audit` runs for this kernel."""
    from functools import partial

    from graphcheck.case import Case

    tol = {torch.float32: (1e-3, 1e-3), torch.float16: (1e-3, 1e-3), torch.bfloat16: (1e-3, 1e-2)}
    specs: list[tuple[str, dict[str, Any], str]] = [
        ("merge_attn_states[bf16,hn,inf]", dict(n=13, h=4, d=64, dtype=torch.bfloat16, layout="hn"),
         "bf16, [H, N] LSE, ~10% +inf in each LSE"),
        ("merge_attn_states[fp16,nh,pad,limit-tensor]",
         dict(n=9, h=3, d=48, dtype=torch.float16, layout="nh", head_pad=16, limit="tensor"),
         "fp16, [N, H] LSE, padded head stride, prefill_tokens_with_context as a device tensor"),
        ("merge_attn_states[fp32,empty,limit-int]",
         dict(n=7, h=5, d=32, dtype=torch.float32, layout="hn", empty_rows=True, limit=4),
         "fp32 with both-empty (p = -inf, s = +inf) rows and an int prefill_tokens_with_context"),
        ("merge_attn_states[bf16->fp8,no-lse]",
         dict(n=5, h=2, d=96, dtype=torch.bfloat16, layout="hn", fp8=True, with_lse=False),
         "bf16 inputs, float8_e4m3fn output with a device output_scale, no output_lse"),
    ]
    cases = []
    for name, kw, text in specs:
        atol, rtol = (0.1, 0.1) if kw.get("fp8") else tol[kw["dtype"]]
        outputs = ("output", "output_lse") if kw.get("with_lse", True) else ("output",)
        cases.append(Case(name=name, fn=merge_attn_states, make_inputs=partial(_case_inputs, **kw),
                          outputs=outputs, atol=atol, rtol=rtol, description=text))
    return cases
