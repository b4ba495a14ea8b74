"""Inline suppressions: ``# graphcheck: ignore[GC101, GC102]`` / ``// graphcheck: ignore``.

A suppression comment applies to the line it is on. With codes in brackets it
drops the findings with those codes (or code prefixes); bare, it drops every
finding on the line. Only lines that carry a finding are examined, so this costs
nothing on clean files. In Python the marker must sit in a real comment: a ``#``
inside a string literal on that line does not count.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

from graphcheck.findings import Finding

_MARKER = re.compile(r"graphcheck\s*:\s*ignore\b(?:\s*\[([^\]]*)\])?", re.I)

ALL = frozenset({"*"})


def parse_marker(comment: str) -> frozenset[str] | None:
    """The codes a comment suppresses (``ALL`` for a bare marker), or None if it has no marker."""
    m = _MARKER.search(comment)
    if m is None:
        return None
    if m.group(1) is None:
        return ALL
    codes = frozenset(c.strip().upper() for c in re.split(r"[,\s]+", m.group(1)) if c.strip())
    return codes or ALL


def _suppressed(code: str, codes: frozenset[str]) -> bool:
    return codes is ALL or "*" in codes or any(code.upper().startswith(c) for c in codes)


def python_comment(line: str) -> str | None:
    """The comment part of one Python source line, skipping ``#`` inside string literals."""
    if "#" not in line:
        return None
    quote: str | None = None
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
        elif c == "#":
            return line[i:]
        elif c in "'\"":
            quote = line[i : i + 3] if line.startswith(c * 3, i) else c
            i += len(quote)
            continue
        i += 1
    return None


def filter_python(findings: Iterable[Finding], source: str) -> list[Finding]:
    """Drop findings suppressed by a ``# graphcheck: ignore`` comment on their line."""
    findings = list(findings)
    if not findings or "graphcheck" not in source:
        return findings
    lines = source.splitlines()
    cache: dict[int, frozenset[str] | None] = {}
    kept = []
    for f in findings:
        if f.line not in cache:
            text = lines[f.line - 1] if 0 < f.line <= len(lines) else ""
            comment = python_comment(text)
            cache[f.line] = parse_marker(comment) if comment else None
        codes = cache[f.line]
        if codes is None or not _suppressed(f.code, codes):
            kept.append(f)
    return kept


def filter_by_comments(findings: Iterable[Finding], comments: Mapping[int, list[str]]) -> list[Finding]:
    """Drop findings suppressed by a marker in a comment that starts on their line (C++)."""
    kept = []
    for f in findings:
        suppressed = False
        for comment in comments.get(f.line, ()):
            codes = parse_marker(comment)
            if codes is not None and _suppressed(f.code, codes):
                suppressed = True
                break
        if not suppressed:
            kept.append(f)
    return kept


def filter_cpp(findings: Iterable[Finding], source: str) -> list[Finding]:
    """Drop C++ findings suppressed by ``// graphcheck: ignore[...]`` on their line."""
    findings = list(findings)
    if not findings or "graphcheck" not in source:
        return findings
    from graphcheck.lint.cpp_rules import blank

    _, comments = blank(source)
    return filter_by_comments(findings, comments)
