"""What a report says besides the findings: counts, timing and extra tables."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

from graphcheck.findings import Finding, Severity


@dataclasses.dataclass
class Table:
    """An extra table for the text report, e.g. one row per audited case."""

    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[str]]


@dataclasses.dataclass
class Summary:
    files_checked: int | None = None
    lines: int | None = None
    seconds: float | None = None
    from_cache: int | None = None
    tables: list[Table] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)


def counts_by_code(findings: Sequence[Finding]) -> list[tuple[str, str, str, int]]:
    """(code, name, severity, count) per code, most severe first, then by code."""
    from graphcheck import rules

    counter = Counter((f.code, f.severity) for f in findings)
    rows = []
    for (code, severity), n in counter.items():
        name = rules.RULES[code].name if code in rules.RULES else ""
        rows.append((code, name, severity.value, n))
    rows.sort(key=lambda r: (-Severity(r[2]).rank, r[0]))
    return rows


def severity_counts(findings: Sequence[Finding]) -> dict[str, int]:
    counter = Counter(f.severity.value for f in findings)
    return {s.value: counter.get(s.value, 0) for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)}


def one_line(findings: Sequence[Finding], summary: Summary | None = None) -> str:
    """``3 findings (2 errors, 1 warning) in 12 files`` and the like.

    Expected findings are not counted as findings: ``0 findings (6 expected)``.
    """
    counted = [f for f in findings if not f.expected]
    expected = len(findings) - len(counted)
    n = len(counted)
    sev = severity_counts(counted)
    parts = [f"{v} {k}{'' if v == 1 else 's'}" for k, v in sev.items() if v]
    text = f"{n} finding{'' if n == 1 else 's'}"
    inside = ", ".join(parts)
    if expected:
        inside = f"{inside}; {expected} expected" if inside else f"{expected} expected"
    if inside:
        text += f" ({inside})"
    if summary is not None and summary.files_checked is not None:
        text += f" in {summary.files_checked} file{'' if summary.files_checked == 1 else 's'}"
        if summary.seconds is not None:
            text += f", {summary.seconds:.2f}s"
    return text
