"""Output poisoning and the determinism cross-check.

Before the first run on a seed's inputs the in-place outputs are filled with NaN
(a floating dtype) or the dtype's minimum (an integer dtype); before the second
run on the same inputs with a finite sentinel (or the integer maximum). An
element that holds the first poison after the first run AND the second poison
after the second run was never written (GC505). An output that legitimately
produces NaN or -inf produces it in both runs, so it is not mistaken for poison.
Every other element must agree between the two runs within the case's atol and
rtol (GC504).
"""

from __future__ import annotations

from typing import Any

_FLOATS = ("float16", "bfloat16", "float32", "float64")
_SECOND_FLOAT_POISON = -12344.0  # exactly representable in float16 and bfloat16


def poison_values(dtype: Any) -> tuple[Any, Any] | None:
    import torch

    if dtype.is_floating_point:
        if str(dtype).split(".")[-1] not in _FLOATS:
            return None  # fp8 and friends: no NaN in every format
        return float("nan"), _SECOND_FLOAT_POISON
    if dtype == torch.bool or dtype.is_complex:
        return None
    info = torch.iinfo(dtype)
    return info.min, info.max


def poison(tensors: dict[str, Any], which: int) -> None:
    """Fill each output with poison number ``which`` (0 or 1)."""
    for tensor in tensors.values():
        values = poison_values(tensor.dtype)
        if values is not None:
            tensor.fill_(values[which])


def snapshot(tensors: dict[str, Any]) -> dict[str, Any]:
    return {name: t.detach().to("cpu", copy=True) for name, t in tensors.items()}


def cross_check(first: dict[str, Any], second: dict[str, Any], poisoned: set[str], atol: float,
                rtol: float) -> list[dict[str, Any]]:
    """Problems between two runs on the same inputs: dicts with code, output, and numbers."""
    import torch

    problems: list[dict[str, Any]] = []
    for name, a in first.items():
        b = second.get(name)
        if b is None:
            continue
        if a.shape != b.shape or a.dtype != b.dtype:
            problems.append({"code": "GC504", "output": name,
                             "detail": f"shape/dtype {tuple(a.shape)}/{a.dtype} vs {tuple(b.shape)}/{b.dtype}"})
            continue
        unwritten = torch.zeros(a.shape, dtype=torch.bool)
        values = poison_values(a.dtype)
        if name in poisoned and values is not None:
            p0, p1 = values
            if a.dtype.is_floating_point:
                unwritten = torch.isnan(a) & (b == torch.tensor(p1, dtype=b.dtype))
            else:
                unwritten = (a == p0) & (b == p1)
            count = int(unwritten.sum())
            if count:
                first_idx = tuple(int(i) for i in unwritten.nonzero()[0])
                problems.append({"code": "GC505", "output": name, "count": count, "numel": a.numel(),
                                 "first_index": list(first_idx)})
        written = ~unwritten
        if a.dtype == torch.bool:
            bad = (a != b) & written
        else:
            ad, bd = a.to(torch.float64), b.to(torch.float64)
            bad = ~torch.isclose(ad, bd, rtol=rtol, atol=atol, equal_nan=True) & written
        count = int(bad.sum())
        if count:
            ad, bd = a.to(torch.float64), b.to(torch.float64)
            diff = (ad - bd).abs()[bad]
            finite = diff[torch.isfinite(diff)]
            problems.append({"code": "GC504", "output": name, "count": count, "numel": a.numel(),
                             "max_abs_diff": float(finite.max()) if finite.numel() else float("nan"),
                             "first_index": [int(i) for i in bad.nonzero()[0]]})
    return problems


def flatten_outputs(value: Any, prefix: str = "return") -> dict[str, Any]:
    """Name returned tensors: ``return``, ``return[0]``, ``return.key``."""
    import torch

    out: dict[str, Any] = {}
    if isinstance(value, torch.Tensor):
        out[prefix] = value
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            out.update(flatten_outputs(v, f"{prefix}[{i}]"))
    elif isinstance(value, dict):
        for k, v in value.items():
            out.update(flatten_outputs(v, f"{prefix}.{k}"))
    return out
