"""Run the cases of several sources on a worker pool: what ``audit``, ``ci`` and the pytest plugin call.

:func:`run_sources` discovers every source in a worker, then runs each case's
layers in a worker (preferring one that already imported its module), and
returns the reports in declared order. A source whose import ends or hangs its
worker is GC004 / GC007 for that source; a case that kills or stalls its worker
is GC006 / GC007 for the layer it was in. The parent never imports case code
(nor torch, when no GPU can be present).
"""

from __future__ import annotations

import atexit
import dataclasses
import glob
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from graphcheck import rules
from graphcheck.findings import Finding
from graphcheck.layers import LayerResult, LayerStatus
from graphcheck.workers.pool import Fault, Slot, Task, WorkerPool

LAYERS = ("trace", "capture")
#: a worker's own time limit (the trace layer's timer, graphcheck.trace.deadline) fires first and keeps the
#: worker; the pool kills it only this much later (a case stuck in C code, or in the capture layer)
KILL_GRACE = 10.0
ProgressFn = Callable[[str, int, int], None]


@dataclasses.dataclass
class CaseRun:
    source: str  # "<module or file>::<case name>"
    name: str
    report: Any  # graphcheck.api.Report
    seconds: float


def _env_int(name: str) -> int | None:
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return None
    return value if value > 0 else None


def cuda_device_count() -> int:
    """Visible CUDA devices; 0 without importing torch where no NVIDIA device node exists."""
    if sys.platform.startswith("linux") and not glob.glob("/dev/nvidia[0-9]*") and not os.path.exists("/dev/dxg"):
        return 0
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return 0
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        return 0


def plan_slots(mode: Any, wanted: int, workers: int | None = None) -> list[Slot]:
    """Worker slots for ``mode`` (``auto|off|on``) and at most ``wanted`` concurrent tasks.

    CPU: one worker per core (``GRAPHCHECK_WORKERS`` or ``workers`` overrides),
    Triton in its interpreter. GPU: ``GRAPHCHECK_WORKERS_PER_GPU`` workers per
    device (default: the cores per device, at most 8), each pinned to its
    device with ``CUDA_VISIBLE_DEVICES``.
    """
    mode, wanted = str(mode), max(1, wanted)
    limit = workers or _env_int("GRAPHCHECK_WORKERS")
    devices = cuda_device_count() if mode != "off" else 0
    cores = os.cpu_count() or 1
    if devices == 0:
        n = min(limit or min(cores, 8), wanted)
        return [Slot.of("cpu", TRITON_INTERPRET="1")] * n
    from graphcheck.capture.devices import child_visible_devices

    per_gpu = _env_int("GRAPHCHECK_WORKERS_PER_GPU") or max(1, min(8, cores // devices))
    n = min(limit or per_gpu * devices, wanted)
    return [Slot.of(f"cuda:{i % devices}", CUDA_VISIBLE_DEVICES=child_visible_devices(i % devices))
            for i in range(n)]


def session_slot(gpu: str) -> Slot:
    """The one slot of a pytest process: the CPU, or the GPU of its pytest-xdist worker (gwN -> N % devices)."""
    devices = cuda_device_count() if gpu != "off" else 0
    if devices == 0:
        return Slot.of("cpu", TRITON_INTERPRET="1")
    from graphcheck.capture.devices import child_visible_devices, pick_device

    index = pick_device(devices)
    return Slot.of(f"cuda:{index}", CUDA_VISIBLE_DEVICES=child_visible_devices(index))


_shared: WorkerPool | None = None


def _close_shared() -> None:
    global _shared
    if _shared is not None:
        _shared.close(graceful=False)
        _shared = None


def shared_pool(slots: list[Slot]) -> WorkerPool:
    """A pool kept for this process (workers stay warm between audits); replaced when the slots differ."""
    global _shared
    if _shared is not None and not _shared.compatible(slots):
        _close_shared()
    if _shared is None:
        _shared = WorkerPool(slots)
        atexit.register(_close_shared)
    return _shared


def _finding(code: str, message: str, path: str, line: int, function: str | None, layer: str,
             case: str | None, **evidence: Any) -> Finding:
    return rules.make_finding(code, message, path=path, line=line, function=function, layer=layer, case=case,
                              evidence={k: v for k, v in evidence.items() if v})


def _source_path(source: str) -> str:
    if source.endswith(".py") or os.sep in source:
        return source
    try:
        import importlib.util

        spec = importlib.util.find_spec(source)
        if spec is not None and spec.origin:
            return spec.origin
    except Exception:
        pass
    return source


def _import_fault(source: str, fault: Fault, timeout: float) -> Finding:
    if fault.kind == "timeout":
        return _finding("GC007", f"importing {source} did not finish within {timeout:g} s; the worker was killed "
                        "and its cases were not run", _source_path(source), 1, None, "trace", None,
                        timeout_s=timeout, stderr_tail=fault.stderr_tail)
    if fault.error:
        return _finding("GC003", f"the worker could not discover {source}: {fault.error}", _source_path(source), 1,
                        None, "trace", None, traceback=fault.stderr_tail)
    return _finding("GC004", f"importing {source} ended the worker process ({fault.detail}); its cases were not run",
                    _source_path(source), 1, None, "trace", None, exit=fault.detail, returncode=fault.returncode,
                    stderr_tail=fault.stderr_tail)


def _case_fault(name: str, where: list, layers: Sequence[str], fault: Fault, timeout: float) -> Any:
    from graphcheck.api import Report

    report = Report.from_dict(fault.partial) if fault.partial else Report(case=name)
    report.case = name
    layer = fault.layer or layers[0]
    path, line, function = (where + ["<unknown>", 0, None])[:3] if where else ("<unknown>", 0, None)
    if fault.kind == "timeout":
        finding = _finding("GC007", f"case {name!r} did not finish the {layer} layer within {timeout:g} s; its worker "
                           "was killed (a hang, a device-side spin, or far too slow)", path, line, function, layer,
                           name, timeout_s=timeout, stderr_tail=fault.stderr_tail)
    elif fault.error:
        finding = _finding("GC003", f"the {layer} layer of case {name!r} failed in its worker: {fault.error}", path,
                           line, function, layer, name, traceback=fault.stderr_tail)
    else:
        finding = _finding("GC006", f"the worker running the {layer} layer of case {name!r} {fault.detail} before "
                           "reporting a result", path, line, function, layer, name, exit=fault.detail,
                           returncode=fault.returncode, stderr_tail=fault.stderr_tail)
    report.findings.append(finding)
    report.layers[layer] = LayerResult(LayerStatus.FAIL)
    after = list(layers)[list(layers).index(layer) + 1:] if layer in layers else []
    for rest in after:
        note = f"not run: the case {'hung' if fault.kind == 'timeout' else 'crashed'} in the {layer} layer"
        report.layers[rest] = LayerResult.skipped(note)
        report.skipped.append(f"{name}: {note}")
    return report


def start_pool(gpu: str, sources: int, workers: int | None = None) -> WorkerPool:
    """A pool sized for ``sources`` modules; its workers start importing torch now (overlapping the lint)."""
    return WorkerPool(plan_slots(gpu, sources, workers))


def run_sources(sources: Sequence[str], gpu: str = "auto", examples: int = 4, timeout: float = 120.0,
                progress: ProgressFn | None = None, layers: Sequence[str] = LAYERS,
                workers: int | None = None, pool: WorkerPool | None = None) -> tuple[list[CaseRun], list[Finding]]:
    """Discover and check every case of ``sources`` in workers; (case runs in declared order, source findings).

    ``gpu`` is :func:`graphcheck.check`'s mode (``auto|off|on``).
    """
    from graphcheck.api import Report

    sources = list(dict.fromkeys(sources))
    gpu = str(gpu)
    if not sources:
        return [], []
    own = pool is None
    full = plan_slots(gpu, 1 << 16, workers)
    if pool is None:
        pool = WorkerPool(full[:len(sources)])
    interpret = True if gpu == "off" else None
    common = {"cwd": os.getcwd(), "sys_path": [p for p in sys.path if p]}
    problems: list[Finding] = []
    order: dict[str, int] = {}
    runs: dict[str, CaseRun] = {}
    where: dict[str, list] = {}
    started: dict[int, float] = {}
    total = 0
    try:
        for source in sources:
            pool.submit(Task("discover", dict(common, source=source, interpret=interpret), timeout, affinity=source))
        for task, outcome in pool.results():
            source = task.payload["source"]
            if task.kind == "discover":
                if isinstance(outcome, Fault):
                    problems.append(_import_fault(source, outcome, timeout))
                    continue
                problems += [Finding.from_dict(d) for d in outcome.get("findings", [])]
                for entry in outcome.get("cases", []):
                    order[entry["id"]] = len(order)
                    where[entry["id"]] = entry.get("where") or []
                    total += 1
                    t = pool.submit(Task("check", dict(common, source=source, case=entry["name"], gpu=gpu,
                                                       examples=examples, timeout=timeout, layers=list(layers),
                                                       interpret=interpret, case_id=entry["id"]),
                                         timeout + KILL_GRACE, affinity=source))
                    started[t.id] = time.perf_counter()
                if pool.compatible(full[:len(pool.slots)]):
                    pool.grow(full[:total])
                continue
            case_id, name = task.payload["case_id"], task.payload["case"]
            if isinstance(outcome, Fault):
                report = _case_fault(name, where.get(case_id, []), layers, outcome, timeout)
            else:
                report = Report.from_dict(outcome)
            report.findings.sort(key=lambda f: f.sort_key())
            runs[case_id] = CaseRun(case_id, name, report, time.perf_counter() - started.get(task.id, 0.0))
            if progress:
                progress(name, len(runs), total)
    finally:
        if own:
            pool.close(graceful=True)
    return [runs[k] for k in sorted(runs, key=lambda k: order[k])], problems


def _one(pool: WorkerPool, task: Task) -> dict[str, Any] | Fault:
    pool.submit(task)
    outcome: dict[str, Any] | Fault = {}
    for done, result in pool.results():
        if done is task:
            outcome = result
    return outcome


def discover_source(pool: WorkerPool, source: str, gpu: str = "auto",
                    timeout: float = 120.0) -> tuple[list[dict[str, Any]], list[Finding]]:
    """Import ``source`` in a worker: (cases as ``{"id", "name", "where"}``, findings)."""
    interpret = True if gpu == "off" else None
    outcome = _one(pool, Task("discover", {"cwd": os.getcwd(), "sys_path": [p for p in sys.path if p],
                                           "source": source, "interpret": interpret}, timeout, affinity=source))
    if isinstance(outcome, Fault):
        return [], [_import_fault(source, outcome, timeout)]
    return list(outcome.get("cases", [])), [Finding.from_dict(d) for d in outcome.get("findings", [])]


def check_case(pool: WorkerPool, source: str, case: dict[str, Any], layers: Sequence[str], gpu: str = "auto",
               examples: int = 4, timeout: float = 120.0) -> Any:
    """Run ``layers`` of one discovered case (an entry of :func:`discover_source`) in a worker: its Report."""
    from graphcheck.api import Report

    interpret = True if gpu == "off" else None
    payload = {"cwd": os.getcwd(), "sys_path": [p for p in sys.path if p], "source": source, "case": case["name"],
               "gpu": gpu, "examples": examples, "timeout": timeout, "layers": list(layers), "interpret": interpret,
               "case_id": case["id"]}
    outcome = _one(pool, Task("check", payload, timeout + KILL_GRACE, affinity=source))
    if isinstance(outcome, Fault):
        return _case_fault(case["name"], case.get("where") or [], layers, outcome, timeout)
    report = Report.from_dict(outcome)
    report.findings.sort(key=lambda f: f.sort_key())
    return report
