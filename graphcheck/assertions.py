"""``graphcheck.assert_graph_safe``: fail a test when a kernel wrapper is not CUDA-graph safe.

It runs :func:`graphcheck.check` on a :class:`graphcheck.Case` (or on a bare
function plus ``make_inputs``) and raises :class:`AssertionError`, which pytest
reports as a test failure, with every finding rendered as ``graphcheck lint``
shows it: ``path:line:col CODE [severity] message``, the source line and the
hint.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from graphcheck.case import Case
from graphcheck.findings import Severity, at_or_above

__all__ = ["GraphSafetyError", "assert_graph_safe", "as_case", "format_report"]


class GraphSafetyError(AssertionError):
    """Raised by :func:`assert_graph_safe`; ``.report`` is the :class:`graphcheck.Report`."""

    def __init__(self, message: str, report: Any) -> None:
        super().__init__(message)
        self.report = report


def as_case(case_or_fn: Case | Callable[..., Any], make_inputs: Callable[[int, Any], Mapping[str, Any]] | None = None,
            *, name: str | None = None, outputs: Sequence[str] | None = None, **case_options: Any) -> Case:
    """A :class:`Case` as given, or one built from a function and its ``make_inputs``."""
    if isinstance(case_or_fn, Case):
        if make_inputs is not None or outputs is not None or name is not None or case_options:
            raise TypeError("pass either a graphcheck.Case, or a function with make_inputs= (and Case options)")
        return case_or_fn
    if not callable(case_or_fn):
        raise TypeError(f"expected a graphcheck.Case or a function, got {type(case_or_fn).__name__}")
    if make_inputs is None:
        raise TypeError("a bare function needs make_inputs=(seed, device) -> dict of keyword arguments")
    label = cast(str, name or getattr(case_or_fn, "__qualname__", None) or getattr(case_or_fn, "__name__", "case"))
    return Case(label, case_or_fn, make_inputs, outputs=outputs, **case_options)


def format_report(report: Any, threshold: str | Severity = Severity.WARNING) -> str:
    """The failure message: a headline, each finding with its source line and hint, and any skipped layers."""
    from graphcheck.report import render

    bad = at_or_above(report.findings, threshold)
    head = (f"graphcheck: case {report.case!r} is not CUDA-graph safe: {len(bad)} finding"
            f"{'' if len(bad) == 1 else 's'} at or above {Severity.parse(threshold).value}")
    lines = [head, ""]
    lines.append(render(report.findings, "text", color=False).rstrip("\n"))
    layers = ", ".join(f"{layer}: {status}" for layer, status in report.layers.items())
    if layers:
        lines += ["", f"layers: {layers}"]
    return "\n".join(lines)


def assert_graph_safe(case_or_fn: Case | Callable[..., Any],
                      make_inputs: Callable[[int, Any], Mapping[str, Any]] | None = None, *,
                      gpu: str = "auto", examples: int = 4, fail_on: str = "warning", timeout: float = 120.0,
                      outputs: Sequence[str] | None = None, name: str | None = None, **case_options: Any) -> Any:
    """Check a case (or ``fn`` with ``make_inputs``) and raise AssertionError on findings.

    ``gpu``: ``"auto"`` (capture layer where CUDA exists, skipped otherwise),
    ``"off"`` (GPU-free layers only) or ``"required"`` (a RuntimeError without
    CUDA); a :class:`graphcheck.layers.GpuMode` works too. ``fail_on``: the
    lowest severity that fails (``error``, ``warning``, ``info``). Other keyword
    arguments (``atol``, ``rtol``, ``cpu_ok``) go to the :class:`Case` built for
    a bare function. Returns the report when safe.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this function's
    from graphcheck.api import check
    from graphcheck.audit import check_gpu_mode

    case = as_case(case_or_fn, make_inputs, name=name, outputs=outputs, **case_options)
    mode = check_gpu_mode(gpu)
    report = check(case, gpu=mode, examples=examples, timeout=timeout)
    if at_or_above(report.findings, fail_on):
        raise GraphSafetyError(format_report(report, fail_on), report)
    return report
