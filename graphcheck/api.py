"""``graphcheck.check``: run every dynamic layer on one case and collect a report.

The trace layer always runs (on the CPU with Triton's interpreter when no GPU
is used). With ``gpu="auto"`` or ``"on"`` and a CUDA device, the trace layer
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

GPU_MODES = ("auto", "off", "on")


@dataclasses.dataclass
class Report:
    case: str
    findings: list[Finding] = dataclasses.field(default_factory=list)
    skipped: list[str] = dataclasses.field(default_factory=list)
    #: layer name -> "pass" | "expected" | "fail" | "skipped: <reason>"; "expected": every finding at warning
    #: or above was expected by an expect marker on its line
    layers: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """No unexpected finding at warning or above."""
        return not at_or_above(self.findings, Severity.WARNING)

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.case, "ok": self.ok, "layers": dict(self.layers), "skipped": list(self.skipped),
                "findings": [f.to_dict() for f in self.findings]}


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def _status(findings: list[Finding]) -> str:
    if at_or_above(findings, Severity.WARNING):
        return "fail"
    return "expected" if at_or_above(findings, Severity.WARNING, include_expected=True) else "pass"


def _marked(findings: "list[Finding]") -> list[Finding]:
    from graphcheck.expectations import mark_expected

    return mark_expected(findings)


def _internal_error(case: Case, exc: BaseException, layer: str) -> Finding:
    from graphcheck import rules
    from graphcheck.trace.frames import function_location

    loc = function_location(case.fn)
    rule = rules.get("GC003")
    return Finding(code="GC003", severity=rule.severity, message=f"the {layer} layer failed: {type(exc).__name__}: {exc}",
                   path=loc.path, line=loc.line, function=loc.function, hint=rule.hint,
                   layer="capture" if layer == "capture" else "trace", case=case.name,
                   evidence={"traceback": traceback.format_exc()[-4000:]})


def check(case: Case, gpu: str = "auto", examples: int = 4, timeout: float = 120.0, isolate: bool = True,
          layers: "tuple[str, ...]" = ("trace", "capture")) -> Report:
    """Run the dynamic layers on ``case``.

    ``gpu``: ``"off"`` runs on CPU tensors only (Triton kernels in the
    interpreter); ``"auto"`` uses a CUDA device when there is one; ``"on"``
    requires one and raises :class:`RuntimeError` without it. ``examples`` is the
    number of seeds (at least 2) whose launch plans are compared. ``timeout`` and
    ``isolate`` are passed to the capture layer. ``layers`` picks which of
    ``"trace"`` and ``"capture"`` run (both by default).
    """
    if not isinstance(case, Case):
        raise TypeError(f"check() takes a graphcheck.Case, got {type(case).__name__}")
    if gpu not in GPU_MODES:
        raise ValueError(f"gpu must be one of {GPU_MODES}, got {gpu!r}")
    cuda = gpu != "off" and _cuda_available()
    if gpu == "on" and not cuda:
        raise RuntimeError("gpu='on' but no CUDA device is available; use gpu='auto' or gpu='off'")
    if isinstance(layers, str):
        layers = (layers,)  # layers="trace", not the letters of "trace"
    unknown = set(layers) - {"trace", "capture"}
    if unknown:
        raise ValueError(f"unknown layers {sorted(unknown)}; expected 'trace' and/or 'capture'")
    report = Report(case=case.name)
    if "trace" in layers:
        _run_trace_layer(case, cuda, examples, report)
    if "capture" in layers:
        _run_capture_layer(case, gpu, cuda, examples, timeout, isolate, report)
    report.findings.sort(key=lambda f: f.sort_key())
    return report


def _run_trace_layer(case: Case, cuda: bool, examples: int, report: Report) -> None:
    from graphcheck.trace.runner import run_trace

    try:
        trace = run_trace(case, device="cuda" if cuda else "cpu", examples=examples)
        found = _marked(trace.findings)
        report.findings += found
        report.skipped += trace.skipped
        report.layers["trace"] = f"skipped: {trace.skipped[0]}" if trace.skipped and not trace.recorders else _status(found)
    except Exception as exc:  # a bug in graphcheck must not take the whole run down
        report.findings.append(_internal_error(case, exc, "trace"))
        report.layers["trace"] = "fail"


def _run_capture_layer(case: Case, gpu: str, cuda: bool, examples: int, timeout: float, isolate: bool,
                       report: Report) -> None:
    from graphcheck.capture import check_capture, layer_skip_reason, skips_whole_layer

    if not cuda:
        reason = layer_skip_reason("gpu='off'" if gpu == "off" else "no CUDA device")
        report.skipped.append(reason)
        report.layers["capture"] = f"skipped: {reason}"
        return
    try:
        found, skipped = check_capture(case, examples=examples, timeout=timeout, isolate=isolate)
    except Exception as exc:  # a bug in graphcheck must not take the whole run down
        report.findings.append(_internal_error(case, exc, "capture"))
        report.layers["capture"] = "fail"
        return
    found = _marked(list(found))
    report.findings += found
    report.skipped += list(skipped)
    # Notes such as "isolation skipped" or "graph inspection unavailable" leave
    # the layer run; only a reason saying the whole layer was skipped does not.
    whole = [s for s in skipped if skips_whole_layer(s)]
    report.layers["capture"] = f"skipped: {whole[0]}" if whole and not found else _status(found)
