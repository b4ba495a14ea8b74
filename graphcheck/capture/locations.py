"""Source locations for capture findings: the user's line, from a frame or a traceback.

The trace layer's ``graphcheck.trace.frames`` decides what counts as user code
(everything outside torch, triton, the standard library and graphcheck, with
``graphcheck.kernels`` and ``examples/`` counted as user code); the capture layer
uses the same rules so both layers point at the same line. A minimal fallback
keeps this module usable if that one cannot be imported.
"""

from __future__ import annotations

import os
import types
from typing import Any, NamedTuple

try:
    from graphcheck.trace.frames import (
        Location,
        function_location,
        traceback_location,
        user_location,
    )
except Exception:  # pragma: no cover - only without the trace layer

    class Location(NamedTuple):  # type: ignore[no-redef]
        path: str
        line: int
        function: str | None

    _PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

    def _is_user(filename: str) -> bool:
        if not filename or filename.startswith("<"):
            return False
        path = os.path.abspath(filename)
        if path.startswith(os.path.join(_PKG, "kernels") + os.sep):
            return True
        return not (path.startswith(_PKG) or f"{os.sep}torch{os.sep}" in path
                    or f"{os.sep}triton{os.sep}" in path or f"{os.sep}python3" in path and "site-packages" not in path)

    def user_location(frame: types.FrameType | None = None) -> Location:
        f = frame
        while f is not None:
            if _is_user(f.f_code.co_filename):
                return Location(f.f_code.co_filename, f.f_lineno, f.f_code.co_name)
            f = f.f_back
        return Location("<unknown>", 0, None)

    def traceback_location(tb: types.TracebackType | None) -> Location:
        found = Location("<unknown>", 0, None)
        while tb is not None:
            if _is_user(tb.tb_frame.f_code.co_filename):
                found = Location(tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_frame.f_code.co_name)
            tb = tb.tb_next
        return found

    def function_location(fn: Any) -> Location:  # type: ignore[misc]
        code = getattr(getattr(fn, "__wrapped__", fn), "__code__", None)
        if code is None:
            return Location("<unknown>", 0, None)
        return Location(code.co_filename, code.co_firstlineno, code.co_name)


def exception_location(exc: BaseException | None) -> Location | None:
    """The innermost user frame of the earliest exception in the chain that has one."""
    from graphcheck.capture.errors import exception_chain

    for link in exception_chain(exc):
        loc = traceback_location(link.__traceback__)
        if loc.line > 0:
            return loc
    return None


__all__ = ["Location", "exception_location", "function_location", "traceback_location", "user_location"]
