"""graphcheck.record: learn what a real program captures, and check exactly that.

While any CUDA-graph capture is active, a recording notes every Python function
and line that runs, every Triton launch (grid, scalars, constexprs, stream), the
ops the dispatcher sees, each capture's graph nodes, and every capture failure
with the op and line behind it. The result is a capture map (JSON, versioned)
that ``graphcheck lint --capture-map``, ``audit``, ``ci`` and ``coverage`` read.

Modules: ``lines`` (function and line collection), ``capture_recorder`` (the
trace recorder plus stream, shapes and call stack per launch), ``graph`` (nodes
of the graph being captured), ``session`` (one recording: captures and their
findings), ``baked`` (values that differ across captures of one graph),
``hooks`` (wrapping ``CUDAGraph.capture_begin/end``), ``context``
(:func:`recording`), ``schema`` and ``capture_map`` (the file), ``child`` (the
recorder started inside ``graphcheck record -- python ...``), ``scope`` (lint
scope from a map), ``coverage`` (the coverage report).
Nothing here imports torch until a recording starts.
"""

from __future__ import annotations

from graphcheck.lazy import lazy_getattr

_LAZY = {
    "recording": "graphcheck.record.context",
    "Session": "graphcheck.record.session",
    "CaptureMap": "graphcheck.record.capture_map",
    "MapError": "graphcheck.record.schema",
}

__all__ = sorted(_LAZY)
__getattr__ = lazy_getattr(__name__, _LAZY)
