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
between them) is off the capture; a position between them is inside it, whatever the function's name or
parameters say.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from graphcheck.lint.cpp_rules import Region, _enclosing, _head_before, _skip_ws_back, _word_back

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


def _call_args(text: str, open_paren: int, pairs: dict[int, int]) -> str | None:
    close = pairs.get(open_paren, -1)
    if close < 0:
        return None
    return text[open_paren + 1 : close]


def _first_arg(args: str) -> str:
    depth = 0
    for i, c in enumerate(args):
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        elif c == "," and depth == 0:
            return " ".join(args[:i].split())
    return " ".join(args.split())


def _cuda_graph_name(text: str, name: str) -> bool:
    """Whether the file declares ``name`` as an ``at::cuda::CUDAGraph`` (a variable, parameter or member of that
    type, or a smart pointer to one) or makes one for it (``name = std::make_unique<at::cuda::CUDAGraph>()``)."""
    if "CUDAGraph" not in text:
        return False
    n = re.escape(name)
    made = (r"\s*(?:=|\.\s*reset\s*\()\s*(?:new\s+|(?:std\s*::\s*)?make_(?:unique|shared)\s*<\s*)"
            r"(?:\w+\s*::\s*)*CUDAGraph\b")
    return re.search(r"\bCUDAGraph\b[^;{}()]{0,120}?(?<![\w.>])" + n + r"\b|(?<![\w.>])" + n + made, text) is not None


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


def _blocks(text: str, pos: int, pairs: dict[int, int], opens: list[int], floor: int) -> list[int]:
    return [b for b in _enclosing(text, pos, pairs, opens, floor) if b > floor]


def capture_span(text: str, region: Region, pairs: dict[int, int], opens: list[int]) -> CaptureSpan | None:
    """The capture ``region`` (a function body) begins and ends itself, or None (see the module docstring)."""
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
        if not _cuda_graph_name(text, rb.group(1)):
            return None
        call = head[rb.start() :] + "capture_begin"
    else:
        if (e.group(1) is None or b.group(1).startswith("cuda") != e.group(1).startswith("cuda")
                or _first_arg(b_args) != _first_arg(e_args)):
            return None
        call = b.group(1)
    # the order must be plain: neither call alone in a loop or lambda, no jump out of a loop holding both
    b_blocks = _blocks(text, b.start(), pairs, opens, region.start)
    e_blocks = _blocks(text, e.start(), pairs, opens, region.start)
    shared = set(b_blocks) & set(e_blocks)
    if any(_block_kind(text, k, pairs) != "other" for k in set(b_blocks) ^ set(e_blocks)):
        return None
    for at in (b.start(), e.start()):
        if _LOOP_HEAD.search(_statement_head(text, at, pairs, region.start)):
            return None
    if any(_block_kind(text, k, pairs) != "other" for k in shared) and _JUMP.search(text, b.end(), e.start()):
        return None
    return CaptureSpan(b.start(), e.start(), " ".join(call.split()))


def in_lambda(text: str, pos: int, pairs: dict[int, int], opens: list[int], floor: int) -> bool:
    """Whether ``pos`` sits in a lambda body inside the function that starts at ``floor``."""
    return any(_block_kind(text, k, pairs) == "lambda" for k in _blocks(text, pos, pairs, opens, floor))


def where(span: CaptureSpan, text: str, pos: int, pairs: dict[int, int], opens: list[int], floor: int) -> str | None:
    """"inside" between the begin and the end, "outside" before the begin or after the end (not in a lambda),
    None when a lambda makes it unclear."""
    if span.begin < pos < span.end:
        return "inside"
    return None if in_lambda(text, pos, pairs, opens, floor) else "outside"


# --- the capture stream --------------------------------------------------------------------

_GUARD = r"(?:\w+\s*::\s*)*(?:Optional)?(?:CUDA|HIP)?StreamGuard(?:MasqueradingAsCUDA)?\s+\w+\s*[({]\s*"
_SET_CURRENT = r"(?<![\w.>])(?:\w+\s*::\s*)*setCurrent(?:CUDA|HIP)Stream\s*\(\s*"
_GUARD_HEAD = re.compile(r"(?:(?<![\w:])" + _GUARD + r"|" + _SET_CURRENT + r")$")
_BOUND = re.compile(r"(?<![\w.>])(\w+)\s*=\s*$|(?<=[\w>&*])\s+(\w+)\s*[({]\s*$")
_ANY_SET = re.compile(_SET_CURRENT)
_STREAM_OF = r"(?:\(\s*(?:cudaStream_t|CUstream)\s*\)\s*)?{name}(?:\s*(?:\.|->)\s*stream\s*\(\s*\))?\s*,"


def _capture_in(text: str, start: int, stop: int, pairs: dict[int, int], graph: bool, stream: str | None) -> bool:
    """A capture begun in ``text[start:stop]``: ``g.capture_begin(`` on a CUDAGraph ``g`` (it captures the current
    stream; asked when ``graph``), or ``cudaStreamBeginCapture(stream, ...)`` when ``stream`` is named."""
    for m in _BEGIN.finditer(text, start, stop):
        if m.group(1) is None:
            rb = _RECEIVER.search(_head_before(text, m.start(), start))
            if graph and rb is not None and _cuda_graph_name(text, rb.group(1)):
                return True
        elif stream is not None:
            args = _call_args(text, m.end() - 1, pairs) or ""
            if re.match(r"\s*" + _STREAM_OF.format(name=re.escape(stream)), args + ","):
                return True
    return False


def _scope(text: str, at: int, guard: re.Match[str] | None, region: Region, pairs: dict[int, int],
           opens: list[int]) -> int:
    """Where the stream made current at ``at`` stops being current: the end of the guard's block, or the next
    ``setCurrentCUDAStream(...)`` after a set (the function's end when none)."""
    if guard is not None and "setCurrent" not in guard.group():
        block = next(_enclosing(text, at, pairs, opens, region.start), None)
        return pairs.get(block, region.end) if block is not None else region.end
    nxt = _ANY_SET.search(text, at + 1, region.end)
    return nxt.start() if nxt is not None else region.end


def capture_stream(text: str, m: re.Match[str], region: Region, pairs: dict[int, int], opens: list[int],
                   names: dict[str, list[int]]) -> int | None:
    """The position where the pool stream of ``m`` (a ``getStreamFromPool(...)`` call) is made current for a
    capture begun on it in the same function, or None: bound to a name (``auto s = getStreamFromPool();``) that a
    stream guard (``CUDAStreamGuard g(s);``, ``OptionalCUDAStreamGuard``) or ``setCurrentCUDAStream(s)`` makes
    current, with ``g.capture_begin(...)`` on an ``at::cuda::CUDAGraph`` while it is current, or
    ``cudaStreamBeginCapture(s, ...)``; or given to the guard or the set directly
    (``CUDAStreamGuard g(getStreamFromPool());``) with such a ``capture_begin``. ``names`` are the function's
    name positions (``cpp_rules._name_positions``). That stream is the capture stream, not a side stream."""
    close = pairs.get(text.find("(", m.end() - 1), -1)
    if close < 0:
        return None
    head = _head_before(text, m.start(), region.start)
    if (g := _GUARD_HEAD.search(head)) is not None:  # made current directly
        at = m.start()
        scope = _scope(text, at, g, region, pairs, opens)
        return at if _capture_in(text, close, scope, pairs, True, None) else None
    bound = _BOUND.search(head)
    if bound is None or not re.match(r"\s*[;)}]", text[close + 1 : close + 8]):
        return None
    name = bound.group(1) or bound.group(2)
    uses = names.get(name, [])
    current = None  # the first place the stream is made current
    for use in uses[bisect.bisect_right(uses, close) :]:
        g = _GUARD_HEAD.search(_head_before(text, use, region.start))
        if g is None or not re.match(r"\s*[)}]", text[use + len(name) : use + len(name) + 8]):
            continue
        current = use if current is None else current
        if _capture_in(text, use, _scope(text, use, g, region, pairs, opens), pairs, True, name):
            return use
    if current is not None and _capture_in(text, close, region.end, pairs, False, name):
        return current  # cudaStreamBeginCapture(s, ...) on the stream, made current in the function
    return None
