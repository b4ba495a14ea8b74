"""Host values that flow into nested functions.

A Triton grid callback or a helper defined inside a launcher sees the launcher's
names: ``seqlens = lens.to("cpu")`` in the launcher makes ``seqlens`` a host
value inside ``def grid(META): ... seqlens.sum().item()`` too. ``ModuleFacts``
builds each function's ``FunctionFacts`` once per module and hands a nested
function what its enclosing functions know:

- a *free* name (read in the nested function, bound in an enclosing one) keeps
  the host kinds it has there (``hostval``, ``hosttensor``, ``pinned``,
  ``hostseq``, ``shape``);
- a *parameter* of a nested function is a host value when every call of the
  function inside its enclosing function (and that function's other nested
  functions) passes a host value for it: ``num_program(META, args)`` where
  ``args`` is a CPU tensor.

Only host-ness flows: a value synchronized in the enclosing function is reported
there, once, not again in every closure that reads it.

Across the project, a parameter annotated ``torch.Tensor`` to which every
in-tree caller passes a Python number is a host value too (the callers
contradict the annotation; see ``graphcheck.lint.callers``).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from graphcheck.config import DEFAULT_DEBUG_FLAGS
from graphcheck.lint.callers import all_pass_numbers
from graphcheck.lint.scope import FuncInfo, ModuleIndex, all_param_names, local_names
from graphcheck.lint.values import DEFAULT_HOST_NAMES, FunctionFacts, names_tensor_type

HOST_KINDS = frozenset({"hostval", "hosttensor", "pinned", "hostseq", "shape"})


class ModuleFacts:
    """``FunctionFacts`` of the functions of one module, built on demand and memoized."""

    def __init__(self, index: ModuleIndex, host_names: Sequence[str] = DEFAULT_HOST_NAMES,
                 guards: Sequence[str] = (), debug_flags: Sequence[str] = DEFAULT_DEBUG_FLAGS,
                 callers: dict[str, list[Any]] | None = None) -> None:
        """``callers``: the in-tree call records of the module's functions (``graphcheck.lint.callers``)."""
        self.index = index
        self.callers = callers or {}
        self.host_names, self.guards, self.debug_flags = host_names, guards, debug_flags
        self._memo: dict[int, FunctionFacts] = {}
        self._busy: set[int] = set()

    def of(self, info: FuncInfo) -> FunctionFacts:
        key = id(info)
        facts = self._memo.get(key)
        if facts is None:
            self._busy.add(key)
            try:
                inherited = self._inherited(info) if info.parent is not None else {}
                for name in self._number_params(info):
                    inherited.setdefault(name, set()).add("hostval")
            finally:
                self._busy.discard(key)
            self._busy.add(key)
            try:
                facts = FunctionFacts(info, self.index, self.host_names, self.guards, self.debug_flags,
                                      inherited=inherited, facts_of=self._other)
            finally:
                self._busy.discard(key)
            self._memo[key] = facts
        return facts

    def _ready(self, info: FuncInfo) -> FunctionFacts | None:
        """The facts of ``info``, or None while they are being built (a call cycle)."""
        return None if id(info) in self._busy else self.of(info)

    def _other(self, info: FuncInfo) -> FunctionFacts | None:
        """The facts one function's value model asks of another (a helper it calls, the forward of its
        backward), or None while they are being built. A nested function not built yet gets facts without
        what it would inherit, not memoized: its enclosing functions may be the ones being built."""
        if id(info) in self._busy:
            return None
        if info.parent is None or id(info) in self._memo:
            return self.of(info)
        self._busy.add(id(info))
        try:
            return FunctionFacts(info, self.index, self.host_names, self.guards, self.debug_flags,
                                 facts_of=self._other)
        finally:
            self._busy.discard(id(info))

    # -- what a nested function inherits -------------------------------------------

    def _inherited(self, info: FuncInfo) -> dict[str, set[str]]:
        params = all_param_names(info.node)
        bound = local_names(info)
        out: dict[str, set[str]] = {}
        free = {n.id for n in info.group("name") if isinstance(n.ctx, ast.Load)} - bound
        for name in sorted(free):
            kinds = self._outer_kinds(info.parent, name)
            if kinds:
                out[name] = kinds
        for name in self._host_params(info, params):
            out.setdefault(name, set()).add("hostval")
        return out

    def _outer_kinds(self, scope: FuncInfo | None, name: str) -> set[str]:
        while scope is not None:
            if name in local_names(scope):
                facts = self._ready(scope)
                return set(facts.kinds.get(name, ())) & HOST_KINDS if facts is not None else set()
            scope = scope.parent
        return set()

    def _host_params(self, info: FuncInfo, params: set[str]) -> list[str]:
        """Parameters given a host value at every call of ``info`` inside its enclosing function."""
        parent = info.parent
        if parent is None or info.node.args.vararg is not None:
            return []
        positional = [a.arg for a in [*info.node.args.posonlyargs, *info.node.args.args]]
        verdict: dict[str, bool] = {}
        for caller in [parent, *_descendants(parent)]:
            if caller is info:
                continue
            calls = [n for n in caller.group("call") if isinstance(n.func, ast.Name) and n.func.id == info.name]
            if not calls:
                continue
            facts = self._ready(caller)
            if facts is None:
                return []
            for call in calls:
                if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                    return []
                given: dict[str, ast.expr] = dict(zip(positional, call.args))
                given.update((k.arg, k.value) for k in call.keywords if k.arg)
                for name in params:
                    arg = given.get(name)
                    verdict[name] = verdict.get(name, True) and arg is not None and facts.is_host_value(arg)
        return [name for name, host in verdict.items() if host]

    def _number_params(self, info: FuncInfo) -> list[str]:
        """Parameters annotated as a tensor to which every in-tree caller passes a Python number: the
        callers contradict the annotation (``max_pages: torch.Tensor`` given ``self.max_num_pages``)."""
        if info.qualname not in self.callers:
            return []
        a = info.node.args
        return [arg.arg for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]
                if arg.annotation is not None and names_tensor_type(ast.unparse(arg.annotation))
                and all_pass_numbers(info, arg.arg, self.callers)]


def _descendants(info: FuncInfo) -> list[FuncInfo]:
    out, stack = [], list(info.children)
    while stack:
        child = stack.pop()
        out.append(child)
        stack.extend(child.children)
    return out
