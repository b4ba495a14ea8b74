"""The kernels one eager call launches, by name, from ``torch.profiler`` (CUPTI).

The profiler sees every kernel on every stream of the process, including ones a
library such as cupy launches on the legacy default stream, which no dispatch
mode sees. Triton kernels appear under their ``@triton.jit`` function name;
ATen kernels as demangled C++ signatures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphcheck.capture.nodes import is_kernel_activity


def _device_event_names(prof: Any) -> list[str]:
    import torch

    names: list[str] = []
    raw = getattr(getattr(prof, "profiler", None), "kineto_results", None)
    if raw is not None:
        for event in raw.events():
            try:
                if event.device_type() == torch.autograd.DeviceType.CUDA:
                    names.append(event.name())
            except Exception:
                continue
    if not names:
        for event in prof.events() or ():
            if getattr(event, "device_type", None) == torch.autograd.DeviceType.CUDA:
                names.append(event.name)
            for kernel in getattr(event, "kernels", ()) or ():
                names.append(getattr(kernel, "name", ""))
    return [n for n in names if n and is_kernel_activity(n)]


def eager_kernel_names(call: Callable[[], Any]) -> list[str]:
    """Names of the kernels launched by ``call()`` (run once, synchronized), in order.

    Raises RuntimeError when the profiler cannot record device activity here.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    if ProfilerActivity.CUDA not in torch.profiler.supported_activities():
        raise RuntimeError("torch.profiler has no CUDA activity on this build")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    return _device_event_names(prof)
