"""Branches a tensor's rank rules out: dead code a rank test guards.

``x.shape[1]`` / ``x.size(1)`` / ``x.stride(1)`` raise ``IndexError`` on a tensor of fewer than 2 dims, so after
such a read runs unconditionally, ``x`` has at least 2 dims, and a test that needs fewer (``x.dim() == 1``,
``x.ndim == 0``, ``x.dim() < 2``, ``len(x.shape) == 1``) is false there: its branch cannot run. The model walks a
function's statements in order and keeps, per local name, a lower bound on its rank:

- only reads that run whenever the statement runs count (not the right operand of ``and``/``or``, an arm of
  ``... if ... else ...``, a lambda or comprehension body, an ``assert``, which ``python -O`` drops);
- a name rebound is given the bound of what it is bound to (``x.unsqueeze(0)``: one more; ``x.squeeze(1)``: one
  fewer at most; ``x[:, None]``, ``x.reshape(a, b)``, ``x.contiguous()``...; anything else: no bound);
- the arms of an ``if`` join (the smaller bound); an arm that raises, returns, breaks or continues does not reach
  what follows, and an arm the bounds rule out is skipped;
- loops, ``with`` and ``try`` bodies are walked with the names they bind anywhere forgotten, and add nothing after
  them (a loop may not run, an exception may be caught or suppressed);
- a name an in-place rank change touches (``x.unsqueeze_(0)``, ``x.resize_(...)``, ``x.data = ...``) is
  forgotten. Callees are assumed not to resize their arguments in place.

Flags computed from such tests (``scalar = x.dim() == 1 and x.numel() == 1``) keep their known truth value until
rebound, so ``if scalar:`` is dead too. Findings in a dead branch become warnings that say why (never dropped).
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterable

DEAD_BRANCH = "unreachable branch"  # the evidence "path" of findings in a branch the ranks rule out

# methods that keep the rank of the tensor they are called on
_SAME_RANK = frozenset({
    "contiguous", "clone", "detach", "float", "half", "bfloat16", "double", "int", "long", "bool", "to", "cuda",
    "cpu", "abs", "neg", "exp", "sqrt", "rsqrt", "sigmoid", "tanh", "relu", "type_as", "masked_fill", "mul", "add",
    "sub", "div", "pow", "clamp", "transpose", "permute",
})
_SHAPE_CALLS = ("size", "stride")
# in-place methods that may change the rank of their tensor
_RANK_MUTATORS = frozenset({"unsqueeze_", "squeeze_", "resize_", "resize_as_", "set_", "as_strided_", "flatten_"})
_EXITS = (ast.Raise, ast.Return, ast.Break, ast.Continue)


@dataclasses.dataclass(frozen=True)
class Bound:
    rank: int  # the name has at least this many dims
    why: str  # "`x.shape[1]` is read on line 7"


@dataclasses.dataclass(frozen=True)
class Dead:
    start: int
    end: int
    why: str  # completes "...; it is in ...": "the body of `if x.dim() == 1:` (line 9), which cannot run: ..."


@dataclasses.dataclass
class _State:
    ranks: dict[str, Bound]
    flags: dict[str, tuple[bool, str]]  # name -> (its value, why)

    def copy(self) -> _State:
        return _State(dict(self.ranks), dict(self.flags))

    def forget(self, names: Iterable[str]) -> None:
        for name in names:
            self.ranks.pop(name, None)
            self.flags.pop(name, None)


def dead_branches(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Dead]:
    """The line ranges of ``fn``'s own code that a rank read before them rules out."""
    walker = _Walker()
    walker.block(fn.body, _State({}, {}))
    return walker.dead


def _last_line(block: list[ast.stmt]) -> int:
    last = block[-1]
    return getattr(last, "end_lineno", None) or last.lineno


def _stored_names(nodes: Iterable[ast.AST]) -> set[str]:
    out: set[str] = set()
    for top in nodes:
        for node in _own_walk(top):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                out.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)) and isinstance(
                    node.value, ast.Name):
                out.add(node.value.id)  # `x.data = y`
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                    node.func.attr in _RANK_MUTATORS) and isinstance(node.func.value, ast.Name):
                out.add(node.func.value.id)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                out.update(node.names)
    return out


def _own_walk(node: ast.AST) -> Iterable[ast.AST]:
    """``ast.walk`` that does not enter nested functions, classes or lambdas (their names are their own)."""
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        for child in ast.iter_child_nodes(cur):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                stack.append(child)


def _unconditional(expr: ast.AST) -> Iterable[ast.AST]:
    """The sub-expressions of ``expr`` evaluated whenever ``expr`` is."""
    stack = [expr]
    while stack:
        cur = stack.pop()
        yield cur
        if isinstance(cur, ast.BoolOp):
            stack.append(cur.values[0])
        elif isinstance(cur, ast.IfExp):
            stack.append(cur.test)
        elif isinstance(cur, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            if not isinstance(cur, ast.Lambda):
                stack.append(cur.generators[0].iter)
        else:
            stack.extend(ast.iter_child_nodes(cur))


def _int(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand)
        return -inner if inner is not None else None
    return None


def _needed(index: int) -> int:
    """The fewest dims for which dimension ``index`` exists."""
    return index + 1 if index >= 0 else -index


def _dim_read(node: ast.AST) -> tuple[str, int, str] | None:
    """``x.shape[k]`` / ``x.size(k)`` / ``x.stride(k)`` / ``x.size(dim=k)``: (x, dims it needs, text)."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape" \
            and isinstance(node.value.value, ast.Name):
        k = _int(node.slice)
        if k is not None:
            return node.value.value.id, _needed(k), ast.unparse(node)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SHAPE_CALLS \
            and isinstance(node.func.value, ast.Name):
        arg = node.args[0] if len(node.args) == 1 and not node.keywords else next(
            (kw.value for kw in node.keywords if kw.arg == "dim"), None) if not node.args else None
        k = _int(arg) if arg is not None else None
        if k is not None:
            return node.func.value.id, _needed(k), ast.unparse(node)
    return None


class _Walker:
    def __init__(self) -> None:
        self.dead: list[Dead] = []

    # -- statements ------------------------------------------------------------------------------------------

    def block(self, body: list[ast.stmt], state: _State) -> _State | None:
        """Walk ``body`` from ``state``; the state after it, or None when it never falls through."""
        cur: _State | None = state
        for stmt in body:
            if cur is None:
                return None
            cur = self.stmt(stmt, cur)
        return cur

    def stmt(self, stmt: ast.stmt, state: _State) -> _State | None:
        if isinstance(stmt, ast.If):
            return self.if_(stmt, state)
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)) or type(
                stmt).__name__ in ("TryStar", "Match"):
            return self.opaque(stmt, state)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            state.forget([stmt.name])
            return state
        if isinstance(stmt, ast.Assert):
            state.forget(_stored_names([stmt]))
            return state
        self.reads(stmt, state)
        if isinstance(stmt, ast.Assign):
            stored = _stored_names([stmt])
            bound = self.rank_of(stmt.value, state)
            flag = self.truth(stmt.value, state)
            state.forget(stored)
            self.unpacked(stmt, state)
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    if bound is not None:
                        state.ranks[target.id] = Bound(bound.rank, bound.why)
                    if flag is not None:
                        state.flags[target.id] = (flag[0], f"`{target.id}` (line {stmt.lineno}) is always "
                                                           f"{flag[0]}: {flag[1]}")
            return state
        state.forget(_stored_names([stmt]))
        if isinstance(stmt, _EXITS):
            return None
        return state

    def unpacked(self, stmt: ast.Assign, state: _State) -> None:
        """``b, l, c = x.shape``: x has exactly that many dims (else unpacking raises)."""
        x = self._shape_source(stmt)
        if x is None:
            return
        target = stmt.targets[0]
        assert isinstance(target, (ast.Tuple, ast.List))
        n = len(target.elts)
        old = state.ranks.get(x)
        if old is None or old.rank < n:
            state.ranks[x] = Bound(n, f"`{ast.unparse(stmt)}` on line {stmt.lineno} unpacks {n} sizes")

    @staticmethod
    def _shape_source(stmt: ast.Assign) -> str | None:
        value = stmt.value
        if len(stmt.targets) == 1 and isinstance(stmt.targets[0], (ast.Tuple, ast.List)) and not any(
                isinstance(e, ast.Starred) for e in stmt.targets[0].elts) and isinstance(value, ast.Attribute) \
                and value.attr == "shape" and isinstance(value.value, ast.Name) and not any(
                isinstance(e, ast.Name) and e.id == value.value.id for e in stmt.targets[0].elts):
            return value.value.id
        return None

    def reads(self, node: ast.AST, state: _State) -> None:
        for sub in _unconditional(node):
            read = _dim_read(sub)
            if read is None:
                continue
            name, rank, text = read
            old = state.ranks.get(name)
            if old is None or old.rank < rank:
                state.ranks[name] = Bound(rank, f"`{text}` is read on line {getattr(sub, 'lineno', 0)}")

    def if_(self, node: ast.If, state: _State) -> _State | None:
        self.reads(node.test, state)
        truth = self.truth(node.test, state)
        state.forget(_stored_names([node.test]))  # `if (n := ...)`
        arms: list[_State | None] = []
        for taken, block in ((True, node.body), (False, node.orelse)):
            if truth is not None and truth[0] != taken:
                if block:
                    where = "the body" if taken else "the `else`"
                    self.dead.append(Dead(block[0].lineno, _last_line(block),
                                          f"{where} of `if {ast.unparse(node.test)}:` (line {node.lineno}), "
                                          f"which cannot run: {truth[1]}"))
                continue
            arms.append(self.block(block, state.copy()) if block else state.copy())
        live = [a for a in arms if a is not None]
        if not live:
            return None
        return _join(live)

    def opaque(self, stmt: ast.stmt, state: _State) -> _State:
        """A loop, ``with``, ``try`` or ``match``: its blocks are walked with every name it binds forgotten;
        after it, those names stay forgotten and nothing it read counts."""
        stored = _stored_names([stmt])
        for field in ("iter", "test"):
            expr = getattr(stmt, field, None)
            if isinstance(expr, ast.AST) and not isinstance(stmt, ast.While):
                self.reads(expr, state)  # a for loop's iterable is evaluated once, before the loop
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self.reads(item.context_expr, state)
        state.forget(stored)
        blocks: list[list[ast.stmt]] = []
        for field in ("body", "orelse", "finalbody"):
            blocks.append(getattr(stmt, field, None) or [])
        for handler in getattr(stmt, "handlers", None) or []:
            blocks.append(handler.body)
        for case in getattr(stmt, "cases", None) or []:
            blocks.append(case.body)
        for block in blocks:
            if block:
                self.block(block, state.copy())
        return state

    # -- expressions -------------------------------------------------------------------------------------------

    def rank_of(self, expr: ast.AST, state: _State) -> Bound | None:
        """A lower bound on the dims of the value of ``expr``."""
        if isinstance(expr, ast.Name):
            return state.ranks.get(expr.id)
        if isinstance(expr, ast.Subscript):
            base = self.rank_of(expr.value, state)
            if base is None:
                return None
            parts = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]
            ints = slices = nones = 0
            for part in parts:
                if isinstance(part, ast.Slice):
                    slices += 1
                elif isinstance(part, ast.Constant) and part.value is None:
                    nones += 1
                elif isinstance(part, ast.Constant) and part.value is Ellipsis:
                    continue
                elif _int(part) is not None:
                    ints += 1
                else:
                    return None  # a tensor or list index: advanced indexing
            rank = max(base.rank, slices + ints) - ints + nones
            return Bound(rank, base.why) if rank > 0 else None
        if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)):
            return None
        method, args = expr.func.attr, expr.args
        if method in ("reshape", "view", "expand") and args and not expr.keywords and not any(
                isinstance(a, ast.Starred) for a in args):
            if len(args) == 1 and _int(args[0]) is None and not isinstance(args[0], (ast.Tuple, ast.List)):
                return None  # `x.view(shape)` / `x.view(torch.float16)`: unknown
            n = len(args[0].elts) if isinstance(args[0], (ast.Tuple, ast.List)) and len(args) == 1 else len(args)
            if any(isinstance(e, ast.Starred) for e in getattr(args[0], "elts", ())):
                return None
            return Bound(n, f"`{ast.unparse(expr)}` on line {expr.lineno} has {n} dims") if n > 0 else None
        base = self.rank_of(expr.func.value, state)
        if base is None:
            return None
        if method == "unsqueeze" and len(args) == 1:
            return Bound(base.rank + 1, base.why)
        if method == "squeeze" and len(args) == 1 and _int(args[0]) is not None:
            return Bound(base.rank - 1, base.why) if base.rank > 1 else None
        if method in _SAME_RANK:
            return base
        return None

    def dims(self, expr: ast.AST, state: _State) -> tuple[Bound, str] | None:
        """``x.dim()`` / ``x.ndim`` / ``x.ndimension()`` / ``len(x.shape)`` / ``len(x.size())``: (x's bound, x)."""
        name: ast.AST | None = None
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in (
                "dim", "ndimension") and not expr.args:
            name = expr.func.value
        elif isinstance(expr, ast.Attribute) and expr.attr == "ndim":
            name = expr.value
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "len" and len(
                expr.args) == 1:
            inner = expr.args[0]
            if isinstance(inner, ast.Attribute) and inner.attr == "shape":
                name = inner.value
            elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "size" \
                    and not inner.args:
                name = inner.func.value
        if isinstance(name, ast.Name) and name.id in state.ranks:
            return state.ranks[name.id], name.id
        return None

    def truth(self, test: ast.AST, state: _State) -> tuple[bool, str] | None:
        """(value, why) when the bounds decide ``test``, else None."""
        if isinstance(test, ast.Name) and test.id in state.flags:
            return state.flags[test.id]
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self.truth(test.operand, state)
            return (not inner[0], inner[1]) if inner is not None else None
        if isinstance(test, ast.BoolOp):
            short = isinstance(test.op, ast.Or)  # the value that decides an `or` (True) or an `and` (False)
            whys = []
            for value in test.values:
                got = self.truth(value, state)
                if got is not None and got[0] == short:
                    return got
                if got is None:
                    return None
                whys.append(got[1])
            return (not short, "; ".join(dict.fromkeys(whys)))
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, op, right = test.left, test.ops[0], test.comparators[0]
            if _int(left) is not None and _int(right) is None:
                left, right = right, left
                op = {ast.Lt: ast.Gt(), ast.Gt: ast.Lt(), ast.LtE: ast.GtE(), ast.GtE: ast.LtE()}.get(type(op), op)
            n = _int(right)
            dims = self.dims(left, state)
            if n is None or dims is None:
                return None
            bound, name = dims
            low = bound.rank
            why = f"`{name}` has at least {low} dims there ({bound.why})"
            if isinstance(op, ast.Eq) and n < low:
                return False, why
            if isinstance(op, ast.NotEq) and n < low:
                return True, why
            if isinstance(op, ast.Lt) and n <= low:
                return False, why
            if isinstance(op, ast.LtE) and n < low:
                return False, why
            if isinstance(op, ast.GtE) and n <= low:
                return True, why
            if isinstance(op, ast.Gt) and n < low:
                return True, why
        return None


def _join(states: list[_State]) -> _State:
    first, rest = states[0], states[1:]
    out = first.copy()
    for other in rest:
        for name in list(out.ranks):
            theirs = other.ranks.get(name)
            if theirs is None:
                del out.ranks[name]
            elif theirs.rank < out.ranks[name].rank:
                out.ranks[name] = theirs
        for name in list(out.flags):
            if other.flags.get(name, (None,))[0] != out.flags[name][0]:
                del out.flags[name]
    return out
