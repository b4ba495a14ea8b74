"""Capture regions written inside one function: the code a CUDA graph records where it is written.

A function opens a capture region with

- ``with torch.cuda.graph(g):`` (also ``torch.cuda.graphs.graph``), or ``with ctx:`` where ``ctx`` was
  bound in the same function to such a call (``ctx = torch.cuda.graph(g, pool=p)``);
- ``g.capture_begin()`` ... ``g.capture_end()`` in the same function (the statements between them);
- ``torch.cuda.make_graphed_callables(lambda x: ..., ...)``: the lambda's body.

The statements of the region run under capture: the Python rules check them as captured code, whatever
the reach of the function around them, and the project index follows the calls they make. A function
passed by name to ``torch.cuda.make_graphed_callables`` is a capture root of its own, not a region.

``resolve`` maps a ``Name``/``Attribute`` chain to the dotted name it stands for in the file (the rules'
import aliases, or the summary's project-aware names); nothing is guessed.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Iterator
from typing import cast

from graphcheck.lint.scope import iter_own_statements, own_nodes_of

CAPTURE_CONTEXTS = ("torch.cuda.graph", "torch.cuda.graphs.graph")
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

Resolve = Callable[[ast.AST], "str | None"]


@dataclasses.dataclass
class Region:
    kind: str  # "with", "begin" or "graphed" (a lambda given to make_graphed_callables)
    line: int  # the `with` line, or the capture_begin() line
    end: int  # last line of the region
    label: str  # "the `with torch.cuda.graph` body at line 12"
    statements: list[ast.stmt]  # the region's statements, in source order (nested blocks inside them)
    # the stream the graph captures on, as :func:`stream_key` keys: the `stream=` argument of
    # `torch.cuda.graph(g, pool, stream)`, or the `with torch.cuda.stream(s):` around `capture_begin()`
    streams: frozenset[str] = frozenset()

    def nodes(self) -> Iterator[ast.AST]:
        """Every node of the region in pre-order; nested functions and classes are other scopes."""
        return iter_own_statements(self.statements)

    def calls(self) -> list[ast.Call]:
        return [n for n in self.nodes() if isinstance(n, ast.Call)]


_STREAM_CONTEXTS = ("torch.cuda.stream", "torch.cuda.StreamContext", "torch.cuda.streams.StreamContext")


def stream_key(expr: ast.AST) -> str | None:
    """A key for a stream named by a local or attribute chain (``s``, ``self.capture_stream``), or None."""
    node = expr
    while isinstance(node, ast.Attribute):
        node = node.value
    return ast.dump(expr) if isinstance(node, ast.Name) else None


def _graph_stream(call: ast.Call) -> str | None:
    """The stream a ``torch.cuda.graph(g, pool=None, stream=None, ...)`` call captures on, if named."""
    arg = next((k.value for k in call.keywords if k.arg == "stream"), None)
    if arg is None and len(call.args) > 2:
        arg = call.args[2]
    return stream_key(arg) if arg is not None else None


def _is_capture_call(expr: ast.AST, resolve: Resolve) -> bool:
    return isinstance(expr, ast.Call) and (resolve(expr.func) or "") in CAPTURE_CONTEXTS


def may_capture(source: str) -> bool:
    """Can the source open a capture region at all (every form names ``graph`` or ``capture_begin``)?"""
    return "graph" in source or "capture_begin" in source


def regions(fn: ast.FunctionDef | ast.AsyncFunctionDef, resolve: Resolve) -> list[Region]:
    """The capture regions ``fn`` opens itself, outermost first (a region nested in another is kept:
    its statements are a subset, and the checker reports a node once)."""
    nodes = own_nodes_of(fn)
    ctx_names: dict[str, ast.Call] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and _is_capture_call(node.value, resolve):
            ctx_names.update((t.id, cast(ast.Call, node.value)) for t in node.targets if isinstance(t, ast.Name))
    out: list[Region] = []
    for node in nodes:
        if not isinstance(node, (ast.With, ast.AsyncWith)):
            continue
        for item in node.items:
            expr = item.context_expr
            name = call = None
            if _is_capture_call(expr, resolve):
                name, call = "torch.cuda.graph", cast(ast.Call, expr)
            elif isinstance(expr, ast.Name) and expr.id in ctx_names:
                name, call = expr.id, ctx_names[expr.id]
            if name is not None and call is not None:
                stream = _graph_stream(call)
                out.append(Region("with", node.lineno, node.end_lineno or node.lineno,
                                  f"the `with {name}` body at line {node.lineno}", list(node.body),
                                  frozenset([stream] if stream else [])))
                break
    out += _begin_end(fn, nodes, resolve)
    for node in nodes:  # `make_graphed_callables(lambda x: ..., ...)`: the lambda's body is captured
        if isinstance(node, ast.Call):
            for target in graphed_targets(node, resolve) or ():
                if isinstance(target, ast.Lambda):
                    body = ast.copy_location(ast.Expr(value=target.body), target.body)
                    out.append(Region("graphed", node.lineno, node.end_lineno or node.lineno,
                                      f"the lambda passed to `make_graphed_callables` at line {node.lineno}",
                                      [body]))
    return out


def _begin_end(fn: ast.FunctionDef | ast.AsyncFunctionDef, nodes: list[ast.AST], resolve: Resolve) -> list[Region]:
    """``x.capture_begin()`` .. ``x.capture_end()``: the statements of the function that lie between.
    ``capture_begin()`` captures on the current stream: a ``with torch.cuda.stream(s):`` around it names it."""
    marks: list[tuple[int, str]] = []
    for node in nodes:
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("capture_begin", "capture_end")):
            marks.append((node.lineno, node.func.attr))
    marks.sort()
    out: list[Region] = []
    begin = None
    for line, attr in marks:
        if attr == "capture_begin":
            begin = line if begin is None else begin
        elif begin is not None:
            stmts = _statements_between(fn, begin, line)
            streams = frozenset(_streams_around(nodes, begin, resolve))
            out.append(Region("begin", begin, line, f"the capture between `capture_begin()` at line {begin} and "
                              f"`capture_end()` at line {line}", stmts, streams))
            begin = None
    return out


def _streams_around(nodes: list[ast.AST], line: int, resolve: Resolve) -> list[str]:
    """Keys of the streams entered by ``with torch.cuda.stream(s):`` blocks that hold ``line``."""
    out: list[str] = []
    for node in nodes:
        if isinstance(node, (ast.With, ast.AsyncWith)) and node.lineno < line <= (node.end_lineno or node.lineno):
            for item in node.items:
                expr = item.context_expr
                if (isinstance(expr, ast.Call) and (resolve(expr.func) or "") in _STREAM_CONTEXTS
                        and expr.args and (key := stream_key(expr.args[0]))):
                    out.append(key)
    return out


def _statements_between(fn: ast.FunctionDef | ast.AsyncFunctionDef, first: int, last: int) -> list[ast.stmt]:
    """The outermost statements of ``fn`` that lie wholly between lines ``first`` and ``last`` (exclusive);
    a block that holds the begin or end line is entered, so its inner statements are found."""
    out: list[ast.stmt] = []
    stack: list[ast.stmt] = list(reversed(fn.body))
    while stack:
        stmt = stack.pop()
        start, end = stmt.lineno, stmt.end_lineno or stmt.lineno
        if end <= first or start >= last:
            continue
        if start > first and end < last:
            out.append(stmt)
            continue
        if isinstance(stmt, _SCOPES):
            continue
        inner: list[ast.stmt] = []
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None)
            if isinstance(block, list):
                inner += [s for s in block if isinstance(s, ast.stmt)]
        for handler in getattr(stmt, "handlers", ()) or ():
            inner += handler.body
        stack.extend(sorted(inner, key=lambda s: s.lineno, reverse=True))
    out.sort(key=lambda s: s.lineno)
    return out


def graphed_targets(call: ast.Call, resolve: Resolve) -> list[ast.AST] | None:
    """The callables handed to ``make_graphed_callables`` (its first argument, or the items of a tuple or
    list there), or None when ``call`` is not such a call."""
    name = resolve(call.func) or (call.func.attr if isinstance(call.func, ast.Attribute) else
                                  call.func.id if isinstance(call.func, ast.Name) else "")
    if name.rpartition(".")[2] != "make_graphed_callables" or not call.args:
        return None
    first = call.args[0]
    return list(first.elts) if isinstance(first, (ast.Tuple, ast.List)) else [first]
