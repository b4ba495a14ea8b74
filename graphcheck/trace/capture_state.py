"""Answer PyTorch's capture-state queries as a capture would, while the trace layer runs a case.

Graph-safe code often guards a debug check::

    if not torch.cuda.is_current_stream_capturing():
        assert int(idx.max()) < 8     # a host sync, fine in eager mode only

Inside ``torch.cuda.graph(...)`` the guard is true and the sync never runs. The
trace layer runs the case eagerly (on the CPU, where the query even raises), so
without help it would take the debug branch and report a sync the graph never
makes. Inside :func:`as_captured` these answer ``True``:

- ``torch.cuda.is_current_stream_capturing`` (the same function object as
  ``torch.cuda.graphs.is_current_stream_capturing``; its code is swapped, so a
  ``from torch.cuda import is_current_stream_capturing`` made earlier sees it too),
- ``torch._C._cuda_isCurrentStreamCapturing`` and the name ``torch.cuda.graphs``
  imported it under,
- ``cupy.cuda.Stream.is_capturing`` / ``cupy.cuda.get_current_stream().is_capturing()``
  where cupy is already imported and lets the method be replaced.

A case opts out with ``Case(..., as_captured=False)``; then the queries answer
``False``, as in eager mode (CPU builds of torch would raise instead).
Installation is reference-counted; nesting is fine.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any

_lock = threading.Lock()
_depth = 0
_saved: list[tuple[Any, str, Any]] = []
_answers: list[bool] = []


def answer(*args: Any, **kwargs: Any) -> bool:
    """What a capture-state query returns while :func:`as_captured` is active (the innermost one's answer)."""
    return bool(_answers[-1]) if _answers else False



def _faithful(*args: Any, **kwargs: Any) -> bool:
    # This function's __code__ replaces torch's; it runs with torch's module globals, so it
    # finds this module by importing it rather than through a global name.
    import graphcheck.trace.capture_state as _state

    return _state.answer()


def _set(owner: Any, name: str, value: Any) -> None:
    try:
        original = getattr(owner, name)
    except AttributeError:
        return
    try:
        setattr(owner, name, value)
    except (AttributeError, TypeError):
        return
    _saved.append((owner, name, original))


def _install() -> None:
    torch = sys.modules.get("torch")
    if torch is not None:
        graphs = sys.modules.get("torch.cuda.graphs")
        fn = getattr(graphs, "is_current_stream_capturing", None) if graphs is not None else None
        if fn is not None and hasattr(fn, "__code__") and not fn.__code__.co_freevars:
            _saved.append((fn, "__code__", fn.__code__))
            fn.__code__ = _faithful.__code__
        cuda = getattr(torch, "cuda", None)
        if cuda is not None and getattr(cuda, "is_current_stream_capturing", fn) is not fn:
            _set(cuda, "is_current_stream_capturing", answer)
        _set(torch._C, "_cuda_isCurrentStreamCapturing", answer)
        if graphs is not None:
            _set(graphs, "_cuda_isCurrentStreamCapturing", answer)
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        stream_cls = getattr(getattr(cupy, "cuda", None), "Stream", None)
        if stream_cls is not None:
            _set(stream_cls, "is_capturing", lambda self, *a, **k: answer())


def _uninstall() -> None:
    while _saved:
        owner, name, original = _saved.pop()
        try:
            setattr(owner, name, original)
        except (AttributeError, TypeError):
            pass


@contextlib.contextmanager
def as_captured(capturing: bool = True) -> Iterator[None]:
    """Inside, capture-state queries answer ``capturing``: True as inside ``torch.cuda.graph(...)``."""
    global _depth
    with _lock:
        if _depth == 0:
            _install()
        _depth += 1
        _answers.append(bool(capturing))
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            _answers.pop()
            if _depth == 0:
                _uninstall()
