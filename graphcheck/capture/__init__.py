"""graphcheck.capture: the GPU layer. Capture a case, inspect the graph, replay it on new values.

``check_capture(case)`` warms the case up on a side stream, captures it into a
``torch.cuda.CUDAGraph(keep_graph=True)`` under the trace recorder (so a failed
capture names the op and line, plus the CUDA error), lists the graph's nodes with
``cuda.bindings`` and compares them with the kernels an eager call launches
(escaped kernels GC203, empty graph GC204), then replays the graph on fresh
seeds against eager (GC406, GC505, GC304). By default each case runs in its own
process with a timeout (GC006 crash, GC007 hang).

Modules: ``errors`` (CUDA error mapping), ``nodes`` (graph nodes, kernel name
matching), ``eager_kernels`` (profiler), ``replay`` (poison and compare),
``watch`` (recorder adapter, stream watch), ``locations``, ``runner`` (the
in-process check), ``locate``/``isolate``/``worker`` (the subprocess),
``devices`` (one GPU per pytest-xdist worker). Nothing imports torch until used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphcheck.case import Case

if TYPE_CHECKING:
    from graphcheck.findings import Finding

__all__ = ["check_capture"]


def check_capture(
    case: Case,
    *,
    examples: int = 8,
    timeout: float = 120.0,
    isolate: bool = True,
    capture_error_mode: str = "global",
    device: int | None = None,
) -> tuple[list[Finding], list[str]]:
    """Run the capture layer on ``case``: (findings with layer "capture", notes).

    Raises :class:`graphcheck.layers.LayerSkipped` when the layer cannot run at all
    (no CUDA device, here or in the isolated process).

    ``isolate=True`` runs the case in a child process killed after ``timeout``
    seconds; a case that another process cannot import (built inside a function)
    runs in this process instead, and ``skipped`` says so. ``device`` is a visible
    device index; by default the pytest-xdist worker's (gwN -> N % device count) or 0.
    """
    if not isinstance(case, Case):
        raise TypeError(f"check_capture expects a graphcheck.Case, got {type(case).__name__}")
    if capture_error_mode not in ("global", "thread_local", "relaxed"):
        raise ValueError(f"capture_error_mode must be global, thread_local or relaxed, not {capture_error_mode!r}")
    import torch

    if not torch.cuda.is_available():
        from graphcheck.layers import LayerSkipped

        raise LayerSkipped("no CUDA device")
    skipped: list[str] = []
    ref = None
    if isolate:
        from graphcheck.capture.locate import case_reference

        ref = case_reference(case)
        if ref is None:
            skipped.append(
                f"{case.name}: isolation skipped: the case is not declared in an importable module "
                "(GRAPHCHECK_CASES / graphcheck_cases()), so it ran in this process without a timeout"
            )
    if ref is None:
        from graphcheck.capture.runner import run_case

        findings, more = run_case(case, examples=examples, capture_error_mode=capture_error_mode, device=device)
        return findings, skipped + more

    from graphcheck.capture.devices import child_visible_devices, pick_device
    from graphcheck.capture.isolate import run_in_subprocess
    from graphcheck.capture.locations import function_location

    index = pick_device(torch.cuda.device_count(), device)
    loc = function_location(case.fn)
    findings, more = run_in_subprocess(
        ref,
        ["--examples", str(examples), "--capture-error-mode", capture_error_mode, "--device", "0"],
        timeout=timeout,
        location=(loc.path, loc.line, loc.function),
        extra_env={"CUDA_VISIBLE_DEVICES": child_visible_devices(index)},
    )
    return findings, skipped + more
