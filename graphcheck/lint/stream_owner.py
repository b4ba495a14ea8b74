"""Whose stream a ``with torch.cuda.stream(s):`` enters, seen from the function that writes it (GC202).

A function that enters a stream it does not own, one its caller hands it (``stream``, ``stream_factory()``,
``streams[i]``, ``ctx.stream``) or one that belongs to another object (``comm.get_stream()``,
``handle.stream``), may leave ordering and joining it to that caller or object: an unjoined block there is
a warning that says so. The function owns the stream when it creates it (``torch.cuda.Stream()``), when it
is ``self``'s (``self.side``) or a module's (a module-level name, ``mod.stream``), when the function forks
it itself from the current stream (``s.wait_stream(...)``/``s.wait_event(...)`` before the block), and
when nothing here tells whose it is: those stay errors. Local names are followed to their assignments in
the function (every assignment must agree; a binding to ``None`` or ``torch.cuda.current_stream()`` forks
nothing and is skipped)."""

from __future__ import annotations

import ast
from collections.abc import Callable

from graphcheck.lint.scope import FuncInfo

_DEPTH = 12


def borrowed_stream(info: FuncInfo, arg: ast.expr, line: int, resolve: Callable[[ast.AST], str | None],
                    text: Callable[[ast.AST], str]) -> tuple[str, str] | None:
    """(why, owner) when the stream ``arg`` that the function ``info`` enters on ``line`` is borrowed:
    owner ``"caller"`` or ``"another object"``, why a clause such as "the stream comes from the caller
    (`stream` is a parameter)". None when the function owns it (see the module docstring)."""
    owner = _Owner(info, resolve, text)
    found = owner.of(arg)
    if found is None:
        return None
    for call in info.group("call"):
        func = call.func
        if (isinstance(func, ast.Attribute) and func.attr in ("wait_stream", "wait_event") and call.lineno < line
                and text(func.value) in owner.texts):
            return None  # the function forks the stream itself: joining it is its job too
    return found


class _Owner:
    def __init__(self, info: FuncInfo, resolve: Callable[[ast.AST], str | None],
                 text: Callable[[ast.AST], str]) -> None:
        self.info = info
        self.resolve = resolve
        self.text = text
        fn = info.node
        a = fn.args
        positional = [p.arg for p in [*a.posonlyargs, *a.args]]
        static = any(getattr(d, "id", getattr(d, "attr", "")) == "staticmethod" for d in fn.decorator_list)
        self.this = positional[0] if info.is_method and not static and positional else None
        params = {*positional, *(p.arg for p in a.kwonlyargs)}
        params.update(p.arg for p in (a.vararg, a.kwarg) if p is not None)
        params.discard(self.this or "")
        self.params = params
        self.texts: set[str] = set()  # the stream's spellings along the way: `s`, `self.side`, `stream`
        self._bindings: dict[str, list[ast.expr | None]] | None = None
        self._visiting: set[str] = set()
        self._depth = 0

    # -- bindings ------------------------------------------------------------

    def bindings(self, name: str) -> list[ast.expr | None]:
        """The values the function binds ``name`` to (an unpacked or iterated value stands for its
        elements, whose owner is its owner); None for a value nothing tells (``s += ...``)."""
        if self._bindings is None:
            table: dict[str, list[ast.expr | None]] = {}
            for node in self.info.group("bind"):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        self._bind(table, target, node.value)
                elif isinstance(node, ast.AnnAssign):
                    if node.value is not None:
                        self._bind(table, node.target, node.value)
                elif isinstance(node, ast.AugAssign):
                    self._bind(table, node.target, None)
                elif isinstance(node, ast.NamedExpr):
                    self._bind(table, node.target, node.value)
                elif isinstance(node, (ast.For, ast.AsyncFor)):
                    self._bind(table, node.target, node.iter)
            self._bindings = table
        return self._bindings.get(name, [])

    def _bind(self, table: dict[str, list[ast.expr | None]], target: ast.expr, value: ast.expr | None) -> None:
        if isinstance(target, ast.Name):
            table.setdefault(target.id, []).append(value)
        elif isinstance(target, ast.Starred):
            self._bind(table, target.value, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            literal = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) and not any(
                isinstance(e, ast.Starred) for e in [*value.elts, *target.elts])
            for i, element in enumerate(target.elts):
                self._bind(table, element, value.elts[i] if literal else value)  # type: ignore[union-attr]

    # -- owners --------------------------------------------------------------

    def _current(self, node: ast.expr | None) -> bool:
        """``torch.cuda.current_stream()`` or None: a binding that forks nothing (``s = None`` first)."""
        if isinstance(node, ast.Constant):
            return node.value is None
        return isinstance(node, ast.Call) and (self.resolve(node.func) or "").endswith("current_stream")

    def of(self, expr: ast.expr) -> tuple[str, str] | None:
        """(why, owner) when the stream ``expr`` is borrowed, else None."""
        if self._depth >= _DEPTH:
            return None
        self._depth += 1
        try:
            return self._of(expr)
        finally:
            self._depth -= 1

    def _of(self, expr: ast.expr) -> tuple[str, str] | None:
        self.texts.add(self.text(expr))
        if isinstance(expr, ast.Name):
            return self._name(expr.id)
        if isinstance(expr, ast.Call):
            func = expr.func
            if self.resolve(func) is not None:
                return None  # a module's function or a constructor: torch.cuda.Stream(), streams.side()
            if isinstance(func, ast.Name):
                if func.id in self.params:
                    return (f"the stream comes from the caller (`{self.text(expr)}` calls the parameter "
                            f"`{func.id}`)", "caller")
                return None
            if isinstance(func, ast.Attribute):
                return self._from_object(func.value, f"`{self.text(expr)}` returns it")
            return None
        if isinstance(expr, ast.Attribute):
            if self.resolve(expr) is not None:
                return None  # a module's stream
            return self._from_object(expr.value, f"`{self.text(expr)}`")
        if isinstance(expr, ast.Subscript):
            return self.of(expr.value)  # an element: its container's owner
        if isinstance(expr, ast.IfExp):
            return self._all([expr.body, expr.orelse])
        if isinstance(expr, ast.BoolOp):
            return self._all(expr.values)
        return None

    def _all(self, values: list[ast.expr]) -> tuple[str, str] | None:
        """Borrowed when every value that is not the current stream is borrowed."""
        found = [self.of(v) for v in values if not self._current(v)]
        return found[0] if found and all(f is not None for f in found) else None

    def _name(self, name: str) -> tuple[str, str] | None:
        if name == self.this:
            return None
        values = self.bindings(name)
        param = name in self.params
        if name in self._visiting:  # `stream = stream or torch.cuda.current_stream()`
            return (f"the stream comes from the caller (`{name}` is a parameter)", "caller") if param else None
        if not param and not values:
            return None  # a module-level (or enclosing function's) stream
        if any(v is None for v in values):
            return None
        self._visiting.add(name)
        try:
            found = [self.of(v) for v in values if v is not None and not self._current(v)]
        finally:
            self._visiting.discard(name)
        if any(f is None for f in found):
            return None  # also bound to a stream the function owns
        if param:
            return f"the stream comes from the caller (`{name}` is a parameter)", "caller"
        return found[0] if found else None

    def _from_object(self, obj: ast.expr, what: str) -> tuple[str, str] | None:
        """The stream ``what`` (an attribute of ``obj`` or what a method of ``obj`` returns) is borrowed when
        ``obj`` is the caller's or another object; ``self``'s and a module's are owned."""
        whose = self._whose(obj)
        if whose is None or whose[0] == "self":
            return None
        if whose[0] == "caller":
            return f"the stream comes from the caller ({what}, from the parameter `{whose[1]}`)", "caller"
        return f"the stream belongs to another object ({what})", "another object"

    def _whose(self, node: ast.expr) -> tuple[str, str] | None:
        """("self", ""), ("caller", parameter) or ("other", "") for the object ``node``; None for a module's
        object or when nothing tells."""
        if self._depth >= _DEPTH:
            return None
        while True:
            if isinstance(node, (ast.Attribute, ast.Subscript)):
                node = node.value
            elif isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute) and self.resolve(func) is None:
                    node = func.value  # what a method returns: its receiver's
                elif isinstance(func, ast.Name) and func.id in self.params:
                    return "caller", func.id
                else:
                    return "other", ""  # an object a function or constructor returns
            else:
                break
        if not isinstance(node, ast.Name):
            return None
        name = node.id
        if name == self.this:
            return "self", ""
        if name in self.params:
            return "caller", name
        if self.resolve(node) is not None or name in self._visiting:
            return None
        values = self.bindings(name)
        if not values or any(v is None for v in values):
            return None  # a module-level object, or nothing tells
        self._visiting.add(name)
        self._depth += 1
        try:
            kinds = {self._whose(v) for v in values if v is not None and not self._current(v)}
        finally:
            self._visiting.discard(name)
            self._depth -= 1
        return kinds.pop() if len(kinds) == 1 else None
