"""What runs during a capture: the trace layer's recorder, and which stream each op used.

``open_recorder`` returns the trace layer's :class:`graphcheck.trace.recorder.Recorder`
(host-syncing ops with their user line, Triton launches) or, where that cannot
be loaded, an empty stand-in plus the reason, so the capture layer still runs.
``StreamWatch`` is a small dispatch mode that notes every op that ran on a stream
other than the one being captured (a side stream, joined or not): when the capture
fails with 901/904/905 those ops are the blame, and when it succeeds the ones on a
stream that was not capturing escaped the graph.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from graphcheck.capture.locations import Location, user_location


class NullRecorder:
    """Stands in for the trace recorder where it is unavailable: records nothing."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.sync_events: list[Any] = []
        self.launches: list[Any] = []
        self.ops: list[str] = []

    def __enter__(self) -> NullRecorder:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def open_recorder(tensors: Any = None) -> tuple[Any, str | None]:
    """(recorder, None) or (NullRecorder, why the trace recorder is not used).

    ``tensors`` names the case's inputs so launches report which input each pointer is.
    """
    try:
        from graphcheck.trace.recorder import Recorder
    except Exception as exc:  # ImportError, or the module failed to import
        return NullRecorder(), (f"trace recorder unavailable ({type(exc).__name__}: {exc}); "
                                "capture failures are blamed from the CUDA error and traceback only")
    try:
        try:
            return Recorder(tensors=tensors, device_type="cuda"), None
        except TypeError:
            return Recorder(), None
    except Exception as exc:
        return NullRecorder(), f"trace recorder could not start ({type(exc).__name__}: {exc})"


@dataclasses.dataclass(frozen=True)
class StreamOp:
    op: str
    stream: int
    capturing: bool
    location: Location


def _make_stream_watch() -> Any:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class StreamWatch(TorchDispatchMode):
        """Notes ops dispatched while the current stream is not the capture stream."""

        def __init__(self) -> None:
            super().__init__()
            self.capture_stream: int | None = None
            self.foreign: list[StreamOp] = []

        def start(self) -> None:
            self.capture_stream = torch.cuda.current_stream().cuda_stream

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if self.capture_stream is not None and len(self.foreign) < 64:
                stream = torch.cuda.current_stream()
                if stream.cuda_stream != self.capture_stream:
                    try:
                        capturing = bool(torch.cuda.is_current_stream_capturing())
                    except Exception:
                        capturing = False
                    self.foreign.append(
                        StreamOp(str(func), int(stream.cuda_stream), capturing, user_location(sys._getframe(1)))
                    )
            return func(*args, **(kwargs or {}))

    return StreamWatch()


def stream_watch() -> Any:
    """A fresh StreamWatch (imports torch)."""
    return _make_stream_watch()
