"""The shared state of the trace layer's monkeypatches: the recorders active in
each thread, the "quiet" depth (inside graphcheck's own calls nothing is
recorded), and the registry of wrapped attributes that is undone when the last
recorder exits.

:mod:`graphcheck.trace.patches` (torch's host-sync methods) and
:mod:`graphcheck.trace.launches` (Triton's launch methods) are two installers
that both wrap through :func:`wrap`; neither imports the other's internals.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_local = threading.local()
_saved: list[tuple[Any, str, Any]] = []
_INHERITED = object()  # restore by deleting the override, so the base class method shows again


def active_recorders() -> list:
    return getattr(_local, "stack", [])


def push(recorder: Any) -> None:
    if not hasattr(_local, "stack"):
        _local.stack = []
    _local.stack.append(recorder)


def pop(recorder: Any) -> None:
    stack = getattr(_local, "stack", [])
    if stack and stack[-1] is recorder:
        stack.pop()
    elif recorder in stack:
        stack.remove(recorder)


def quiet_depth() -> int:
    return getattr(_local, "quiet", 0)


class quiet:
    """Inside: dispatched ops are passed through without being recorded.

    Also a region the trace layer's timer never interrupts (a Triton kernel in
    the interpreter, whose patched ``triton.language`` must be restored): a
    timeout that expires inside is raised when the outermost region ends
    (:mod:`graphcheck.trace.deadline`).
    """

    def __enter__(self) -> None:
        _local.quiet = quiet_depth() + 1

    def __exit__(self, *exc: Any) -> None:
        _local.quiet = quiet_depth() - 1
        if _local.quiet == 0 and after_quiet is not None:
            after_quiet()


#: called when the outermost quiet region ends (graphcheck.trace.deadline raises a deferred timeout here)
after_quiet: Callable[[], None] | None = None


def wrap(owner: Any, name: str, make: Callable[[Any], Callable]) -> None:
    """Replace ``owner.name`` by ``make(original)``, remembering the original for :func:`restore_all`."""
    original = getattr(owner, name, None)
    if original is None:
        return
    own = name in owner.__dict__ if isinstance(owner, type) else True
    _saved.append((owner, name, original if own else _INHERITED))
    setattr(owner, name, make(original))


def restore_all() -> None:
    """Undo every :func:`wrap`, newest first."""
    while _saved:
        owner, name, original = _saved.pop()
        if original is _INHERITED:
            delattr(owner, name)
        else:
            setattr(owner, name, original)
