"""Where a kernel that escaped the graph was launched: its line, its name and its stream.

A capture that "succeeds" with an empty graph (GC204), or without a kernel an
eager call runs (GC203), ran that kernel once, eagerly, on a stream that was not
capturing. To name the launch, the capture layer records every launch it can see
while the case is captured:

- Triton launches (the trace recorder notes the current stream of each),
- cupy ``RawKernel`` launches: once a case whose module uses cupy is checked on
  a GPU, ``cupy.RawKernel`` is a subclass that notes each launch's ``stream=``
  (``Stream.null`` is the legacy default stream) and line (kernels made before
  that, or through ``RawModule.get_function``, stay invisible),
- calls into compiled extensions (``torch.utils.cpp_extension.load_inline``,
  pybind11 modules): a profile hook notes each call and its line; the stream
  the C++ code picks is not visible, so such a call is named as the likely
  launcher when nothing better matches,
- ATen ops on another stream (the stream watch, :mod:`graphcheck.capture.watch`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

from graphcheck.capture.locations import Location, user_location

LEGACY, LEGACY_EXPLICIT, PER_THREAD = 0, 1, 2


@dataclasses.dataclass
class LaunchNote:
    kernel: str
    location: Location
    stream: int | None  # None: not visible (an extension call)
    via: str  # "triton" | "cupy" | "extension" | "aten"


def stream_name(stream: int | None) -> str:
    if stream in (LEGACY, LEGACY_EXPLICIT):
        return "the legacy default stream"
    if stream == PER_THREAD:
        return "the per-thread default stream"
    if stream is None:
        return "a stream the extension chose (not the capturing one)"
    return f"stream {stream:#x}, which was not capturing"


# --- cupy ---------------------------------------------------------------------------

_cupy_lock = threading.Lock()
_cupy_notes: list[LaunchNote] | None = None  # armed while a capture runs
_cupy_saved: Any = None  # the original cupy.RawKernel once the subclass is installed


def _cupy_stream(cupy: Any, kwargs: dict) -> int | None:
    stream = kwargs.get("stream")
    try:
        if stream is None:
            stream = cupy.cuda.get_current_stream()
        return int(stream.ptr)
    except Exception:
        return None


def _uses_cupy(case: Any) -> bool:
    module = sys.modules.get(getattr(getattr(case, "fn", None), "__module__", "") or "")
    path = getattr(module, "__file__", None)
    if not path:
        return "cupy" in sys.modules
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return "cupy" in fh.read()
    except OSError:
        return "cupy" in sys.modules


def watch_cupy(case: Any) -> bool:
    """Make ``cupy.RawKernel`` note its launches (while :func:`recording` is active), if the case uses cupy.

    Installed once per process and never removed: a kernel object is often made
    on the case's first call and cached, so the subclass must be in place before
    any layer runs the case; outside :func:`recording` it only launches.
    """
    global _cupy_saved
    if _cupy_saved is not None:
        return True
    if not _uses_cupy(case) or importlib.util.find_spec("cupy") is None:
        return False
    try:
        import cupy
    except Exception:
        return False
    original = getattr(cupy, "RawKernel", None)
    if original is None:
        return False
    try:
        class RawKernel(original):  # type: ignore[misc, valid-type]
            def __call__(self, *args: Any, **kwargs: Any) -> Any:
                notes = _cupy_notes
                if notes is not None:
                    notes.append(LaunchNote(str(getattr(self, "name", "?")), user_location(sys._getframe(1)),
                                            _cupy_stream(cupy, kwargs), "cupy"))
                return super().__call__(*args, **kwargs)
    except TypeError:  # a final extension type: its launches stay invisible
        return False
    RawKernel.__qualname__ = RawKernel.__name__ = "RawKernel"
    RawKernel.__module__ = getattr(original, "__module__", "cupy")
    with _cupy_lock:
        _cupy_saved = original
        cupy.RawKernel = RawKernel
    return True


# --- compiled extensions --------------------------------------------------------------

_SKIP_MODULES = ("torch", "builtins", "_", "numpy", "triton", "cupy", "math", "sys", "posix", "time", "itertools",
                 "functools", "operator", "collections", "graphcheck")


def _extension_function(fn: Any) -> str | None:
    module = getattr(fn, "__module__", None) or ""
    if not module or module.startswith(_SKIP_MODULES):
        return None
    owner = sys.modules.get(module)
    path = getattr(owner, "__file__", "") or ""
    if not path.endswith((".so", ".pyd", ".dylib")):
        return None
    return f"{module}.{getattr(fn, '__name__', '?')}"


@contextlib.contextmanager
def recording(case: Any) -> Iterator[list[LaunchNote]]:
    """Record cupy launches and extension calls made in this thread inside the block (the capture)."""
    global _cupy_notes
    notes: list[LaunchNote] = []
    previous = sys.getprofile()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "c_call" and len(notes) < 256:
            name = _extension_function(arg)
            if name is not None:
                notes.append(LaunchNote(name, user_location(frame), None, "extension"))

    _cupy_notes = notes
    sys.setprofile(profile)
    try:
        yield notes
    finally:
        sys.setprofile(previous)
        _cupy_notes = None


# --- attribution ------------------------------------------------------------------------


def attribute(kernel: str, triton_launches: list[Any], notes: list[LaunchNote], foreign: list[Any],
              capture_stream: int | None) -> LaunchNote | None:
    """The recorded launch that best explains ``kernel`` escaping the graph, or None."""
    def off(stream: int | None) -> bool:
        return stream is not None and stream != capture_stream

    triton = [LaunchNote(str(getattr(launch, "kernel", "")),
                         Location(launch.path, int(launch.line), getattr(launch, "function", None)),
                         getattr(launch, "stream", None), "triton") for launch in triton_launches]
    seen = triton + [n for n in notes if n.via == "cupy"]
    for note in seen:  # the kernel by name, on another stream
        if off(note.stream) and note.kernel and (note.kernel in kernel or kernel in note.kernel):
            return note
    for note in seen:  # any launch on another stream
        if off(note.stream):
            return note
    for op in foreign:  # ATen work on a stream that was not capturing
        if not getattr(op, "capturing", True):
            return LaunchNote(str(op.op), op.location, int(op.stream), "aten")
    extensions = [n for n in notes if n.via == "extension"]
    if len(extensions) == 1 or len({n.kernel for n in extensions}) == 1:
        return extensions[0]
    for note in extensions:
        short = note.kernel.rsplit(".", 1)[-1]
        if short and (short in kernel or kernel in short):
            return note
    return None


def describe(kernel: str, note: LaunchNote) -> str:
    """``kernel 'seven' was launched at ops.py:12 on the legacy default stream``."""
    where = f"{os.path.basename(note.location.path)}:{note.location.line}"
    if note.via == "extension":
        return (f"kernel {kernel!r} was most likely launched by the extension call {note.kernel}() at {where}, on a "
                "stream of the extension's choosing (a launch without a stream argument goes to the legacy default "
                "stream)")
    name = kernel if note.via == "aten" or not note.kernel else note.kernel
    return f"kernel {name!r} was launched at {where} on {stream_name(note.stream)}"
