"""Element-wise check of the FP8 (paged) MQA-logits kernels against float64, and block corruptions.

The kernels compute ``logits[r, p] = scale[p] · Σ_h w[r, h] · relu(Σ_d q[r, h, d] · k[p, d])``
from FP8 ``q`` and ``k``, fp32 ``w`` and ``scale``. Every input value is exact in
float64, so the float64 reference is the exact answer up to 2^-52, and the
kernel's only error is its arithmetic: each FP8 product is exact in fp32; what
rounds is the accumulation of the D products (and the fp32 head sum, the scale
multiply and the final store). With ``B[r, p] = scale[p] · Σ_h |w[r, h]| · Σ_d
|q[r, h, d] · k[p, d]|`` (the same sum over absolute values; relu is
1-Lipschitz) every one of those errors is bounded by a multiple of ``B``:

- fp32 accumulation (the interpreter, the fp16 dot of decoded bytes, the head sum):
  at most ``(D + H + 2) · 2^-24 · B``; ``EPS_CPU = 2^-14`` covers D + H <= 1000.
- Hopper's FP8 tensor-core dot keeps about 14 significant bits while adding each
  32-term chunk into the accumulator: at most ``2^-13`` of the chunk's absolute sum
  per aligned product and per chunk add, so at most ``32 · 2^-13 = 2^-8`` of ``B``;
  the tf32x3 head-reduction dot is within fp32's error. ``EPS_CUDA = 2^-8``.

So ``|out - ref| <= EPS · B`` must hold at every valid position. With random
inputs a typical logit is about ``B / sqrt(H·D)`` (1.3 % of ``B`` at H=64, D=128),
so a block of 64 wrong keys (zeroed, sign-flipped or read from another page)
breaks the bound at most of its positions; ``tests/kernels/test_mqa_check.py``
proves it on the CPU and ``test_mqa_logits_gpu.py`` on the GPU. DeepGEMM's
aggregate ``1 - 2Σxy/Σ(x²+y²) < 1e-3`` is asserted as well.
"""

from __future__ import annotations

import dataclasses

import torch

from graphcheck.kernels import _fp8, fp8_mqa_logits_reference, fp8_paged_mqa_logits_reference

EPS_CPU = 2.0 ** -14
EPS_CUDA = 2.0 ** -8
DIFF_BAR = 1e-3
BLOCK = 64


@dataclasses.dataclass
class Expected:
    """The float64 answer, its error scale ``B`` and the validity mask, all ``[rows, cols]``."""

    ref: torch.Tensor
    bound: torch.Tensor
    valid: torch.Tensor


def _abs_fp8(t: torch.Tensor) -> torch.Tensor:
    return (t.view(torch.uint8) & 0x7F).view(torch.float8_e4m3fn)


def paged_expected(inputs: dict, chunk: int = 8) -> Expected:
    """Float64 reference and error scale of ``fp8_paged_mqa_logits(**inputs)``, ``chunk`` requests at a time."""
    keys, scales = _fp8.unpack_paged_kv_cache(inputs["kv_cache"])
    abs_cache = _fp8.pack_paged_kv_cache(_abs_fp8(keys), scales)
    q, w, lens, bt = inputs["q"], inputs["weights"], inputs["context_lens"], inputs["block_tables"]
    next_n, mml = q.shape[1], inputs["max_model_len"]
    refs, bounds = [], []
    for b0 in range(0, q.shape[0], chunk):
        b1 = min(b0 + chunk, q.shape[0])
        part = {"q": q[b0:b1], "weights": w[b0 * next_n:b1 * next_n], "context_lens": lens[b0:b1],
                    "block_tables": bt[b0:b1], "max_model_len": mml, "compute_dtype": torch.float64}
        refs.append(fp8_paged_mqa_logits_reference(kv_cache=inputs["kv_cache"], **part))
        part.update(q=_abs_fp8(part["q"]), weights=part["weights"].abs())
        bounds.append(fp8_paged_mqa_logits_reference(kv_cache=abs_cache, **part))
    ref = torch.cat(refs)
    valid = torch.isfinite(ref)
    return Expected(ref, torch.where(valid, torch.cat(bounds), 0.0), valid)


def mqa_expected(inputs: dict, chunk: int = 128) -> Expected:
    """Float64 reference and error scale of ``fp8_mqa_logits(**inputs)``, ``chunk`` query rows at a time."""
    k, ks = inputs["kv"]
    q, w, lo, hi = inputs["q"], inputs["weights"], inputs["cu_seqlen_ks"], inputs["cu_seqlen_ke"]
    refs, bounds = [], []
    for m0 in range(0, q.shape[0], chunk):
        rows = slice(m0, m0 + chunk)
        refs.append(fp8_mqa_logits_reference(q[rows], (k, ks), w[rows], lo[rows], hi[rows],
                                             compute_dtype=torch.float64))
        bounds.append(fp8_mqa_logits_reference(_abs_fp8(q[rows]), (_abs_fp8(k), ks), w[rows].abs(), lo[rows],
                                               hi[rows], compute_dtype=torch.float64))
    ref = torch.cat(refs)
    valid = torch.isfinite(ref)
    return Expected(ref, torch.where(valid, torch.cat(bounds), 0.0), valid)


def default_eps(out: torch.Tensor) -> float:
    return EPS_CUDA if out.device.type == "cuda" else EPS_CPU


def aggregate_diff(out: torch.Tensor, ref: torch.Tensor, valid: torch.Tensor) -> float:
    """DeepGEMM's ``1 - 2Σxy/Σ(x²+y²)`` over the valid positions."""
    x = torch.where(valid, out.double(), 0.0)
    y = torch.where(valid, ref, 0.0)
    return float(1 - 2 * (x * y).sum() / (x * x + y * y).sum())


def check(out: torch.Tensor, exp: Expected, *, cleaned: bool = True, eps: float | None = None,
          bar: float = DIFF_BAR) -> dict:
    """Assert ``out`` matches ``exp`` element-wise within ``eps · B``, in aggregate, and in its -inf mask.

    ``cleaned=False`` (``clean_logits=False``): only the valid positions are compared.
    Returns the worst error-to-tolerance ratio and the aggregate diff (for logs).
    """
    eps = default_eps(out) if eps is None else eps
    assert out.shape == exp.ref.shape, f"shape {tuple(out.shape)} != {tuple(exp.ref.shape)}"
    assert out.dtype == torch.float32
    valid = exp.valid.to(out.device)
    assert valid.any(), "test inputs must have valid positions"
    ref, bound = exp.ref.to(out.device), exp.bound.to(out.device)
    got = out.double()
    bad_nan = valid & ~torch.isfinite(got)
    assert not bad_nan.any(), f"{int(bad_nan.sum())} valid positions are not finite, first at {_first(bad_nan)}"
    err = torch.where(valid, (got - ref).abs(), 0.0)
    tol = eps * bound
    over = valid & (err > tol)
    ratio = float((err / torch.where(valid, tol, 1.0).clamp_min(1e-300)).max())
    if over.any():
        r, p = _first(over)
        raise AssertionError(
            f"{int(over.sum())} of {int(valid.sum())} valid positions differ from the float64 reference by more "
            f"than {eps:.3g}·B; first at (row {r}, pos {p}): out {float(got[r, p]):.8g}, ref {float(ref[r, p]):.8g}, "
            f"tolerance {float(tol[r, p]):.3g}; worst error/tolerance {ratio:.3g}")
    d = aggregate_diff(out, ref, valid)
    assert d < bar, f"aggregate diff {d:.3g} >= {bar}"
    if cleaned:
        mask_bad = torch.isneginf(out) != ~valid
        assert not mask_bad.any(), f"-inf mask differs from the validity mask at {int(mask_bad.sum())} positions"
    return {"worst_ratio": ratio, "diff": d}


def _first(mask: torch.Tensor) -> tuple[int, int]:
    r, p = mask.nonzero()[0].tolist()
    return r, p


# ----------------------------------------------------------------------------- corruptions

CORRUPTIONS = ("zero", "sign", "neighbour_page")


def block_span(exp: Expected, row: int, block: int) -> slice:
    """Key positions of ``block`` (64 keys) in ``row``, cut to the row's valid range."""
    cols = exp.valid[row].nonzero().flatten()
    start, end = block * BLOCK, min((block + 1) * BLOCK, int(cols.max()) + 1)
    assert start < end, f"row {row} has no valid key in block {block}"
    return slice(start, end)


def corrupt_block(out: torch.Tensor, exp: Expected, row: int, block: int, how: str,
                  neighbour: torch.Tensor | None = None) -> torch.Tensor:
    """A copy of ``out`` with one 64-key block of one row broken the way a wrong kernel would break it.

    ``neighbour_page`` takes that block's values from ``neighbour``: the same kernel run on
    inputs whose block table points that block at the next physical page.
    """
    bad = out.clone()
    span = block_span(exp, row, block)
    if how == "zero":
        bad[row, span] = 0.0
    elif how == "sign":
        bad[row, span] = -bad[row, span]
    elif how == "neighbour_page":
        assert neighbour is not None
        bad[row, span] = neighbour[row, span]
    else:
        raise ValueError(how)
    assert not torch.equal(bad, out), "the corruption changed nothing"
    return bad


def neighbour_page_inputs(inputs: dict, request: int, block: int) -> dict:
    """``inputs`` with request ``request``'s block-table entry ``block`` moved to the next physical page."""
    bt = inputs["block_tables"].clone()
    num_pages = inputs["kv_cache"].shape[0]
    bt[request, block] = (bt[request, block] + 1) % num_pages
    return {**inputs, "block_tables": bt}
