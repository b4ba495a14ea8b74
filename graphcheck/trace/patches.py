"""Python-level hooks for what the dispatcher never sees.

``.tolist()``, ``.numpy()``, ``.cpu()`` of a CPU tensor, and explicit device,
stream and event synchronizes never reach a ``TorchDispatchMode``. While at least
one :class:`~graphcheck.trace.recorder.Recorder` is active they are wrapped; the
wrappers tell the recorders active in the calling thread and then call the
original. Installation is reference-counted under a lock and undone when the
last recorder exits.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from typing import Any

from graphcheck.trace import hooks

_lock = threading.Lock()
_installed = 0

# re-exported: the recorder pushes and pops itself here
active_recorders, push, pop, quiet, quiet_depth = (hooks.active_recorders, hooks.push, hooks.pop, hooks.quiet,
                                                   hooks.quiet_depth)


def _notify(code: str, op: str, detail: str, tensor_device: str | None = None) -> None:
    if quiet_depth():
        return
    for rec in active_recorders():
        if tensor_device == "cpu" and getattr(rec, "device_type", "cpu") != "cpu":
            continue  # a host tensor read on the host: no sync when the case runs on a GPU
        rec._python_event(code, op, detail)


_wrap = hooks.wrap


def _called_from_torch(frame: Any) -> bool:
    import torch

    root = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    return os.path.abspath(frame.f_code.co_filename).startswith(root)


def _tensor_method(code: str, op: str, detail: str, only_cpu: bool = False):
    def make(original):
        @functools.wraps(original)
        def wrapper(self, *args, **kwargs):
            device = self.device.type
            if not only_cpu or device == "cpu":
                _notify(code, op, detail, device)
            with quiet():
                return original(self, *args, **kwargs)

        return wrapper

    return make


def _sync_function(op: str, detail: str, skip_without_cuda: bool):
    def make(original):
        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            # torch's own callers (torch.cuda.graph synchronizes before capture begins) are not the user's sync
            if not _called_from_torch(sys._getframe(1)):
                _notify("GC110", op, detail)
            if skip_without_cuda:
                import torch

                if not torch.cuda.is_available():
                    return None  # the hazard is recorded; there is nothing to wait for on the CPU
            return original(*args, **kwargs)

        return wrapper

    return make


def _thread_start(original):
    """``Thread.start`` that hands the starting thread's recorders to the new thread.

    Dispatch modes and the recorder stack are per thread; a wrapper that calls
    ``.item()`` in a ``threading.Thread`` or a ``ThreadPoolExecutor`` worker
    started while the case runs is still seen. A thread started before the case
    (a pool made at import) is not.
    """

    @functools.wraps(original)
    def start(self, *args, **kwargs):
        recorders = [r for r in active_recorders() if getattr(r, "active", False)]
        if recorders and not quiet_depth():
            run = self.run

            def run_recorded():
                modes = []
                for rec in recorders:
                    push(rec)
                    mode = rec.new_mode()
                    mode.__enter__()
                    modes.append(mode)
                try:
                    return run()
                finally:
                    for rec, mode in zip(reversed(recorders), reversed(modes)):
                        mode.__exit__(None, None, None)
                        pop(rec)

            self.run = run_recorded
        return original(self, *args, **kwargs)

    return start


def _install() -> None:
    import torch

    _wrap(torch.Tensor, "tolist", _tensor_method("GC103", "Tensor.tolist", "`.tolist()` copies the tensor to a Python "
                                                                           "list"))
    _wrap(torch.Tensor, "numpy", _tensor_method("GC104", "Tensor.numpy", "`.numpy()` copies the tensor to the host"))
    _wrap(torch.Tensor, "cpu",
          _tensor_method("GC104", "Tensor.cpu", "`.cpu()` copies the tensor to the host", only_cpu=True))
    cuda = torch.cuda
    _wrap(cuda, "synchronize", _sync_function("torch.cuda.synchronize", "a device-wide synchronize", True))
    for cls_name in ("Stream", "Event"):
        cls = getattr(cuda, cls_name, None)
        if isinstance(cls, type) and "synchronize" in cls.__dict__:
            _wrap(cls, "synchronize", _sync_function(f"torch.cuda.{cls_name}.synchronize", f"a {cls_name.lower()} "
                                                                                           "synchronize", True))
    _wrap(threading.Thread, "start", _thread_start)
    accel = getattr(torch, "accelerator", None)
    if accel is not None and hasattr(accel, "synchronize"):
        _wrap(accel, "synchronize", _sync_function("torch.accelerator.synchronize", "a device-wide synchronize", True))


def acquire() -> None:
    global _installed
    with _lock:
        if _installed == 0:
            from graphcheck.trace import launches

            _install()
            launches.install()
        _installed += 1


def release() -> None:
    global _installed
    with _lock:
        _installed -= 1
        if _installed == 0:
            hooks.restore_all()
