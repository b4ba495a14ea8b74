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
- GC110: device, stream or event synchronization in a function that launches
  kernels.
- GC303: ``cudaMalloc``/``cudaFree`` and friends in a function that launches
  kernels (the stream-ordered ``cudaMallocAsync``/``cudaFreeAsync`` are fine).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from graphcheck import rules
from graphcheck.findings import Finding

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RAW_PREFIX = re.compile(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(')


_INTEREST = re.compile(r'//|/\*|(?:u8|u|U|L)?R"|"|\'')


def blank(source: str) -> tuple[str, dict[int, list[str]]]:
    """Blank comments and literals; also return the comments by (1-based) line."""
    pieces: list[str] = []
    comment_at: list[tuple[int, str]] = []
    n = len(source)
    i = 0  # everything before i is already in pieces
    pos = 0

    def blanked(chunk: str) -> str:
        return re.sub(r"[^\n]", " ", chunk)

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
        pieces.append(blanked(source[k:end]))
        i = pos = max(end, k + 1)
    pieces.append(source[i:])
    comments: dict[int, list[str]] = {}
    if comment_at:
        line_starts = [0] + [mm.end() for mm in re.finditer("\n", source)]
        for k, text in comment_at:
            comments.setdefault(bisect.bisect_right(line_starts, k), []).append(text)
    return "".join(pieces), comments


def _in_number(source: str, i: int) -> bool:
    j = i - 1
    while j >= 0 and (source[j].isalnum() or source[j] in "_.'"):
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


# --- regions -------------------------------------------------------------------------


@dataclass(frozen=True)
class Region:
    start: int
    end: int
    name: str | None


_CONTROL = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof", "defined",
            "static_assert", "noexcept", "throw", "new", "delete", "do", "else", "try"}
_QUALIFIERS = {"const", "noexcept", "override", "final", "volatile", "mutable", "&", "&&", "throw"}
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_][A-Za-z0-9_]*)", re.M)
_DIRECTIVE = re.compile(r"^[ \t]*#", re.M)


def _directive_spans(text: str) -> list[tuple[int, int, str | None]]:
    """(start, end, macro name or None) of each preprocessor directive, continuation lines included."""
    spans = []
    for m in _DIRECTIVE.finditer(text):
        start = m.start()
        end = start
        n = len(text)
        while True:
            nl = text.find("\n", end)
            if nl == -1:
                end = n
                break
            if text[:nl].rstrip(" \t").endswith("\\"):
                end = nl + 1
                continue
            end = nl
            break
        d = _DEFINE.match(text, start)
        spans.append((start, end, d.group(1) if d else None))
    return spans


def _match_back(text: str, close: int, open_ch: str, close_ch: str) -> int:
    depth = 0
    for k in range(close, max(-1, close - 20000), -1):
        ch = text[k]
        if ch == close_ch:
            depth += 1
        elif ch == open_ch:
            depth -= 1
            if depth == 0:
                return k
    return -1


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


def _function_name(text: str, brace: int) -> str | None:
    """The name of the function whose body opens at ``brace``, or None if it is not one."""
    k = _skip_ws_back(text, brace - 1)
    for _ in range(8):  # qualifiers and ctor initializer lists, bounded
        if k < 0:
            return None
        ch = text[k]
        if ch == "]":
            return None  # lambda
        if ch in ")}":
            open_k = _match_back(text, k, "(" if ch == ")" else "{", ch)
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
            return name.split("::")[-1] if name.split("::")[-1] else name
        if ch.isalpha() or ch == "_" or ch == "&":
            word, before = _word_back(text, k) if ch != "&" else ("&", k - 1)
            if word in _QUALIFIERS or word.startswith("__"):
                k = _skip_ws_back(text, before)
                continue
            # trailing return type `-> T`
            arrow = text.rfind("->", max(0, k - 200), k)
            if arrow != -1 and text[arrow + 2 : k + 1].strip().replace("::", "").replace("<", "").replace(">", "").replace(" ", "").isidentifier():
                k = _skip_ws_back(text, arrow - 1)
                continue
            return None
        return None
    return None


def function_regions(text: str) -> list[Region]:
    """Outermost function bodies and macro definitions, sorted by start."""
    directives = _directive_spans(text)
    code = list(text)
    for start, end, _ in directives:
        for k in range(start, end):
            if code[k] != "\n":
                code[k] = " "
    flat = "".join(code)
    regions: list[Region] = []
    stack: list[tuple[int, str | None]] = []
    fn_depth = -1
    for m in re.finditer(r"[{}]", flat):
        pos = m.start()
        if m.group() == "{":
            name = None
            is_fn = False
            if fn_depth < 0:
                name = _function_name(flat, pos)
                is_fn = name is not None
            stack.append((pos, name if is_fn else None))
            if is_fn:
                fn_depth = len(stack)
        else:
            if not stack:
                continue
            start, name = stack.pop()
            if fn_depth == len(stack) + 1:
                regions.append(Region(start, pos + 1, name))
                fn_depth = -1
    if fn_depth > 0 and len(stack) >= fn_depth:
        start, name = stack[fn_depth - 1]
        regions.append(Region(start, len(text), name))
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


# --- launches ------------------------------------------------------------------------

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
_CAST = re.compile(r"^(?:\(\s*(?:cudaStream_t|CUstream)\s*\)|(?:static_cast|reinterpret_cast)\s*<\s*(?:cudaStream_t|CUstream)\s*>)")


def _bad_stream(arg: str) -> str | None:
    """Why ``arg`` (a stream expression) is not the current stream, or None if it may be."""
    s = " ".join(arg.replace("\\", " ").split())
    for _ in range(4):
        s = s.strip()
        m = _CAST.match(s)
        if m:
            s = s[m.end():]
            continue
        if s.startswith("(") and s.endswith(")") and _match_back(s, len(s) - 1, "(", ")") == 0:
            s = s[1:-1]
            continue
        break
    s = s.strip()
    if "getDefaultCUDAStream" in s:
        return "the default CUDA stream (getDefaultCUDAStream(), not the capturing stream)"
    key = s.split("::")[-1].lower() if "::" in s else s.lower()
    return _BAD_STREAM_WORDS.get(key)


def _split_args(text: str, start: int, end: int) -> list[str]:
    """Split text[start:end] on top-level commas (parentheses, brackets and braces)."""
    args, depth, last = [], 0, start
    for k in range(start, end):
        ch = text[k]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(text[last:k])
            last = k
            last += 1
    args.append(text[last:end])
    return args


def _launch_close(text: str, start: int) -> int:
    """Index of the ``>>>`` closing a launch whose ``<<<`` ends at ``start``; -1 if none."""
    depth = 0
    n = min(len(text), start + 5000)
    k = start
    while k < n:
        ch = text[k]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                return -1
        elif ch == ">" and depth == 0 and text.startswith(">>>", k):
            return k
        elif ch == ";" and depth == 0:
            return -1
        k += 1
    return -1


def _skip_template_back(text: str, k: int) -> int:
    """From the ``>`` closing template arguments at k, the index just before the matching ``<``."""
    depth = 0
    j = k
    while j >= 0 and k - j < 2000:
        if text[j] == ">":
            depth += 1
        elif text[j] == "<":
            depth -= 1
            if depth == 0:
                return _skip_ws_back(text, j - 1)
        elif text[j] in ";{}":
            return k
        j -= 1
    return k


def _kernel_name(text: str, lt: int) -> tuple[str, int]:
    """The kernel expression before ``<<<`` at ``lt``: (name, start index)."""
    k = _skip_ws_back(text, lt - 1)
    if k >= 0 and text[k] == ">":  # template arguments k<T, 4>
        k = _skip_template_back(text, k)
    name, before = _word_back(text, k)
    if not name:
        return "", lt
    return name, before + 1


_LAUNCH_CALLS = re.compile(r"\b(cudaLaunchKernel|cudaLaunchCooperativeKernel|cuLaunchKernel|cuLaunchCooperativeKernel|cudaLaunchKernelExC|cudaLaunchKernelEx|cuLaunchKernelEx)\s*(?:<[^;(){}]*>\s*)?\(")
# 0-based index of the stream argument and whether it may be omitted (C++ default argument 0)
_STREAM_ARG = {
    "cudaLaunchKernel": (5, True),
    "cudaLaunchCooperativeKernel": (5, True),
    "cuLaunchKernel": (8, False),
    "cuLaunchCooperativeKernel": (8, False),
}
_EX_STREAM = re.compile(r"(?:\.|->)\s*(?:stream|hStream)\s*=\s*([^;,]+)[;,]")

_SYNC = re.compile(
    r"(?<![\w.])(?:(?:at|c10)\s*::\s*cuda\s*::\s*)?"
    r"(cudaDeviceSynchronize|cudaThreadSynchronize|cudaStreamSynchronize|cudaEventSynchronize|cudaStreamQuery"
    r"|cuCtxSynchronize|cuStreamSynchronize|cuEventSynchronize|cuStreamQuery|device_synchronize)\s*\("
    r"|(?<![\w.])torch\s*::\s*cuda\s*::\s*(synchronize)\s*\("
    r"|(?:\.|->)\s*(synchronize)\s*\(\s*\)"
)
_MALLOC = re.compile(
    r"(?<![\w.])(cudaMalloc|cudaMallocManaged|cudaMallocHost|cudaHostAlloc|cudaMallocPitch|cudaMalloc3D|cudaMallocArray"
    r"|cudaFree|cudaFreeHost|cudaFreeArray|cuMemAlloc|cuMemAlloc_v2|cuMemAllocManaged|cuMemAllocHost|cuMemFree|cuMemFree_v2|cuMemFreeHost)\s*\("
)


def _finding(code: str, message: str, path: str, loc: _Locator, pos: int, function: str | None, **evidence) -> Finding:
    rule = rules.get(code)
    line, col = loc.line_col(pos)
    return Finding(code=code, severity=rule.severity, message=message, path=path, line=line, col=col,
                   function=function, hint=rule.hint, layer="static", evidence=evidence)


def lint_cpp(source: str, path: str) -> list[Finding]:
    """All C++ findings in ``source`` (suppressions are applied by the caller)."""
    if "<<<" not in source and "Launch" not in source and "aunchKernel" not in source:
        return []
    text, _ = blank(source)
    regions = function_regions(text)
    loc = _Locator(text, regions)
    findings: list[Finding] = []
    launch_regions: set[Region] = set()

    def region_of(pos: int) -> Region | None:
        return loc.region(pos)

    for m in re.finditer("<<<", text):
        lt = m.start()
        close = _launch_close(text, m.end())
        if close < 0:
            continue
        name, name_start = _kernel_name(text, lt)
        region = region_of(lt)
        if region is not None:
            launch_regions.add(region)
        fn = region.name if region else None
        args = _split_args(text, m.end(), close)
        kernel = name or "kernel"
        if len(args) < 4:
            findings.append(_finding(
                "GC201", f"`{kernel}` is launched with no stream argument, so it runs on the default stream, "
                "not the capturing one", path, loc, name_start if name else lt, fn, kernel=kernel, stream=None))
        else:
            why = _bad_stream(args[3])
            if why:
                findings.append(_finding(
                    "GC201", f"`{kernel}` is launched on {why}", path, loc, name_start if name else lt, fn,
                    kernel=kernel, stream=" ".join(args[3].split())))

    for m in _LAUNCH_CALLS.finditer(text):
        api = m.group(1)
        open_paren = m.end() - 1
        close = _match_forward(text, open_paren)
        if close < 0:
            continue
        region = region_of(m.start())
        if region is not None:
            launch_regions.add(region)
        fn = region.name if region else None
        args = _split_args(text, open_paren + 1, close)
        if api in _STREAM_ARG:
            idx, optional = _STREAM_ARG[api]
            if len(args) <= idx:
                if optional and len(args) >= 4:
                    findings.append(_finding("GC201", f"`{api}` is called without a stream argument, so it "
                                             "launches on the legacy default stream", path, loc, m.start(), fn,
                                             api=api, stream=None))
                continue
            why = _bad_stream(args[idx])
            if why:
                findings.append(_finding("GC201", f"`{api}` launches on {why}", path, loc, m.start(), fn,
                                         api=api, stream=" ".join(args[idx].split())))
        elif region is not None:
            # cudaLaunchKernelEx: look for `cfg.stream = 0;` in the same region
            for sm in _EX_STREAM.finditer(text, region.start, region.end):
                why = _bad_stream(sm.group(1))
                if why:
                    findings.append(_finding("GC201", f"the launch config for `{api}` sets its stream to {why}",
                                             path, loc, sm.start(), fn, api=api, stream=" ".join(sm.group(1).split())))

    if launch_regions:
        for rx, code in ((_SYNC, "GC110"), (_MALLOC, "GC303")):
            for m in rx.finditer(text):
                region = region_of(m.start())
                if region is None or region not in launch_regions:
                    continue
                group = next(g for g in range(1, rx.groups + 1) if m.group(g))
                call = m.group(group)
                if code == "GC110":
                    msg = f"`{call}` synchronizes inside `{region.name}`, which launches kernels"
                else:
                    msg = f"`{call}` allocates or frees device memory inside `{region.name}`, which launches kernels"
                findings.append(_finding(code, msg, path, loc, m.start(group), region.name,
                                         call=call))
    return findings


def _match_forward(text: str, open_paren: int) -> int:
    depth = 0
    end = min(len(text), open_paren + 20000)
    for k in range(open_paren, end):
        ch = text[k]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return k
    return -1
