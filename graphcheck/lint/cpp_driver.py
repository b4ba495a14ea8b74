"""C++ capture drivers: a function that begins and ends a CUDA-graph capture itself.

ScaleLLM's ``ModelRunner::CudaGraph::capture`` warms the model up, synchronizes, makes a pool stream current,
begins the capture (``graph_->capture_begin(...)``), runs the model, ends it (``graph_->capture_end()``) and
synchronizes again. Only the code between the begin and the end is captured: a host sync before the begin or
after the end is the driver's own barrier, not a hazard of the graph. And the pool stream it makes current
before the begin is the capture stream itself (what ``torch.cuda.graph`` does in Python), not a side stream
that needs a join.

A function is a capture driver when its body holds exactly one begin and one end of the same capture, in this
order: ``g.capture_begin(...)`` / ``g->capture_begin(...)`` then ``g.capture_end()`` on the same ``g`` that the
file declares as an ``at::cuda::CUDAGraph`` (a custom ``Graph`` class is not known to capture on the current
stream), or ``cudaStreamBeginCapture(s, ...)`` then ``cudaStreamEndCapture(s, ...)`` (``cu*`` likewise) on the
same stream. The order must be plain: no ``goto`` in the function, neither call in a loop (a ``for``/``while``/
``do`` block or body, a lambda, a ``switch``) that does not hold the other, and no ``break``/``continue``
between them when a loop holds both. Anything else (a begin with no end, several begins, a begin in one branch
of a loop) is no driver, and nothing changes.

In a driver, a position before the begin or after the end that is not inside a lambda (which may be called
between them) is off the capture. A position between them is inside it; when the begin and the end are in the
same block (not ``if (g) { begin } ... if (g) { end }``, where an ``else`` between them may run uncaptured) it is
so whatever the function's name or parameters say.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Protocol

from graphcheck.lint.cpp_text import _enclosing, _head_before, _skip_ws_back, _word_back, split_top


class Region(Protocol):
    """A function body as ``cpp_rules.Region`` gives it (this module does not import ``cpp_rules``, which imports
    it): the offsets of its ``{`` and past its ``}``."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


_BEGIN = re.compile(r"(?<![\w.>])(?:::\s*)?(cudaStreamBeginCapture(?:_v2|ToGraph)?|cuStreamBeginCapture(?:_v2|_ptsz)?)"
                    r"\s*\(|\bcapture_begin\s*\(")
_END = re.compile(r"(?<![\w.>])(?:::\s*)?(cudaStreamEndCapture|cuStreamEndCapture(?:_ptsz)?)\s*\(|\bcapture_end\s*\(")
_RECEIVER = re.compile(r"(?<![\w.>])([A-Za-z_]\w*)\s*(?:\.|->)\s*$")
_LOOP_HEAD = re.compile(r"\b(?:for|while|do|switch)\b")
_JUMP = re.compile(r"\b(?:break|continue)\b")
_GOTO = re.compile(r"\bgoto\b")
_LAMBDA_TAIL = re.compile(r"(?:\bmutable\b|\bnoexcept\b|->\s*[\w:<>,\s*&]+?)\s*$")


@dataclass(frozen=True)
class CaptureSpan:
    """A driver's capture: where the begin and end calls start, and how the begin reads (``graph_->capture_begin``)."""

    begin: int
    end: int
    call: str
    lambdas: tuple[tuple[int, int], ...] = ()  # the function's lambda bodies (open, close), in order
    plain: bool = True  # begin and end in the same block: all that lies between them runs inside the capture


def _call_args(text: str, open_paren: int, pairs: dict[int, int]) -> str | None:
    close = pairs.get(open_paren, -1)
    if close < 0:
        return None
    return text[open_paren + 1 : close]


def _first_arg(args: str) -> str:
    return " ".join(split_top(args)[0].split())


_GRAPH_WORD = re.compile(r"\bCUDAGraph\b")
_GRAPH_TAIL = re.compile(r"[^;{}()]{0,120}")
_MADE_HEAD = re.compile(r"(?<![\w.>])(\w+)\s*(?:=|\.\s*reset\s*\()\s*(?:new\s+|(?:std\s*::\s*)?make_(?:unique|shared)"
                        r"\s*<\s*)(?:\w+\s*::\s*)*$")
_IDENT = re.compile(r"(?<![\w.>])[A-Za-z_]\w*")


def cuda_graph_names(text: str) -> frozenset[str]:
    """The names the file declares as an ``at::cuda::CUDAGraph`` (a variable, parameter or member of that type,
    or a smart pointer to one: the names within the declaration after the type) or makes one for
    (``name = std::make_unique<at::cuda::CUDAGraph>()``). One pass over the file's ``CUDAGraph`` words, each
    looked around in a bounded window."""
    names: set[str] = set()
    for m in _GRAPH_WORD.finditer(text):
        tail = _GRAPH_TAIL.match(text, m.end())
        if tail is not None:
            names.update(w.group() for w in _IDENT.finditer(tail.group()))
        made = _MADE_HEAD.search(text, max(0, m.start() - 120), m.start())
        if made is not None:
            names.add(made.group(1))
    return frozenset(names)


def _block_kind(text: str, brace: int, pairs: dict[int, int]) -> str:
    """What opens the block at ``brace``: "loop" (``for``/``while``/``do``/``switch``), "lambda" or "other"
    (a plain block, ``if``/``else``, ``try``)."""
    k = _skip_ws_back(text, brace - 1)
    tail = _LAMBDA_TAIL.search(text, max(0, k - 120), k + 1)
    if tail is not None:
        k = _skip_ws_back(text, tail.start() - 1)
    if k >= 0 and text[k] == "]":
        return "lambda"
    if k >= 0 and text[k] == ")":
        o = pairs.get(k, -1)
        if o < 0:
            return "loop"  # unreadable: take the worst
        j = _skip_ws_back(text, o - 1)
        if j >= 0 and text[j] == "]":
            return "lambda"
        word, _ = _word_back(text, j)
        return "loop" if word in ("for", "while", "switch") else "other"
    word, _ = _word_back(text, k)
    return "loop" if word == "do" else "other"


def _statement_head(text: str, pos: int, pairs: dict[int, int], floor: int) -> str:
    """The text of the statement holding ``pos`` up to ``pos``, parenthesized groups skipped: ``for (...) `` when
    the call is the body of a loop without braces."""
    k = pos - 1
    steps = 0
    while k > floor and steps < 400:
        c = text[k]
        if c == ")":
            o = pairs.get(k, -1)
            if o < 0:
                break
            k = o - 1
        elif c in ";{}":
            break
        else:
            k -= 1
        steps += 1
    return text[k + 1 : pos]


def _around(pos: int, region: Region, pairs: dict[int, int], opens: list[int]) -> list[int]:
    """The opening braces of the blocks inside ``region`` that hold ``pos``, outermost first (every brace of the
    function is looked at: a linear pass, asked a bounded number of times per function)."""
    lo = bisect.bisect_right(opens, region.start)
    hi = bisect.bisect_left(opens, pos)
    return [b for b in opens[lo:hi] if pairs.get(b, region.end) >= pos]


def _lambda_spans(text: str, region: Region, pairs: dict[int, int], opens: list[int]) -> tuple[tuple[int, int], ...]:
    """The lambda bodies of ``region``, as disjoint ``(open, close)`` spans (nested ones merged into the outer)."""
    spans: list[tuple[int, int]] = []
    lo = bisect.bisect_right(opens, region.start)
    hi = bisect.bisect_left(opens, region.end)
    for b in opens[lo:hi]:
        if spans and b < spans[-1][1]:
            continue  # inside a lambda already found
        if _block_kind(text, b, pairs) == "lambda":
            spans.append((b, pairs.get(b, region.end)))
    return tuple(spans)


def where(span: CaptureSpan, pos: int) -> str | None:
    """"inside" between the begin and the end, "outside" before the begin or after the end (not in a lambda
    body), None when a lambda body holds it (it may be called inside the capture)."""
    if span.begin < pos < span.end:
        return "inside"
    i = bisect.bisect_right(span.lambdas, (pos, pos)) - 1
    return None if i >= 0 and span.lambdas[i][0] < pos < span.lambdas[i][1] else "outside"


def before_begin(text: str, pairs: dict[int, int], opens: list[int], region: Region, pos: int) -> int | None:
    """Where the capture ``region`` begins (a ``cudaStreamBeginCapture(...)`` or ``capture_begin(...)`` call), when
    ``pos`` surely runs before it, else None: no begin lies before ``pos``, ``pos`` is not in a lambda body (which
    may be called later), and the begin is in no loop of the function (nor the body of a loop without braces) and
    there is no ``goto``. Code there prepares a capture (ggml's graph compute refreshes its copy pointers and then
    begins one); it is never recorded by it. The end may be in another function."""
    begin = _BEGIN.search(text, region.start, region.end)
    if begin is None or begin.start() <= pos or _GOTO.search(text, region.start, region.end):
        return None
    if any(_block_kind(text, k, pairs) != "other" for k in _around(begin.start(), region, pairs, opens)):
        return None
    if _LOOP_HEAD.search(_statement_head(text, begin.start(), pairs, region.start)):
        return None
    if any(o < pos < c for o, c in _lambda_spans(text, region, pairs, opens)):
        return None
    return begin.start()


# --- the capture stream --------------------------------------------------------------------

_GUARD_TYPE = re.compile(r"(?:Optional)?(?:CUDA|HIP)?StreamGuard(?:MasqueradingAsCUDA)?")
_SETTERS = frozenset({"setCurrentCUDAStream", "setCurrentHIPStream"})
_SET_CURRENT = r"(?<![\w.>])(?:\w+\s*::\s*)*setCurrent(?:CUDA|HIP)Stream\s*\("


def _makes_current(head: str) -> str | None:
    """"guard" when ``head`` (the text before an argument) ends in a stream guard's declaration,
    ``at::cuda::CUDAStreamGuard g(`` / ``OptionalCUDAStreamGuard g{``; "set" when it ends in
    ``setCurrentCUDAStream(``; None otherwise. Read backwards from the end, word by word."""
    k = _skip_ws_back(head, len(head) - 1)
    if k < 0 or head[k] not in "({":
        return None
    word, j = _word_back(head, _skip_ws_back(head, k - 1))
    if not word:
        return None
    if head[k] == "(" and word.split("::")[-1] in _SETTERS:
        return "set" if j < 0 or head[j] not in ".>" else None
    if "::" in word:
        return None
    kind, _ = _word_back(head, _skip_ws_back(head, j))
    return "guard" if _GUARD_TYPE.fullmatch(kind.split("::")[-1]) else None


_BOUND = re.compile(r"(?<![\w.>])(\w+)\s*=\s*$|(?<=[\w>&*])\s+(\w+)\s*[({]\s*$")
_ANY_SET = re.compile(_SET_CURRENT)
_STREAM_ARG = re.compile(r"(?:\(\s*(?:cudaStream_t|CUstream)\s*\)\s*)?(\w+)(?:\s*(?:\.|->)\s*stream\s*\(\s*\))?")
_REBOUND = re.compile(r"\s*=(?!=)")




class Drivers:
    """The capture drivers of one file (``text`` blanked, its ``pairs`` and sorted opening braces ``opens``, as
    ``cpp_rules.lint_cpp`` has them): each function's capture span and the capture streams, read once per
    function; the file's ``CUDAGraph`` names once per file."""

    def __init__(self, text: str, pairs: dict[int, int], opens: list[int]) -> None:
        self.text = text
        self.pairs = pairs
        self.opens = opens
        self._graphs: frozenset[str] | None = None
        self._spans: dict[Region, CaptureSpan | None] = {}
        self._begins: dict[Region, tuple[list[int], dict[str, list[int]]]] = {}

    def graph(self, name: str) -> bool:
        """Whether the file declares ``name`` as an ``at::cuda::CUDAGraph`` (``cuda_graph_names``)."""
        if self._graphs is None:
            self._graphs = cuda_graph_names(self.text) if "CUDAGraph" in self.text else frozenset()
        return name in self._graphs

    def span(self, region: Region) -> CaptureSpan | None:
        """The capture ``region`` (a function body) begins and ends itself, or None (see the module docstring)."""
        if region not in self._spans:
            self._spans[region] = self._read_span(region)
        return self._spans[region]

    def _read_span(self, region: Region) -> CaptureSpan | None:
        text, pairs, opens = self.text, self.pairs, self.opens
        begins = list(_BEGIN.finditer(text, region.start, region.end))
        ends = list(_END.finditer(text, region.start, region.end))
        if len(begins) != 1 or len(ends) != 1 or _GOTO.search(text, region.start, region.end):
            return None
        b, e = begins[0], ends[0]
        if e.start() < b.start():
            return None
        b_args = _call_args(text, b.end() - 1, pairs)
        e_args = _call_args(text, e.end() - 1, pairs)
        if b_args is None or e_args is None:
            return None
        if b.group(1) is None:  # g.capture_begin(...) ... g.capture_end()
            head = _head_before(text, b.start(), region.start)
            rb = _RECEIVER.search(head)
            re_ = _RECEIVER.search(_head_before(text, e.start(), region.start))
            if e.group(1) is not None or rb is None or re_ is None or rb.group(1) != re_.group(1):
                return None
            if not self.graph(rb.group(1)):
                return None
            call = head[rb.start() :] + "capture_begin"
        else:
            if (e.group(1) is None or b.group(1).startswith("cuda") != e.group(1).startswith("cuda")
                    or _first_arg(b_args) != _first_arg(e_args)):
                return None
            call = b.group(1)
        # the order must be plain: neither call alone in a loop or lambda, no jump out of a loop holding both
        b_blocks = _around(b.start(), region, pairs, opens)
        e_blocks = _around(e.start(), region, pairs, opens)
        shared = set(b_blocks) & set(e_blocks)
        if any(_block_kind(text, k, pairs) != "other" for k in set(b_blocks) ^ set(e_blocks)):
            return None
        for at in (b.start(), e.start()):
            if _LOOP_HEAD.search(_statement_head(text, at, pairs, region.start)):
                return None
        if any(_block_kind(text, k, pairs) != "other" for k in shared) and _JUMP.search(text, b.end(), e.start()):
            return None
        return CaptureSpan(b.start(), e.start(), " ".join(call.split()), _lambda_spans(text, region, pairs, opens),
                           b_blocks == e_blocks)

    def _captures(self, region: Region) -> tuple[list[int], dict[str, list[int]]]:
        """Where ``region`` begins captures: the ``g.capture_begin(`` calls on a CUDAGraph ``g`` (they capture the
        current stream), and the ``cudaStreamBeginCapture(s, ...)`` calls by their stream ``s`` (``(cudaStream_t)``
        casts and ``.stream()`` dropped), each in text order."""
        if region not in self._begins:
            graph: list[int] = []
            by_stream: dict[str, list[int]] = {}
            for m in _BEGIN.finditer(self.text, region.start, region.end):
                if m.group(1) is None:
                    rb = _RECEIVER.search(_head_before(self.text, m.start(), region.start))
                    if rb is not None and self.graph(rb.group(1)):
                        graph.append(m.start())
                    continue
                args = _call_args(self.text, m.end() - 1, self.pairs)
                stream = _STREAM_ARG.fullmatch(_first_arg(args or ""))
                if stream is not None:
                    by_stream.setdefault(stream.group(1), []).append(m.start())
            self._begins[region] = (graph, by_stream)
        return self._begins[region]

    def _captured(self, region: Region, start: int, stop: int, graph: bool, stream: str | None) -> bool:
        """A capture begun in ``text[start:stop]``: a ``g.capture_begin(`` (asked when ``graph``) or a
        ``cudaStreamBeginCapture(stream, ...)`` (when ``stream`` is named)."""
        on_graph, by_stream = self._captures(region)
        found = [on_graph] if graph else []
        if stream is not None:
            found.append(by_stream.get(stream, []))
        return any(bisect.bisect_left(at, start) < bisect.bisect_left(at, stop) for at in found)

    def _scope(self, at: int, kind: str, region: Region) -> int:
        """Where the stream made current at ``at`` stops being current: the end of the guard's block, or the next
        ``setCurrentCUDAStream(...)`` after a set (the function's end when none)."""
        if kind == "guard":
            # the innermost block among the 64 braces before it (cpp_rules._enclosing); none found: no scope
            block = next(_enclosing(self.text, at, self.pairs, self.opens, region.start), None)
            return self.pairs.get(block, at) if block is not None else at
        nxt = _ANY_SET.search(self.text, at + 1, region.end)
        return nxt.start() if nxt is not None else region.end

    def capture_stream(self, m: re.Match[str], region: Region, names: dict[str, list[int]]) -> int | None:
        """The position where the pool stream of ``m`` (a ``getStreamFromPool(...)`` call) is made current for a
        capture begun on it in the same function, or None: bound to a name (``auto s = getStreamFromPool();``)
        that a stream guard (``CUDAStreamGuard g(s);``, ``OptionalCUDAStreamGuard``) or
        ``setCurrentCUDAStream(s)`` makes current, with ``g.capture_begin(...)`` on an ``at::cuda::CUDAGraph``
        while it is current, or ``cudaStreamBeginCapture(s, ...)``; or given to the guard or the set directly
        (``CUDAStreamGuard g(getStreamFromPool());``) with such a ``capture_begin``. ``names`` are the
        function's name positions (``cpp_rules._name_positions``). That stream is the capture stream, not a side
        stream. The name's uses are read up to its next binding, so each use is read for one pool stream."""
        text = self.text
        close = self.pairs.get(text.find("(", m.end() - 1), -1)
        if close < 0:
            return None
        head = _head_before(text, m.start(), region.start)
        if (g := _makes_current(head)) is not None:  # made current directly
            at = m.start()
            return at if self._captured(region, close, self._scope(at, g, region), True, None) else None
        bound = _BOUND.search(head)
        if bound is None or not re.match(r"\s*[;)}]", text[close + 1 : close + 8]):
            return None
        name = bound.group(1) or bound.group(2)
        uses = names.get(name, [])
        current = None  # the first place the stream is made current
        for k in range(bisect.bisect_right(uses, close), len(uses)):  # no slice: that would copy the rest each time
            use = uses[k]
            after = text[use + len(name) : use + len(name) + 8]
            if _REBOUND.match(after):
                break  # a new binding of the name: what follows is about another stream
            g = _makes_current(_head_before(text, use, region.start))
            if g is None or not re.match(r"\s*[)}]", after):
                continue
            current = use if current is None else current
            if self._captured(region, use, self._scope(use, g, region), True, name):
                return use
        if current is not None and self._captured(region, close, region.end, False, name):
            return current  # cudaStreamBeginCapture(s, ...) on the stream, made current in the function
        return None
