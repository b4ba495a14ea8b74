"""The trace recorder, plus what a capture map needs about each launch.

:class:`CaptureRecorder` is :class:`graphcheck.trace.recorder.Recorder` (sync ops
with their user line, every Triton launch with grid, scalars and constexprs)
that also notes, per launch, the stream it went to and whether that stream was
capturing, the shapes of its tensor arguments (to tell shape-derived arguments
from value-derived ones across captures), and the user call stack (so a launch
inside a kernel wrapper is also attributed to the engine line that called it).

It also watches streams: an op dispatched while the current stream is not the
capturing one is noted (what the capture layer's ``StreamWatch`` does), in the
same dispatch mode, so each op pays for one Python dispatch mode, not two. The
mode class is made once per process; unless ``torch._dynamo`` is already loaded
it tells torch not to wrap ``__torch_dispatch__`` in ``torch._disable_dynamo``,
whose first call imports ``torch._dynamo`` (seconds, in the first capture of the
process) and which adds a frame-evaluation switch to every op.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from typing import Any

from graphcheck.trace import patches
from graphcheck.trace.frames import Location, is_user_file, user_location
from graphcheck.trace.recorder import _LIFT, Launch, Recorder
from graphcheck.trace.syncops import WATCHED_OPS, op_name

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


_MODE_CLASS: Any = None
#: id(OpOverload) -> (the OpOverload, its name, whether the recorder looks at it one by one: its name is
#: in WATCHED_OPS); per process. Keyed by id: an OpOverload hashes in Python, a dict lookup by it costs a call
_OP_INFO: dict[int, tuple[Any, str, bool]] = {}
#: most ops that a stream watch notes are kept; past this many only the first are
FOREIGN_LIMIT = 64


def _mode_class() -> Any:
    """The dispatch mode class of :class:`CaptureRecorder` (made once; imports torch)."""
    global _MODE_CLASS
    if _MODE_CLASS is not None:
        return _MODE_CLASS
    from torch.utils._python_dispatch import TorchDispatchMode

    wrap_for_dynamo = "torch._dynamo" in sys.modules  # a program that compiles has paid the import already

    class CaptureMode(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return wrap_for_dynamo

        def __init__(self, recorder: CaptureRecorder) -> None:
            super().__init__()
            self.recorder = recorder

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            recorder = self.recorder
            if not recorder.active or patches.quiet_depth():
                return func(*args, **kwargs)
            info = _OP_INFO.get(id(func))
            if info is None or info[0] is not func:
                name = op_name(func)
                info = _OP_INFO[id(func)] = (func, name, name in WATCHED_OPS)
            counts = recorder.op_counts
            counts[info[1]] = counts.get(info[1], 0) + 1
            watched = info[2]
            # only ops that can be a finding (syncs, copies, host-tensor lifts) are looked at one by one:
            # their user frame is walked and their event kept; any other op is counted
            event = recorder._op(func, args, kwargs, sys._getframe(1)) if watched else None
            if recorder.watch_stream is not None:
                try:
                    elsewhere = recorder._read_stream(recorder._device_index) != recorder.watch_stream
                except Exception:
                    elsewhere = False
                if elsewhere:
                    recorder._watch(func, event, sys._getframe(1))
            out = func(*args, **kwargs)
            if event is not None and event.op in _LIFT:
                recorder._fresh.append((out, event))
            return out

    _MODE_CLASS = CaptureMode
    return CaptureMode


def _raw_stream_reader() -> Any:
    """A function device index -> current raw stream handle (torch's C call where it has one)."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda index: int(torch.cuda.current_stream(index).cuda_stream)


class CaptureRecorder(Recorder):
    """A trace :class:`Recorder` whose launches also carry stream, tensor shapes and call stack.

    With ``watch_streams`` (on a CUDA device) it also lists, in :attr:`foreign`, ops that ran
    on a stream other than the one current when it was entered (the capturing stream).
    """

    def __init__(self, device_type: str = "cuda", watch_streams: bool = False) -> None:
        super().__init__(device_type=device_type)
        self.watch_streams = watch_streams
        self.watch_stream: int | None = None
        self.foreign: list[Any] = []
        #: op name (``aten::mm``) -> times dispatched (every op; only watched ones also get an event)
        self.op_counts: dict[str, int] = {}
        self._device_index = 0
        self._read_stream: Any = None

    def new_mode(self) -> Any:
        return _mode_class()(self)

    def __enter__(self) -> CaptureRecorder:
        if self.watch_streams:
            try:
                import torch

                self._device_index = torch.cuda.current_device()
                self._read_stream = _raw_stream_reader()
                self.watch_stream = int(self._read_stream(self._device_index))
            except Exception:
                self.watch_stream = None
        super().__enter__()
        return self

    def _watch(self, func: Any, event: Any, frame: Any) -> None:
        """Note an op dispatched on a stream other than the capturing one (the caller checked)."""
        if len(self.foreign) >= FOREIGN_LIMIT:
            return
        try:
            stream = int(self._read_stream(self._device_index))
        except Exception:
            return
        from graphcheck.capture.watch import StreamOp

        try:
            import torch

            capturing = bool(torch.cuda.is_current_stream_capturing())
        except Exception:
            capturing = False
        loc = Location(event.path, event.line, event.function) if event is not None else user_location(frame)
        self.foreign.append(StreamOp(str(func), stream, capturing, loc))

    def op_names(self) -> Counter:
        """How many times each op (``aten::mm``) was dispatched."""
        return Counter(self.op_counts)

    def _launch(self, plan: dict, loc: Location) -> Launch:
        launch = super()._launch(plan, loc)
        stream, capturing = current_stream()
        launch.stream = stream
        launch.capturing = capturing  # type: ignore[attr-defined]
        launch.tensor_meta = {name: tensor_meta(t) for name, t in plan["tensors"].items()}  # type: ignore[attr-defined]
        launch.stack = user_stack(sys._getframe(1))  # type: ignore[attr-defined]
        return launch
