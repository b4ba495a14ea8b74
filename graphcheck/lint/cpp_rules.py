"""CUDA C++ rules, on source text with comments and literals blanked out.

The rules work on a copy of the file in which every comment, string literal
(raw strings included) and character literal is replaced by spaces, newlines
kept, so line and column numbers still match the original and nothing inside a
comment or a string can match. Function extents come from brace matching on that
copy; each ``#define`` body is a region of its own.

- GC201: a kernel launch with no stream (``<<<g, b>>>``, ``<<<g, b, smem>>>``) or
  on the legacy or per-thread default stream (``0``, ``nullptr``, ``NULL``,
  ``cudaStreamLegacy``, ``cudaStreamPerThread``, ``getDefaultCUDAStream()``),
  and the same for ``cudaLaunchKernel``/``cudaLaunchCooperativeKernel``,
  ``cuLaunchKernel`` and a ``cudaLaunchKernelEx`` config whose ``.stream`` is set
  to one of those. The per-thread default stream is flagged too: it is not the
  stream PyTorch captures on, so the launch runs eagerly outside the graph.
- GC201 also: ``0``/``nullptr`` (or a ``/*stream=*/nullptr`` label) passed as the
  ``cudaStream_t`` of a launcher declared in the file, and
  ``getDefaultCUDAStream()`` used as a stream anywhere.
- GC110: device, stream or event synchronization, ``cudaStreamQuery`` and blocking
  copies (``cudaMemcpy``...) on the capture path: in a function that launches
  kernels, or in an op or launcher that works on a stream (takes a
  ``cudaStream_t``, a tensor, or gets the current stream).
- GC202: a ``getStreamFromPool()`` side stream never joined back in its function (not the capture stream
  of a capture driver, made current and captured on).
- GC301: ``cudaMemcpyAsync`` host-to-device from pageable memory (a local or
  static variable, a local array, a ``std::vector``, ``new``/``malloc``).
- GC303: ``cudaMalloc``/``cudaFree`` and friends in a function that launches
  kernels (the stream-ordered ``cudaMallocAsync``/``cudaFreeAsync`` are fine).

Off the capture path, nothing is flagged: setup and load-time functions (by
name), branches the code keeps off the graph (``else`` of ``if (use_cuda_graph)``, a
cache-miss fill), functions that check the capture status
themselves, a capture driver's code before its begin or after its end
(``graphcheck.lint.cpp_driver``), and standalone programs (``main()``, ``*_test.cu``) that never
capture. Every scan is linear in the file size: brackets are matched once, launch
scans never overlap, and look-backs are bounded.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass

from graphcheck import rules
from graphcheck.findings import Finding, Severity
from graphcheck.lint import cpp_driver, cpp_once
from graphcheck.lint.coldpaths import measuring_name, name_words, timing_name
from graphcheck.lint.cpp_text import (
    _enclosing,
    _head_before,
    _skip_ws_back,
    _word_back,
    harness_program,
    if_parens,
    split_top,
)

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RAW_PREFIX = re.compile(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(')


_INTEREST = re.compile(r'//|/\*|(?:u8|u|U|L)?R"|"|\'')


def blank_text(chunk: str) -> str:
    """``chunk`` with every character but ``\n`` a space (``re.sub(r"[^\n]", " ", chunk)``, without a regex
    call per character)."""
    return "\n".join(" " * len(line) for line in chunk.split("\n"))


def blank(source: str) -> tuple[str, dict[int, list[str]]]:
    """Blank comments and literals; also return the comments by (1-based) line."""
    pieces: list[str] = []
    comment_at: list[tuple[int, str]] = []
    n = len(source)
    i = 0  # everything before i is already in pieces
    pos = 0

    while True:
        m = _INTEREST.search(source, pos)
        if m is None:
            break
        k = m.start()
        tok = m.group()
        if tok == "//":
            end = k
            while True:  # a line comment ends at a newline not preceded by a backslash
                nl = source.find("\n", end)
                if nl == -1:
                    end = n
                    break
                if source[nl - 1] == "\\":
                    end = nl + 1
                    continue
                end = nl
                break
            comment_at.append((k, source[k:end]))
        elif tok == "/*":
            end = source.find("*/", k + 2)
            end = n if end == -1 else end + 2
            comment_at.append((k, source[k:end]))
        elif tok.endswith('R"'):
            if k > 0 and (source[k - 1].isalnum() or source[k - 1] == "_"):
                pos = m.end()  # an identifier ending in R followed by a string: treat the quote next round
                pos -= 1
                continue
            raw = _RAW_PREFIX.match(source, k)
            if raw is None:
                pos = m.end() - 1
                continue
            closer = ")" + raw.group(1) + '"'
            end = source.find(closer, raw.end())
            end = n if end == -1 else end + len(closer)
        elif tok == "'":
            # a digit separator (1'000'000) is not a character literal
            if k > 0 and source[k - 1].isalnum() and _in_number(source, k):
                pos = k + 1
                continue
            end = _string_end(source, k + 1, "'")
        else:
            end = _string_end(source, k + 1, '"')
        pieces.append(source[i:k])
        pieces.append(blank_text(source[k:end]))
        i = pos = max(end, k + 1)
    pieces.append(source[i:])
    comments: dict[int, list[str]] = {}
    if comment_at:
        line_starts = [0] + [mm.end() for mm in re.finditer("\n", source)]
        for k, text in comment_at:
            comments.setdefault(bisect.bisect_right(line_starts, k), []).append(text)
    return "".join(pieces), comments


def _in_number(source: str, i: int) -> bool:
    # bounded: a numeric literal is short, and an unbounded scan back over `a'a'a'...` would be quadratic
    j = i - 1
    stop = max(-1, i - 64)
    while j > stop and (source[j].isalnum() or source[j] in "_.'"):
        j -= 1
    return source[j + 1].isdigit()


def _string_end(source: str, i: int, quote: str) -> int:
    n = len(source)
    while i < n:
        c = source[i]
        if c == "\\":
            i += 2
            continue
        if c == quote:
            return i + 1
        if c == "\n":  # unterminated: stop at the end of the line
            return i
        i += 1
    return n


# --- brackets and regions ------------------------------------------------------------


def _bracket_pairs(text: str) -> dict[int, int]:
    """Matching brackets, both ways (open -> close and close -> open), in one pass.

    Each kind ``()``, ``[]``, ``{}`` has its own stack, so a stray bracket of one
    kind never unbalances another. Everything that needs a matching bracket looks it
    up here: no scan is repeated per bracket, which keeps the rules linear-time.
    """
    pairs: dict[int, int] = {}
    stacks: dict[str, list[int]] = {"(": [], "[": [], "{": []}
    opener = {")": "(", "]": "[", "}": "{"}
    for m in re.finditer(r"[()\[\]{}]", text):
        ch = m.group()
        k = m.start()
        if ch in stacks:
            stacks[ch].append(k)
        else:
            stack = stacks[opener[ch]]
            if stack:
                o = stack.pop()
                pairs[o] = k
                pairs[k] = o
    return pairs


@dataclass(frozen=True)
class Region:
    start: int
    end: int
    name: str | None
    params: str = ""


_CONTROL = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof", "defined",
            "static_assert", "noexcept", "throw", "new", "delete", "do", "else", "try"}
_QUALIFIERS = {"const", "noexcept", "override", "final", "volatile", "mutable", "&", "&&", "throw"}
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)
_DIRECTIVE = re.compile(r"^[ \t]*#", re.MULTILINE)


def _directive_spans(text: str) -> list[tuple[int, int, str | None]]:
    """(start, end, macro name or None) of each preprocessor directive, continuation lines included."""
    spans = []
    pos = 0
    n = len(text)
    while True:
        m = _DIRECTIVE.search(text, pos)
        if m is None:
            break
        start = m.start()
        end = start
        while True:
            nl = text.find("\n", end)
            if nl == -1:
                end = n
                break
            j = nl - 1
            while j > start and text[j] in " \t\r":
                j -= 1
            if text[j] == "\\":
                end = nl + 1
                continue
            end = nl
            break
        d = _DEFINE.match(text, start)
        spans.append((start, end, d.group(1) if d else None))
        pos = max(end, start + 1)
    return spans


def _function_head(text: str, brace: int, pairs: dict[int, int]) -> tuple[str, int] | None:
    """(name, index of its parameter list's ``(``) of the function whose body opens at ``brace``, or None."""
    k = _skip_ws_back(text, brace - 1)
    for _ in range(8):  # qualifiers and ctor initializer lists, bounded
        if k < 0:
            return None
        ch = text[k]
        if ch == "]":
            return None  # lambda
        if ch in ")}":
            open_k = pairs.get(k, -1)
            if open_k < 0:
                return None
            j = _skip_ws_back(text, open_k - 1)
            if j >= 0 and text[j] == "]":
                return None  # lambda with parameters
            if j >= 0 and text[j] == ">":  # an explicit specialization: f<float>(...)
                j = _skip_template_back(text, j)
            name, before = _word_back(text, j)
            if not name or name in _CONTROL:
                return None
            b = _skip_ws_back(text, before)
            # a constructor initializer list: `Foo(..) : a_(x), b_{y} {`
            if b >= 0 and text[b] == "," or (b >= 0 and text[b] == ":" and (b == 0 or text[b - 1] != ":")):
                k = _skip_ws_back(text, b - 1)
                continue
            if ch == "}":
                return None
            return (name.split("::")[-1] or name), open_k
        if ch.isalpha() or ch == "_" or ch == "&":
            word, before = _word_back(text, k) if ch != "&" else ("&", k - 1)
            if word in _QUALIFIERS or word.startswith("__"):
                k = _skip_ws_back(text, before)
                continue
            # trailing return type `-> T`
            arrow = text.rfind("->", max(0, k - 200), k)
            if arrow != -1 and (text[arrow + 2 : k + 1].strip().replace("::", "").replace("<", "").replace(">", "")
                                .replace(" ", "").isidentifier()):
                k = _skip_ws_back(text, arrow - 1)
                continue
            return None
        return None
    return None


def _flatten_directives(text: str, directives: list[tuple[int, int, str | None]]) -> str:
    if not directives:
        return text
    parts = []
    last = 0
    for start, end, _ in directives:
        if start < last:
            continue
        parts.append(text[last:start])
        parts.append(blank_text(text[start:end]))
        last = end
    parts.append(text[last:])
    return "".join(parts)


_CONDITIONAL = re.compile(r"[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b")


def _first_branches(flat: str, text: str, directives: list[tuple[int, int, str | None]]) -> str:
    """``flat`` with each ``#elif``/``#else`` branch that opens or closes more braces than it matches blanked.

    Code like ``#if A  void f() {  #else  void f(int x) {  #endif`` opens two braces for one
    close; counting the braces of such a later branch would unbalance every function below.
    A later branch whose braces balance (whole functions under ``#else``) is kept. An
    ``#endif`` without an ``#if`` and an ``#if`` never closed are tolerated. Linear: brace
    counts come from prefix sums, one pass over the directives, one over the text.
    """
    if "#" not in flat and not directives:
        return flat
    braces = [(m.start(), 1 if m.group() == "{" else -1) for m in re.finditer(r"[{}]", flat)]
    at = [b[0] for b in braces]
    cum = [0]
    for _, d in braces:
        cum.append(cum[-1] + d)

    def delta(a: int, b: int) -> int:
        return cum[bisect.bisect_left(at, b)] - cum[bisect.bisect_left(at, a)]

    skip: list[tuple[int, int]] = []  # later branches to blank
    stack: list[list[int]] = []  # per open #if: [index of the current branch, where it began]
    for start, _end, _ in directives:
        m = _CONDITIONAL.match(text, start)
        if m is None:
            continue
        word = m.group(1)
        if word.startswith("if"):
            stack.append([0, start])
            continue
        if not stack:
            continue  # a stray #else or #endif
        branch, began = stack[-1]
        if branch > 0 and delta(began, start) != 0:
            skip.append((began, start))
        if word == "endif":
            stack.pop()
        else:
            stack[-1] = [branch + 1, start]
    for branch, began in stack:  # never closed
        if branch > 0 and delta(began, len(flat)) != 0:
            skip.append((began, len(flat)))
    if not skip:
        return flat
    skip.sort()
    parts = []
    last = 0
    for a, b in skip:
        a = max(a, last)  # nested inside a span already blanked
        if b <= a:
            continue
        parts.append(flat[last:a])
        parts.append(blank_text(flat[a:b]))
        last = b
    parts.append(flat[last:])
    return "".join(parts)


def function_regions(text: str, pairs: dict[int, int] | None = None) -> list[Region]:
    """Outermost function bodies and macro definitions, sorted by start."""
    directives = _directive_spans(text)
    flat = _flatten_directives(text, directives)
    first = _first_branches(flat, text, directives)
    if first is not flat:  # some #else branch opens a brace its #if branch already opened
        flat, pairs = first, _bracket_pairs(first)
    elif pairs is None:
        pairs = _bracket_pairs(flat)
    regions: list[Region] = []
    stack: list[tuple[int, str | None, str]] = []
    fn_depth = -1
    for m in re.finditer(r"[{}]", flat):
        pos = m.start()
        if m.group() == "{":
            head = None
            if fn_depth < 0:
                head = _function_head(flat, pos, pairs)
            if head is not None:
                name, paren = head
                close = pairs.get(paren, paren)
                stack.append((pos, name, flat[paren + 1 : close] if close - paren < 4000 else ""))
                fn_depth = len(stack)
            else:
                stack.append((pos, None, ""))
        else:
            if not stack:
                continue
            start, fn_name, params = stack.pop()
            if fn_depth == len(stack) + 1:
                regions.append(Region(start, pos + 1, fn_name, params))
                fn_depth = -1
    if fn_depth > 0 and len(stack) >= fn_depth:
        start, fn_name, params = stack[fn_depth - 1]
        regions.append(Region(start, len(text), fn_name, params))
    for start, end, macro in directives:
        if macro:
            regions.append(Region(start, end, macro))
    regions.sort(key=lambda r: r.start)
    return regions


class _Locator:
    def __init__(self, text: str, regions: list[Region]):
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.regions = regions
        self.starts = [r.start for r in regions]

    def line_col(self, pos: int) -> tuple[int, int]:
        idx = bisect.bisect_right(self.line_starts, pos) - 1
        return idx + 1, pos - self.line_starts[idx]

    def region(self, pos: int) -> Region | None:
        """The innermost region holding pos (a macro inside a function wins)."""
        idx = bisect.bisect_right(self.starts, pos) - 1
        steps = 0
        while idx >= 0 and steps < 256:
            r = self.regions[idx]
            if r.start <= pos < r.end:
                return r
            idx -= 1
            steps += 1
        return None


# --- streams ---------------------------------------------------------------------------

_BAD_STREAM_WORDS = {
    "0": "stream 0 (the legacy default stream)",
    "0l": "stream 0 (the legacy default stream)",
    "0u": "stream 0 (the legacy default stream)",
    "0ul": "stream 0 (the legacy default stream)",
    "0ll": "stream 0 (the legacy default stream)",
    "nullptr": "stream nullptr (the legacy default stream)",
    "null": "stream NULL (the legacy default stream)",
    "cudastreamlegacy": "cudaStreamLegacy",
    "custreamlegacy": "CU_STREAM_LEGACY",
    "cu_stream_legacy": "CU_STREAM_LEGACY",
    "cudastreamdefault": "cudaStreamDefault (0, the legacy default stream)",
    "cudastreamperthread": "cudaStreamPerThread (the per-thread default stream, not the capturing stream)",
    "cu_stream_per_thread": "CU_STREAM_PER_THREAD (the per-thread default stream, not the capturing stream)",
}
_CAST = re.compile(r"^(?:\(\s*(?:cudaStream_t|CUstream)\s*\)"
                   r"|(?:static_cast|reinterpret_cast)\s*<\s*(?:cudaStream_t|CUstream)\s*>)")


def _strip_outer_parens(s: str) -> str | None:
    """``s`` without one pair of parentheses that encloses all of it, or None."""
    if not (s.startswith("(") and s.endswith(")")):
        return None
    depth = 0
    for k, ch in enumerate(s):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return s[1:-1] if k == len(s) - 1 else None
    return None


def _bad_stream(arg: str) -> str | None:
    """Why ``arg`` (a stream expression) is not the current stream, or None if it may be."""
    if len(arg) > 400:
        return None
    s = " ".join(arg.replace("\\", " ").split())
    for _ in range(4):
        s = s.strip()
        m = _CAST.match(s)
        if m:
            s = s[m.end():]
            continue
        inner = _strip_outer_parens(s)
        if inner is not None:
            s = inner
            continue
        break
    s = s.strip()
    if "getDefaultCUDAStream" in s:
        return "the default CUDA stream (getDefaultCUDAStream(), not the capturing stream)"
    key = s.split("::")[-1].lower() if "::" in s else s.lower()
    return _BAD_STREAM_WORDS.get(key)


_ARG_STOP = re.compile(r"[(\[{,]")


def _split_args(text: str, start: int, end: int, pairs: dict[int, int]) -> list[str]:
    """Split text[start:end] on top-level commas, jumping over nested brackets (linear overall)."""
    args, last, k = [], start, start
    while True:
        m = _ARG_STOP.search(text, k, end)
        if m is None:
            break
        k = m.start()
        if text[k] == ",":
            args.append(text[last:k])
            last = k + 1
            k += 1
            continue
        close = pairs.get(k, -1)
        if close < 0 or close >= end:
            k += 1
            continue
        k = close + 1
    args.append(text[last:end])
    return args


_LAUNCH_SCAN = re.compile(r"[()\[\]{};]|>>>")


def _launch_close(text: str, start: int) -> tuple[int, int]:
    """(index of the ``>>>`` closing a launch whose ``<<<`` ends at ``start`` or -1, where the scan stopped).

    The caller resumes its search for the next ``<<<`` after the stop, so no text is
    scanned twice, however many ``<<<`` a file holds.
    """
    depth = 0
    for m in _LAUNCH_SCAN.finditer(text, start):
        tok = m.group()
        if tok in "([{":
            depth += 1
        elif tok in ")]}":
            depth -= 1
            if depth < 0:
                return -1, m.start()
        elif tok == ">>>":
            if depth == 0:
                return m.start(), m.end()
        elif depth == 0:  # ';'
            return -1, m.start()
    return -1, len(text)


def _skip_template_back(text: str, k: int, floor: int = 0) -> int:
    """From the ``>`` closing template arguments at k, the index just before the matching ``<``.

    Never scans before ``floor`` (the end of the previous launch) or past a ``<<<``,
    and at most 1,000 characters.
    """
    depth = 0
    j = k
    low = max(floor, k - 1000)
    while j >= low:
        ch = text[j]
        if ch == ">":
            depth += 1
        elif ch == "<":
            if text.startswith("<<<", j - 2) and j >= 2:
                return k
            depth -= 1
            if depth == 0:
                return _skip_ws_back(text, j - 1)
        elif ch in ";{}":
            return k
        j -= 1
    return k


def _kernel_name(text: str, lt: int, floor: int) -> tuple[str, int]:
    """The kernel expression before ``<<<`` at ``lt``: (name, start index)."""
    k = _skip_ws_back(text, lt - 1)
    if k >= 0 and text[k] == ">":  # template arguments k<T, 4>
        k = _skip_template_back(text, k, floor)
    name, before = _word_back(text, k)
    if not name:
        return "", lt
    return name, before + 1


_LAUNCH_CALLS = re.compile(r"\b(cudaLaunchKernel|cudaLaunchCooperativeKernel|cuLaunchKernel|cuLaunchCooperativeKernel"
                           r"|cudaLaunchKernelExC|cudaLaunchKernelEx|cuLaunchKernelEx)\s*(?:<[^;(){}<>]{0,400}>\s*)?\(")
# 0-based index of the stream argument and whether it may be omitted (C++ default argument 0)
_STREAM_ARG = {
    "cudaLaunchKernel": (5, True),
    "cudaLaunchCooperativeKernel": (5, True),
    "cuLaunchKernel": (8, False),
    "cuLaunchCooperativeKernel": (8, False),
}
_EX_STREAM = re.compile(r"(?:\.|->)[ \t]*(?:stream|hStream)[ \t]*=(?!=)")
_EX_VALUE_END = re.compile(r"[;,]")

_SYNC = re.compile(
    r"(?<![\w.])(?:(?:at|c10)\s*::\s*cuda\s*::\s*)?"
    r"(cudaDeviceSynchronize|cudaThreadSynchronize|cudaStreamSynchronize|cudaEventSynchronize|cudaStreamQuery"
    r"|cuCtxSynchronize|cuStreamSynchronize|cuEventSynchronize|cuStreamQuery|device_synchronize)\s*\("
    r"|(?<![\w.])torch\s*::\s*cuda\s*::\s*(synchronize)\s*\("
    r"|(?:\.|->)\s*(synchronize)\s*\(\s*\)"
)
# blocking copies: they wait for the device and run on the legacy stream
_BLOCKING_COPY = re.compile(
    r"(?<![\w.])(?:::\s*)?(cudaMemcpy|cudaMemcpy2D|cudaMemcpy3D|cudaMemcpyToSymbol|cudaMemcpyFromSymbol"
    r"|cuMemcpyHtoD|cuMemcpyDtoH|cuMemcpyHtoD_v2|cuMemcpyDtoH_v2|cuMemcpy)\s*\("
)
_MALLOC = re.compile(
    r"(?<![\w.])(cudaMalloc|cudaMallocManaged|cudaMallocHost|cudaHostAlloc|cudaMallocPitch|cudaMalloc3D|cudaMallocArray"
    r"|cudaFree|cudaFreeHost|cudaFreeArray|cuMemAlloc|cuMemAlloc_v2|cuMemAllocManaged|cuMemAllocHost|cuMemFree|cuMemFree_v2|cuMemFreeHost)\s*\("
)
_DEFAULT_STREAM_CALL = re.compile(r"(?<![\w.])(?:(?:at|c10)\s*::\s*cuda\s*::\s*)?getDefaultCUDAStream\s*\(")
_POOL_STREAM = re.compile(r"(?<![\w.])(?:(?:at|c10)\s*::\s*cuda\s*::\s*)?getStreamFromPool\s*\(")
# PyTorch named in a file: its namespaces or its headers (a pool stream of PyTorch's needs one of them)
_TORCH_NAMED = re.compile(r"\b(?:at|c10|torch)\s*::|^[ \t]*#[ \t]*include[ \t]*[<\"](?:ATen|c10|torch)/", re.MULTILINE)
# a join of a side stream back into the current one
_JOIN = re.compile(r"\b(?:cudaStreamWaitEvent|cuStreamWaitEvent|wait_stream|waitStream)\b|(?:\.|->)\s*block\s*\(")
_MEMCPY_ASYNC = re.compile(r"(?<![\w.])(?:::\s*)?(cudaMemcpyAsync|cuMemcpyHtoDAsync|cuMemcpyHtoDAsync_v2)\s*\(")
# A word every match of the pattern holds: a text with none of them is not scanned. These patterns open with a
# look-behind or an alternation, which keeps the regex engine from skipping ahead to a literal, so a scan costs
# a try at every position (a third of the C++ rules' time on a tree of large generated headers).
_NEEDS: dict[re.Pattern[str], tuple[str, ...]] = {
    _LAUNCH_CALLS: ("Launch",),
    _SYNC: ("ynchronize", "StreamQuery"),
    _BLOCKING_COPY: ("Memcpy",),
    _MALLOC: ("Malloc", "Alloc", "Free"),
    _DEFAULT_STREAM_CALL: ("getDefaultCUDAStream",),
    _POOL_STREAM: ("getStreamFromPool",),
    _MEMCPY_ASYNC: ("Memcpy",),
}


# `at::cuda::setCurrentCUDAStream(` just before a `getDefaultCUDAStream(...)` it takes as its whole argument
_SET_CURRENT_HEAD = re.compile(r"(?<![\w.>])(?:(?:at|c10)\s*::\s*cuda\s*::\s*)?setCurrentCUDAStream\s*\(\s*$")
# another reset of the current stream after it (`c10::hip::setCurrentHIPStream(...)` of a ROCm branch)
_SET_STREAM_CALL = re.compile(r"(?<![\w.>])(?:\w+\s*::\s*)*setCurrent(?:CUDA|HIP)Stream\s*\($")
_LOOP_WORD = re.compile(r"\b(?:for|while|do)\b")


def _thread_stream_reset(text: str, m: re.Match[str], region: Region | None, pairs: dict[int, int],
                         launch_regions: set[Region]) -> str | None:
    """``setCurrentCUDAStream(getDefaultCUDAStream(...))`` (``m``: the getter) when it is all its function does
    with streams: the function launches nothing and reads no current stream, the reset is in no loop, and after
    it the body holds no call but other such resets (``return;``, braces and preprocessor lines are fine). The
    text of the reset, else None (a function that resets and then launches, or calls anything, keeps the
    error: its work goes to the default stream)."""
    if region is None or region in launch_regions:
        return None
    span = _reset_span(text, m, region, pairs)
    if span is None:
        return None
    head_start, outer_close = span
    semi = outer_close + 1
    while semi < region.end and text[semi] in " \t\r\n":
        semi += 1
    if semi >= region.end or text[semi] != ";":
        return None
    body = text[region.start + 1 : region.end]
    if _CURRENT_STREAM.search(body) or _LOOP_WORD.search(text, region.start, head_start):
        return None
    rest = _flatten_directives(text[semi + 1 : region.end], _directive_spans(text[semi + 1 : region.end]))
    pos = 0
    while True:  # later resets (another backend's branch) are skipped whole; any other call is work
        k = rest.find("(", pos)
        if k < 0:
            break
        if _SET_STREAM_CALL.search(rest[max(0, k - 120) : k + 1]) is None:
            return None
        depth, j = 0, k
        while j < len(rest):
            depth += (rest[j] == "(") - (rest[j] == ")")
            if depth == 0:
                break
            j += 1
        pos = j + 1
    if "<<<" in rest:
        return None
    return _reset_text(text, span)


def _reset_span(text: str, m: re.Match[str], region: Region, pairs: dict[int, int]) -> tuple[int, int] | None:
    """Where ``setCurrentCUDAStream(getDefaultCUDAStream(...))`` starts and where its outer parenthesis closes, when
    ``m`` (the getter) is that call's whole argument; else None."""
    head = _SET_CURRENT_HEAD.search(text, max(region.start, m.start() - 120), m.start())
    if head is None:
        return None
    inner_close = pairs.get(m.end() - 1, -1)
    outer_close = pairs.get(text.rfind("(", head.start(), m.start()), -1)
    if inner_close < 0 or outer_close < 0 or text[inner_close + 1 : outer_close].strip():
        return None
    return head.start(), outer_close


def _reset_text(text: str, span: tuple[int, int]) -> str:
    """The reset call at ``span`` (``_reset_span``) as one line."""
    return " ".join(text[span[0] : span[1] + 1].split())


_RETURN_TAIL = re.compile(r"\breturn\s*$")
_BOUND_TAIL = re.compile(r"(?<![\w.>])(\w+)\s*=\s*$")
_STATEMENT_END = re.compile(r"\s*;")
_WORD = re.compile(r"(?<![\w.>])[A-Za-z_]\w*")


def _name_positions(text: str, region: Region, names: dict[Region, dict[str, list[int]]]) -> dict[str, list[int]]:
    """Every name's positions in ``region``, in text order, found once per region and kept in ``names`` (a scan
    per stream would be quadratic)."""
    uses = names.get(region)
    if uses is None:
        uses = names[region] = {}
        for word in _WORD.finditer(text, region.start, region.end):
            uses.setdefault(word.group(), []).append(word.start())
    return uses


def _returned_pool_stream(text: str, m: re.Match[str], region: Region, pairs: dict[int, int],
                          names: dict[Region, dict[str, list[int]]]) -> bool:
    """A stream getter: the pool stream is returned as is (``return at::cuda::getStreamFromPool(p);``) or
    bound to a name (``static auto s = getStreamFromPool(true);``) whose one later use is ``return s;``.
    Nothing is launched on it here, so joining it is the caller's job (a warning, not an error)."""
    close = pairs.get(text.find("(", m.end() - 1), -1)
    if close < 0 or not _STATEMENT_END.match(text, close + 1):
        return False  # the stream is used in a larger expression
    head = _head_before(text, m.start(), region.start)
    if _RETURN_TAIL.search(head):
        return True
    bound = _BOUND_TAIL.search(head)
    if bound is None:
        return False
    uses = _name_positions(text, region, names)
    at = uses.get(bound.group(1), [])  # in text order
    first_later = bisect.bisect_right(at, close)
    if len(at) - first_later != 1:
        return False
    use = at[first_later]
    return _RETURN_TAIL.search(text[max(region.start, use - 40) : use]) is not None and _STATEMENT_END.match(
        text, use + len(bound.group(1))) is not None


# the name of a call that only tells the caching allocator a tensor's memory is used on a stream
_RECORD_STREAM_TAIL = re.compile(r"(?<!\w)(?:record_stream|recordStream)\s*$")


def _record_stream_arg(text: str, start: int, end: int, pairs: dict[int, int], floor: int) -> bool:
    """``text[start:end]`` is the whole last argument of a ``.record_stream(...)`` / ``recordStream(...)`` call."""
    j = end
    while j < len(text) and text[j] in " \t\r\n":
        j += 1
    i = start - 1
    while i >= floor and text[i] in " \t\r\n":
        i -= 1
    if j >= len(text) or text[j] != ")" or i < floor or text[i] not in "(,":
        return False
    open_paren = pairs.get(j, -1)
    if open_paren < floor or (text[i] == "(" and i != open_paren):
        return False
    return _RECORD_STREAM_TAIL.search(text, max(floor, open_paren - 60), open_paren) is not None


def _record_stream_only(text: str, m: re.Match[str], region: Region | None, pairs: dict[int, int],
                        names: dict[Region, dict[str, list[int]]]) -> bool:
    """The default stream (``m``: the getter) is only an argument of ``record_stream``/``recordStream``: as is
    (``x.record_stream(at::cuda::getDefaultCUDAStream());``) or bound to a name (``auto s = getDefaultCUDAStream();``)
    with at least one later use in the function and every one of them such an argument. Recording a stream
    enqueues nothing (the caching allocator defers its event to after a capture), so there is no hazard."""
    floor = region.start if region is not None else 0
    close = pairs.get(m.end() - 1, -1)
    if close < 0:
        return False
    if _record_stream_arg(text, m.start(), close + 1, pairs, floor):
        return True
    if region is None or not _STATEMENT_END.match(text, close + 1):
        return False
    bound = _BOUND_TAIL.search(_head_before(text, m.start(), floor))
    if bound is None:
        return False
    uses = _name_positions(text, region, names)
    name = bound.group(1)
    at = uses.get(name, [])  # in text order
    first = bisect.bisect_right(at, close)
    # all() stops at the first other use, and a later binding of the name is one: over the function, the uses
    # read add up to the name's uses plus one per binding (no slice of the list: that would copy the rest each time)
    return first < len(at) and all(_record_stream_arg(text, at[k], at[k] + len(name), pairs, floor)
                                   for k in range(first, len(at)))


def _finditer(rx: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """``rx.finditer(text)``; nothing, without a scan, when ``text`` holds none of the words ``_NEEDS`` gives."""
    if not any(word in text for word in _NEEDS[rx]):
        return iter(())
    return rx.finditer(text)


# the current (capturing) stream, obtained in the function
_CURRENT_STREAM = re.compile(
    r"\b(?:getCurrentCUDAStream|getCurrentStream|get_current_stream|getCurrentHIPStream|get_stream|current_stream)\s*\(")
_STREAM_PARAM = re.compile(r"\b(?:cudaStream_t|CUstream|CUDAStream|hipStream_t)\b")
_TENSOR_PARAM = re.compile(r"\b(?:Tensor|TensorView|TensorList)\b")
# code that checks whether the stream is capturing knows about capture: its syncs are taken as guarded
_CAPTURE_AWARE = re.compile(
    r"\b(?:cudaStreamIsCapturing|cudaStreamGetCaptureInfo|cudaStreamGetCaptureInfo_v2|currentStreamCaptureStatus"
    r"|currentStreamCaptureStatusMayInitCtx|is_current_stream_capturing|cuStreamIsCapturing|cuStreamGetCaptureInfo)\b")
# a file that captures a graph itself (a standalone test of capture): its launches matter even with main()
_CAPTURES = re.compile(r"\b(?:cudaStreamBeginCapture|cuStreamBeginCapture|cudaGraphInstantiate|CUDAGraph)\b")
_MAIN = re.compile(r"(?<![\w:.])(?:int|void|auto)\s+main\s*\(")
# words of a function name that mark load-time or one-off setup code, which never runs under capture
_SETUP_WORDS = frozenset({
    "init", "initialize", "setup", "create", "alloc", "allocate", "register", "load", "preprocess", "prepack",
    "shuffle", "repack", "destroy", "free", "release", "dispose", "warmup", "benchmark", "bench", "profile",
    "tune", "autotune", "test", "debug", "dump", "print", "calibrate", "open", "close", "ipc", "handle",
    "handles", "cleanup", "teardown", "constructor", "destructor", "reset", "configure",
})
# weight preparation at load time: a layout verb on a weight (``encode_int4b``, ``reorder_weight``, ``pack_weights``)
_WEIGHT_VERBS = frozenset({"encode", "reorder", "pack", "interleave", "permute", "convert", "swizzle", "transform"})
_WEIGHT_NOUNS = frozenset({"weight", "weights", "int4b", "qweight", "wq"})


def _name_words(name: str) -> set[str]:
    """The lower-case words of a C++ name (``configureKernel`` -> {"configure", "kernel"})."""
    return set(name_words(name))


def is_setup_function(name: str | None) -> bool:
    """Whether a function's name says it is load-time or one-off setup (``init_workspace``, ``shuffle_weights``,
    ``configureKernel``, weight preparation such as ``unified_encode_int4b``, a UVA view such as
    ``get_cuda_view_from_cpu_tensor``), a size query (``getWorkspaceSize``) or a sync helper whose callers are
    where the hazard is."""
    if not name:
        return False
    words = _name_words(name)
    if words & _SETUP_WORDS or {"workspace", "size"} <= words or words & {"sync", "synchronize"}:
        return True
    if words & _WEIGHT_VERBS and words & _WEIGHT_NOUNS:
        return True
    # a host view of memory for the device (UVA): made once, when the buffer is set up
    return "uva" in words or ("view" in words and bool(words & {"cpu", "host"}))


_GRAPH_FLAG = re.compile(r"graph|captur", re.IGNORECASE)
_NEGATED_FLAG = re.compile(r"^\s*!\s*\(?\s*[\w.>:-]*(?:graph|captur)\w*\s*\)?\s*$|"
                           r"^\s*[\w.>:-]*(?:graph|captur)\w*\s*==\s*false\s*$", re.IGNORECASE)


def _condition_before(text: str, brace: int, pairs: dict[int, int]) -> str | None:
    """The condition of the ``if (...)`` whose block opens at ``brace``, or None."""
    parens = if_parens(text, brace, pairs, 399)
    return None if parens is None else text[parens[0] + 1 : parens[1]]


_IDENTS = re.compile(r"[A-Za-z_]\w*")
_ENV_WINDOW = 4000


def _cache_miss(cond: str) -> bool:
    """``if (cache_miss)``, ``if (it == cache.end())``, ``if (!cache.count(key))``: the fill on a cache miss runs
    on the first call (before capture, in warm-up), not on the replayed path."""
    c = cond.strip()
    if c.startswith("!") and "miss" in c.lower():
        return False  # the hit path
    words = set().union(*(_name_words(w) for w in _IDENTS.findall(c))) if c else set()
    if "miss" in words or "missed" in words:
        return True
    return "cache" in words and bool(re.search(r"end\s*\(\s*\)|^!|count\s*\([^()]*\)\s*==\s*0", c))


def _env_switch(cond: str, text: str, brace: int) -> bool:
    """``if (kSyncH2D)`` where the flag is a ``static`` set from ``getenv``: a debug switch, off in normal runs."""
    m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*", cond)
    if m is None:
        return False
    decl = re.search(r"\bstatic\b[^;{}]*\b" + re.escape(m.group(1)) + r"\s*=[^;]{0,600}?\bgetenv\s*\(",
                     text[max(0, brace - _ENV_WINDOW) : brace])
    return decl is not None


_RETURN = re.compile(r"\breturn\b")
_LABEL = re.compile(r"(?:\bcase\b[^;{}]*?|\bdefault\s*|\b[A-Za-z_]\w*\s*):(?!:)")


class _BlockReturns:
    """One block's own text (nested blocks and parentheses cut out to ``{}`` / ``()``), read once: where its
    unconditional ``return ...;`` statements end and where a label or a preprocessor line could make the code
    after them reachable again. ``after_return`` asks it once per finding, so a block with many findings is
    read once, not once per finding."""

    def __init__(self, text: str, block: int, pairs: dict[int, int]):
        close = pairs.get(block, -1)
        stop = close if close > block else len(text)
        self.stop = stop
        self.cuts: list[tuple[int, int]] = []  # (open, close) of the brackets cut out, in order
        self.unmatched = stop  # the first bracket that closes nowhere (or past the block): nothing after it counts
        self.segs: list[tuple[int, int]] = []  # (text start, own start) of each kept piece
        parts: list[str] = []
        n = 0
        k = block + 1
        while k < stop:
            nxt = min((j for j in (text.find("{", k, stop), text.find("(", k, stop)) if j >= 0), default=-1)
            piece = text[k:stop] if nxt < 0 else text[k:nxt]
            self.segs.append((k, n))
            parts.append(piece)
            n += len(piece)
            if nxt < 0:
                break
            end = pairs.get(nxt, -1)
            if end < 0 or end >= stop:
                self.unmatched = nxt
                break
            self.cuts.append((nxt, end))
            parts.append("()" if text[nxt] == "(" else "{}")
            n += 2
            k = end + 1
        own = "".join(parts)
        self.own = own
        # (own offset of the `;` ending it) of each unconditional return, in order
        self.returns: list[int] = []
        for m in _RETURN.finditer(own):
            end = own.find(";", m.end())
            if end < 0:
                break
            before = own[: m.start()].rstrip()
            if before and before[-1] not in ";{}:":
                continue  # `if (c) return;`, `else return;`: a conditional return
            if re.search(r"\b(?:else|do)$", before):
                continue
            self.returns.append(end)
        self.hashes = [i for i, c in enumerate(own) if c == "#"] if self.returns else []

    def own_offset(self, pos: int) -> int | None:
        """``pos`` in own-text offsets; None when it is inside a cut-out bracket or past an unmatched one."""
        if pos > self.unmatched:
            return None
        i = bisect.bisect_right(self.cuts, (pos, len(self.own) + pos)) - 1
        if i >= 0 and self.cuts[i][0] < pos <= self.cuts[i][1]:
            return None  # pos is inside an enclosing bracket of this statement
        j = bisect.bisect_right(self.segs, (pos, len(self.own) + pos)) - 1
        if j < 0:
            return 0
        start, at = self.segs[j]
        return at + (pos - start)

    def dead(self, pos: int) -> bool:
        off = self.own_offset(pos)
        if off is None or not self.returns:
            return False
        i = bisect.bisect_left(self.returns, off) - 1
        if i < 0:
            return False
        end = self.returns[i]  # the last unconditional return whose `;` comes before pos: earlier ones add nothing
        h = bisect.bisect_right(self.hashes, end)
        if h < len(self.hashes) and self.hashes[h] < off:
            return False
        return _LABEL.search(self.own, end + 1, off) is None


def after_return(text: str, pos: int, pairs: dict[int, int], opens: list[int],
                 memo: dict[int, _BlockReturns] | None = None) -> bool:
    """Whether ``pos`` follows an unconditional ``return ...;`` of its own block (``return out; sync();``): code
    no path reaches. A ``return`` that is the body of an ``if``/``else``/loop without braces is conditional; a
    ``case``/``default``/goto label or a preprocessor line between the return and ``pos`` makes it reachable.
    ``memo`` keeps each block's reading for the next ``pos`` in the same text."""
    block = next(_enclosing(text, pos, pairs, opens), None)
    if block is None or pos - block > 200_000:
        return False
    if memo is None:
        memo = {}
    if block not in memo:
        memo[block] = _BlockReturns(text, block, pairs)
    return memo[block].dead(pos)


def in_non_capture_branch(text: str, pos: int, pairs: dict[int, int], opens: list[int]) -> bool:
    """Whether ``pos`` sits in a branch the code itself keeps off the graph path: the ``else`` of
    ``if (use_cuda_graph)``, the body of ``if (!is_capturing)`` / ``if (graph_mode == false)``, a cache-miss fill
    (``if (cache_miss)``) or a debug switch read from the environment. One-time set-up (``if (!flag) { ...;
    flag = true; }``, a lazily allocated pointer, a ``static`` initializer) is not dropped here: it is a warning
    that names its guard (``cpp_once``)."""
    for b in _enclosing(text, pos, pairs, opens):
        cond = _condition_before(text, b, pairs)
        if cond is not None and (_NEGATED_FLAG.match(cond) or _cache_miss(cond) or _env_switch(cond, text, b)):
            return True
        k = _skip_ws_back(text, b - 1)
        word, before = _word_back(text, k)
        if word == "else":
            prev_close = _skip_ws_back(text, before)
            if prev_close >= 0 and text[prev_close] == "}":
                cond = (_condition_before(text, pairs.get(prev_close, -1), pairs)
                        if pairs.get(prev_close, -1) >= 0 else None)
                if cond is not None and _GRAPH_FLAG.search(cond) and not cond.strip().startswith("!") \
                        and "false" not in cond:
                    return True
    return False


_NEGATED_IDENT = re.compile(r"if\s*\(\s*!\s*([A-Za-z_][\w.>:-]*)\s*\)\s*\{")


def _timing_flag(cond: str) -> str | None:
    """The flag of a timing test, ``s.time_kernel_``, ``timing``, ``cfg.benchmark``, or None: a condition that
    is one member chain (no ``!``) whose last name says kernel timing or profiling
    (``graphcheck.lint.coldpaths.timing_name``)."""
    m = re.fullmatch(r"\s*([A-Za-z_][\w.>:-]*?)\s*(?:\(\s*\))?\s*", cond)
    if m is None:
        return None
    last = re.split(r"\.|->|::", m.group(1))[-1]
    return m.group(1) if last and timing_name(last) else None


def timing_branch(text: str, pos: int, pairs: dict[int, int], opens: list[int], floor: int = 0) -> str | None:
    """The timing flag when ``pos`` runs only while kernels are timed: inside ``if (s.time_kernel_) { ... }``, or
    after ``if (!s.time_kernel_) { ...; return ...; }`` in the same function (which starts at ``floor``)."""
    for b in _enclosing(text, pos, pairs, opens, floor):
        cond = _condition_before(text, b, pairs)
        flag = _timing_flag(cond) if cond is not None else None
        if flag is not None:
            return flag
    if floor <= 0 or pos - floor > 20000:
        return None
    for m in _NEGATED_IDENT.finditer(text, floor, pos):  # `if (!s.time_kernel_) { ...; return 0; }` before pos
        brace = m.end() - 1
        close = pairs.get(brace, -1)
        if 0 <= close < pos and re.search(r"\breturn\b", text[brace:close]) and _timing_flag(m.group(1)):
            return m.group(1)
    return None


_EVENT_TIMING = re.compile(r"\b(?:cuda|hip|cu)EventElapsedTime\b")


def measuring_branch(text: str, pos: int, pairs: dict[int, int], opens: list[int], floor: int = 0) -> str | None:
    """The flag when ``pos`` sits in ``if (measure) { ... }`` whose condition is one member chain (no ``!``) named
    with a measuring word (``coldpaths.measuring_name``: ``measure``, ``tuning``, ``profile``) and whose block
    times kernels with events (``cudaEventElapsedTime``): a tuner's measuring runs (exllamav2 times each block
    size on a shape's first calls and keeps the fastest), which happen before the graphs are captured. A branch
    so named that does not time with events is not one (the flag may mean anything)."""
    for b in _enclosing(text, pos, pairs, opens, floor):
        cond = _condition_before(text, b, pairs)
        m = re.fullmatch(r"\s*([A-Za-z_][\w.>:-]*?)\s*(?:\(\s*\))?\s*", cond) if cond is not None else None
        if m is None:
            continue
        last = re.split(r"\.|->|::", m.group(1))[-1]
        if last and measuring_name(last) and _EVENT_TIMING.search(text, b, min(pairs.get(b, b), b + 20000)):
            return m.group(1)
    return None


def is_program(text: str, path: str) -> bool:
    """A test or benchmark binary: a ``main()``, a file named ``*_test.cu``, ``test_*.cu``, or one of test or
    benchmark cases whose framework supplies ``main`` (GoogleTest ``TEST(Suite, Name) { ... }``, Catch2
    ``TEST_CASE("name") { ... }``, Google Benchmark ``BENCHMARK(BM_f)``: ``cpp_text.harness_program``)."""
    base = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    stem = base.split(".", 1)[0]
    named = stem.endswith(("_test", "_tests")) or stem.startswith("test_") or stem == "test"
    return named or next(_finditer(_MAIN, text), None) is not None or harness_program(text)


def is_standalone_program(text: str, path: str) -> bool:
    """A test or benchmark binary (``main()``, ``*_test.cu``, ``test_*.cu``, test or benchmark cases: ``is_program``)
    that never captures a graph.

    Its syncs and default-stream launches time or check results; nothing captures them.
    """
    return is_program(text, path) and _CAPTURES.search(text) is None


# --- host buffers for cudaMemcpyAsync ------------------------------------------------------

_DECL_WINDOW = 8000
_PTR_OR_REF = re.compile(r"[*&]\s*(?:const\s+)?$")


def _host_buffer(expr: str, body: str) -> str | None:
    """Why ``expr`` (the source of a copy) is pageable host memory declared in ``body``, or None."""
    e = " ".join(expr.split())
    m = re.fullmatch(r"(?:\(\s*(?:const\s+)?void\s*\*\s*\)\s*)?&\s*([A-Za-z_]\w*)", e)
    if m:
        var = m.group(1)
        decl = _declaration(var, body)
        if decl is not None and not _PTR_OR_REF.search(decl):
            return f"`{var}`, a host variable (pageable memory)"
        return None
    m = re.fullmatch(r"(?:\(\s*(?:const\s+)?void\s*\*\s*\)\s*)?([A-Za-z_]\w*)(\s*\.\s*(?:data|get)\s*\(\s*\))?", e)
    if not m:
        return None
    var, accessor = m.group(1), m.group(2)
    if re.search(r"pinned|page_locked|pagelocked|host_pinned", var, re.IGNORECASE):
        return None
    decl_m = re.search(r"(?:^|[;{}(,])\s*((?:static\s+|const\s+|constexpr\s+)*[A-Za-z_][\w:<>, "
                       r"\[\]]*?[\s*&]+)" + re.escape(var)
                       + r"\s*(\[[^\]]{0,80}\]|[=({;])([^;]{0,200})", body)
    if decl_m is None:
        return None
    type_part, after, init = decl_m.group(1), decl_m.group(2), decl_m.group(3)
    if after.startswith("["):
        return f"`{var}`, a host array (pageable memory)"
    if accessor and re.search(r"\bstd\s*::\s*(?:vector|array|string)\b|\bvector\s*<", type_part):
        return f"`{var}`, a std container on the host (pageable memory)"
    if re.search(r"\bnew\b|\bmalloc\s*\(|\bmake_unique\s*<", init):
        if re.search(r"\bcudaMallocHost|cudaHostAlloc", init):
            return None
        return f"`{var}`, allocated with new/malloc (pageable memory)"
    return None


def _declaration(var: str, body: str) -> str | None:
    """The type part of ``var``'s declaration in ``body`` (``float``, ``const float``, ``int*``), or None."""
    m = re.search(r"(?:^|[;{}(])\s*((?:static\s+|const\s+|constexpr\s+)*[A-Za-z_][\w:<>, ]*?[\s*&]+)" + re.escape(var)
                  + r"\s*(?:[=({;\[]|$)", body)
    if m is None:
        return None
    t = m.group(1).strip()
    if t.split()[-1] in {"return", "else", "case", "goto"} or t.startswith("return"):
        return None
    return t


# --- the rules ---------------------------------------------------------------------------


def _finding(code: str, message: str, path: str, loc: _Locator, pos: int, function: str | None, **evidence) -> Finding:
    line, col = loc.line_col(pos)
    return rules.make_finding(code, message, path=path, line=line, col=col, function=function, evidence=evidence)


_PREFILTER = ("<<<", "aunch", "ynchronize", "StreamQuery", "cudaMemcpy", "cuMemcpy", "StreamFromPool",
              "DefaultCUDAStream", "cudaMalloc", "cuMemAlloc", "tream")


def constructor_class(text: str, region: Region, pairs: dict[int, int], opens: list[int]) -> str | None:
    """The class whose constructor ``region`` is, or None: ``X::X(...) {`` out of the class, ``X(...) {`` inside
    ``class X {`` / ``struct X {``. A destructor (``~X``) is not one."""
    name = region.name
    if not name or not name.isidentifier() or _is_all_caps(name):
        return None
    window = max(0, region.start - 3000)
    last = None
    for m in re.compile(r"(~\s*)?(?<![\w~])" + re.escape(name) + r"\s*\(").finditer(text, window, region.start):
        last = m
    if last is None or last.group(1):
        return None
    before = text[max(window, last.start() - 300) : last.start()]
    qual = re.search(r"(?<![\w:])([A-Za-z_]\w*)\s*(?:<[^<>;{}()]*>\s*)?::\s*$", before)
    if qual is not None:
        return name if qual.group(1) == name else None
    # in-class: the innermost brace around the body opens `class X {` / `struct X ... {`
    idx = bisect.bisect_left(opens, region.start) - 1
    steps = 0
    while idx >= 0 and steps < 4096:
        k = opens[idx]
        if pairs.get(k, -1) > region.start:
            head = text[max(0, k - 400) : k]
            cut = max(head.rfind(";"), head.rfind("}"), head.rfind("{"))
            if re.search(r"\b(?:class|struct)\b[^;{}]*?\b" + re.escape(name) + r"\b[^;{}]*$", head[cut + 1 :]):
                return name
            return None
        idx -= 1
        steps += 1
    return None


def _is_all_caps(name: str) -> bool:
    return name.upper() == name and any(c.isalpha() for c in name)


_PYTORCH_SCOPES = frozenset({"cuda", "hip", "at", "c10", "torch"})  # `at::hip::getStreamFromPool`, `cuda::...`


def _member_call(text: str, at: int) -> bool:
    """Whether the name at ``at`` is called as a member or through a scope other than PyTorch's (``cuda::``,
    ``hip::``): ``x->f(``, ``x.f(``, ``Platform::f(``."""
    j = _skip_ws_back(text, at - 1)
    if j < 1:
        return False
    if text[j] == "." or text[j - 1:j + 1] == "->":
        return True
    if text[j - 1:j + 1] != "::":
        return False
    scope, _ = _word_back(text, _skip_ws_back(text, j - 2))
    return scope.rsplit("::", 1)[-1] not in _PYTORCH_SCOPES


def lint_cpp(source: str, path: str) -> list[Finding]:
    """All C++ findings in ``source`` (suppressions are applied by the caller).

    Work is linear in the size of the source: every scan either runs once over the
    text or is bounded by a constant, and brackets are matched once up front.
    """
    if not any(word in source for word in _PREFILTER):
        return []
    text, _ = blank(source)
    if is_standalone_program(text, path):
        return []
    directives = _directive_spans(text)
    pairs = _bracket_pairs(_flatten_directives(text, directives))
    regions = function_regions(text, pairs)
    loc = _Locator(text, regions)
    opens = sorted(k for k, v in pairs.items() if k < v and text[k] == "{")

    def guarded(pos: int) -> bool:
        return in_non_capture_branch(text, pos, pairs, opens)
    findings: list[Finding] = []
    positions: list[int] = []  # where each finding is, in ``text``
    launch_regions: set[Region] = set()
    seen: set[tuple[str, int]] = set()
    returns_memo: dict[int, _BlockReturns] = {}  # each block's returns, read once (``after_return``)

    def add(code: str, message: str, pos: int, fn: str | None, **evidence) -> None:
        line = loc.line_col(pos)[0]
        if (code, line) in seen:  # one finding per code and line (a launch on getDefaultCUDAStream() is one)
            return
        if after_return(text, pos, pairs, opens, returns_memo):
            return  # below an unconditional return of its block: no path runs it
        seen.add((code, line))
        findings.append(_finding(code, message, path, loc, pos, fn, **evidence))
        positions.append(pos)

    setup_of: dict[Region, bool] = {}

    def setup(region: Region | None) -> bool:
        if region is None:
            return False
        if region not in setup_of:
            setup_of[region] = is_setup_function(region.name)
        return setup_of[region]

    # 1. <<<...>>> launches
    pos = 0
    floor = 0
    while True:
        lt = text.find("<<<", pos)
        if lt < 0:
            break
        close, stop = _launch_close(text, lt + 3)
        pos = max(stop, lt + 3)
        if close < 0:
            continue
        name, name_start = _kernel_name(text, lt, floor)
        floor = close + 3
        region = loc.region(lt)
        if region is not None:
            launch_regions.add(region)
        if setup(region):
            continue
        fn = region.name if region else None
        args = _split_args(text, lt + 3, close, pairs)
        kernel = name or "kernel"
        at = name_start if name else lt
        if len(args) < 4:
            add("GC201", f"`{kernel}` is launched with no stream argument, so it runs on the default stream, "
                "not the capturing one", at, fn, kernel=kernel, stream=None)
        else:
            why = _bad_stream(args[3])
            if why:
                add("GC201", f"`{kernel}` is launched on {why}", at, fn, kernel=kernel,
                    stream=" ".join(args[3].split()))

    # 2. runtime/driver launch APIs
    ex_regions_done: set[Region] = set()
    for m in _finditer(_LAUNCH_CALLS, text):
        api = m.group(1)
        open_paren = m.end() - 1
        close = pairs.get(open_paren, -1)
        region = loc.region(m.start())
        if region is not None:
            launch_regions.add(region)
        if close < 0 or setup(region):
            continue
        fn = region.name if region else None
        if api in _STREAM_ARG:
            args = _split_args(text, open_paren + 1, close, pairs)
            idx, optional = _STREAM_ARG[api]
            if len(args) <= idx:
                if optional and len(args) >= 4:
                    add("GC201", f"`{api}` is called without a stream argument, so it launches on the legacy "
                        "default stream", m.start(), fn, api=api, stream=None)
                continue
            why = _bad_stream(args[idx])
            if why:
                add("GC201", f"`{api}` launches on {why}", m.start(), fn, api=api, stream=" ".join(args[idx].split()))
        elif region is not None and region not in ex_regions_done:
            # cudaLaunchKernelEx: look for `cfg.stream = 0;` in the same region (once per region)
            ex_regions_done.add(region)
            for sm in _EX_STREAM.finditer(text, region.start, region.end):
                end_m = _EX_VALUE_END.search(text, sm.end(), min(region.end, sm.end() + 400))
                if end_m is None:
                    continue
                value = text[sm.end() : end_m.start()]
                why = _bad_stream(value)
                if why:
                    add("GC201", f"the launch config for `{api}` sets its stream to {why}", sm.start(), fn,
                        api=api, stream=" ".join(value.split()))

    # which functions run on the op's (capturing) stream
    op_regions: dict[Region, bool] = {}

    def on_capture_path(region: Region | None) -> bool:
        """A function that launches kernels, or an op/launcher that works on a stream, and is not setup code
        and does not check the capture status itself."""
        if region is None:
            return False
        known = op_regions.get(region)
        if known is not None:
            return known
        body = text[region.start : region.end]
        result = False
        if not is_setup_function(region.name) and not _CAPTURE_AWARE.search(body):
            result = (region in launch_regions or bool(_STREAM_PARAM.search(region.params))
                      or bool(_TENSOR_PARAM.search(region.params)) or bool(_CURRENT_STREAM.search(body)))
        op_regions[region] = result
        return result

    # a function that begins and ends a capture itself (a capture driver): what lies between is captured, what
    # lies before the begin or after the end is not (graphcheck.lint.cpp_driver)
    drivers = cpp_driver.Drivers(text, pairs, opens) if "capture_begin" in text or "BeginCapture" in text else None

    def capture_place(region: Region | None, pos: int) -> tuple[str | None, cpp_driver.CaptureSpan | None]:
        """("inside"/"outside", the span) when ``region`` drives a capture and ``pos`` is plainly in or out of
        it; (None, None) otherwise."""
        span = drivers.span(region) if drivers is not None and region is not None else None
        if span is None:
            return None, None
        return cpp_driver.where(span, pos), span

    # 3. host syncs and allocation on the capture path
    for rx, code in ((_SYNC, "GC110"), (_BLOCKING_COPY, "GC110"), (_MALLOC, "GC303")):
        for m in _finditer(rx, text):
            region = loc.region(m.start())
            place, driven = capture_place(region, m.start())
            if place == "outside":
                continue  # the driver's own barrier before the begin or after the end: never captured
            if place == "inside" and driven is not None and driven.plain:
                pass  # captured, whatever the function's name or parameters say
            elif code == "GC303":
                if region is None or region not in launch_regions or setup(region):
                    continue
            elif not on_capture_path(region):
                continue
            if guarded(m.start()):
                continue
            assert region is not None
            group = next(g for g in range(1, rx.groups + 1) if m.group(g))
            call = m.group(group)
            if place == "inside" and driven is not None:
                begin_line = loc.line_col(driven.begin)[0]
                where = (f"the capture that `{region.name}` begins at line {begin_line} "
                         f"(`{driven.call}(...)`) and ends at line {loc.line_col(driven.end)[0]}")
                evidence = {"capture_begin_line": begin_line}
                msg = {"GC303": f"`{call}` allocates or frees device memory inside {where}",
                       "copy": f"`{call}` is a blocking copy (it waits for the device, on the legacy stream) "
                       f"inside {where}",
                       "GC110": f"`{call}` synchronizes inside {where}"}["copy" if rx is _BLOCKING_COPY else code]
                add(code, msg, m.start(group), region.name, call=call, **evidence)
                continue
            where = "which launches kernels" if region in launch_regions else "which runs on the op's stream"
            if code == "GC303":
                msg = f"`{call}` allocates or frees device memory inside `{region.name}`, which launches kernels"
            elif rx is _BLOCKING_COPY:
                msg = (f"`{call}` is a blocking copy (it waits for the device, on the legacy stream) inside "
                       f"`{region.name}`, {where}")
            else:
                msg = f"`{call}` synchronizes inside `{region.name}`, {where}"
            add(code, msg, m.start(group), region.name, call=call)

    # 4. getDefaultCUDAStream() used as a stream (not only compared against)
    reset_only: dict[Region, bool] = {}  # a function whose only stream work is a thread's stream reset
    names: dict[Region, dict[str, list[int]]] = {}  # a region's name positions, for sections 4 and 6
    for m in _finditer(_DEFAULT_STREAM_CALL, text):
        region = loc.region(m.start())
        if setup(region):
            continue
        before = text[max(0, m.start() - 4) : m.start()]
        close = pairs.get(text.find("(", m.end() - 1), -1)
        after = text[close + 1 : close + 5] if close >= 0 else ""
        if "==" in before or "!=" in before or after.lstrip().startswith(("==", "!=")):
            continue
        if _record_stream_only(text, m, region, pairs, names):
            continue  # only recorded on (x.record_stream(s)): nothing is enqueued on it
        count = len(findings)
        add("GC201", "`getDefaultCUDAStream()` is the default stream, not the current (capturing) one; work "
            "enqueued on it is not captured", m.start(), region.name if region else None,
            stream="getDefaultCUDAStream()")
        if len(findings) == count or region is None:
            continue
        if region not in reset_only:  # asked of the region's first use: every later use is in what it checks
            reset_only[region] = _thread_stream_reset(text, m, region, pairs, launch_regions) is not None
        span = _reset_span(text, m, region, pairs) if reset_only[region] else None
        if span is not None:
            reset = _reset_text(text, span)
            # it enqueues nothing: the hazard is in whatever this thread launches later, which the rules do not
            # follow; a warning that says so
            findings[-1] = dataclasses.replace(
                findings[-1], severity=Severity.WARNING,
                evidence={**findings[-1].evidence, "path": "thread stream reset", "call": reset},
                message=f"`{region.name}` sets the calling thread's current stream to the default stream (`{reset}`) "
                "and enqueues nothing itself; later work on this thread goes to the default stream, so a capture on "
                "this thread must set its own stream (a stream guard) after this call")

    # 5. a stream argument 0/nullptr to a function that takes a cudaStream_t
    _stream_args_to_launchers(text, source, regions, pairs, add, setup, loc)

    # 6. side streams from the pool that are never joined back
    joined: dict[Region, bool] = {}
    torch_named: bool | None = None
    for m in _finditer(_POOL_STREAM, text):
        region = loc.region(m.start())
        if region is None or setup(region):
            continue
        if "::" not in m.group():  # not named as PyTorch's (`at::cuda::getStreamFromPool`)
            if torch_named is None:
                torch_named = _TORCH_NAMED.search(source) is not None
            if not torch_named or _member_call(text, m.start()):
                continue  # the project's own stream pool (`platform_->getStreamFromPool(h)`), not PyTorch's
        if region not in joined:
            joined[region] = _JOIN.search(text, region.start, region.end) is not None
        if joined[region]:
            continue
        if drivers is not None and drivers.capture_stream(m, region, _name_positions(text, region, names)) is not None:
            continue  # made current and captured on: the capture stream itself, not a side stream
        message = (f"a side stream from `getStreamFromPool()` in `{region.name}` is never joined back to the "
                   "current stream (no event wait or block on it)")
        count = len(findings)
        add("GC202", message, m.start(), region.name, call="getStreamFromPool")
        if len(findings) > count and _returned_pool_stream(text, m, region, pairs, names):
            # a getter launches nothing on the stream it returns: the join is its callers' job, and the rules do
            # not follow the stream into them, so the finding stays, as a warning that says whose job it is
            findings[-1] = dataclasses.replace(
                findings[-1], severity=Severity.WARNING, evidence={**findings[-1].evidence, "path": "stream getter"},
                message=f"`{region.name}` returns a side stream from `getStreamFromPool()` without launching on it; "
                "each caller that launches on it must join it back to the current stream (an event wait) before "
                "the capture ends")

    # 7. cudaMemcpyAsync from pageable host memory
    host_buffers: dict[tuple[Region, str], str | None] = {}
    for m in _finditer(_MEMCPY_ASYNC, text):
        region = loc.region(m.start())
        place, driven = capture_place(region, m.start())
        forced = place == "inside" and driven is not None and driven.plain
        if place == "outside" or (not forced and not on_capture_path(region)) or guarded(m.start()):
            continue
        assert region is not None
        open_paren = m.end() - 1
        close = pairs.get(open_paren, -1)
        if close < 0:
            continue
        args = _split_args(text, open_paren + 1, close, pairs)
        api = m.group(1)
        if api == "cudaMemcpyAsync":
            if len(args) < 4 or not re.search(r"HostToDevice|cudaMemcpyDefault|\b4\b", args[3]):
                continue
        elif len(args) < 2:
            continue
        src = args[1]
        key = (region, " ".join(src.split()))
        if key not in host_buffers:
            # declarations are looked for in a bounded window before the copy, so the work stays linear
            host_buffers[key] = _host_buffer(src, text[max(region.start, m.start() - _DECL_WINDOW) : m.start()])
        why = host_buffers[key]
        if why:
            add("GC301", f"`{api}` copies from {why}: under capture this copy is rejected (or runs "
                "synchronously outside the graph)", m.start(1), region.name, call=api, source=" ".join(src.split()))
    # 8. a CUTLASS device operator run without a stream (its stream parameter defaults to nullptr)
    if any(w in text for w in ("Gemm", "Conv", "Fmha", "FMHA", "Operation")):
        for region in regions:  # running a CUTLASS operator is a launch: every non-setup function counts
            if setup(region) or _CAPTURE_AWARE.search(text, region.start, region.end):
                continue
            for name, at in _cutlass_ops(text, region):
                call_rx = re.compile(r"(?<![\w.>])" + re.escape(name) + r"\s*(\.\s*run\s*)?\(")
                for cm in call_rx.finditer(text, at, region.end):
                    open_paren = cm.end() - 1
                    close = pairs.get(open_paren, -1)
                    if close < 0 or guarded(cm.start()):
                        continue
                    inner = text[open_paren + 1 : close]
                    args = [] if not inner.strip() else _split_args(text, open_paren + 1, close, pairs)
                    is_run = cm.group(1) is not None
                    streamish = [a for a in args if re.search(r"stream|\bst?\b", a, re.IGNORECASE)]
                    if streamish:  # run(stream), run(args, stream), gemm_op(args, ws, stream)
                        continue
                    if len(args) >= 3:
                        why = _bad_stream(args[2])
                        if not why:
                            continue
                    else:
                        why = "the default stream (CUTLASS's stream parameter defaults to nullptr)"
                    call = f"{name}.run(...)" if is_run else f"{name}(...)"
                    add("GC201", f"`{call}` launches the CUTLASS kernel on {why}", cm.start(), region.name,
                        call=call)
    built: dict[Region, str | None] = {}

    def built_by(region: Region) -> str | None:
        if region not in built:
            built[region] = constructor_class(text, region, pairs, opens)
        return built[region]

    once: cpp_once.OneTime | None = None
    for i, (f, pos) in enumerate(zip(findings, positions)):  # only kernel timing runs it: a warning
        # a rule's own warning (GC303) is not demoted, but learns why it runs once or only when debugging
        said = f.severity is not Severity.ERROR
        if said and "path" in f.evidence:
            continue
        region = loc.region(pos)
        branch = None if said else _timed_branch(text, pos, pairs, opens, region.start if region is not None else 0)
        if branch is not None:
            path, flag, why = branch
            findings[i] = dataclasses.replace(f, severity=Severity.WARNING, evidence={**f.evidence, "path": path},
                                              message=f"{f.message}; it runs only when `{flag}` is set, {why}")
            continue
        if region is None:
            continue
        test = cpp_once.debug_branch(text, pos, pairs, opens, region.start)
        if test is not None:  # a debug or profiling branch, off by default
            findings[i] = dataclasses.replace(
                f, severity=Severity.WARNING, evidence={**f.evidence, "path": "debug branch"},
                message=f"{f.message}; it runs only under `{test}`, a debug or profiling branch that is off by "
                "default, not in captured serving")
            continue
        if once is None:
            once = cpp_once.OneTime(text, pairs, opens, loc.region,
                                    lambda r: bool(r.name and "~" in r.name) or built_by(r) is not None,
                                    lambda p: loc.line_col(p)[0])
        # a pool stream taken once is still used (and must be joined) on every later call: not one-time
        first = once.why(pos, region) if f.code != "GC202" else None
        if first is not None:  # one-time set-up: run by the warm-up step engines take before they capture
            findings[i] = dataclasses.replace(
                f, severity=Severity.WARNING, evidence={**f.evidence, "path": first.path},
                message=f"{f.message}; it runs once, on the first call: {first.why} (one-time set-up, which engines "
                "run in an eager warm-up step before they capture)")
            continue
        cls = built_by(region) if not said else None
        if cls is not None:  # object construction: weights repacked when a layer is built
            findings[i] = dataclasses.replace(
                f, severity=Severity.WARNING, evidence={**f.evidence, "path": "constructor"},
                message=f"{f.message}; it runs in the constructor of `{cls}`, when a `{cls}` is built (normally "
                "once, at load time, when the layer or its weights are set up), not per call")
    findings.sort(key=lambda f: (f.line, f.col, f.code))
    return findings


def _timed_branch(text: str, pos: int, pairs: dict[int, int], opens: list[int],
                  floor: int) -> tuple[str, str, str] | None:
    """(evidence path, the flag, why that is off capture) when ``pos`` sits in a branch that only times kernels
    (``timing_branch``) or measures them for first-use tuning (``measuring_branch``); None otherwise."""
    flag = timing_branch(text, pos, pairs, opens, floor)
    if flag is not None:
        return "timing branch", flag, "to time kernels, which engines do not capture"
    flag = measuring_branch(text, pos, pairs, opens, floor)
    if flag is not None:
        return ("measuring branch", flag, "in a branch that times kernels with events (first-use tuning, which runs "
                "before a graph is captured), not on the captured path")
    return None


_CUTLASS_DECL = re.compile(r"(?:^|[;{}])\s*(?:typename\s+)?((?:[\w:]+::)?([A-Za-z_]\w*)(?:<[^;{}()]{0,300}>)?)"
                           r"\s+([a-z_]\w*)\s*(?:;|\{\s*\}|=)")
# the last component of a CUTLASS device-level operator's type: Gemm, GemmSm90, GemmUniversalAdapter, Fmha...
_CUTLASS_TYPE = re.compile(r"^(?:\w*Gemm(?:Op|Operator|Sm\d+|Universal\w*|Grouped\w*|Adapter)?|\w*(?:Fmha|FMHA)(?:Op)?"
                           r"|Operation|DeviceGemm\w*|GemmType)$")
_DEVICE_FN = re.compile(r"__device__|__global__|__host__\s+__device__")


def _cutlass_ops(text: str, region: Region) -> list[tuple[str, int]]:
    """Names (and declaration positions) of CUTLASS-style device operators (``Gemm gemm_op;``) in a host function."""
    head = text[max(0, region.start - 400) : region.start]
    cut = max(head.rfind(";"), head.rfind("}"))
    if _DEVICE_FN.search(head[cut + 1 :]):
        return []  # device code never launches
    out = []
    for m in _CUTLASS_DECL.finditer(text, region.start, min(region.end, region.start + 200_000)):
        if _CUTLASS_TYPE.match(m.group(2)):
            out.append((m.group(3), m.end()))
            if len(out) >= 8:
                break
    return out


_STREAM_COMMENT = re.compile(r"/\*\s*[A-Za-z_]*stream[A-Za-z_]*\s*=?\s*\*/\s*(nullptr|NULL|0)\b", re.IGNORECASE)
# a prototype (a declaration ending in `;`) with a cudaStream_t parameter
_PROTOTYPE = re.compile(r"\b([A-Za-z_]\w*)\s*\(([^()]{0,2000}\bcudaStream_t\b[^()]{0,2000})\)\s*(?:const\s*)?;")
_NEEDS.update({_MAIN: ("main",), _STREAM_COMMENT: ("/*",), _PROTOTYPE: ("cudaStream_t",)})


_STREAM_VALUE_PARAM = re.compile(r"\b(?:cudaStream_t|CUstream|hipStream_t|CUDAStream)\b(?!\s*\*)")


def _stream_param_index(params: str) -> int | None:
    """The index of the ``cudaStream_t`` parameter (not a pointer to one) in a parameter list, or None."""
    for i, p in enumerate(split_top(params)):
        if _STREAM_VALUE_PARAM.search(p.split("=")[0]):
            return i
    return None


def _arity(params: str) -> tuple[int, int]:
    """(fewest, most) arguments a parameter list takes: defaulted parameters may be left out; ``...`` or a
    parameter pack takes any number."""
    parts = [p for p in split_top(params) if p.strip() and p.strip() != "void"]
    if any("..." in p for p in parts):
        return sum(1 for p in parts if "=" not in p and "..." not in p), 10**6
    return sum(1 for p in parts if "=" not in p), len(parts)


_NULL_ARG = re.compile(r"^(?:nullptr|NULL|0|\(\s*void\s*\*\s*\)\s*0"
                       r"|static_cast\s*<[^<>()]*>\s*\(\s*(?:nullptr|NULL)\s*\))$")
_LAUNCH_IN_BODY = re.compile(r"<<<|\b(?:cuda|hip|cu)(?:LaunchKernel|LaunchCooperativeKernel|ModuleLaunchKernel|"
                             r"LaunchKernelEx|Memset\w*Async|Memcpy\w*Async)\b|\bhipLaunchKernelGGL\b")
_IDENT = re.compile(r"[A-Za-z_]\w*")


_NOT_A_SIZE = frozenset({"nullptr", "NULL", "true", "false", "this"})


def _cub_query(args: list[str]) -> bool:
    """The cub convention for a workspace-size query, ``f(d_temp_storage, temp_storage_bytes, ...)``: a null
    literal first argument and a plain identifier second (the size variable, passed by reference for the
    callee to fill). Used for a callee whose body is not in the file, so its null test cannot be read."""
    if len(args) < 2:
        return False
    second = args[1].strip()
    return (bool(_NULL_ARG.match(" ".join(args[0].split()))) and bool(_IDENT.fullmatch(second))
            and second not in _NOT_A_SIZE)


def _enclosing_call(text: str, pos: int, pairs: dict[int, int]) -> tuple[str, int] | None:
    """(callee name, index of its ``(``) of the innermost call whose parentheses hold ``pos``, or None (no
    call, a control keyword, or a parenthesized expression). The name skips template arguments and ``ns::``."""
    depth = 0
    for k in range(pos - 1, max(-1, pos - 8000), -1):
        ch = text[k]
        if ch in ")]}":
            depth += 1
        elif ch in "([{":
            if depth:
                depth -= 1
                continue
            if ch != "(" or pairs.get(k, -1) < pos:
                return None
            j = _skip_ws_back(text, k - 1)
            if j >= 0 and text[j] == ">":
                j = _skip_template_back(text, j)
            name, _ = _word_back(text, j)
            name = name.rsplit("::", 1)[-1]
            if not _IDENT.fullmatch(name) or name in _CONTROL:
                return None
            return name, k
        elif ch == ";" and not depth:
            return None
    return None


class _SizeQueries:
    """The workspace-size query idiom (cub's ``DeviceRadixSort::SortKeys(nullptr, bytes, ...)``): a call that
    passes a null buffer where the callee, on that parameter, returns (``if (!buf) { size = ...; return; }``)
    before it launches anything or touches its stream, itself or through a function it forwards the buffer to.
    Such a call launches nothing, whatever stream it names."""

    def __init__(self, text: str, regions: list[Region], pairs: dict[int, int]) -> None:
        self.text, self.pairs = text, pairs
        self.bodies: dict[str, list[Region]] = {}
        for r in regions:
            if r.name and r.params and len(r.params) < 4000:
                self.bodies.setdefault(r.name, []).append(r)
        self._memo: dict[tuple[str, int, int], bool] = {}

    def query(self, name: str, args: list[str]) -> bool:
        """Is ``name(args)`` a size query: the callee's body in the file returns on a null argument of the
        call; or, when no body of the file takes that many arguments, the call has cub's shape
        (``_cub_query``)?"""
        if not self.defines(name, len(args)):
            return _cub_query(args)
        return any(_NULL_ARG.match(" ".join(a.split())) and self.returns_on_null(name, k, len(args))
                   for k, a in enumerate(args))

    def defines(self, name: str, nargs: int) -> bool:
        """Does the file hold a body of ``name`` that takes ``nargs`` arguments?"""
        return any(_arity(r.params)[0] <= nargs <= _arity(r.params)[1] for r in self.bodies.get(name, ()))

    def returns_on_null(self, name: str, k: int, nargs: int, depth: int = 0) -> bool:
        """Does every definition of ``name`` that takes ``nargs`` arguments return early when its ``k``-th
        parameter is null, before any launch or use of its stream?"""
        key = (name, k, nargs)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = False  # recursion guard
        fits = [r for r in self.bodies.get(name, ()) if _arity(r.params)[0] <= nargs <= _arity(r.params)[1]]
        ok = bool(fits) and depth < 3 and all(self._early(r, k, depth) for r in fits)
        self._memo[key] = ok
        return ok

    def _early(self, r: Region, k: int, depth: int) -> bool:
        params = split_top(r.params)
        if k >= len(params):
            return False
        names = _IDENT.findall(params[k].split("=")[0])
        if not names:
            return False
        buf = re.escape(names[-1])
        stream_idx = _stream_param_index(r.params)
        stream_names = _IDENT.findall(params[stream_idx].split("=")[0]) if stream_idx is not None else []
        body = self.text[r.start + 1 : r.end - 1]
        at = None
        test = re.compile(r"\bif\s*\(\s*(?:!\s*" + buf + r"|" + buf + r"\s*==\s*(?:nullptr|NULL|0)"
                          r"|(?:nullptr|NULL)\s*==\s*" + buf + r")\s*\)\s*(?:\{[^{}]*?\breturn\b|return\b)")
        m = test.search(body)
        if m:
            at = m.start()
        # or the buffer forwarded, as is, to a function that returns early on it
        for call in re.finditer(r"(?<![\w.])(?:[A-Za-z_]\w*\s*::\s*)*([A-Za-z_]\w*)\s*(?:<[^;(){}<>]{0,200}>\s*)?\(",
                                body):
            if at is not None and call.start() > at:
                break
            if call.group(1) not in self.bodies or call.group(1) in _CONTROL:
                continue
            open_paren = r.start + 1 + call.end() - 1
            close = self.pairs.get(open_paren, -1)
            if close < 0:
                continue
            args = _split_args(self.text, open_paren + 1, close, self.pairs)
            for j, a in enumerate(args):
                if a.strip() == names[-1] and self.returns_on_null(call.group(1), j, len(args), depth + 1):
                    at = call.start()
                    break
            if at == call.start():
                break
        if at is None:
            return False
        before = body[:at]
        if _LAUNCH_IN_BODY.search(before):
            return False
        return not (stream_names and re.search(r"\b" + re.escape(stream_names[-1]) + r"\b", before))


def _stream_args_to_launchers(text, source, regions, pairs, add, setup, loc) -> None:
    """GC201 where a call passes ``0``/``nullptr`` as the ``cudaStream_t`` parameter of a function declared in
    the file, or where a ``/*stream=*/`` comment labels a ``nullptr``/``0`` argument."""
    # name -> its overloads seen in the file: (fewest arguments, most arguments, index of the stream or None)
    overloads: dict[str, set[tuple[int, int, int | None]]] = {}
    for r in regions:
        if r.name and r.params is not None and len(r.params) < 4000:
            overloads.setdefault(r.name, set()).add(_arity(r.params) + (_stream_param_index(r.params),))
    # prototypes (declarations ending in `;`)
    for m in _finditer(_PROTOTYPE, text):
        overloads.setdefault(m.group(1), set()).add(_arity(m.group(2)) + (_stream_param_index(m.group(2)),))
    launchers = {name: forms for name, forms in overloads.items() if any(idx is not None for *_, idx in forms)}
    reported: set[int] = set()
    queries: list[tuple[int, int]] = []  # argument lists of size queries: their stream launches nothing
    sizes = _SizeQueries(text, regions, pairs)
    if launchers:
        names = "|".join(sorted(map(re.escape, launchers), key=len, reverse=True))
        for m in re.finditer(r"(?<![\w.:>])(?:[A-Za-z_]\w*\s*::\s*)*(" + names + r")\s*(?:<[^;(){}<>]{0,200}>\s*)?\(",
                             text):
            open_paren = m.end() - 1
            close = pairs.get(open_paren, -1)
            region = loc.region(m.start())
            if close < 0 or region is None or setup(region):
                continue  # a declaration or definition is not inside a function body
            prev = _skip_ws_back(text, m.start() - 1)
            if prev >= 0 and (text[prev].isalnum() or text[prev] in "_*&>"):
                continue  # `void f(...)`: a declaration, not a call
            args = _split_args(text, open_paren + 1, close, pairs)
            # the overloads this many arguments can call; their stream must be at one place
            fits = {idx for low, high, idx in launchers[m.group(1)] if low <= len(args) <= high}
            if len(fits) != 1:
                continue
            idx = fits.pop()
            if idx is None or len(args) <= idx:
                continue
            why = _bad_stream(args[idx])
            if why and sizes.query(m.group(1), args):
                queries.append((open_paren, close))
                continue  # a size query: the callee returns before any launch when this null buffer reaches it
            if why:
                arg_pos = open_paren + 1 + sum(len(a) + 1 for a in args[:idx])
                arg_pos += len(args[idx]) - len(args[idx].lstrip())
                reported.add(arg_pos)
                add("GC201", f"`{m.group(1)}` is given {why} as its stream, so its kernels run outside the capture",
                    m.start(1), region.name, callee=m.group(1), stream=" ".join(args[idx].split()))
    for m in _finditer(_STREAM_COMMENT, source):
        value_at = m.start(1)
        if text[m.start()] != " " or text[value_at : m.end(1)] != m.group(1) or value_at in reported:
            continue  # inside a string, or already reported as an argument of a known launcher
        if any(low < value_at < high for low, high in queries):
            continue
        region = loc.region(value_at)
        if region is None or setup(region):
            continue
        call = _enclosing_call(text, value_at, pairs)
        if call is not None:
            close = pairs[call[1]]
            if sizes.query(call[0], _split_args(text, call[1] + 1, close, pairs)):
                queries.append((call[1], close))
                continue  # a size query (by its callee's body here, or cub's argument shape)
        add("GC201", f"an argument labelled `{m.group().split('*/')[0]}*/` passes {m.group(1)}, the legacy default "
            "stream, so the callee's kernels run outside the capture", value_at, region.name, stream=m.group(1))
