"""The trace recorder: every dispatched op and every Triton launch of a call.

::

    with Recorder(tensors=inputs) as rec:
        fn(**inputs)
    rec.sync_events   # ops that synchronize with the host, each with a GC code
    rec.launches      # every Triton launch with its grid, constexprs, scalars, pointers

The recorder never reads tensor values, never allocates on the device and never
synchronizes, so it can run inside ``torch.cuda.graph(...)`` capture: it looks
only at op names, dtypes, devices, shapes and data pointers.
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
from collections.abc import Mapping
from typing import Any

from graphcheck.trace import patches
from graphcheck.trace.frames import Location, source_line, user_location
from graphcheck.trace.syncops import classify, op_name

_LIFT = ("aten::lift_fresh", "aten::lift_fresh_copy", "aten::lift")
_COPIES = ("aten::_to_copy", "aten::copy_", "aten::to", "aten::_copy_from")


@dataclasses.dataclass
class OpEvent:
    op: str
    code: str | None
    path: str
    line: int
    function: str | None
    detail: str = ""
    seq: int = 0


@dataclasses.dataclass
class Launch:
    kernel: str
    grid: tuple
    constexprs: dict
    scalars: dict
    #: argument name -> (input/output name or None, byte offset or None)
    pointers: dict
    compiled: bool | None
    path: str
    line: int
    function: str | None
    autotuned: bool = False
    seq: int = 0
    raw_pointers: dict = dataclasses.field(default_factory=dict, repr=False)
    #: the CUDA stream (``cuda_stream`` handle) current at launch, None for CPU tensors; the capture
    #: layer names a launch that escaped the graph by it
    stream: int | None = None

    def plan(self) -> dict[str, Any]:
        """What must not change between calls with different values."""
        return {"kernel": self.kernel, "grid": self.grid, "constexprs": self.constexprs,
                "scalars": self.scalars, "pointers": self.pointers}


class Recorder:
    """Context manager recording ops and launches of the code run inside it.

    ``tensors`` names the case's inputs and outputs so pointer arguments can be
    reported as ``(name, byte offset)``; :meth:`name_tensors` adds names later
    (e.g. the returned outputs) and resolves the pointers recorded so far.
    """

    def __init__(self, tensors: Mapping[str, Any] | None = None, device_type: str = "cpu") -> None:
        #: the case's device type; a CPU tensor passed to a launch is GC305 when it is not "cpu"
        self.device_type = device_type
        self.events: list[OpEvent] = []
        self.launches: list[Launch] = []
        self._counter = itertools.count()
        self._named: list[tuple[str, int, int, int]] = []
        self._fresh: list[tuple[Any, OpEvent]] = []
        self._mode: Any = None
        self.active = False
        self.name_tensors(tensors or {})

    # -- public views ---------------------------------------------------------
    @property
    def sync_events(self) -> list[OpEvent]:
        return [e for e in self.events if e.code]

    @property
    def ops(self) -> list[str]:
        return [e.op for e in self.events]

    def sequence(self) -> list[str]:
        """Ops and launches in call order, as ``op:<name>`` / ``launch:<kernel>``."""
        items = [(e.seq, f"op:{e.op}") for e in self.events]
        items += [(launch.seq, f"launch:{launch.kernel}") for launch in self.launches]
        return [name for _, name in sorted(items)]

    def timeline(self) -> list[tuple[str, Location]]:
        """Like :meth:`sequence`, with the user location of each entry."""
        items = [(e.seq, f"op:{e.op}", Location(e.path, e.line, e.function)) for e in self.events]
        items += [(launch.seq, f"launch:{launch.kernel}", Location(launch.path, launch.line, launch.function))
                  for launch in self.launches]
        return [(label, loc) for _, label, loc in sorted(items, key=lambda t: t[0])]

    def name_tensors(self, tensors: Mapping[str, Any]) -> None:
        for name, value in _flatten(tensors):
            try:
                storage = value.untyped_storage()
                start = storage.data_ptr()
                self._named.append((name, start, start + storage.nbytes(), value.data_ptr()))
            except Exception:
                continue
        for launch in self.launches:
            for arg, ptr in launch.raw_pointers.items():
                if launch.pointers.get(arg, (None, None))[0] is None:
                    launch.pointers[arg] = self._resolve(ptr)

    # -- context manager -------------------------------------------------------
    def new_mode(self) -> Any:
        """A dispatch mode that records into this recorder (one per thread: torch's modes are thread-local)."""
        from torch.utils._python_dispatch import TorchDispatchMode

        recorder = self

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if patches.quiet_depth() or not recorder.active:
                    return func(*args, **kwargs)
                event = recorder._op(func, args, kwargs, sys._getframe(1))
                out = func(*args, **kwargs)
                if event is not None and event.op in _LIFT:
                    recorder._fresh.append((out, event))
                return out

        return _Mode()

    def __enter__(self) -> Recorder:
        patches.acquire()
        patches.push(self)
        self._mode = self.new_mode()
        try:
            self._mode.__enter__()
        except BaseException:
            patches.pop(self)
            patches.release()
            raise
        self.active = True
        return self

    def __exit__(self, *exc: Any) -> None:
        self.active = False  # a thread started inside keeps its mode; it records nothing more
        try:
            self._mode.__exit__(*exc)
        finally:
            patches.pop(self)
            patches.release()
            self._fresh_refs_done()

    # -- callbacks ------------------------------------------------------------
    def _next(self) -> int:
        return next(self._counter)

    def _op(self, func: Any, args: tuple, kwargs: dict, frame: Any) -> OpEvent | None:
        loc = user_location(frame)
        name = op_name(func)
        # only a scalar read is told apart by its source line; reading it for every op costs
        code, detail = classify(func, args, kwargs,
                                source_line(loc.path, loc.line) if name == "aten::_local_scalar_dense" else "")
        if code and self.device_type != "cpu" and not _touches_device(args, kwargs):
            code, detail = None, ""  # a host tensor read on the host: no sync when the case runs on a GPU
        if code is None and name in _COPIES:
            src = args[1] if name == "aten::copy_" and len(args) > 1 else (args[0] if args else None)
            fresh = self._fresh_event(src)
            # `t[i] = 1.0` wraps the scalar in a 0-dim host tensor and copy_s it: a fill, not a copy of host data.
            if fresh is not None and not (name == "aten::copy_" and getattr(src, "dim", lambda: 1)() == 0):
                self._flag_fresh(fresh, f"{name} at {_short(loc)}")
        event = OpEvent(name, code, loc.path, loc.line, loc.function, detail, self._next())
        self.events.append(event)
        return event

    def _python_event(self, code: str, op: str, detail: str) -> None:
        if not self.active:
            return
        loc = user_location(sys._getframe(1))
        self.events.append(OpEvent(op, code, loc.path, loc.line, loc.function, detail, self._next()))

    def _launch(self, plan: dict, loc: Location) -> Launch:
        pointers, raw = {}, {}
        for arg, tensor in plan["tensors"].items():
            try:
                ptr = tensor.data_ptr()
            except Exception:
                continue
            raw[arg] = ptr
            pointers[arg] = self._resolve(ptr)
            fresh = self._fresh_event(tensor)
            if fresh is not None:
                self._flag_fresh(fresh, f"argument {arg!r} of kernel {plan['kernel']} at {_short(loc)}")
            if tensor.device.type == "cpu" and not _cpu_case(self):
                self.events.append(OpEvent(f"launch:{plan['kernel']}", "GC305", loc.path, loc.line, loc.function,
                                           f"CPU tensor passed as argument {arg!r} of kernel {plan['kernel']}",
                                           self._next()))
        launch = Launch(plan["kernel"], plan["grid"], plan["constexprs"], plan["scalars"], pointers, None,
                        loc.path, loc.line, loc.function, seq=self._next(), raw_pointers=raw,
                        stream=_launch_stream(plan["tensors"].values()))
        self.launches.append(launch)
        return launch

    def _collapse_autotune(self, mark: int, tuned: bool) -> None:
        """Keep only the real launch of an autotuned call, not its benchmark runs."""
        inner = self.launches[mark:]
        if not inner:
            return
        last = inner[-1]
        del self.launches[mark:-1]
        if tuned:
            last.autotuned = True
            last.compiled = True

    # -- helpers --------------------------------------------------------------
    def _resolve(self, ptr: int) -> tuple[str | None, int | None]:
        best: tuple[str | None, int | None] = (None, None)
        for name, start, end, data in self._named:
            if start <= ptr < end or ptr == start:
                offset = ptr - data
                if best[0] is None or (offset >= 0 and (best[1] is None or best[1] < 0 or offset < best[1])):
                    best = (name, offset)
        return best

    def _fresh_event(self, tensor: Any) -> OpEvent | None:
        if not self._fresh or tensor is None or not hasattr(tensor, "untyped_storage"):
            return None
        try:
            ptr = tensor.untyped_storage().data_ptr()
        except Exception:
            return None
        for fresh, event in self._fresh:
            try:
                if fresh.untyped_storage().data_ptr() == ptr:
                    return event
            except Exception:
                continue
        return None

    def _flag_fresh(self, event: OpEvent, use: str) -> None:
        if event.code is None:
            event.code = "GC301"
            event.detail = f"a tensor built on the host from Python data in this call is used by the device ({use})"

    def _fresh_refs_done(self) -> None:
        self._fresh = []


def _launch_stream(tensors: Any) -> int | None:
    """The current stream of the first CUDA tensor's device (Triton launches on the current stream)."""
    for tensor in tensors:
        device = getattr(tensor, "device", None)
        if device is not None and device.type == "cuda":
            try:
                import torch

                return int(torch.cuda.current_stream(device).cuda_stream)
            except Exception:
                return None
    return None


def _touches_device(args: tuple, kwargs: dict) -> bool:
    import torch

    for value in list(args) + list(kwargs.values()):
        items = value if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            if isinstance(item, torch.Tensor) and item.device.type != "cpu":
                return True
    return False


def _short(loc: Location) -> str:
    import os

    return f"{os.path.basename(loc.path)}:{loc.line}"


def _cpu_case(recorder: Recorder) -> bool:
    # A CPU tensor passed to a launch only matters when the case runs on a GPU.
    from graphcheck.trace.launches import routing

    return routing() or getattr(recorder, "device_type", "cpu") == "cpu"


def _flatten(tensors: Any, prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    if isinstance(tensors, Mapping):
        for key, value in tensors.items():
            out += _flatten(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(tensors, (list, tuple)):
        for i, value in enumerate(tensors):
            out += _flatten(value, f"{prefix}[{i}]")
    elif hasattr(tensors, "untyped_storage"):
        out.append((prefix, tensors))
    return out
