"""What in-tree callers pass to a function, from the project index.

The summary of each module (``graphcheck.lint.summary``) records, for every
call whose target it can name, a code per argument: ``n`` (the literal
``None``), ``h`` (a Python number: a literal, ``len()``, ``int()``, a shape or
size, ``.item()``, arithmetic of those, a local or ``self.`` attribute assigned
only such values; ``f`` for the literals ``False`` and ``0``) or ``?`` (anything
else). A call that passes on an opt-in flag of the caller as is (``use_sync=use_sync``)
says so, and the index follows it up to the callers of the caller. The project index hands the lint
of a file the call records of its reachable functions (``FileContext.callers``);
the rules use them to:

- treat a parameter annotated ``torch.Tensor`` as a host value when every
  in-tree caller passes a Python number (``max_seq_pages: torch.Tensor`` given
  ``self.max_num_pages``, or in an autograd backward ``ctx.flag`` that forward
  set only to Python bools): the annotation is contradicted by the callers;
- keep an ``if p is None:`` fallback an error only when a caller omits ``p``
  or passes ``None``, and an opt-in block (``if use_sync:``, ``use_sync=False``)
  an error only when a caller turns the flag on: passes anything but ``False``,
  ``0`` or ``None``, or passes on a flag of its own that one of its callers turns
  on (``graphcheck.lint.coldpaths``).

A caller the index did not summarize is not seen: with no record the
annotation stands and the fallback counts as one no caller takes.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from graphcheck.lint import cold_reach
from graphcheck.lint.scope import ctx_param
from graphcheck.lint.values import IDENTITY_OPS

# calls and methods whose result is a Python number
_NUMBER_FUNCS = {"len", "int", "float", "round", "abs", "bool"}
_NUMBER_QUALS = ("math.", "triton.cdiv", "triton.next_power_of_2", "cdiv", "next_power_of_2")
_NUMBER_METHODS = {"item", "size", "numel", "dim", "stride", "element_size", "nelement", "ndimension",
                   "dense_dim", "sparse_dim", "bit_length"}
_NUMBER_ATTRS = {"ndim", "itemsize", "nbytes", "requires_grad", "is_cuda", "is_leaf", "is_sparse", "is_meta"}
_HOST_ANNOTATIONS = {"int", "float", "bool"}


class ArgCoder:
    """Codes call arguments of one module: ``n``, ``h`` or ``?``."""

    def __init__(self, functions: Sequence[Any], index: Any = None) -> None:
        """``functions``: the module's ``FuncInfo``s (their own nodes are walked once, and shared); ``index``:
        the module's ``ModuleIndex``, for what an autograd forward stores on its context."""
        self._index = index
        self._ctx_memo: dict[tuple[str, str], str] = {}
        self._by_node: dict[int, Any] = {id(f.node): f for f in functions}
        self._memo: dict[tuple[int, str], bool] = {}
        self._functions = functions
        self._attrs: dict[str, dict[str, list[ast.expr]]] | None = None
        self._attr_kinds: dict[tuple[str, str], str] = {}
        self._locals: dict[int, tuple[dict[str, list[ast.expr]], set[str]]] = {}
        self.own_nodes: dict[int, list[ast.AST]] = {id(f.node): f.own_nodes() for f in functions}

    def attrs(self, cls: str) -> dict[str, list[ast.expr]]:
        """``self.x = value`` in the methods of class ``cls``: attribute -> values (all classes built on first
        use, from the methods' own nodes)."""
        if self._attrs is None:
            self._attrs = {}
            for info in self._functions:
                if info.owner_class is None:
                    continue
                table = self._attrs.setdefault(info.owner_class, {})
                for node in info.own_nodes():
                    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                        for t in targets:
                            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                                table.setdefault(t.attr, []).append(node.value)
        return self._attrs.get(cls, {})

    def _assigned(self, fn: ast.AST) -> tuple[dict[str, list[ast.expr]], set[str]]:
        """(local name -> values assigned, names bound by loops) of one function (built on first use)."""
        hit = self._locals.get(id(fn))
        if hit is None:
            values: dict[str, list[ast.expr]] = {}
            loops: set[str] = set()
            nodes = self.own_nodes.get(id(fn))
            for node in nodes if nodes is not None else ast.walk(fn):
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            values.setdefault(t.id, []).append(node.value)
                        elif isinstance(t, (ast.Tuple, ast.List)):
                            loops.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))  # unpacked: unknown
                elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name) \
                        and node.value is not None:
                    values.setdefault(node.target.id, []).append(node.value)
                elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension, ast.NamedExpr)):
                    loops.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
            hit = self._locals[id(fn)] = (values, loops)
        return hit

    def code(self, expr: ast.expr, fn: ast.AST | None, cls: str | None) -> str:
        if isinstance(expr, ast.Constant) and expr.value is None:
            return "n"
        if isinstance(expr, ast.Constant) and type(expr.value) in (bool, int, float) and not expr.value:
            return "f"  # `False`, `0`: a number, and an opt-in flag left off
        return "h" if self._number(expr, fn, cls, plain=False, depth=0) else "?"

    def _number(self, node: ast.AST, fn: ast.AST | None, cls: str | None, plain: bool, depth: int) -> bool:
        return self._kind(node, fn, cls, plain, depth) == "h"

    def _kind(self, node: ast.AST, fn: ast.AST | None, cls: str | None, plain: bool, depth: int) -> str:
        """``h`` for a Python number, ``p`` for configuration (in a class attribute's value, ``plain``: an
        attribute chain of another object, ``runner.page_size``, arithmetic of such), ``?`` otherwise.
        ``(runner.ctx_len + runner.page - 1) // runner.page`` is a number: configuration and a literal."""
        if depth > 8:
            return "?"
        if isinstance(node, ast.Constant):
            return "h" if isinstance(node.value, (int, float)) else "?"  # bools too
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return "h"  # a Python bool
            return self._kind(node.operand, fn, cls, plain, depth + 1)
        if isinstance(node, ast.Compare) and all(isinstance(op, IDENTITY_OPS) for op in node.ops):
            return "h"  # `x is not None`, `act in ("silu", "swish")`: a Python bool whatever the operands
        if isinstance(node, ast.BoolOp):
            kinds = {self._kind(v, fn, cls, plain, depth + 1) for v in node.values}
            return "h" if kinds == {"h"} else "?"
        if isinstance(node, ast.BinOp):
            kinds = {self._kind(s, fn, cls, plain, depth + 1) for s in (node.left, node.right)}
            return "?" if "?" in kinds else "h" if "h" in kinds else "p"
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                number = func.id in _NUMBER_FUNCS or func.id in ("cdiv", "next_power_of_2") or (
                    func.id in ("max", "min") and bool(node.args)
                    and all(self._number(a, fn, cls, plain, depth + 1) for a in node.args))
                return "h" if number else "?"
            if isinstance(func, ast.Attribute):
                dotted = _dotted(func)
                number = func.attr in _NUMBER_METHODS or (dotted is not None and dotted.startswith(_NUMBER_QUALS))
                return "h" if number else "?"
            return "?"
        if isinstance(node, ast.Subscript):
            value = node.value
            return "h" if isinstance(value, ast.Attribute) and value.attr == "shape" else "?"
        if isinstance(node, ast.Attribute):
            if node.attr in _NUMBER_ATTRS:
                return "h"
            if isinstance(node.value, ast.Name) and node.value.id == "self" and cls is not None:
                return self._attr_kind(cls, node.attr, depth)
            if isinstance(node.value, ast.Name) and fn is not None and cls is not None:
                ctx = self._ctx(fn)
                if ctx == node.value.id:
                    return self._ctx_attr_kind(cls, node.attr, depth)
            return "p" if plain and _dotted(node) is not None else "?"
        if isinstance(node, ast.Name) and fn is not None:
            return "h" if self._local_number(node.id, fn, cls, depth) else "?"
        return "?"

    def _attr_kind(self, cls: str, attr: str, depth: int) -> str:
        """The kind of ``self.attr`` in class ``cls``: of every value assigned to it (memoized)."""
        key = (cls, attr)
        hit = self._attr_kinds.get(key)
        if hit is None:
            self._attr_kinds[key] = "?"  # a cycle (`self.n = self.n * 2`) is no evidence
            kinds = {self._kind(v, None, cls, True, depth + 1) for v in self.attrs(cls).get(attr, [])}
            hit = self._attr_kinds[key] = "?" if not kinds or "?" in kinds else "h" if kinds == {"h"} else "p"
        return hit

    def _ctx(self, fn: ast.AST) -> str | None:
        """The context parameter of an autograd ``backward`` (``jvp``, ``vjp``), else None."""
        info = self._by_node.get(id(fn))
        if self._index is None or info is None or info.name in ("forward", "setup_context"):
            return None
        return ctx_param(info, self._index)

    def _ctx_attr_kind(self, cls: str, attr: str, depth: int) -> str:
        """The kind of ``ctx.attr`` read in a backward of autograd class ``cls``: of every value its methods
        assign to it, each judged where it is assigned (memoized)."""
        key = (cls, attr)
        hit = self._ctx_memo.get(key)
        if hit is None:
            self._ctx_memo[key] = "?"
            writes = self._index.ctx_writes(cls)
            values = writes.attrs.get(attr) if writes is not None else None
            kinds = {self._kind(v, where.node, cls, False, depth + 1) for v, where in values or ()}
            hit = self._ctx_memo[key] = "h" if kinds == {"h"} else "?"
        return hit

    def _local_number(self, name: str, fn: ast.AST, cls: str | None, depth: int) -> bool:
        """A parameter annotated ``int``/``float``, or a local assigned only numbers (memoized)."""
        key = (id(fn), name)
        hit = self._memo.get(key)
        if hit is None:
            self._memo[key] = False  # a cycle (`n = n + 1`) is no evidence
            hit = self._memo[key] = self._local_number_uncached(name, fn, cls, depth)
        return hit

    def _local_number_uncached(self, name: str, fn: ast.AST, cls: str | None, depth: int) -> bool:
        args = getattr(fn, "args", None)
        if args is not None:
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if arg.arg == name:
                    ann = arg.annotation
                    return isinstance(ann, ast.Name) and ann.id in _HOST_ANNOTATIONS
        values, loops = self._assigned(fn)
        if name in loops:
            return False
        assigned = values.get(name, [])
        return bool(assigned) and all(self._number(v, fn, cls, False, depth + 1) for v in assigned)


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


# -- the lint side: questions about one function's callers ------------------------------------------


def _positional(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[list[str], bool]:
    """(positional parameter names, a staticmethod)."""
    a = fn.args
    static = any(getattr(d, "id", getattr(d, "attr", "")) == "staticmethod" for d in fn.decorator_list)
    return [p.arg for p in [*a.posonlyargs, *a.args]], static


def _slot(record: list[Any], positional: list[str], static: bool, is_method: bool,
          param: str) -> tuple[str | None, str]:
    """(the code a call record passes for ``param``: ``n``/``f``/``h``/``?``, ``-`` when omitted, None when
    unknown (``*args``/``**kwargs`` at the call); the argument's key, ``#i`` or the keyword)."""
    _show, _line, via_attr, pos, kws, star = record[:6]
    if param in kws:
        return str(kws[param]), param
    if star:
        return None, ""
    if is_method and via_attr and not static and positional:
        positional = positional[1:]
    if param in positional and positional.index(param) < len(pos):
        i = positional.index(param)
        return str(pos[i]), f"#{i}"
    return "-", ""


def _given(record: list[Any], fn: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool, param: str) -> str | None:
    """The code a call record passes for ``param`` (``_slot``)."""
    positional, static = _positional(fn)
    return _slot(record, positional, static, is_method, param)[0]


_OFF_CODES = ("-", "f", "n")  # an opt-in flag left off: omitted, False/0, None


def _turns_on(record: list[Any], fn: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool,
              param: str) -> str | None:
    """How a call record turns on the opt-in flag ``param`` ("`f` (file.py:12) turns it on", or which caller of
    the caller turns on a flag the caller passes on as is), or None when it leaves it off."""
    positional, static = _positional(fn)
    code, key = _slot(record, positional, static, is_method, param)
    if code in _OFF_CODES:
        return None
    forwards = record[7] if len(record) > 7 and record[7] else {}
    if key in forwards:  # a flag of the caller's, passed on: on when a caller of the caller turns it on
        upstream = forwards[key]
        return f"{record[0]} passes on a flag of its own, which {upstream} turns on" if upstream else None
    return f"{record[0]} turns it on"


def _off(record: list[Any]) -> str:
    """The caller's off-capture role ("harness", "eager") when the project knows one, else ""."""
    return str(record[6]) if len(record) > 6 and record[6] else ""


def turning_on(info: Any, param: str, table: dict[str, list[list[Any]]]) -> str | None:
    """How a caller turns on the opt-in flag ``param`` of function ``info`` (or may: ``*args``), as
    "`f` (file.py:12) turns it on", or None. Callers that never run under capture (tests, benchmarks,
    references, metadata builders run before replay) do not count."""
    for record in table.get(info.qualname, ()):
        if not _off(record):
            on = _turns_on(record, info.node, info.is_method, param)
            if on is not None:
                return on
    return None


def omitting(info: Any, param: str, table: dict[str, list[list[Any]]]) -> str | None:
    """A caller (as "`f` (file.py:12)") that omits ``param`` of function ``info`` or passes None, or None.
    Callers that never run under capture do not count."""
    for record in table.get(info.qualname, ()):
        if not _off(record) and _given(record, info.node, info.is_method, param) in ("-", "n"):
            return record[0]
    return None


def off_capture_callers(info: Any, param: str, table: dict[str, list[list[Any]]], omitted: bool) -> list[str]:
    """The callers, each as "`f` (file.py:12) (eager)", that take the path (omit ``param`` when ``omitted``,
    else turn the opt-in flag on) but never run under capture."""
    out = []
    for record in table.get(info.qualname, ()):
        if not _off(record):
            continue
        if omitted:
            takes = _given(record, info.node, info.is_method, param) in ("-", "n")
        else:
            takes = _turns_on(record, info.node, info.is_method, param) is not None
        if takes:
            out.append(f"{record[0]} ({_off(record)})")
    return out


def all_pass_numbers(info: Any, param: str, table: dict[str, list[list[Any]]]) -> list[str]:
    """The callers (as "`f` (file.py:12)"), when every in-tree call of ``info`` passes a Python number for
    ``param``; [] otherwise (or when no call is known)."""
    records = table.get(info.qualname, ())
    if not records:
        return []
    if any(_given(r, info.node, info.is_method, param) not in ("h", "f") for r in records):
        return []
    return [r[0] for r in records]


# -- the project side -------------------------------------------------------------------------------


def call_table(index: Any) -> dict[str, list[list[Any]]]:
    """callee dotted -> call records ``[shown caller, line, via attribute, pos codes, kw codes, star, off]`` over
    every summarized module (memoized on the index; a class call counts for its ``__init__``, ``self.layer(x)``
    for the ``__call__`` or nn.Module ``forward`` of the attribute's class). Read off the index's reverse call
    map (``ProjectIndex.call_edges``, the resolver the reachability walk uses): a caller's records for a
    callee, in its order. ``off`` is the caller's off-capture role ("harness", "eager") or ""."""
    table = getattr(index, "_call_table", None)
    if table is not None:
        return table
    table = {}
    order = {caller: n for n, caller in enumerate(index.funcs)}
    forwarded: list[tuple[str, list[Any], dict[str, list[str]]]] = []  # (caller, record, its forwards)
    callers_of: dict[str, list[list[Any]]] = {}
    for target, edges in index.call_edges().items():
        found: list[tuple[int, int, list[Any]]] = []
        for caller, callee, how in edges:
            module, qual, rec = index.funcs[caller]
            shown_file = index.by_module.get(module, module).replace("\\", "/").rsplit("/", 1)[-1]
            for n, (name, line, via, pos, kws, star, *more) in enumerate(rec.get("args", ())):
                if name == callee:
                    via = 1 if how == "class" else via
                    off = index.off_scope(caller) or ""
                    record = [f"`{qual}` ({shown_file}:{line})", line, via, pos, kws, star, off]
                    if more:
                        record.append({})
                        forwarded.append((caller, record, more[0]))
                    found.append((order[caller], n, record))
        if found:
            found.sort(key=lambda f: f[:2])  # callers in index order, each one's calls in its order
            table[target] = [record for _, _, record in found]
            callers_of[target] = table[target]
    raw = {id(record): (caller, forwards) for caller, record, forwards in forwarded}
    memo: dict[tuple[str, str], str] = {}
    for _caller, record, forwards in forwarded:
        for key in forwards:
            source = _forward_source(index, raw, record, key)
            if source is not None:
                record[7][key] = _upstream_on(index, callers_of, raw, source[0], source[1], memo, 0)
    index._call_table = table
    return table


def _forward_source(index: Any, raw: dict[int, tuple[str, dict[str, list[str]]]], record: list[Any],
                    key: str) -> tuple[str, str] | None:
    """(the function whose opt-in flag a call record passes on as argument ``key``, the flag), or None."""
    hit = raw.get(id(record))
    if hit is None or key not in hit[1]:
        return None
    caller, forwards = hit
    owner, param = forwards[key]
    return (f"{index.funcs[caller][0]}.{owner}" if owner else caller), param


_FORWARD_LEVELS = 8  # callers of callers followed up for a flag passed on as is


def _upstream_on(index: Any, callers_of: dict[str, list[list[Any]]],
                 raw: dict[int, tuple[str, dict[str, list[str]]]], dotted: str, param: str,
                 memo: dict[tuple[str, str], str], depth: int) -> str:
    """The caller (as "`f` (file.py:12)") that turns on the opt-in flag ``param`` of function ``dotted``, through
    any flags passed on as is; "" when every caller that may run under capture leaves it off (or none is
    known: the default is what runs)."""
    key = (dotted, param)
    hit = memo.get(key)
    if hit is not None:
        return hit
    memo[key] = ""  # a cycle turns nothing on by itself
    rec = index.funcs[dotted][2] if dotted in index.funcs else {}
    flags = rec.get("flags")
    out = ""
    for record in callers_of.get(dotted, ()):
        if record[6]:
            continue  # a caller that never runs under capture
        if flags is None:  # not a flag the summary knows: whatever is passed counts
            out = record[0]
            break
        code, slot = _slot(record, flags[0], bool(flags[1]), bool(rec.get("method")), param)
        if code in _OFF_CODES:
            continue
        passed_on = _forward_source(index, raw, record, slot)
        if passed_on is None or depth >= _FORWARD_LEVELS:
            out = record[0]
            break
        up = _upstream_on(index, callers_of, raw, passed_on[0], passed_on[1], memo, depth + 1)
        if up:
            out = up
            break
    memo[key] = out
    return out


def cold_table(index: Any) -> dict[str, list[str]]:
    """Reachable functions (dotted) reached only through calls made on a cache miss or a prefill, non-CUDA
    platform or timing branch -> [why, kind], e.g. "runs only through `_get_d`'s call on a miss of `D` (line
    9), once per key (...)". A function whose every resolved caller calls it from such a branch, or is such a
    function, or is prefill code by its name, is one through any number of calls (``cold_reach``)."""
    memo = getattr(index, "_cold_table", None)
    if memo is not None:
        return memo
    saved, index._missing = index._missing, set()
    warm: set[str] = set()
    # a kernel wrapper is a root by what it launches, but when every call of it the tree makes is on a cold
    # path (a prefill branch), it is reached only through that path: it does not start warm
    cold_only = cold_reach.cold_only(index)
    stack = [root for root in index.roots if root not in cold_only]
    while stack:
        dotted = stack.pop()
        if dotted in warm or dotted not in index.funcs:
            continue
        if dotted not in index.roots and cold_reach.prefill_named(index, dotted) is not None:
            continue  # prefill code by its name: what it calls is not warm through it
        warm.add(dotted)
        stack.extend(index.children.get(dotted, ()))
        rec = index.funcs[dotted][2]
        cold = {c for c, _why, _kind in rec.get("cold", ())}
        for callee in rec.get("calls", ()):
            if callee in cold:
                continue
            target = index._call_target(callee)  # the resolver the reachability walk uses
            if target is not None:
                stack.append(target)
    out: dict[str, list[str]] = {}
    for dotted in index.parent:
        if dotted in warm:
            continue
        origin = cold_only.get(dotted)
        if origin is not None and not origin.via and not origin.named and dotted in index.roots:
            out[dotted] = [f"runs only through `{index.funcs[origin.caller][1]}`'s call {origin.why}", origin.kind]
            continue
        chain = index.chain(dotted)
        for caller, callee in zip(chain, chain[1:]):
            rec = index.funcs[caller][2]
            edge = next(([w, k] for c, w, k in rec.get("cold", ()) if index._call_target(c) == callee), None)
            if edge is not None:
                out[dotted] = [f"runs only through `{index.funcs[caller][1]}`'s call {edge[0]}", edge[1]]
                break
        else:
            if origin is not None and dotted not in index.why_uncaptured:  # one walked as uncaptured says why
                out[dotted] = [cold_reach.describe(index, dotted, origin), origin.kind]
    index._missing = saved
    index._cold_table = out
    return out


# root reasons of kernel wrappers (a root by what it launches, not by how it is registered or captured)
_LAUNCH_REASONS = cold_reach.LAUNCH_REASONS
