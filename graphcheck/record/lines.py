"""Which Python functions and lines run while a capture is active.

:class:`LineCollector` is switched on at capture begin and off at capture end.
On Python 3.12+ it uses ``sys.monitoring``, set up once for the whole
recording rather than per capture: switching events on or off makes CPython
re-instrument every code object it runs next (some microseconds each, so twice
per capture for all of torch's Python code). Instead a global ``PY_START``
event stays on from the first capture until :meth:`LineCollector.close`; it
turns itself off for good (``DISABLE``) on library code, module and class
bodies at their first call, and stays on for the engine's functions, whose
calls it counts only while a capture is active (one dictionary lookup
otherwise). ``LINE`` events are switched on per code object, only on engine
functions from the first capture they run in, each line disabled after its
first hit, in a capture or outside one, and left on: re-instrumenting a
function per capture cost more than the rest of the collection. A capture thus
reports a function with the lines first hit in it (the map keeps each
function's lines over all captures, and which captures ran it). A function in
which a line not yet seen ran between captures is switched off and on at its
next capture, which re-enables its lines. Whether a function started inside an
import is found by walking its callers only up to one already found to run
outside imports. Before 3.12 it falls
back to ``sys.settrace`` with a local tracer on user frames only, installed
per capture.

"User code" is decided by :func:`graphcheck.trace.frames.is_user_file`: outside
torch, triton, the standard library and graphcheck itself, with
``graphcheck.kernels`` counted as user code.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from graphcheck.trace.frames import is_user_file

#: (filename, qualified name, first line) of one function
FunctionKey = tuple[str, str, int]

#: libraries whose code is not the engine's: the ones graphcheck itself skips, and helpers torch and
#: triton call into (symbolic math, templating, packaging)
_NOT_ENGINE = frozenset({
    "torch", "triton", "numpy", "hypothesis", "_pytest", "pytest", "pluggy", "graphcheck",
    "sympy", "mpmath", "networkx", "jinja2", "markupsafe", "filelock", "fsspec", "packaging",
    "typing_extensions", "setuptools", "pkg_resources", "_distutils_hack", "importlib_metadata",
    "zipp", "rich", "pygments", "yaml", "tqdm", "psutil", "cuda", "cupy", "nvidia"})


def is_engine_file(filename: str) -> bool:
    """Whether a file is the program's own code (an engine, its kernels), not a library's.

    In ``site-packages`` a package is engine code unless it is one of the libraries above
    (``graphcheck.kernels`` counts as engine code); elsewhere :func:`is_user_file` decides.
    """
    if not filename or filename.startswith("<"):
        return False
    parts = filename.replace("\\", "/").split("/")
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            i = len(parts) - 1 - parts[::-1].index(marker)
            top = parts[i + 1].split(".")[0] if i + 1 < len(parts) else ""
            if top == "graphcheck":
                return i + 2 < len(parts) and parts[i + 2] == "kernels"
            return bool(top) and top not in _NOT_ENGINE and not top.startswith("_")  # _virtualenv & co
    return is_user_file(filename)


#: filename -> whether :func:`is_engine_file` holds, for every collector (a file does not change kind)
_ENGINE_FILES: dict[str, bool] = {}
_CO_NEWLOCALS = 0x02  # set on function code objects; module and class bodies lack it
_IMPORT_DEPTH = 64


def _importing(frame: Any, checked: Any = ()) -> bool:
    """Whether ``frame`` runs inside an import (importlib's frames are on the stack).

    The walk stops at a frame whose code object's ``id`` is in ``checked``: functions found,
    while they were starting, to run outside any import, so nothing above their frames is an
    import. An engine's functions mostly call one another, so the walk is a few frames, not the
    whole stack. (Code objects are looked up by ``id``: hashing one walks all its instructions.)
    """
    f = frame
    for _ in range(_IMPORT_DEPTH):
        if f is None:
            return False
        code = f.f_code
        if id(code) in checked:
            return False
        if code.co_filename.startswith("<frozen importlib"):
            return True
        f = f.f_back
    return False


def _qualname(code: Any) -> str:
    return getattr(code, "co_qualname", None) or code.co_name


def function_key(code: Any) -> FunctionKey:
    return (code.co_filename, _qualname(code), code.co_firstlineno)


class LineCollector:
    """Collects ``{function key: set of lines}`` between :meth:`start` and :meth:`stop`.

    With ``sys.monitoring`` the collector holds a tool id from its first :meth:`start`
    until :meth:`close` (a later collector closes an earlier one that was left open).
    """

    def __init__(self, is_user: Callable[[str], bool] = is_engine_file, backend: str | None = None) -> None:
        self.is_user = is_user
        self.hits: dict[FunctionKey, set[int]] = {}
        #: filename -> user file or not; the default predicate's answers are shared by every collector
        self._files: dict[str, bool] = _ENGINE_FILES if is_user is is_engine_file else {}
        self.backend = backend or ("monitoring" if hasattr(sys, "monitoring") else "settrace")
        self._tool: int | None = None
        # With sys.monitoring, code objects are keyed by id(): hashing a code object walks all of its
        # instructions (and its constants) on every lookup. The collector holds the code objects it
        # keys until close, so an id is not reused meanwhile.
        self._targets: dict[int, Any] = {}  # engine functions (not module or class bodies) seen running
        self._code_of: dict[int, Any] = {}  # every code object in _code_lines or _seen
        self._keys: dict[int, FunctionKey] = {}  # function_key of those, resolved once
        self._code_lines: dict[int, set[int]] = {}  # code -> lines hit in this capture
        self._outside_imports: set[int] = set()  # functions started in this capture outside any import
        #: code -> lines hit in any capture so far; its LINE events stay on from its first capture on
        self._seen: dict[int, set[int]] = {}
        #: armed codes in which a line not yet seen ran outside capture (and was disabled there)
        self._dirty: set[int] = set()
        self._saved_trace: Any = None
        self._active = False

    # -- shared ------------------------------------------------------------
    def _is_user_file(self, filename: str) -> bool:
        known = self._files.get(filename)
        if known is None:
            known = self._files[filename] = bool(self.is_user(filename))
        return known

    def _is_user_code(self, code: Any) -> bool:
        return self._is_user_file(code.co_filename)

    def _is_call_target(self, code: Any) -> bool:
        """User code in a function (not a module or class body: those run at import)."""
        return bool(code.co_flags & _CO_NEWLOCALS) and self._is_user_code(code)

    def _enter_code(self, code: Any) -> None:
        key = function_key(code)
        if key not in self.hits:
            self.hits[key] = set()

    def take(self) -> dict[FunctionKey, set[int]]:
        """What was collected since the last take (the collector keeps running).

        With ``sys.monitoring``, the functions that ran and the lines first hit since then: a line
        hit in an earlier capture is not reported again (callers keep the union).
        """
        self._flush_code_lines()
        hits, self.hits = self.hits, {}
        return hits

    def _flush_code_lines(self) -> None:
        keys = self._keys
        for code_id, lines in self._code_lines.items():
            key = keys.get(code_id)
            if key is None:
                key = keys[code_id] = function_key(self._code_of[code_id])
            known = self.hits.get(key)
            if known is None:
                self.hits[key] = set(lines)
            else:
                known |= lines
        self._code_lines = {}

    def start(self, frame: Any = None) -> FunctionKey | None:
        """Begin collecting. The innermost user frame on the stack from ``frame`` outwards
        (the function holding the ``with torch.cuda.graph(...)`` block) counts too, from its
        current line on; its key is returned (None when there is no user frame)."""
        if self._active:
            return None
        stack = []
        f = frame if frame is not None else sys._getframe(1)
        while f is not None:
            if self._is_user_code(f.f_code):
                stack.append(f)
                break
            f = f.f_back
        if self.backend == "monitoring":
            self._start_monitoring(stack)
        else:
            self._start_settrace(stack)
        self._active = True
        return function_key(stack[0].f_code) if stack else None

    def stop(self) -> None:
        if not self._active:
            return
        self._active = False
        if self.backend == "monitoring":
            self._stop_monitoring()
        else:
            self._stop_settrace()

    def close(self) -> None:
        """Stop, and give back what :meth:`start` set up for the whole recording."""
        self.stop()
        if self._tool is not None:
            self._release_tool()

    # -- sys.monitoring (3.12+) ---------------------------------------------
    def _acquire_tool(self) -> bool:
        global _monitoring_owner
        mon = sys.monitoring  # type: ignore[attr-defined]  # 3.12+, used only where it exists
        owner = _monitoring_owner
        if owner is not None and owner is not self and not owner._active:
            owner.close()  # a collector that was never closed: its recording is over
        for tool in (4, 3, 5, 2):  # 0 debugger, 1 coverage; take a free one
            try:
                mon.use_tool_id(tool, "graphcheck-record")
            except ValueError:
                continue
            self._tool = tool
            break
        else:
            return False
        tool = self._tool
        disable = mon.DISABLE
        line_event = mon.events.LINE
        targets = self._targets
        files = self._files
        is_user_file = self._is_user_file

        def on_start(code: Any, offset: int) -> Any:
            # every function run in the recording comes here once, most of them library code: the
            # file's kind is known after its first function, and library code and bodies go off for good
            code_id = id(code)
            if code_id not in targets:
                filename = code.co_filename
                kind = files.get(filename)
                if kind is None:
                    kind = is_user_file(filename)
                if not kind or not code.co_flags & _CO_NEWLOCALS:
                    return disable
                targets[code_id] = code
            if not self._active:
                return None  # an engine function outside capture: stays on for later captures
            if code_id in self._code_lines:
                return None
            if _importing(sys._getframe(1), self._outside_imports):
                return None  # called by an import during capture: not capture work; look again next call
            self._outside_imports.add(code_id)
            self._code_lines[code_id] = set()
            self._arm(code)
            return None

        def on_line(code: Any, line: int) -> Any:
            code_id = id(code)
            lines = self._code_lines.get(code_id)
            if lines is None:
                if not self._active:
                    # outside capture: off until the function's next capture, which re-arms it if the line is new
                    seen = self._seen.get(code_id)
                    if seen is not None and line not in seen:
                        self._dirty.add(code_id)
                    return disable
                # an armed function running in this capture without starting in it (a frame that was
                # already running, a resumed generator, a call from an import)
                self._code_of[code_id] = code
                lines = self._code_lines[code_id] = set()
            lines.add(line)
            return disable

        mon.register_callback(tool, mon.events.PY_START, on_start)
        mon.register_callback(tool, line_event, on_line)
        mon.set_events(tool, mon.events.PY_START)
        mon.restart_events()  # what an earlier recording with this tool id disabled fires again
        _monitoring_owner = self
        return True

    def _release_tool(self) -> None:
        global _monitoring_owner
        mon = sys.monitoring  # type: ignore[attr-defined]  # 3.12+, used only where it exists
        tool = self._tool
        self._tool = None
        if _monitoring_owner is self:
            _monitoring_owner = None
        try:
            for code_id in self._seen:
                mon.set_local_events(tool, self._code_of[code_id], 0)
            self._seen, self._dirty = {}, set()
            self._targets, self._code_of, self._keys = {}, {}, {}
            mon.set_events(tool, 0)
            mon.register_callback(tool, mon.events.PY_START, None)
            mon.register_callback(tool, mon.events.LINE, None)
        finally:
            mon.free_tool_id(tool)

    def _start_monitoring(self, stack: list) -> None:
        if self._tool is None and not self._acquire_tool():
            self.backend = "settrace"
            self._start_settrace(stack)
            return
        self._code_lines = {}
        self._outside_imports = set()
        for f in stack:
            self._code_lines[id(f.f_code)] = {f.f_lineno}
            self._arm(f.f_code)

    def _arm(self, code: Any) -> None:
        """LINE events on for a function starting in a capture.

        Switching a function's events re-instruments it, so they are switched on at its first
        capture and left on: each line is disabled after its first hit, in a capture or not. A line
        hit in an earlier capture has nothing more to show (the map keeps a function's lines over
        all captures). Only a function in which a line not yet seen ran outside capture (where it
        was disabled too) is switched off and on again, which re-enables its lines, so that the
        line is seen if this capture runs it.
        """
        mon = sys.monitoring  # type: ignore[attr-defined]  # 3.12+, used only where it exists
        code_id = id(code)
        if code_id not in self._seen:
            self._seen[code_id] = set()
            self._code_of[code_id] = code
        elif code_id in self._dirty:
            self._dirty.discard(code_id)
            mon.set_local_events(self._tool, code, 0)
        else:
            return
        mon.set_local_events(self._tool, code, mon.events.LINE)

    def _stop_monitoring(self) -> None:
        tool = self._tool
        if tool is None:
            self._stop_settrace()
            return
        for code_id, lines in self._code_lines.items():  # their lines stay on, each disabled once hit: see _arm
            seen = self._seen.get(code_id)
            if seen is None:
                seen = self._seen[code_id] = set()
            seen |= lines
        self._flush_code_lines()

    # -- sys.settrace (before 3.12) -----------------------------------------
    def _local_tracer(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            key = function_key(frame.f_code)
            lines = self.hits.get(key)
            if lines is None:
                lines = self.hits[key] = set()
            lines.add(frame.f_lineno)
        return self._local_tracer

    def _global_tracer(self, frame: Any, event: str, arg: Any) -> Any:
        if event != "call" or not self._is_call_target(frame.f_code) or _importing(frame):
            return None
        self._enter_code(frame.f_code)
        return self._local_tracer

    def _start_settrace(self, stack: list) -> None:
        self._saved_trace = sys.gettrace()
        for f in stack:
            self._enter_code(f.f_code)
            self.hits[function_key(f.f_code)].add(f.f_lineno)
            f.f_trace = self._local_tracer
        sys.settrace(self._global_tracer)
        threading.settrace(self._global_tracer)
        self._traced_frames = stack

    def _stop_settrace(self) -> None:
        sys.settrace(self._saved_trace)
        threading.settrace(self._saved_trace)
        for f in getattr(self, "_traced_frames", []):
            try:
                f.f_trace = None
            except Exception:
                pass
        self._traced_frames = []
        self._saved_trace = None


#: the collector holding the sys.monitoring tool id, if any
_monitoring_owner: LineCollector | None = None
