"""``fp8_mqa_logits``: the DeepSeek-V3.2 indexer's prefill scores over a contiguous FP8 key set.

``logits[i, p] = k_scale[p] · Σ_h weights[i, h] · relu(Σ_d q[i, h, d] · k[p, d])``,
valid iff ``ks[i] <= p < ke[i]``, in DeepGEMM's argument order. One program
holds a tile of queries (all heads) and walks the key tiles that overlap the
tile's union of ranges, read on the device; the grid comes from shapes only.
Also here: a vectorised, capture-safe PyTorch reference and the declared cases.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
import triton
import triton.language as tl

from graphcheck.kernels import _fp8, _launch
from graphcheck.kernels import ops as _ops  # registers torch.ops.graphcheck.*  # noqa: F401
from graphcheck.kernels._fp8 import decode_e4m3, score_tile

__all__ = ["fp8_mqa_logits", "fp8_mqa_logits_reference", "graphcheck_cases", "MqaConfig"]


@dataclasses.dataclass(frozen=True)
class MqaConfig:
    """Launch configuration; chosen from shapes and the device only (never autotuned)."""

    block_m: int  # queries per program (all heads of each), a power of two
    block_n: int  # keys per tile
    splits: int = 1  # programs per query tile along the key axis
    num_warps: int = 8
    num_stages: int = 3
    reduce_dot: bool = False
    fill_n: int = 1024


def default_config(m: int, n: int, heads: int, device: torch.device) -> MqaConfig:
    # Measured on an H200 (H = 64, D = 128): 4 queries x 64 heads per program and 64-key
    # tiles with 4 warps beat 2 x 128-key tiles with 8 warps by ~25%.
    block_m = max(1, 256 // heads)
    block_n = 64
    m_tiles = _launch.cdiv(m, block_m)
    target = 2 * _fp8.sm_count(device)
    splits = max(1, min(_launch.cdiv(target, m_tiles), _launch.cdiv(n, 2 * block_n)))
    return MqaConfig(block_m=block_m, block_n=block_n, splits=splits, num_warps=4, num_stages=3)


@triton.jit
def _mqa_logits_kernel(
    q_ptr, k_ptr, ks_ptr, w_ptr, start_ptr, end_ptr, out_ptr,
    stride_qm, stride_qh, stride_qd,
    stride_kn, stride_kd,
    stride_s,
    stride_wm, stride_wh,
    stride_start, stride_end,
    stride_om,
    m_total, n_total,
    H: tl.constexpr, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, GN: tl.constexpr,
    CLEAN: tl.constexpr, FP8_DOT: tl.constexpr, REDUCE_DOT: tl.constexpr,
    FILL_N: tl.constexpr, NUM_STAGES: tl.constexpr,
):
    m0 = tl.program_id(0) * BM
    split = tl.program_id(1)
    splits = tl.num_programs(1)

    cols = tl.arange(0, GN)
    mi = m0 + cols
    col_ok = (cols < BM) & (mi < m_total)
    lo = tl.load(start_ptr + mi * stride_start, mask=col_ok, other=0)
    hi = tl.load(end_ptr + mi * stride_end, mask=col_ok, other=0)
    lo = tl.minimum(tl.maximum(lo, 0), n_total)
    hi = tl.minimum(tl.maximum(hi, lo), n_total)  # empty where ke <= ks
    # Key tiles overlapping the union of this tile's ranges (empty rows do not widen it).
    has = col_ok & (hi > lo)
    t_lo = tl.min(tl.where(has, lo, n_total), axis=0) // BN
    t_hi = tl.cdiv(tl.max(tl.where(has, hi, 0), axis=0), BN)
    t_lo = tl.minimum(t_lo, t_hi)

    c = tl.arange(0, BM * H)
    qm = m0 + c // H
    qh = c % H
    q_ok = qm < m_total
    d = tl.arange(0, D)
    q_off = qm[None, :].to(tl.int64) * stride_qm + qh[None, :] * stride_qh + d[:, None] * stride_qd
    w = tl.load(w_ptr + qm.to(tl.int64) * stride_wm + qh * stride_wh, mask=q_ok, other=0.0)
    if FP8_DOT:
        q_t = tl.load(q_ptr.to(tl.pointer_type(tl.float8e4nv)) + q_off, mask=q_ok[None, :], other=0.0)
    else:
        q_t = decode_e4m3(tl.load(q_ptr + q_off, mask=q_ok[None, :], other=0))

    t = tl.arange(0, BN)
    out_rows = out_ptr + mi.to(tl.int64) * stride_om
    for tile in tl.range(t_lo + split, t_hi, splits, num_stages=NUM_STAGES):
        n = tile * BN + t
        n_ok = n < n_total
        k_off = n[:, None].to(tl.int64) * stride_kn + d[None, :] * stride_kd
        if FP8_DOT:
            k = tl.load(k_ptr.to(tl.pointer_type(tl.float8e4nv)) + k_off, mask=n_ok[:, None], other=0.0)
        else:
            k = decode_e4m3(tl.load(k_ptr + k_off, mask=n_ok[:, None], other=0))
        scale = tl.load(ks_ptr + n * stride_s, mask=n_ok, other=0.0)
        r = score_tile(k, q_t, w, BM, H, GN, REDUCE_DOT) * scale[:, None]
        valid = (n[:, None] >= lo[None, :]) & (n[:, None] < hi[None, :]) & col_ok[None, :]
        ptrs = out_rows[None, :] + n[:, None]
        if CLEAN:
            tl.store(ptrs, tl.where(valid, r, float("-inf")), mask=n_ok[:, None] & col_ok[None, :])
        else:
            tl.store(ptrs, r, mask=valid)

    if CLEAN:
        # -inf before the first and after the last computed tile.
        f = tl.arange(0, FILL_N)
        rr = tl.arange(0, BM)
        fill_rows = out_ptr + (m0 + rr).to(tl.int64) * stride_om
        fill_ok = (m0 + rr) < m_total
        neg = tl.full([BM, FILL_N], float("-inf"), tl.float32)
        for f0 in tl.range(split * FILL_N, t_lo * BN, splits * FILL_N):
            pos = f0 + f
            tl.store(fill_rows[:, None] + pos[None, :], neg, mask=fill_ok[:, None] & (pos[None, :] < t_lo * BN))
        for f0 in tl.range(t_hi * BN + split * FILL_N, n_total, splits * FILL_N):
            pos = f0 + f
            tl.store(fill_rows[:, None] + pos[None, :], neg, mask=fill_ok[:, None] & (pos[None, :] < n_total))


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _check_inputs(q, kv, weights, ks, ke) -> tuple[torch.Tensor, torch.Tensor, int, int, int, int]:
    if not isinstance(kv, (tuple, list)) or len(kv) != 2:
        raise TypeError("kv must be a pair (k [N, D] float8_e4m3fn, k_scale [N] float32)")
    k, k_scale = kv
    for name, t in (("q", q), ("k", k), ("k_scale", k_scale), ("weights", weights),
                    ("cu_seqlen_ks", ks), ("cu_seqlen_ke", ke)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if q.dtype != torch.float8_e4m3fn:
        raise TypeError(f"q must be float8_e4m3fn, got {q.dtype}")
    if q.dim() != 3:
        raise ValueError(f"q must be [M, H, D], got shape {list(q.shape)}")
    m, heads, dim = q.shape
    if m < 1:
        raise ValueError("q must have M >= 1")
    if not (_pow2(heads) and 16 <= heads <= 128):
        raise ValueError(f"H must be a power of two in [16, 128], got {heads}")
    if not (_pow2(dim) and 32 <= dim <= 256):
        raise ValueError(f"D must be a power of two in [32, 256], got {dim}")
    if k.dtype != torch.float8_e4m3fn:
        raise TypeError(f"k must be float8_e4m3fn, got {k.dtype}")
    if k.dim() != 2 or k.shape[1] != dim or k.shape[0] < 1:
        raise ValueError(f"k must be [N, {dim}] with N >= 1, got {list(k.shape)}")
    n = k.shape[0]
    if k_scale.dtype != torch.float32:
        raise TypeError(f"k_scale must be float32, got {k_scale.dtype}")
    if tuple(k_scale.shape) == (n, 1):
        k_scale = k_scale.reshape(n)
    if tuple(k_scale.shape) != (n,):
        raise ValueError(f"k_scale must be [N] or [N, 1] with N = {n}, got {list(k_scale.shape)}")
    if weights.dtype != torch.float32:
        raise TypeError(f"weights must be float32, got {weights.dtype}")
    if tuple(weights.shape) != (m, heads):
        raise ValueError(f"weights must be [M, H] = [{m}, {heads}], got {list(weights.shape)}")
    for name, t in (("cu_seqlen_ks", ks), ("cu_seqlen_ke", ke)):
        if t.dtype != torch.int32:
            raise TypeError(f"{name} must be int32, got {t.dtype}")
        if tuple(t.shape) != (m,):
            raise ValueError(f"{name} must be [M] = [{m}], got {list(t.shape)}")
    return k, k_scale, m, n, heads, dim


def fp8_mqa_logits(
    q: torch.Tensor,
    kv: tuple[torch.Tensor, torch.Tensor],
    weights: torch.Tensor,
    cu_seqlen_ks: torch.Tensor,
    cu_seqlen_ke: torch.Tensor,
    clean_logits: bool = True,
    *,
    out: torch.Tensor | None = None,
    config: MqaConfig | None = None,
    fp8_dot: bool | None = None,
) -> torch.Tensor:
    """FP8 MQA logits ``[M, N]`` fp32 for query i over keys ``[ks[i], ke[i])``.

    ``kv`` is ``(k [N, D] float8_e4m3fn, k_scale [N] or [N, 1] float32)``. With
    ``clean_logits`` every invalid position is -inf; without, only valid positions
    are written. ``out`` (keyword) is an optional fp32 ``[M, N]`` buffer with unit
    column stride; ``config`` and ``fp8_dot`` override the shape-based launch
    choices (benchmarks and tests).

    Calls the custom op ``torch.ops.graphcheck.fp8_mqa_logits`` (or
    ``fp8_mqa_logits_out`` when ``out`` is given), which ``torch.compile`` treats
    as one opaque op. Calls with ``config`` or ``fp8_dot``, and calls whose
    arguments the op schema cannot hold, launch the kernel directly.
    """
    if not isinstance(clean_logits, bool):
        raise TypeError(f"clean_logits must be a bool, got {type(clean_logits).__name__}")
    if (config is None and fp8_dot is None and isinstance(kv, (tuple, list)) and len(kv) == 2
            and all(isinstance(t, torch.Tensor) for t in (q, kv[0], kv[1], weights, cu_seqlen_ks, cu_seqlen_ke))
            and _launch.launchable_together(q, kv[0], kv[1], weights, cu_seqlen_ks, cu_seqlen_ke,
                                            out if isinstance(out, torch.Tensor) else None)):
        if out is None:
            return torch.ops.graphcheck.fp8_mqa_logits(q, kv[0], kv[1], weights, cu_seqlen_ks, cu_seqlen_ke,
                                                       clean_logits)
        if isinstance(out, torch.Tensor):
            torch.ops.graphcheck.fp8_mqa_logits_out(q, kv[0], kv[1], weights, cu_seqlen_ks, cu_seqlen_ke, out,
                                                    clean_logits)
            return out
    return _run(q, kv, weights, cu_seqlen_ks, cu_seqlen_ke, clean_logits, out, config, fp8_dot)


def _run(q, kv, weights, cu_seqlen_ks, cu_seqlen_ke, clean_logits: bool, out: torch.Tensor | None,
         config: MqaConfig | None = None, fp8_dot: bool | None = None) -> torch.Tensor:
    """Validate and launch (the custom op's implementation)."""
    k, k_scale, m, n, heads, dim = _check_inputs(q, kv, weights, cu_seqlen_ks, cu_seqlen_ke)
    device = _fp8.check_launchable(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke)
    out = _fp8.logits_buffer(out, m, n, device)
    cfg = config or default_config(m, n, heads, device)
    use_fp8 = _fp8.native_fp8_dot(device) if fp8_dot is None else bool(fp8_dot)
    gn = max(16, cfg.block_m) if cfg.reduce_dot else cfg.block_m
    grid = (_launch.cdiv(m, cfg.block_m), cfg.splits)
    q_arg, k_arg = (q, k) if use_fp8 else (q.view(torch.uint8), k.view(torch.uint8))
    _mqa_logits_kernel[grid](
        q_arg, k_arg, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke, out,
        q.stride(0), q.stride(1), q.stride(2),
        k.stride(0), k.stride(1),
        k_scale.stride(0),
        weights.stride(0), weights.stride(1),
        cu_seqlen_ks.stride(0), cu_seqlen_ke.stride(0),
        out.stride(0),
        m, n,
        H=heads, D=dim, BM=cfg.block_m, BN=cfg.block_n, GN=gn,
        CLEAN=clean_logits, FP8_DOT=use_fp8, REDUCE_DOT=cfg.reduce_dot,
        FILL_N=cfg.fill_n, NUM_STAGES=cfg.num_stages,
        num_warps=cfg.num_warps,
    )
    return out


# ----------------------------------------------------------------------------- reference


def fp8_mqa_logits_reference(
    q: torch.Tensor,
    kv: tuple[torch.Tensor, torch.Tensor],
    weights: torch.Tensor,
    cu_seqlen_ks: torch.Tensor,
    cu_seqlen_ke: torch.Tensor,
    clean_logits: bool = True,
    compute_dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Pure PyTorch, vectorised and capture-safe; invalid positions are always -inf."""
    k, k_scale = kv
    n = k.shape[0]
    scores = torch.einsum("mhd,nd->mhn", q.to(compute_dtype), k.to(compute_dtype)).relu_()
    logits = torch.einsum("mhn,mh->mn", scores, weights.to(compute_dtype)) * k_scale.reshape(1, n).to(compute_dtype)
    pos = torch.arange(n, device=q.device)
    valid = (pos[None, :] >= cu_seqlen_ks.long()[:, None]) & (pos[None, :] < cu_seqlen_ke.long()[:, None])
    return logits.masked_fill(~valid, float("-inf"))


# ----------------------------------------------------------------------------- inputs and cases


def make_inputs(
    m: int, n: int, heads: int, dim: int, *, seed: int = 0, device: Any = "cpu", causal: bool = True,
    start_frac: float = 0.5,
) -> dict[str, Any]:
    """Random inputs: FP8 q [M, H, D], per-token quantised keys, weights and key ranges.

    ``causal``: query i sees keys ``[ks[i], n - m + i + 1)`` with ks uniform in
    ``[0, start_frac·ke)`` (the prefill pattern; ``start_frac=0`` gives ks = 0);
    otherwise random ranges, some empty.
    """
    device = torch.device(device)
    gen = torch.Generator(device=device).manual_seed(seed)
    keys = torch.randn(n, dim, generator=gen, device=device)
    keys *= 1 + torch.rand(n, 1, generator=gen, device=device)
    k8, k_scale = _fp8.quantize_fp8_per_token(keys)
    q = (torch.randn(m, heads, dim, generator=gen, device=device) * 2).to(torch.float8_e4m3fn)
    weights = torch.randn(m, heads, generator=gen, device=device) / heads ** 0.5
    if causal:
        ke = (torch.arange(m, device=device) + max(n - m, 0) + 1).clamp(max=n)
        ks = (torch.rand(m, generator=gen, device=device) * ke.float() * start_frac).long()
    else:
        a = torch.randint(0, n + 1, (m,), generator=gen, device=device)
        b = torch.randint(0, n + 1, (m,), generator=gen, device=device)
        ks, ke = torch.minimum(a, b), torch.maximum(a, b)
    return {
        "q": q,
        "kv": (k8, k_scale),
        "weights": weights,
        "cu_seqlen_ks": ks.to(torch.int32),
        "cu_seqlen_ke": ke.to(torch.int32),
    }


def graphcheck_cases() -> list:
    """Declared cases for ``graphcheck audit graphcheck.kernels`` (tiny shapes for the interpreter)."""
    from graphcheck.case import Case

    def case(name: str, m: int, n: int, causal: bool) -> Case:
        def make(seed: int, device: Any) -> dict[str, Any]:
            return make_inputs(m, n, 16, 64, seed=seed, device=device, causal=causal)

        return Case(name=name, fn=fp8_mqa_logits, make_inputs=make, atol=1e-3, rtol=1e-3,
                    description=f"FP8 MQA logits, M={m}, N={n}, {'causal' if causal else 'random'} key ranges")

    return [case("mqa_logits/causal", 12, 40, True), case("mqa_logits/ranges", 9, 33, False)]
