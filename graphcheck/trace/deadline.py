"""A per-case time limit for the trace layer when it runs in this process.

In a worker (:mod:`graphcheck.workers`) the pool kills a case that overruns;
in the process that calls :func:`graphcheck.check` directly there is no one to
do that, so a ``SIGALRM`` timer raises :class:`CaseTimeout` in the case's
Python code. It works on the main thread of a POSIX process and interrupts
Python code only: a case stuck inside one C call returns first, and a Triton
kernel running in the interpreter is let finish (interrupting it would leave
``triton.language`` patched for the rest of the process).
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
from collections.abc import Iterator
from typing import Any


class CaseTimeout(BaseException):
    """The case ran past its time limit (a BaseException, so a case's ``except Exception`` does not eat it)."""


_pending: list[str] = []  # a timeout that expired inside a region that must finish (hooks.quiet)


def raise_pending() -> None:
    """Raise the timeout deferred while a kernel ran (called when the outermost ``hooks.quiet`` region ends)."""
    if _pending:
        message = _pending.pop()
        _pending.clear()
        raise CaseTimeout(message)


def available() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def deadline(seconds: float | None) -> Iterator[bool]:
    """Raise :class:`CaseTimeout` in the body after ``seconds``; yields whether a timer is armed."""
    if seconds is None or not math.isfinite(seconds) or seconds <= 0 or not available():
        yield False
        return

    def expired(signum: int, frame: Any) -> None:
        from graphcheck.trace import hooks

        message = f"no result within {seconds:g} s"
        if hooks.quiet_depth():  # inside a kernel launch: interrupting it would leave Triton's state patched
            _pending.append(message)
            return
        raise CaseTimeout(message)

    try:
        previous = signal.signal(signal.SIGALRM, expired)
    except ValueError:  # not the main thread of the main interpreter
        yield False
        return
    from graphcheck.trace import hooks

    hooks.after_quiet = raise_pending
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        hooks.after_quiet = None
        _pending.clear()
