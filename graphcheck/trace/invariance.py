"""Launch-plan invariance: what a captured graph would bake in.

Runs of one case on inputs that differ only in values must launch the same
kernels with the same grids, scalars, constexprs and pointer bindings, and run
the same sequence of ops. Anything that differs was computed on the host from
tensor values: a graph captured with one input replays it for every other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphcheck.findings import Finding
from graphcheck.rules import make_finding
from graphcheck.trace.frames import Location
from graphcheck.trace.recorder import Recorder

_FIELDS = (
    ("grid", "GC401", "grid"),
    ("scalars", "GC402", "scalar argument"),
    ("constexprs", "GC403", "constexpr"),
    ("pointers", "GC407", "pointer argument"),
)


def _fmt(value: Any) -> str:
    if isinstance(value, tuple) and len(value) == 2 and (value[0] is None or isinstance(value[0], str)) \
            and (value[1] is None or isinstance(value[1], int)):
        name, offset = value
        return f"{name or '<unnamed tensor>'}+{offset}" if offset is not None else (name or "<unnamed tensor>")
    return repr(value)


def compare(runs: Sequence[tuple[int | str, Recorder]], case: str | None) -> list[Finding]:
    """Findings for every difference between the first run and the others."""
    if len(runs) < 2:
        return []
    findings: dict[tuple, Finding] = {}
    base_seed, base = runs[0]
    base_timeline = base.timeline()
    base_labels = [label for label, _ in base_timeline]
    comparable = [(base_seed, base)]
    for seed, rec in runs[1:]:
        timeline = rec.timeline()
        labels = [label for label, _ in timeline]
        if labels != base_labels:
            i = next((j for j, (a, b) in enumerate(zip(base_labels, labels)) if a != b),
                     min(len(labels), len(base_labels)))
            here = timeline[i] if i < len(timeline) else base_timeline[i]
            seen_base = base_labels[i] if i < len(base_labels) else "<end>"
            seen_other = labels[i] if i < len(labels) else "<end>"
            key: tuple[Any, ...] = ("GC405", here[1].path, here[1].line)
            if key not in findings:
                findings[key] = make_finding(
                    "GC405",
                    f"the ops and launches differ between seeds: entry {i} is {seen_base} with {_label(base_seed)} "
                    f"but {seen_other} with {_label(seed)} ({len(base_labels)} vs {len(labels)} entries)",
                    at=here[1], layer="trace", case=case,
                    evidence={"index": i, "seeds": {str(base_seed): seen_base, str(seed): seen_other},
                     "lengths": {str(base_seed): len(base_labels), str(seed): len(labels)}},
                )
        if [launch.kernel for launch in rec.launches] == [launch.kernel for launch in base.launches]:
            comparable.append((seed, rec))
    if len(comparable) < 2:
        return list(findings.values())
    for i, launch in enumerate(base.launches):
        plans = [(seed, rec.launches[i].plan()) for seed, rec in comparable]
        loc = Location(launch.path, launch.line, launch.function)
        for field, code, what in _FIELDS:
            if field == "grid":
                entries = {"grid": [(seed, plan["grid"]) for seed, plan in plans]}
            else:
                names = list(dict.fromkeys(n for _, plan in plans for n in plan[field]))
                entries = {n: [(seed, plan[field].get(n)) for seed, plan in plans] for n in names}
            for arg, seen in entries.items():
                if field == "pointers" and all(v == (None, None) for _, v in seen):
                    continue  # scratch tensors allocated inside the call; their addresses mean nothing here
                if len({repr(v) for _, v in seen}) <= 1:
                    continue
                key = (code, loc.path, loc.line, launch.kernel, arg)
                if key in findings:
                    continue
                values = ", ".join(f"{_label(seed)}: {_fmt(v)}" for seed, v in seen)
                subject = "the grid" if field == "grid" else f"{what} {arg!r}"
                findings[key] = make_finding(
                    code,
                    f"kernel {launch.kernel}: {subject} changes with input values ({values})",
                    at=loc, layer="trace", case=case,
                    evidence={"kernel": launch.kernel, "argument": arg,
                              "values": {str(s): _jsonable(v) for s, v in seen}, "launch_index": i},
                )
    return list(findings.values())


def _label(seed: Any) -> str:
    """``seed 3``, or a label such as ``the searched input`` as given."""
    return f"seed {seed}" if isinstance(seed, int) else str(seed)


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value
