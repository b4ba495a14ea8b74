"""Strict JSON for every report: no bare ``NaN`` or ``Infinity``, which strict parsers reject.

Python's ``json`` writes ``NaN``/``Infinity`` by default; JavaScript's
``JSON.parse`` (what the SARIF upload action runs) and most other parsers refuse
them. Non-finite floats are written as the strings ``"NaN"``, ``"Infinity"`` and
``"-Infinity"``; anything else that is not JSON (a path, a dtype) as its ``str``.
"""

from __future__ import annotations

import json
import math
from typing import Any


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _default(value: Any) -> Any:
    # numpy/torch scalars and the like: a float if they are one (then checked again), else their text
    try:
        as_float = float(value)
    except (TypeError, ValueError):
        return str(value)
    if isinstance(value, (int, float)) or hasattr(value, "item"):
        return _finite(as_float)
    return str(value)


def dumps(data: Any, **kwargs: Any) -> str:
    """``json.dumps`` that always produces strict JSON (``allow_nan=False`` holds)."""
    return json.dumps(_finite(data), allow_nan=False, default=_default, **kwargs)
