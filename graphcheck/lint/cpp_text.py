"""Small readers of blanked C++ text (``cpp_rules.blank``) that the C++ rule modules share: back over white space,
back over a word, the text before a call, the blocks around a position. They live here so that ``cpp_rules`` and
``cpp_driver`` both read them without importing each other."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

_QUALIFIED_TAIL = re.compile(r"(?:\b\w+\s*::\s*)*$")


def _skip_ws_back(text: str, k: int) -> int:
    while k >= 0 and text[k] in " \t\r\n\\":
        k -= 1
    return k


def _word_back(text: str, k: int) -> tuple[str, int]:
    """The identifier (with ``::`` and ``~``) ending at k, and the index before it."""
    j = k
    while j >= 0 and (text[j].isalnum() or text[j] in "_:~"):
        j -= 1
    return text[j + 1 : k + 1], j


def if_parens(text: str, brace: int, pairs: dict[int, int], longest: int) -> tuple[int, int] | None:
    """(open, close) of the parentheses of the ``if (...)`` whose block opens at ``brace``, when they span at most
    ``longest`` characters; None for another block."""
    k = _skip_ws_back(text, brace - 1)
    if k < 0 or text[k] != ")":
        return None
    o = pairs.get(k, -1)
    if o < 0 or k - o > longest:
        return None
    word, _ = _word_back(text, _skip_ws_back(text, o - 1))
    return (o, k) if word == "if" else None


def _head_before(text: str, start: int, floor: int) -> str:
    """Up to 200 characters before ``start`` (not before ``floor``), less a trailing ``a::b::`` qualification: what
    precedes a call such as ``at::cuda::getStreamFromPool(...)`` (``return ``, ``auto s = ``)."""
    head = text[max(floor, start - 200) : start]
    qual = _QUALIFIED_TAIL.search(head)
    return head[: qual.start()] if qual else head


def _enclosing(text: str, pos: int, pairs: dict[int, int], opens: list[int], floor: int = 0) -> Iterator[int]:
    """The opening braces of the blocks around ``pos``, innermost first (at most 64 braces looked at, none
    before ``floor``)."""
    idx = bisect.bisect_left(opens, pos) - 1
    for b in opens[max(0, idx - 63) : idx + 1][::-1]:
        if b < floor:
            return
        if pairs.get(b, len(text)) >= pos:
            yield b


def open_paren_after(text: str, end: int) -> int:
    """Where the ``(`` of a call or head after a name ending at ``end`` is (template arguments skipped), or -1."""
    n = len(text)
    k = end
    while k < n and text[k] in " \t\r\n":
        k += 1
    if k < n and text[k] == "<":
        depth = 0
        stop = min(n, k + 400)
        while k < stop:
            if text[k] == "<":
                depth += 1
            elif text[k] == ">":
                depth -= 1
                if depth == 0:
                    k += 1
                    break
            elif text[k] in ";{}()":
                return -1
            k += 1
        while k < n and text[k] in " \t\r\n":
            k += 1
    return k if k < n and text[k] == "(" else -1


# Test and benchmark frameworks' harness macros (GoogleTest, Google Benchmark, Catch2, doctest, Boost.Test). A block
# one opens (``TEST_F(Suite, Name) { ... }``, ``TEST_CASE("name") { ... }``, ``BENCHMARK_DEFINE_F(F, N)(State& s)
# { ... }``) is a test or benchmark case, which the framework's own ``main`` runs; a registration
# (``BENCHMARK(BM_f)``, ``BENCHMARK_CAPTURE(BM_f, name, ...)``) names the function that is one.
_HARNESS_BLOCK = re.compile(r"(?:CATCH_|DOCTEST_)?(?:TEST|TEST_[FP]|TYPED_TEST(?:_P)?|GTEST_TEST|TEST_CASE\w*"
                            r"|TEMPLATE_\w*TEST_CASE\w*|SCENARIO\w*)"
                            r"|BENCHMARK(?:_TEMPLATE\d?)?(?:_DEFINE)?_F|BOOST_\w*TEST_CASE\w*")
_HARNESS_REGISTRATION = re.compile(r"BENCHMARK(?:_TEMPLATE\d?|_CAPTURE|_REGISTER_F)?"
                                   r"|(?:CATCH_)?(?:METHOD_AS_TEST_CASE|REGISTER_TEST_CASE)")
# a file of such harness code: a block at the start of a line (`TEST(A, B) {`, `BENCHMARK_F(F, N)(State& s) {`),
# a registration (`BENCHMARK(BM_f)->Arg(8);`) or a framework's `main` (`BENCHMARK_MAIN();`)
_HARNESS_FILE = re.compile(r"^[ \t]*(?:(?:" + _HARNESS_BLOCK.pattern + r")\s*\([^(){};]*\)\s*(?:\([^(){};]*\)\s*)?\{"
                           r"|(?:" + _HARNESS_REGISTRATION.pattern + r"|BENCHMARK_MAIN)\s*\()", re.MULTILINE)


def harness_block(name: str | None) -> bool:
    """Whether ``name`` (a block's head, ``TYPED_TEST``) is a test or benchmark framework's case macro."""
    return bool(name) and _HARNESS_BLOCK.fullmatch(name or "") is not None


def harness_registration(name: str) -> bool:
    """Whether ``name`` is a benchmark or test registration macro that names a function (``BENCHMARK(BM_f)``)."""
    return _HARNESS_REGISTRATION.fullmatch(name) is not None


def harness_program(text: str) -> bool:
    """Whether blanked C++ ``text`` holds test or benchmark harness code (``harness_block`` blocks, registrations,
    ``BENCHMARK_MAIN()``): a test or benchmark program, whose framework supplies ``main``."""
    if "TEST" not in text and "BENCHMARK" not in text and "SCENARIO" not in text:
        return False
    return _HARNESS_FILE.search(text) is not None


def and_operands(cond: str) -> list[str]:
    """The top-level operands of an ``&&`` (or the whole test, outer parentheses dropped); none when ``||`` or
    ``?`` joins its top level."""
    depth = 0
    parts: list[str] = []
    last = 0
    k = 0
    while k < len(cond):
        ch = cond[k]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and (cond.startswith("||", k) or ch == "?"):
            return []
        elif depth == 0 and cond.startswith("&&", k):
            parts.append(cond[last:k])
            last = k + 2
            k += 1
        k += 1
    parts.append(cond[last:])
    out = []
    for part in parts:
        p = " ".join(part.split())
        while p.startswith("(") and p.endswith(")") and _balanced(p[1:-1]):
            p = p[1:-1].strip()
        if p:
            out.append(p)
    return out


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def top_level_args(span: str) -> list[tuple[int, str]]:
    """The top-level arguments of a call's argument text, with their offsets. A ``<`` right after a name opens
    template arguments (``py::keep_alive<0, 1>()``) until its ``>`` (not the ``>`` of ``->``); one left open is
    dropped when the bracket around it closes (a comparison ``a < b`` inside a lambda body)."""
    out: list[tuple[int, str]] = []
    stack: list[str] = []
    last = 0
    for k, ch in enumerate(span):
        if ch in "([{":
            stack.append(ch)
        elif ch == "<" and k > 0 and (span[k - 1].isalnum() or span[k - 1] in "_ ") and \
                re.search(r"[A-Za-z_]\w*\s*$", span[max(0, k - 64):k]):
            stack.append(ch)
        elif ch == ">" and stack and stack[-1] == "<" and span[k - 1] != "-":
            stack.pop()
        elif ch in ")]}":
            while stack and stack[-1] == "<":
                stack.pop()
            if stack:
                stack.pop()
        elif ch == "," and not stack:
            out.append((last, span[last:k]))
            last = k + 1
    out.append((last, span[last:]))
    return out


def split_top(span: str) -> list[str]:
    """The top-level arguments (or parameters) of an argument list's text, as :func:`top_level_args` reads them."""
    return [piece for _, piece in top_level_args(span)]
