"""Workspace-size queries whose callee is defined in another file of the linted tree.

``lint_cpp`` already stays quiet on the size-query idiom (``query(nullptr, bytes, ..., /*stream=*/0)``, where the
callee returns before any launch when the buffer is null) when the callee's body is in the same file, and on a call
in cub's shape (a null first argument, a plain identifier second: ``cpp_rules._cub_query``) when it is not. Any
other null-buffer call to a function only declared there (its body in a header or another source file) is still a
GC201 error after the per-file pass. When a directory is linted, this pass looks for the callee's definition in the
other C++ files of the tree: when exactly one definition takes that many arguments, and it returns on the null
buffer before any launch or use of its stream (``cpp_rules._SizeQueries``, following the buffer through functions
of that file), the call launches nothing and its finding is dropped, as the same call is when the callee is in the
same file.

Only files that mention the callee's name are read, and only when such a finding is left.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import TYPE_CHECKING

from graphcheck.findings import Finding, Severity

if TYPE_CHECKING:
    from graphcheck.lint.cpp_callers import LintedSources

_NULL_STREAMS = ("0", "nullptr", "NULL", "0L", "cudaStreamLegacy", "(cudaStream_t)0", "(cudaStream_t) 0")


class _Parsed:
    """One C++ file as ``lint_cpp`` reads it: blanked text, bracket pairs, function regions."""

    def __init__(self, source: str) -> None:
        from graphcheck.lint import cpp_rules

        self.text, _ = cpp_rules.blank(source)
        directives = cpp_rules._directive_spans(self.text)
        self.pairs = cpp_rules._bracket_pairs(cpp_rules._flatten_directives(self.text, directives))
        self.regions = cpp_rules.function_regions(self.text, self.pairs)
        self.loc = cpp_rules._Locator(self.text, self.regions)
        self.parens = sorted(k for k, v in self.pairs.items() if k < v and self.text[k] == "(")

    def offset(self, line: int, col: int) -> int:
        starts = self.loc.line_starts
        return starts[line - 1] + col if 0 < line <= len(starts) else -1

    def call_around(self, pos: int) -> tuple[str, list[str]] | None:
        """(callee name, arguments) of the innermost call whose parentheses hold ``pos`` (or open right after
        the name written at ``pos``)."""
        from graphcheck.lint import cpp_rules

        text = self.text
        k = pos
        while k < len(text) and (text[k].isalnum() or text[k] == "_"):
            k += 1
        after = k
        while after < len(text) and text[after] in " \t\r\n":
            after += 1
        if k > pos and after < len(text) and text[after] in "(<":
            if text[after] == "<":  # template arguments of the callee, bounded
                depth, j = 0, after
                while j < min(len(text), after + 400):
                    depth += (text[j] == "<") - (text[j] == ">")
                    j += 1
                    if depth == 0:
                        break
                while j < len(text) and text[j] in " \t\r\n":
                    j += 1
                after = j
            if after < len(text) and text[after] == "(":
                return self._call(text[pos:k], after)
        idx = bisect.bisect_left(self.parens, pos) - 1
        while idx >= 0:
            open_paren = self.parens[idx]
            idx -= 1
            if self.pairs.get(open_paren, -1) < pos:
                continue
            name, _ = cpp_rules._word_back(text, cpp_rules._skip_ws_back(text, open_paren - 1))
            if not name or name in cpp_rules._CONTROL:
                return None
            return self._call(name, open_paren)
        return None

    def _call(self, name: str, open_paren: int) -> tuple[str, list[str]] | None:
        from graphcheck.lint import cpp_rules

        close = self.pairs.get(open_paren, -1)
        if close < 0:
            return None
        return name, cpp_rules._split_args(self.text, open_paren + 1, close, self.pairs)


def _read(path: str, sources: LintedSources) -> _Parsed | None:
    from graphcheck.lint.files import decode

    try:
        source = decode(sources.read(path), "cpp")
        return _Parsed(source.replace("\r\n", "\n").replace("\r", "\n"))
    except (OSError, ValueError, LookupError, SyntaxError, RecursionError):
        return None


def _null_stream(value: object) -> bool:
    return isinstance(value, str) and " ".join(value.split()) in _NULL_STREAMS


def drop_size_queries(raw: dict[str, list[Finding]], files: Sequence[tuple[str, str]],
                      sources: LintedSources | None = None) -> dict[str, list[Finding]]:
    """``raw`` without the GC201 errors on a null stream that are workspace-size queries of a callee defined in
    another C++ file of ``files`` (``(path, language)`` of every linted file). ``sources`` shares the files'
    bytes with the run's other caller passes."""
    from graphcheck.lint import cpp_rules
    from graphcheck.lint.cpp_callers import CallerIndex

    files = list(files)
    cpp_set = {path for path, language in files if language == "cpp"}
    asked = {path: [f for f in found if f.code == "GC201" and f.severity is Severity.ERROR
                    and _null_stream(f.evidence.get("stream"))]
             for path, found in raw.items() if path in cpp_set}
    asked = {path: found for path, found in asked.items() if found}
    if not asked:
        return raw
    index = CallerIndex(files, sources)
    parsed: dict[str, _Parsed | None] = {}

    def file(path: str) -> _Parsed | None:
        if path not in parsed:
            parsed[path] = _read(path, index.sources)
        return parsed[path]

    definitions: dict[tuple[str, int], tuple[_Parsed, cpp_rules._SizeQueries] | None] = {}

    def definition(name: str, nargs: int) -> tuple[_Parsed, cpp_rules._SizeQueries] | None:
        """The one file whose definitions of ``name`` take ``nargs`` arguments, with its size-query reader."""
        key = (name, nargs)
        if key not in definitions:
            found: list[_Parsed] = []
            for i in index._mentions(name):
                if files[i][1] != "cpp":
                    continue
                p = file(files[i][0])
                if p is None:
                    continue
                fits = [r for r in p.regions if r.name == name and r.params is not None
                        and cpp_rules._arity(r.params)[0] <= nargs <= cpp_rules._arity(r.params)[1]]
                if fits:
                    found.append(p)
            definitions[key] = ((found[0], cpp_rules._SizeQueries(found[0].text, found[0].regions, found[0].pairs))
                                if len(found) == 1 else None)
        return definitions[key]

    dropped: dict[str, set[int]] = {}
    for path, found in asked.items():
        here = file(path)
        if here is None:
            continue
        for f in found:
            pos = here.offset(f.line, f.col)
            call = here.call_around(pos) if pos >= 0 else None
            if call is None:
                continue
            name, args = call
            if any(r.name == name for r in here.regions):
                continue  # defined here: lint_cpp has judged it
            where = definition(name, len(args))
            if where is not None and where[1].query(name, args):
                dropped.setdefault(path, set()).add(id(f))
    if not dropped:
        return raw
    return {path: [f for f in found if id(f) not in dropped.get(path, ())] for path, found in raw.items()}
