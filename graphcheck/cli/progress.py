"""The audit's progress bar: a transient rich bar on stderr for the lint and the cases.

It is shown only when stderr is a terminal and the report is text, and only once
the audit has run for a couple of seconds, so a quick audit, a piped run and the
JSON or SARIF reports print nothing extra. The bar is drawn on stderr and cleared
when the audit ends.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, TextIO

DELAY = 2.0  # seconds an audit runs before the bar appears


def wanted(fmt: str, stream: TextIO | None = None) -> bool:
    """Whether an audit reporting in ``fmt`` shows a bar on ``stream`` (default: stderr)."""
    stream = sys.stderr if stream is None else stream
    try:
        return fmt == "text" and stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class AuditProgress:
    """Callbacks for :func:`graphcheck.audit.audit`: :meth:`lint` (files) and :meth:`cases` (cases).

    ``enabled=False`` makes every call a no-op. The bar starts ``delay`` seconds after
    construction (on a timer, so a long first case still gets it); ``console`` replaces
    the rich Console on stderr (tests force a terminal this way). Call :meth:`close` at the end.
    """

    def __init__(self, enabled: bool, *, delay: float | None = None, console: Any = None) -> None:
        delay = DELAY if delay is None else delay
        self.enabled = enabled
        self._console = console
        self._lock = threading.Lock()
        self._state: dict[str, tuple[int, int, str]] = {}  # phase -> (done, total, description)
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}
        self._closed = False
        self._timer: threading.Timer | None = None
        if not enabled:
            return
        if delay <= 0:
            self._start()
        else:
            self._timer = threading.Timer(delay, self._start)
            self._timer.daemon = True
            self._timer.start()

    def lint(self, done: int, total: int) -> None:
        self._update("lint", done, total, "files")

    def cases(self, name: str, done: int, total: int) -> None:
        self._update("cases", done, total, name)

    __call__ = cases  # graphcheck.audit.ProgressFn

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            if self._bar is not None:
                self._bar.stop()
                self._bar = None

    def _update(self, phase: str, done: int, total: int, text: str) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._state[phase] = (done, total, text)
            if self._bar is not None:
                self._show(phase)

    def _start(self) -> None:
        with self._lock:
            if self._closed or self._bar is not None:
                return
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            console = self._console if self._console is not None else Console(file=sys.stderr)
            self._bar = Progress(TextColumn("[bold]{task.fields[phase]:<5}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("{task.description}"),
                                 console=console, transient=True)
            self._bar.start()
            for phase in self._state:
                self._show(phase)

    def _show(self, phase: str) -> None:
        from graphcheck.report.escape import markup, printable

        done, total, text = self._state[phase]
        if phase not in self._tasks:
            self._tasks[phase] = self._bar.add_task("", total=total, phase=phase)
        self._bar.update(self._tasks[phase], completed=done, total=total, description=markup(printable(text)))
