"""Inline markers: ``# graphcheck: ignore[GC101, GC102]`` and ``# graphcheck: expect[GC101]``.

Both apply to the line they are on, in a ``#`` comment (Python) or a ``//`` /
``/* */`` comment (C++); a marker inside a string literal does not count.
:func:`comments` is the one comment scanner both use.

- ``ignore``: with codes in brackets it drops the findings with those codes (or
  code prefixes such as ``GC1``); bare (nothing after ``ignore`` but another
  comment), it drops every finding on the line. The tool's own codes (GC0xx: a
  file that could not be checked, a broken marker) are dropped only when named
  in full. A marker that is not exactly one of these forms (``ignore(GC101)``,
  ``ignore: GC101``, ``ignore[``, ``ignore[]``, an unknown code, a prefix that
  matches no rule) suppresses nothing and is itself reported as GC009, so a typo
  can never hide a finding.
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
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from graphcheck.findings import Finding
from graphcheck.lint.files import python_lines

_MARKER = re.compile(r"graphcheck\s*:\s*ignore\b", re.I)
_SELECTOR = re.compile(r"^GC\d{1,3}$")
_EXPECT = re.compile(r"graphcheck\s*:\s*expect\s*\[([^\]]*)\]", re.I)
# a comment is a verbatim piece of its source: a source this does not match holds no expect marker
_EXPECT_ANYWHERE = re.compile(r"graphcheck\s*:\s*expect", re.I)

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
        for n, line in enumerate(python_lines(source), 1):
            comment = python_comment(line)
            if comment:
                found[n] = [comment]
    return found


def expect_markers(source: str, language: str) -> dict[int, list[Expectation]]:
    """Every ``expect`` marker of a file: line -> its expectations."""
    if "expect" not in source or not _EXPECT_ANYWHERE.search(source):
        return {}  # no comment to tokenize for (torch has "expect" in hundreds of files, a marker in none)
    out: dict[int, list[Expectation]] = {}
    for line, texts in comments(source, language).items():
        for text in texts:
            found = parse_expect(text)
            if found:
                # a /* */ comment spanning lines applies to the line it starts on, like ignore
                out.setdefault(line, []).extend(found)
    return out


def _marker_codes(rest: str) -> tuple[frozenset[str], str | None]:
    """The codes of one ``ignore`` marker from the text after the word ``ignore``: (codes, problem).

    A malformed marker gives an empty set (it suppresses nothing) and the problem.
    """
    from graphcheck import rules

    body = rest.lstrip()
    if not body.startswith("["):
        tail = body[:-2].rstrip() if body.endswith("*/") else body
        if not tail or tail.startswith(("#", "//")):
            return ALL, None
        return frozenset(), (f"`graphcheck: ignore` is followed by {_shown(tail)}; "
                             "write `ignore[CODE, ...]` (or a bare `ignore` for every rule)")
    close = body.find("]")
    if close < 0:
        return frozenset(), "`ignore[` has no closing `]`"
    entries = [e for e in re.split(r"[,\s]+", body[1:close]) if e]
    if not entries:
        return frozenset(), "`ignore[]` names no rule"
    codes = set()
    for entry in entries:
        code = entry.upper()
        if not _SELECTOR.match(code):
            return frozenset(), f"{_shown(entry)} in `ignore[...]` is not a rule code (like GC101) or prefix (like GC1)"
        if len(code) == 5 and code not in rules.RULES:
            return frozenset(), f"`ignore[...]` names unknown rule {code}; `graphcheck rules` lists them"
        if not any(known.startswith(code) for known in rules.RULES):
            return frozenset(), f"`ignore[...]` prefix {code} matches no rule"
        codes.add(code)
    return frozenset(codes), None


def _shown(text: str, limit: int = 30) -> str:
    text = text.strip()
    return repr(text if len(text) <= limit else text[:limit] + "...")


def parse_markers(comment: str) -> list[tuple[frozenset[str], str | None]]:
    """Every ``graphcheck: ignore`` marker of a comment: (codes it suppresses, problem or None)."""
    found = []
    for m in _MARKER.finditer(comment):
        found.append(_marker_codes(comment[m.end():]))
    return found


def parse_marker(comment: str) -> frozenset[str] | None:
    """The codes a comment suppresses (``ALL`` for a bare marker; empty for a malformed one), or None if it
    has no marker."""
    markers = parse_markers(comment)
    if not markers:
        return None
    if any(codes is ALL for codes, _ in markers):
        return ALL
    return frozenset().union(*(codes for codes, _ in markers))


def is_tool_code(code: str) -> bool:
    """GC0xx: the tool's own findings (a file not checked, a case that crashed, a broken marker)."""
    return code.upper().startswith("GC0")


def _suppressed(code: str, codes: frozenset[str]) -> bool:
    code = code.upper()
    if is_tool_code(code):
        return code in codes  # never by a bare marker or a prefix
    return codes is ALL or any(code.startswith(c) for c in codes)


def marker_problems(source: str, language: str) -> list[tuple[int, str]]:
    """``(line, problem)`` for each malformed ``ignore`` marker in the comments of ``source``."""
    if "graphcheck" not in source or not _MARKER.search(source):
        return []
    out = []
    for line, texts in sorted(comments(source, language).items()):
        for text in texts:
            for _, problem in parse_markers(text):
                if problem:
                    out.append((line, problem))
    return out


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
