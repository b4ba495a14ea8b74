"""Inline markers: ``# graphcheck: ignore[GC101, GC102]`` and ``# graphcheck: expect[GC101]``.

Both apply to the line they are on, in a ``#`` comment (Python) or a ``//`` /
``/* */`` comment (C++); a marker inside a string literal does not count.
:func:`comments` is the one comment scanner both use.

- ``ignore``: with codes in brackets it drops the findings with those codes (or
  code prefixes); bare, it drops every finding on the line. Only files with a
  finding and the word ``graphcheck`` are scanned, so this costs nothing on clean
  files.
- ``expect``: the inverse. The findings named (exact codes) are expected on that
  line: still reported, marked ``expected``, never failing a run; and a layer
  that should have reported one and did not yields GC008 (see
  :mod:`graphcheck.expectations`). A code may name the layers that must report
  it: ``GC107@trace``, ``GC101@static+trace``; without ``@`` every layer that
  can produce the code must (for Python files the static layer produces every
  static code except the C++-only ones, for C++ files only those). A trailing
  ``?`` (``GC102@trace?``) makes the expectation optional: expected when
  reported, never owed (for findings that depend on where graphcheck runs).
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import Iterable, Mapping, NamedTuple

from graphcheck.findings import Finding

_MARKER = re.compile(r"graphcheck\s*:\s*ignore\b(?:\s*\[([^\]]*)\])?", re.I)
_EXPECT = re.compile(r"graphcheck\s*:\s*expect\s*\[([^\]]*)\]", re.I)

ALL = frozenset({"*"})


class Expectation(NamedTuple):
    """One code of an ``expect`` marker; ``layers`` None means every layer that can produce it.

    ``optional`` (a trailing ``?``, as in ``GC102@trace?``) marks a finding that
    may or may not appear depending on where graphcheck runs: it is expected
    when reported, and never owed.
    """

    code: str
    layers: frozenset[str] | None
    optional: bool = False


def parse_expect(comment: str) -> list[Expectation]:
    """The expectations of every ``graphcheck: expect[...]`` marker in a comment (empty if none)."""
    out = []
    for m in _EXPECT.finditer(comment):
        for entry in re.split(r"[,\s]+", m.group(1)):
            if not entry.strip():
                continue
            entry = entry.strip()
            optional = entry.endswith("?")
            code, at, layers = entry.rstrip("?").partition("@")
            names = frozenset(x.strip().lower() for x in layers.split("+") if x.strip()) if at else None
            out.append(Expectation(code.strip().upper(), names, optional))
    return out


def comments(source: str, language: str) -> dict[int, list[str]]:
    """The comments of a source file by (1-based) line: Python through ``tokenize``, C++ by its lexer."""
    if language != "python":
        from graphcheck.lint.cpp_rules import blank

        return blank(source)[1]
    found: dict[int, list[str]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                found.setdefault(tok.start[0], []).append(tok.string)
    except (tokenize.TokenError, SyntaxError):
        # unfinished code (say, an unclosed bracket): fall back to reading each line on its own
        found = {}
        for n, line in enumerate(source.splitlines(), 1):
            comment = python_comment(line)
            if comment:
                found[n] = [comment]
    return found


def expect_markers(source: str, language: str) -> dict[int, list[Expectation]]:
    """Every ``expect`` marker of a file: line -> its expectations."""
    if "expect" not in source:
        return {}
    out: dict[int, list[Expectation]] = {}
    for line, texts in comments(source, language).items():
        for text in texts:
            found = parse_expect(text)
            if found:
                # a /* */ comment spanning lines applies to the line it starts on, like ignore
                out.setdefault(line, []).extend(found)
    return out


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


def filter_suppressed(findings: Iterable[Finding], source: str, language: str) -> list[Finding]:
    """Drop findings suppressed by a ``# graphcheck: ignore`` (Python) or
    ``// graphcheck: ignore[...]`` (C++, ``language`` "cpp") comment on their line."""
    findings = list(findings)
    if not findings or "graphcheck" not in source:
        return findings
    return filter_by_comments(findings, comments(source, language))


def filter_by_comments(findings: Iterable[Finding], comments: Mapping[int, list[str]]) -> list[Finding]:
    """Drop findings suppressed by a marker in a comment that starts on their line."""
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
