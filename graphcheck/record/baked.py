"""Values baked into a graph, found by comparing captures of the same graph (GC401-GC403).

An engine captures one graph per batch size. Captures that launch the same
kernels in the same order are the same graph at different sizes, so every
launch argument that changes between them should change *because the shapes
changed*. An argument that changes when the shapes do not, or that follows no
shape of its launch (``v = f·m``, ``v = f + c``, ``v = ceil(f / k)`` with ``k`` a
power of two, ``v = ceil(K / f)``, for one constant over all the captures, ``f`` a
dimension, stride or element count of a tensor argument), was computed on the
host from tensor values: each graph replays the value it saw at capture. With
only two captures a value can follow a shape by coincidence (and is then not
reported); three or more captures make that unlikely.

A value that is the same in every capture cannot be told apart this way; the
trace layer's launch-plan invariance (different values, same shapes) covers it
for declared cases.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from graphcheck.findings import Finding
from graphcheck.record.capture_recorder import caller_location
from graphcheck.trace.frames import Location

_FIELDS = (("grid", "GC401", "grid dimension"), ("scalars", "GC402", "scalar argument"),
           ("constexprs", "GC403", "constexpr argument"))


def shape_features(launch: Any) -> dict[str, int]:
    """Every dimension, stride and element count of the launch's tensor arguments."""
    out: dict[str, int] = {}
    for arg, meta in sorted((getattr(launch, "tensor_meta", None) or {}).items()):
        shape = meta.get("shape") or []
        numel = 1
        for i, dim in enumerate(shape):
            out[f"{arg}.shape[{i}]"] = int(dim)
            numel *= int(dim)
        out[f"{arg}.numel"] = numel
        for i, stride in enumerate(meta.get("stride") or []):
            out[f"{arg}.stride[{i}]"] = int(stride)
    return out


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _cdiv_interval(f: int, v: int) -> tuple[float, float] | None:
    """The k with ceil(f / k) == v, as a closed interval (None: no such k)."""
    if v <= 0 or f <= 0:
        return None
    low = -(-f // v)
    high = float("inf") if v == 1 else (f - 1) // (v - 1)
    return (low, high) if low <= high else None


def _intersect(intervals: list[tuple[float, float] | None], pow2: bool = False) -> bool:
    """Whether the intervals share a value (a power of two, with ``pow2``)."""
    if any(i is None for i in intervals):
        return False
    low = max(i[0] for i in intervals)  # type: ignore[index]
    high = min(i[1] for i in intervals)  # type: ignore[index]
    if low > high:
        return False
    if not pow2:
        return True
    k = 1
    while k < low:
        k *= 2
    return k <= high


def follows(values: Sequence[float], feature: Sequence[int]) -> str | None:
    """How ``values`` follow ``feature`` across captures, or None."""
    pairs = list(zip(values, feature))
    f0, v0 = pairs[0][1], pairs[0][0]
    if f0 and all(abs(v * f0 - v0 * f) <= 1e-9 * max(1.0, abs(v * f0)) for v, f in pairs):
        return "proportional"
    if all(abs((v - f) - (v0 - f0)) <= 1e-9 for v, f in pairs):
        return "offset"
    if all(float(v).is_integer() for v in values):
        ints = [(int(v), int(f)) for v, f in pairs]
        if _intersect([_cdiv_interval(f, v) for v, f in ints], pow2=True):  # a block size: a power of two
            return "ceil(f/k)"
        # ceil(K / f) == v  <=>  (v-1)·f < K <= v·f
        if all(f > 0 for _, f in ints) and _intersect([((v - 1) * f + 1, v * f) for v, f in ints]):
            return "ceil(K/f)"
    return None


def explained_by_shapes(values: Sequence[Any], features: Sequence[dict[str, int]]) -> str | None:
    """The shape feature that explains ``values`` (one per capture), or None."""
    if not all(_number(v) for v in values):
        return None
    for name in features[0]:
        column = [feat.get(name) for feat in features]
        if any(c is None for c in column) or len(set(column)) == 1:
            continue
        how = follows(values, column)  # type: ignore[arg-type]
        if how:
            return f"{name} ({how})"
    return None


def _values(launch: Any, field: str) -> dict[str, Any]:
    raw = getattr(launch, field, None)
    if field == "grid":
        return {f"grid[{i}]": v for i, v in enumerate(raw or ())}
    return dict(raw or {})


def baked_findings(captures: Sequence[Any]) -> list[Finding]:
    """GC401/GC402/GC403 findings for launch arguments that differ across captures of one graph."""
    from graphcheck import rules

    groups: dict[tuple[str, ...], list[Any]] = defaultdict(list)
    for cap in captures:
        if getattr(cap, "status", None) == "ok" and cap.launches:
            groups[tuple(launch.kernel for launch in cap.launches)].append(cap)
    findings: list[Finding] = []
    seen: set[tuple[str, str, int]] = set()
    for group in groups.values():
        if len(group) < 2:
            continue
        ids = [cap.id for cap in group]
        for position in zip(*(cap.launches for cap in group)):
            features = [shape_features(launch) for launch in position]
            same_shapes = all(f == features[0] for f in features)
            for field, code, what in _FIELDS:
                per_capture = [_values(launch, field) for launch in position]
                for name in per_capture[0]:
                    values = [vals.get(name) for vals in per_capture]
                    if len({repr(v) for v in values}) == 1:
                        continue
                    if not same_shapes and explained_by_shapes(values, features):
                        continue
                    if not same_shapes and not all(_number(v) for v in values):
                        continue  # a flag or a name that follows the shapes in a way we cannot model
                    last = position[-1]
                    loc = caller_location(getattr(last, "stack", []), Location(last.path, last.line, last.function))
                    key = (code, loc.path, loc.line)
                    if key in seen:
                        continue
                    seen.add(key)
                    rule = rules.get(code)
                    shown = ", ".join(f"{v!r} (capture {i})" for v, i in zip(values, ids))
                    why = ("the tensor shapes of the launch are the same in these captures" if same_shapes
                           else "no dimension, stride or size of its tensor arguments explains the change")
                    findings.append(rule.finding(
                        f"{what} {name!r} of kernel {last.kernel} differs between captures of the same graph: "
                        f"{shown}; {why}, so it comes from values read on the host, and each graph replays "
                        "the value it saw at capture",
                        at=loc, layer="capture", case=f"captures {', '.join(map(str, ids))}",
                        evidence={"kernel": last.kernel, "argument": name, "values": values, "captures": ids,
                                  "same_shapes": same_shapes, "launch_path": last.path,
                                  "launch_line": int(last.line)}))
    return findings
