"""Mutated replay: the pieces that compare a replayed graph with an eager run.

Outputs are poisoned before each run (NaN for floating point, the dtype's
extreme value for integers), so an element the replay never wrote is seen.
``compare`` works on any device (tests run it on CPU tensors).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class Mismatch:
    """How one replayed output differs from the eager output on the same inputs."""

    output: str
    count: int
    total: int
    max_abs_error: float
    poison_only: bool  # every differing element still holds the poison value
    detail: str = ""

    def to_evidence(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "mismatched": self.count,
            "elements": self.total,
            "max_abs_error": self.max_abs_error,
            "poison_only": self.poison_only,
        }


def poison_value(dtype: Any) -> Any:
    import torch

    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    if dtype == torch.bool:
        return None  # nothing distinguishable to write
    info = torch.iinfo(dtype)
    return info.min if info.min < 0 else info.max


def poison_(tensor: Any) -> None:
    """Fill ``tensor`` in place with its dtype's poison value (no-op for bool)."""
    value = poison_value(tensor.dtype)
    if value is not None:
        tensor.fill_(value)


def _is_poison(t: Any) -> Any:
    import torch

    value = poison_value(t.dtype)
    if value is None:
        return torch.zeros_like(t, dtype=torch.bool)
    if t.dtype.is_floating_point or t.dtype.is_complex:
        return torch.isnan(t)
    return t == value


def compare(name: str, got: Any, want: Any, atol: float, rtol: float) -> Mismatch | None:
    """None if ``got`` (replay) matches ``want`` (eager) within atol + rtol*|want|.

    NaN equals NaN only where both have it; infinities must match exactly.
    """
    import torch

    if not isinstance(got, torch.Tensor) or not isinstance(want, torch.Tensor):
        if got == want:
            return None
        return Mismatch(name, 1, 1, float("nan"), False, f"replay gave {got!r}, eager gave {want!r}")
    if got.shape != want.shape or got.dtype != want.dtype:
        return Mismatch(
            name, got.numel(), max(got.numel(), want.numel()), float("nan"), False,
            f"replay gave {tuple(got.shape)} {got.dtype}, eager gave {tuple(want.shape)} {want.dtype}",
        )
    total = want.numel()
    if total == 0:
        return None
    if got.dtype.is_floating_point or got.dtype.is_complex:
        g = got.detach().to(torch.complex128 if got.is_complex() else torch.float64)
        w = want.detach().to(g.dtype)
        same = (g == w) | (torch.isnan(g) & torch.isnan(w))
        diff = (g - w).abs()
        close = torch.isfinite(g) & torch.isfinite(w) & (diff <= (atol + rtol * w.abs()))
        bad = ~(same | close)
    else:
        g, w = got.detach(), want.detach()
        bad = g != w
        diff = (g.to(torch.float64) - w.to(torch.float64)).abs()
    count = int(bad.sum())
    if count == 0:
        return None
    finite_diff = diff[bad & torch.isfinite(diff)]
    max_err = float(finite_diff.max()) if finite_diff.numel() else float("inf")
    poison_only = bool((_is_poison(got) & ~_is_poison(want))[bad].all())
    return Mismatch(name, count, total, max_err, poison_only)


def output_tensors(outputs: Any, names: Any, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Name the outputs of one call: in-place arguments, or the returned value(s)."""
    import torch

    if names is not None:
        named = {}
        for n in names:  # an output argument may hold several tensors, e.g. outs=(out, lse)
            if isinstance(inputs[n], torch.Tensor):
                named[n] = inputs[n]
            else:
                named.update((f"{n}[{i}]", t) for i, t in enumerate(_leaves(inputs[n])[0])
                             if isinstance(t, torch.Tensor))
        return named
    if isinstance(outputs, torch.Tensor):
        return {"return": outputs}
    if isinstance(outputs, Mapping):
        return {f"return[{k!r}]": v for k, v in outputs.items() if isinstance(v, torch.Tensor)}
    if isinstance(outputs, (tuple, list)):
        return {f"return[{i}]": v for i, v in enumerate(outputs) if isinstance(v, torch.Tensor)}
    return {}


def _leaves(value: Any) -> tuple[list[Any], Any]:
    """The leaves of an argument and its container structure (tuples, lists, dicts of tensors)."""
    from torch.utils._pytree import tree_flatten

    return tree_flatten(value)


def copy_inputs(captured: Mapping[str, Any], fresh: Mapping[str, Any]) -> None:
    """Copy every tensor of ``fresh`` into the matching captured buffer, also inside containers."""
    import torch

    for name, value in fresh.items():
        for old, new in zip(_leaves(captured[name])[0], _leaves(value)[0]):
            if isinstance(new, torch.Tensor):
                old.copy_(new)


def input_problems(captured: Mapping[str, Any], fresh: Mapping[str, Any]) -> list[str]:
    """Why ``fresh`` inputs cannot be copied into the ``captured`` buffers (empty if they can).

    Arguments may be tensors, plain values, or tuples, lists and dicts of them
    (e.g. ``kv=(k, k_scale)``): each leaf is checked the same way.
    """
    import torch

    problems = []
    if set(captured) != set(fresh):
        problems.append(f"argument names differ: {sorted(captured)} vs {sorted(fresh)}")
        return problems
    for key, old_value in captured.items():
        old_leaves, old_spec = _leaves(old_value)
        new_leaves, new_spec = _leaves(fresh[key])
        if old_spec != new_spec:
            problems.append(f"argument {key!r} changes structure between seeds ({old_spec} vs {new_spec})")
            continue
        for i, (old, new) in enumerate(zip(old_leaves, new_leaves)):
            where = repr(key) if len(old_leaves) == 1 and old is old_value else f"{key!r}[{i}]"
            if isinstance(old, torch.Tensor) != isinstance(new, torch.Tensor):
                problems.append(f"argument {where} is a tensor for one seed and not for another")
            elif isinstance(old, torch.Tensor):
                if old.shape != new.shape or old.dtype != new.dtype or old.device != new.device:
                    problems.append(
                        f"argument {where} changed from {tuple(old.shape)} {old.dtype} {old.device} "
                        f"to {tuple(new.shape)} {new.dtype} {new.device}"
                    )
            else:
                try:
                    equal = bool(old == new)
                except Exception:
                    equal = old is new
                if not equal:
                    problems.append(
                        f"non-tensor argument {where} differs between seeds ({old!r} vs {new!r}): a graph "
                        "replays the value it captured, so cases must vary tensor values only"
                    )
    return problems
