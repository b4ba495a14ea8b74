"""The trace recorder, plus what a capture map needs about each launch.

:class:`CaptureRecorder` is :class:`graphcheck.trace.recorder.Recorder` (sync ops
with their user line, every Triton launch with grid, scalars and constexprs)
that also notes, per launch, the stream it went to and whether that stream was
capturing, the shapes of its tensor arguments (to tell shape-derived arguments
from value-derived ones across captures), and the user call stack (so a launch
inside a kernel wrapper is also attributed to the engine line that called it).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from graphcheck.trace.frames import Location, is_user_file
from graphcheck.trace.recorder import Launch, Recorder

_GRAPHCHECK_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
STACK_DEPTH = 8


def _own_dirs() -> tuple[str, ...]:
    """graphcheck's package folder and its bundled kernels' folder (mapped from elsewhere in a checkout)."""
    dirs = [_GRAPHCHECK_DIR]
    try:
        import graphcheck.kernels as bundled

        dirs.append(os.path.dirname(os.path.abspath(bundled.__file__)) + os.sep)
    except Exception:
        pass
    return tuple(dirs)


def user_stack(frame: Any, depth: int = STACK_DEPTH) -> list[Location]:
    """User frames from ``frame`` outwards (innermost first), at most ``depth``."""
    out: list[Location] = []
    f = frame
    while f is not None and len(out) < depth:
        code = f.f_code
        if is_user_file(code.co_filename):
            out.append(Location(code.co_filename, f.f_lineno, getattr(code, "co_qualname", code.co_name)))
        f = f.f_back
    return out


def caller_location(stack: list[Location], fallback: Location) -> Location:
    """The innermost frame outside graphcheck's own package (its bundled kernels included)."""
    own = _own_dirs()
    for loc in stack:
        if not os.path.abspath(loc.path).startswith(own):
            return loc
    return fallback


def current_stream() -> tuple[int | None, bool | None]:
    """(the current CUDA stream handle, whether it is capturing), or (None, None) without CUDA."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None, None
    try:
        if not torch.cuda.is_available():
            return None, None
        return int(torch.cuda.current_stream().cuda_stream), bool(torch.cuda.is_current_stream_capturing())
    except Exception:
        return None, None


def tensor_meta(tensor: Any) -> dict[str, Any]:
    try:
        return {"shape": list(tensor.shape), "stride": list(tensor.stride()),
                "dtype": str(tensor.dtype).replace("torch.", "")}
    except Exception:
        return {}


class CaptureRecorder(Recorder):
    """A trace :class:`Recorder` whose launches also carry stream, tensor shapes and call stack."""

    def _launch(self, plan: dict, loc: Location) -> Launch:
        launch = super()._launch(plan, loc)
        stream, capturing = current_stream()
        launch.stream = stream
        launch.capturing = capturing  # type: ignore[attr-defined]
        launch.tensor_meta = {name: tensor_meta(t) for name, t in plan["tensors"].items()}  # type: ignore[attr-defined]
        launch.stack = user_stack(sys._getframe(1))  # type: ignore[attr-defined]
        return launch
