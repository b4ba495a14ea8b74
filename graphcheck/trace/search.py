"""Search input values with Hypothesis for one that makes a captured graph go wrong.

A case's seeds draw values at random, and a baked grid or length only breaks
when a value crosses what capture saw (a longer sequence, an empty row, a zero
scale, an infinite logit). A case that declares ``strategies`` gets a search:
Hypothesis draws values for the named inputs (shapes, dtypes and buffers stay
those of seed 0), runs a property (the trace layer: the launch plan equals seed
0's; the capture layer: replay equals eager), and shrinks a failure to a
minimal input, reported with the Hypothesis seed that reruns it
(``GRAPHCHECK_SEARCH_SEED``).

Value strategies (:class:`Values`): ``lengths`` (0 to the capacity the shapes
allow), ``scales`` (0, tiny, 1, huge, negative), ``logits`` (finite values and
±inf), ``indices`` (within seed 0's range), ``floats`` and ``booleans``.
``"auto"`` picks one from the input's dtype and name.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

SMALL = 64  # tensors up to this many elements are searched element by element
_LENGTH_NAMES = re.compile(r"len|length|count|num_|^n_|_n$|size|seq|tokens|pos", re.I)
_SCALE_NAMES = re.compile(r"scale|alpha|beta|temperature|factor|weight_scale|inv_", re.I)
_LOGIT_NAMES = re.compile(r"logit|score|lse|log_sum|energy", re.I)


@dataclasses.dataclass(frozen=True)
class Values:
    """A value strategy for one input tensor: ``kind`` and optional bounds."""

    kind: str  # auto | lengths | scales | logits | indices | floats | booleans
    low: float | None = None
    high: float | None = None

    def describe(self) -> str:
        bounds = "" if self.low is None and self.high is None else f"[{self.low}, {self.high}]"
        return f"{self.kind}{bounds}"


def lengths(low: int = 0, high: int | None = None) -> Values:
    """Integer lengths from ``low`` (default 0: an empty row) to ``high`` (default: the largest input dimension)."""
    return Values("lengths", low, high)


def scales(low: float | None = None, high: float | None = None) -> Values:
    """Scales including 0, tiny, 1, huge and negative values (or within ``[low, high]``)."""
    return Values("scales", low, high)


def logits() -> Values:
    """Finite logits plus ``-inf`` and ``+inf``."""
    return Values("logits")


def indices(low: int | None = None, high: int | None = None) -> Values:
    """Integer ids, by default within the range seed 0's values span."""
    return Values("indices", low, high)


def floats(low: float = -1.0, high: float = 1.0) -> Values:
    """Finite floats in ``[low, high]``."""
    return Values("floats", low, high)


def choose(name: str, tensor: Any) -> Values:
    """The default strategy for an input, from its dtype and name."""
    import torch

    if tensor.dtype == torch.bool:
        return Values("booleans")
    if not tensor.dtype.is_floating_point:
        return Values("lengths") if _LENGTH_NAMES.search(name) else Values("indices")
    if _LOGIT_NAMES.search(name):
        return Values("logits")
    if _SCALE_NAMES.search(name):
        return Values("scales")
    return Values("floats")


def capacity(inputs: Mapping[str, Any]) -> int:
    """The largest dimension among the case's tensors: the longest length the buffers can hold."""
    dims = [int(d) for t in inputs.values() if hasattr(t, "shape") for d in t.shape]
    return max(dims, default=1)


def _elements(spec: Values, tensor: Any, cap: int) -> Any:
    import torch
    from hypothesis import strategies as st

    if spec.kind == "booleans":
        return st.booleans()
    if spec.kind in ("lengths", "indices"):
        info = torch.iinfo(tensor.dtype)
        if spec.kind == "lengths":
            low = 0 if spec.low is None else int(spec.low)
            high = cap if spec.high is None else int(spec.high)
        else:
            seen = tensor.detach().cpu()
            low = int(seen.min()) if spec.low is None and seen.numel() else int(spec.low or 0)
            high = int(seen.max()) if spec.high is None and seen.numel() else int(spec.high or 0)
        low, high = max(low, info.min), min(max(high, low), info.max)
        return st.integers(low, high)
    finite = float(torch.finfo(tensor.dtype).max)
    if spec.kind == "scales":
        if spec.low is not None or spec.high is not None:
            return st.floats(spec.low, spec.high, allow_nan=False, width=32)
        return st.one_of(st.sampled_from([0.0, 1.0, -1.0, 1e-30, min(1e30, finite), 65504.0]),
                         st.floats(-1e4, 1e4, allow_nan=False, width=32))
    if spec.kind == "logits":
        return st.one_of(st.floats(-100.0, 100.0, width=32), st.sampled_from([-math.inf, math.inf]))
    lo = -1.0 if spec.low is None else spec.low
    hi = 1.0 if spec.high is None else spec.high
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, width=32)


def tensor_strategy(spec: Values, tensor: Any, cap: int) -> Any:
    """A Hypothesis strategy of value lists (flat, ``tensor.numel()`` long) for ``tensor``."""
    from hypothesis import strategies as st

    element = _elements(spec, tensor, cap)
    n = int(tensor.numel())
    if n <= SMALL:
        return st.lists(element, min_size=n, max_size=n)
    # a large tensor: one fill value plus a few single elements, so that shrinking stays meaningful
    return st.tuples(element, st.lists(st.tuples(st.integers(0, n - 1), element), max_size=8)).map(
        lambda fill_and_edits: _expand(n, *fill_and_edits))


def _expand(n: int, fill: Any, edits: list[tuple[int, Any]]) -> list[Any]:
    values = [fill] * n
    for i, v in edits:
        values[i] = v
    return values


def resolve(case: Any, inputs: Mapping[str, Any]) -> dict[str, Values]:
    """The inputs a case's ``strategies`` names, each with its :class:`Values` (``"auto"`` resolved)."""
    declared = getattr(case, "strategies", None)
    if not declared:
        return {}
    outputs = set(case.outputs or ())
    if declared == "auto":
        declared = {name: "auto" for name, value in inputs.items()
                    if hasattr(value, "dtype") and name not in outputs}
    resolved = {}
    for name, spec in dict(declared).items():
        tensor = inputs.get(name)
        if tensor is None or not hasattr(tensor, "dtype"):
            raise ValueError(f"case {case.name!r}: strategies names {name!r}, which is not a tensor input")
        if spec == "auto" or spec is None:
            spec = choose(name, tensor)
        elif isinstance(spec, str):
            spec = Values(spec)
        if not isinstance(spec, Values):
            raise TypeError(f"case {case.name!r}: strategies[{name!r}] must be 'auto', a kind name or "
                            "graphcheck.inputs.lengths()/scales()/logits()/indices()/floats()")
        resolved[name] = spec
    return resolved


def write_values(tensor: Any, values: list[Any]) -> None:
    """Copy a flat value list into ``tensor`` in place (its buffer, shape and dtype are kept)."""
    import torch

    src = torch.tensor(values, dtype=torch.float64 if tensor.dtype.is_floating_point else
                       (torch.bool if tensor.dtype == torch.bool else torch.int64))
    with torch.no_grad():
        tensor.copy_(src.reshape(tensor.shape).to(tensor.dtype))


def show(values: Mapping[str, list[Any]], limit: int = 12) -> str:
    """``lens=[65, 0, 0, 0]`` (long lists are cut)."""
    parts = []
    for name, vals in values.items():
        body = ", ".join(repr(v) if not isinstance(v, float) or math.isfinite(v) else ("inf" if v > 0 else "-inf")
                         for v in vals[:limit])
        parts.append(f"{name}=[{body}{', ...' if len(vals) > limit else ''}]")
    return ", ".join(parts)


@dataclasses.dataclass
class Found:
    """The minimal input a search found, what went wrong with it, and how to rerun the search."""

    values: dict[str, list[Any]]
    problem: Any
    seed: int
    examples: int

    def evidence(self) -> dict[str, Any]:
        return {"minimal_input": {k: [_jsonable(v) for v in vals] for k, vals in self.values.items()},
                "hypothesis_seed": self.seed, "examples_tried": self.examples,
                "rerun": f"GRAPHCHECK_SEARCH_SEED={self.seed}"}

    def sentence(self) -> str:
        return (f"found by the value search: minimal input {show(self.values)} "
                f"(Hypothesis seed {self.seed}; rerun with GRAPHCHECK_SEARCH_SEED={self.seed})")


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return "inf" if v > 0 else ("-inf" if v < 0 else "nan")
    return v


def search_seed() -> int:
    try:
        return int(os.environ.get("GRAPHCHECK_SEARCH_SEED", "0"))
    except ValueError:
        return 0


class _Failed(Exception):
    pass


def search(specs: Mapping[str, Values], base: Mapping[str, Any], check: Callable[[dict[str, list[Any]]], Any],
           max_examples: int, seed: int | None = None) -> Found | None:
    """Search values for ``specs`` (shaped like ``base``'s tensors) for which ``check`` returns a problem.

    ``check(values)`` gets ``{name: flat value list}`` and returns None (fine) or
    a problem object; the shrunk minimal failing values come back in :class:`Found`.
    """
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    if not specs or max_examples <= 0:
        return None
    seed = search_seed() if seed is None else seed
    cap = capacity(base)
    strategy = st.fixed_dictionaries({name: tensor_strategy(spec, base[name], cap) for name, spec in specs.items()})
    last: list[tuple[dict[str, list[Any]], Any]] = []
    tried = [0]

    @hseed(seed)
    @settings(max_examples=max_examples, phases=[Phase.explicit, Phase.generate, Phase.shrink], database=None,
              deadline=None, suppress_health_check=list(HealthCheck), print_blob=False)
    @given(strategy)
    def prop(values: dict[str, list[Any]]) -> None:
        tried[0] += 1
        problem = check(values)
        if problem is not None:
            last.append((values, problem))
            raise _Failed(str(problem))

    try:
        prop()
    except _Failed:
        values, problem = last[-1]
        return Found(dict(values), problem, seed, tried[0])
    except Exception as exc:  # a multiple-failure report: take the last (shrunk) one
        if last:
            values, problem = last[-1]
            return Found(dict(values), problem, seed, tried[0])
        raise exc
    return None
