"""The audit report: one row per case and layer, then the findings as ``lint`` shows them.

Text puts the case table first (what passed, failed or was skipped, and why;
``expected`` when every finding of the layer was expected by a
``# graphcheck: expect[...]`` marker), then every finding with its source line
and hint (the shared text renderer).
JSON is an object with the findings and the per-case rows; SARIF and GitHub
annotations carry the findings only (their formats have no place for a pass).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from graphcheck.findings import Finding
from graphcheck.report import strict_json
from graphcheck.report.summary import Summary, Table
from graphcheck.report.text import plain_table

#: printed when a target declares no cases: a module a user can paste next to their kernel
DECLARE_EXAMPLE = '''\
import torch
import graphcheck
from graphcheck.inputs import rand_floats


def graphcheck_cases():
    def make_inputs(seed, device):  # same shapes for every seed, different values
        x = rand_floats(seed, 1000, device=device)
        return {"x": x, "out": torch.empty_like(x)}

    return [graphcheck.Case("my_op", my_op, make_inputs, outputs=["out"])]
'''

_LAYERS = ("trace", "capture")


def _status_and_reason(result) -> tuple[str, str]:
    return result.status.value, result.reason


def case_rows(result, include_skipped: bool = True) -> list[tuple[str, str, str, str]]:
    """``(case, layer, result, detail)`` for each case of an :class:`graphcheck.audit.AuditResult`;
    ``include_skipped=False`` leaves out the skipped layers (the text report sums them up in one line)."""
    rows = []
    for case in result.cases:
        report = case.report
        for layer in _LAYERS:
            if layer not in report.layers:
                continue
            status, detail = _status_and_reason(report.layers[layer])
            if status == "skipped" and not include_skipped:
                continue
            if status in ("fail", "expected"):
                mine = [f for f in report.findings if f.layer == layer]
                codes = sorted({f.code for f in mine if not f.expected})
                expected = sorted({f.code for f in mine if f.expected})
                if status == "expected":
                    detail = ", ".join(expected)
                else:
                    detail = ", ".join(codes) + (f" (expected: {', '.join(expected)})" if expected else "")
            rows.append((case.source, layer, status, detail))
    return rows


def case_table(result) -> Table:
    return Table("Cases", ("case", "layer", "result", "detail"), case_rows(result, include_skipped=False))


def _skip_reason(case_name: str, layer: str, reason: str) -> str:
    """The reason without the case's name and the "layer skipped" tail, so equal reasons group together."""
    for prefix in (f"{case_name}: ", f"case {case_name!r} "):
        if reason.startswith(prefix):
            reason = reason[len(prefix):]
    for tail in (f": {layer} layer skipped", f": {layer} layer skipped on the CPU"):
        if reason.endswith(tail):
            reason = reason[: -len(tail)]
    return reason


def skipped_lines(result) -> list[str]:
    """One line per layer and reason: ``capture layer skipped on 29 of 29 cases: no CUDA device``."""
    groups: dict[tuple[str, str], int] = {}
    for case in result.cases:
        for layer in _LAYERS:
            got = case.report.layers.get(layer)
            if got is not None and not got.ran:
                key = (layer, _skip_reason(case.name, layer, got.reason))
                groups[key] = groups.get(key, 0) + 1
    total = len(result.cases)
    return [f"{layer} layer skipped on {n} of {total} case{'' if total == 1 else 's'}: {why or 'no reason given'}"
            for (layer, why), n in groups.items()]


def _rich_table(table: Table, width: int | None) -> str:
    from rich.console import Console
    from rich.table import Table as RichTable
    from rich.text import Text

    from graphcheck.report.escape import printable

    style = {"pass": "green", "expected": "green", "fail": "bold red", "skipped": "yellow"}
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=width or 100, highlight=False)
    rt = RichTable(title=table.title, title_justify="left")
    for col in table.columns:
        rt.add_column(col)
    for case, layer, status, detail in table.rows:
        # Text, not markup: a case named `merge[fp16]` or `bad[/]name` is shown as written
        rt.add_row(Text(printable(case)), Text(layer), Text(status, style=style.get(status, "")),
                   Text(printable(detail)))
    console.print(rt)
    console.print()
    return buf.getvalue()


def notes(result, declare_hint: bool = True) -> list[str]:
    out = []
    counts = {"pass": 0, "expected": 0, "fail": 0, "skipped": 0}
    for _, _, status, _ in case_rows(result):
        counts[status] = counts.get(status, 0) + 1
    out += skipped_lines(result)
    if result.cases:
        expected = f"  failed as expected: {counts['expected']}" if counts["expected"] else ""
        out.append(f"cases: {len(result.cases)}  layers passed: {counts['pass']}{expected}  failed: {counts['fail']}  "
                   f"skipped: {counts['skipped']}")
    empty = [t.given for t in result.targets if not t.case_sources]
    if empty and declare_hint:
        out.append(f"no declared cases in: {', '.join(empty)} (lint only). To have graphcheck run a kernel "
                   "wrapper, declare cases next to it, for example:\n\n" + DECLARE_EXAMPLE)
    return out


def to_dict(result) -> dict[str, Any]:
    return {
        "findings": [f.to_dict() for f in result.findings],
        "cases": [{"source": c.source, "case": c.name, "ok": c.report.ok,
                   "layers": {k: v.status.value for k, v in c.report.layers.items()},
                   "skip_reasons": {k: v.reason for k, v in c.report.layers.items() if not v.ran},
                   "skipped": list(c.report.skipped), "seconds": round(c.seconds, 3)} for c in result.cases],
        "targets": [{"target": t.given, "lint_paths": t.lint_paths, "case_sources": t.case_sources}
                    for t in result.targets],
        "files_checked": result.files_checked,
        "seconds": round(result.seconds, 3),
    }


def render_audit(result, fmt: str = "text", *, color: bool = False, width: int | None = None,
                 srcroot: str | None = None, declare_hint: bool = True) -> str:
    """``result`` (an :class:`graphcheck.audit.AuditResult`) in ``fmt``; ``declare_hint`` adds the example
    case declaration for targets that declare none (text only)."""
    from graphcheck.report import render

    findings: Sequence[Finding] = sorted(result.findings, key=Finding.sort_key)
    if fmt == "json":
        return strict_json.dumps(to_dict(result), indent=2) + "\n"
    if fmt == "concise":
        return render(findings, fmt, summary=Summary(files_checked=result.files_checked, seconds=result.seconds))
    if fmt != "text":
        return render(findings, fmt, srcroot=srcroot)
    table = case_table(result)
    head = ""
    if table.rows:
        head = _rich_table(table, width) if color else "\n".join(plain_table(table)) + "\n\n"
    summary = Summary(files_checked=result.files_checked, lines=result.lines, seconds=result.seconds,
                      notes=notes(result, declare_hint))
    return head + render(findings, "text", summary=summary, color=color, width=width)
