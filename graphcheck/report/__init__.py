"""Renderers shared by every front-end (lint, audit, ci, the pytest plugin).

``render(findings, fmt, ...)`` returns the report as a string in one of
``FORMATS``: ``text`` (rich, with the offending source line, the hint and a
summary table; plain when not writing to a terminal), ``concise`` (one line per
finding, like ruff's), ``json`` (an array of
finding objects), ``sarif`` (SARIF 2.1.0 for code scanning) and ``github``
(workflow commands that annotate a pull request). Columns in findings are
0-based; every format shows them 1-based.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphcheck.findings import Finding
from graphcheck.report.summary import Summary, Table

FORMATS = ("text", "concise", "json", "sarif", "github")

__all__ = ["FORMATS", "Summary", "Table", "render"]


def render(findings: Sequence[Finding], fmt: str = "text", *, summary: Summary | None = None,
           color: bool = False, width: int | None = None, srcroot: str | None = None) -> str:
    """The report for ``findings`` in format ``fmt``.

    ``summary`` adds counts, timing and extra tables (per-case rows) to the text
    format; ``color`` renders rich markup for a terminal; ``srcroot`` is the
    directory SARIF URIs are relative to (the current directory by default).
    """
    if fmt == "text":
        from graphcheck.report.text import render_text

        return render_text(findings, summary=summary, color=color, width=width)
    if fmt == "concise":
        from graphcheck.report.concise import render_concise

        return render_concise(findings, summary)
    if fmt == "json":
        from graphcheck.report.json_report import render_json

        return render_json(findings)
    if fmt == "sarif":
        from graphcheck.report.sarif import render_sarif

        return render_sarif(findings, srcroot=srcroot)
    if fmt == "github":
        from graphcheck.report.github import render_github

        return render_github(findings)
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
