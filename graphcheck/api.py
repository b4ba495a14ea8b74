"""``graphcheck.check``: run every dynamic layer on one case and collect a report.

The trace layer always runs (on the CPU with Triton's interpreter when no GPU
is used). With ``gpu="auto"`` or ``"required"`` and a CUDA device, the trace layer
runs natively and the capture layer runs after it. Findings on lines with a
``# graphcheck: expect[...]`` marker naming their code come back ``expected``
and do not make the report fail.
"""

from __future__ import annotations

import dataclasses
import traceback
from typing import Any

from graphcheck.case import Case
from graphcheck.findings import Finding, Severity, at_or_above
from graphcheck.layers import GPU_CHOICES, GpuMode, LayerResult, LayerSkipped, LayerStatus

GPU_MODES = GPU_CHOICES


@dataclasses.dataclass
class Report:
    case: str
    findings: list[Finding] = dataclasses.field(default_factory=list)
    skipped: list[str] = dataclasses.field(default_factory=list)
    #: layer name -> its :class:`LayerResult` (status ``pass``, ``expected``, ``fail`` or ``skipped`` with a
    #: reason); ``expected``: every finding at warning or above was expected by an expect marker on its line
    layers: dict[str, LayerResult] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """No unexpected finding at warning or above."""
        return not at_or_above(self.findings, Severity.WARNING)

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.case, "ok": self.ok, "layers": {k: v.to_dict() for k, v in self.layers.items()},
                "skipped": list(self.skipped), "findings": [f.to_dict() for f in self.findings]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        """The report :meth:`to_dict` wrote (a worker process sends reports this way)."""
        return cls(case=str(data.get("case", "")), findings=[Finding.from_dict(f) for f in data.get("findings", [])],
                   skipped=[str(s) for s in data.get("skipped", [])],
                   layers={k: v if isinstance(v, LayerResult) else LayerResult.from_dict(v)
                           for k, v in data.get("layers", {}).items()})


def _status(findings: list[Finding], notes: list[str] | tuple[str, ...] = ()) -> LayerResult:
    if at_or_above(findings, Severity.WARNING):
        return LayerResult(LayerStatus.FAIL, notes=tuple(notes))
    expected = at_or_above(findings, Severity.WARNING, include_expected=True)
    return LayerResult(LayerStatus.EXPECTED if expected else LayerStatus.PASS, notes=tuple(notes))


def _marked(findings: list[Finding]) -> list[Finding]:
    from graphcheck.expectations import mark_expected

    return mark_expected(findings)


def _internal_error(case: Case, exc: BaseException, layer: str) -> Finding:
    from graphcheck.rules import make_finding
    from graphcheck.trace.frames import function_location

    return make_finding("GC003", f"the {layer} layer failed: {type(exc).__name__}: {exc}",
                        at=function_location(case.fn), layer="capture" if layer == "capture" else "trace",
                        case=case.name, evidence={"traceback": traceback.format_exc()[-4000:]})


def check(case: Case, gpu: str | GpuMode = "auto", examples: int = 4, timeout: float = 120.0, isolate: bool = True,
          layers: tuple[str, ...] = ("trace", "capture")) -> Report:
    """Run the dynamic layers on ``case``.

    ``gpu`` (a :class:`GpuMode` or its name): ``"off"`` runs on CPU tensors only
    (Triton kernels in the interpreter); ``"auto"`` uses a CUDA device when there
    is one; ``"required"`` requires one and raises :class:`RuntimeError` without
    it (``"on"``, its old name, still works). ``examples`` is the
    number of seeds (at least 2) whose launch plans are compared. ``timeout``
    bounds each layer (GC007): the capture layer's child process is killed, the
    trace layer's Python code is interrupted (:mod:`graphcheck.trace.deadline`).
    ``isolate`` runs the capture layer in a child process. A case that calls
    ``sys.exit()`` is GC004; ``graphcheck audit`` runs every case in a worker
    process (:mod:`graphcheck.workers`) so that even ``os._exit`` or a crash
    costs one finding. ``layers`` picks which of
    ``"trace"`` and ``"capture"`` run (both by default).
    """
    if not isinstance(case, Case):
        raise TypeError(f"check() takes a graphcheck.Case, got {type(case).__name__}")
    mode = GpuMode.parse(gpu)
    from graphcheck.extras import require_torch

    require_torch("graphcheck.check (the trace and capture layers)")
    cuda = mode.use_cuda()
    if isinstance(layers, str):
        layers = (layers,)  # layers="trace", not the letters of "trace"
    unknown = set(layers) - {"trace", "capture"}
    if unknown:
        raise ValueError(f"unknown layers {sorted(unknown)}; expected 'trace' and/or 'capture'")
    report = Report(case=case.name)
    if cuda:
        from graphcheck.capture.escapes import watch_cupy

        watch_cupy(case)  # before any layer makes the case's cupy kernels, so capture can name their launches
    if "trace" in layers:
        _run_trace_layer(case, cuda, examples, report, timeout)
    if "capture" in layers:
        _run_capture_layer(case, mode, cuda, examples, timeout, isolate, report)
    report.findings.sort(key=lambda f: f.sort_key())
    return report


def _run_trace_layer(case: Case, cuda: bool, examples: int, report: Report, timeout: float | None = None) -> None:
    from graphcheck.trace.runner import run_trace

    try:
        trace = run_trace(case, device="cuda" if cuda else "cpu", examples=examples, timeout=timeout)
        found = _marked(trace.findings)
        report.findings += found
        report.skipped += trace.skipped
        if trace.skipped and not trace.recorders:
            report.layers["trace"] = LayerResult.skipped(trace.skipped[0])
        else:
            report.layers["trace"] = _status(found, trace.skipped)
    except Exception as exc:  # a bug in graphcheck must not take the whole run down
        report.findings.append(_internal_error(case, exc, "trace"))
        report.layers["trace"] = LayerResult(LayerStatus.FAIL)


def _run_capture_layer(case: Case, gpu: GpuMode, cuda: bool, examples: int, timeout: float, isolate: bool,
                       report: Report) -> None:
    from graphcheck.capture import check_capture

    if not cuda:
        reason = f"{'gpu=' + repr('off') if gpu is GpuMode.OFF else 'no CUDA device'}: capture layer skipped"
        report.skipped.append(reason)
        report.layers["capture"] = LayerResult.skipped(reason)
        return
    try:
        found, skipped = check_capture(case, examples=examples, timeout=timeout, isolate=isolate)
    except LayerSkipped as skip:
        reason = f"{case.name}: {skip.reason}: capture layer skipped"
        report.skipped.append(reason)
        report.layers["capture"] = LayerResult.skipped(reason)
        return
    except Exception as exc:  # a bug in graphcheck must not take the whole run down
        report.findings.append(_internal_error(case, exc, "capture"))
        report.layers["capture"] = LayerResult(LayerStatus.FAIL)
        return
    found = _marked(list(found))
    report.findings += found
    report.skipped += list(skipped)
    # notes such as "isolation skipped" or "graph inspection unavailable" leave the layer run
    report.layers["capture"] = _status(found, skipped)
