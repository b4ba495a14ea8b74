"""One module's facts for the project index, as plain JSON-able data.

``summarize(source, module, is_package)`` parses a file (never imports it) and
records what the project-wide pass needs, with every name written as the dotted
name it stands for *inside this file* (imports and relative imports applied,
module-level definitions prefixed with the module's own name):

- ``imports``: local name -> dotted target of each import; ``star``: modules
  imported with ``*``; ``alias``: module-level ``x = some.name`` bindings;
- ``funcs``: qualified name -> facts of each function: its line, decorators,
  the calls it makes, its ``name[...](...)`` subscript calls (kernel launches),
  its calls to registrar-like functions with the functions they are given, the
  calls made inside a capture region it opens (``with torch.cuda.graph(...)``,
  ``capture_begin()``..``capture_end()``, ``make_graphed_callables``), the
  parameters and ``tl.constexpr`` parameters (for kernels) and the reason the
  module alone already knows it is a root (``torch.library``, ``@capturable``);
  for calls into the tree, what each argument is (``args``, see
  ``graphcheck.lint.callers``) and the callees it calls only on a cache miss
  (``cold``, see ``graphcheck.lint.coldpaths``);
- ``classes``: class qualified name -> its bases as dotted names;
- ``regs``: registrar-like calls made at module or class level.

Names the file cannot resolve (locals, attributes of values) are left out: the
index never guesses what a call reaches.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from graphcheck.config import DEFAULT_PREFILL_FLAGS, DEFAULT_PREFILL_LENGTHS
from graphcheck.lint import capture_sites
from graphcheck.lint.callers import ArgCoder
from graphcheck.lint.coldpaths import Flag, flag_key, opt_in_flags
from graphcheck.lint.scope import NON_CUDA_DEVICE_KEYS, FuncInfo, ModuleIndex, generic_instantiation
from graphcheck.lint.values import class_flags

_FUNC_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
# libraries a tree never defines: calls into them get no argument record (it keeps summaries small)
_EXTERNAL = frozenset({"torch", "triton", "numpy", "math", "os", "sys", "logging", "functools", "itertools",
                       "typing", "collections", "re", "json", "time", "warnings", "dataclasses", "contextlib",
                       "operator", "inspect", "enum", "copy", "cutlass", "cuda", "einops", "random", "pathlib"})


def registrar_like(name: str, registrars: tuple[str, ...] = ()) -> bool:
    """Could a call of ``name`` (dotted) register a function it is given?"""
    last = name.rpartition(".")[2]
    low = last.lower()
    return ("regist" in low or "custom_op" in low or last in ("impl", "make_graphed_callables")
            or any(name == r or name.endswith("." + r) for r in registrars))


class _Summarizer:
    def __init__(self, tree: ast.Module, source: str, module: str, is_package: bool,
                 registrars: tuple[str, ...], prefill_flags: Sequence[str] = DEFAULT_PREFILL_FLAGS,
                 prefill_lengths: Sequence[str] = DEFAULT_PREFILL_LENGTHS) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.registrars = registrars
        self.cuda_ops: set[str] = set()  # ops this module registers a CUDA kernel for
        self.index = ModuleIndex(tree, source, prefill_flags=prefill_flags, prefill_lengths=prefill_lengths)
        self.tree = tree
        self.imports: dict[str, str] = {}
        for local, target in self.index.aliases.names.items():
            absolute = self.absolute(target)
            if absolute:
                self.imports[local] = absolute
        self.toplevel: set[str] = set(self.index.module_funcs) | {
            s.name for s in tree.body if isinstance(s, ast.ClassDef)}
        self.star: list[str] = []
        self.alias: dict[str, str] = {}
        self.classes: dict[str, list[str]] = {}
        self.coder = ArgCoder(self.index.functions, self.index)
        self.may_capture = capture_sites.may_capture(source)  # no region to look for in most files
        self._attrs: dict[str, dict[str, str]] | None = None  # class -> {self attribute: class built}

    # -- names -------------------------------------------------------------

    def absolute(self, target: str) -> str | None:
        if not target.startswith("."):
            return target
        level = len(target) - len(target.lstrip("."))
        rest = target[level:]
        base = self.package.split(".") if self.package else []
        if level - 1 > len(base):
            return None
        base = base[: len(base) - (level - 1)]
        parts = [p for p in [*base, *rest.split(".")] if p]
        return ".".join(parts) or None

    def dotted(self, node: ast.AST, info: FuncInfo | None = None) -> str | None:
        """The dotted name a ``Name``/``Attribute`` chain stands for, or None."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.reverse()
        name = node.id
        if info is not None:
            if name in ("self", "cls") and info.owner_class is not None:
                cls = _class_qualname(info)
                if cls is not None and parts:
                    return ".".join([self.module, cls, *parts])
                return None
            scope: FuncInfo | None = info
            while scope is not None:
                for child in scope.children:
                    if child.name == name:
                        return ".".join([self.module, child.qualname, *parts])
                scope = scope.parent
        if name in self.imports:
            return ".".join([self.imports[name], *parts])
        if name in self.toplevel or name in self.alias:
            return ".".join([self.module, name, *parts])
        return None

    # -- module level ------------------------------------------------------

    def module_level(self) -> list[ast.stmt]:
        """Module- and class-level statements (not function bodies), iteratively."""
        out: list[ast.stmt] = []
        stack: list[tuple[ast.stmt, str | None]] = [(s, None) for s in reversed(self.tree.body)]
        while stack:
            stmt, cls = stack.pop()
            if isinstance(stmt, _FUNC_DEFS):
                continue
            if isinstance(stmt, ast.ClassDef):
                qual = f"{cls}.{stmt.name}" if cls else stmt.name
                self.classes[qual] = [d for d in (self.dotted(b) for b in stmt.bases) if d]
                stack.extend((s, qual) for s in reversed(stmt.body))
                continue
            out.append(stmt)
            if cls is None:
                if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                    target = self.absolute("." * (stmt.level or 0) + (stmt.module or ""))
                    if target:
                        self.star.append(target)
                elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    name = stmt.targets[0].id
                    if name not in self.imports and isinstance(stmt.value, (ast.Name, ast.Attribute)):
                        target = self.dotted(stmt.value)
                        if target and target != f"{self.module}.{name}":
                            self.alias[name] = target
            for field in ("body", "orelse", "finalbody"):
                block = getattr(stmt, field, None)
                if isinstance(block, list):
                    stack.extend((s, cls) for s in reversed(block) if isinstance(s, ast.stmt))
            for handler in getattr(stmt, "handlers", ()) or ():
                stack.extend((s, cls) for s in reversed(handler.body))
        return out

    # -- calls -------------------------------------------------------------

    def registration(self, call: ast.Call, callee: str, info: FuncInfo | None) -> list[Any] | None:
        if not registrar_like(callee, self.registrars):
            return None
        given: list[str] = []
        candidates: list[ast.AST] = list(call.args[:2])
        candidates += [kw.value for kw in call.keywords if kw.arg in ("op_func", "func", "fn", "impl", "callable")]
        for arg in candidates:
            elts = arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else [arg]
            for elt in elts:
                d = self.dotted(elt, info)
                if d:
                    given.append(d)
        if not given:
            return None
        return [callee, given, _host_only(call)]

    def _device_registration(self, call: ast.Call, skip: int = 1) -> str | None:
        """For a registration naming an op and device types (``register_kernel("ns::op", "cuda")``,
        ``torch.library.impl("ns::op", "default")``): note the op among the tree's CUDA kernels when "cuda" is one
        of them, and return the op when the only type is "default" (the kernel for devices without their own)."""
        op = call.args[0] if call.args else None
        if not (isinstance(op, ast.Constant) and isinstance(op.value, str)):
            return None
        keys = device_keys(call, skip)
        if "cuda" in keys:
            self.cuda_ops.add(op.value)
        return op.value if keys == ["default"] else None

    def _call_form_registration(self, node: ast.Call, funcs: dict[str, dict[str, Any]]) -> None:
        """``register_kernel("ns::op", "default")(fn)`` and ``lib.impl("op", fn, "CUDA")`` at module level."""
        inner = node.func
        if isinstance(inner, ast.Call):
            d = self.dotted(inner.func)
            if d and registrar_like(d, self.registrars):
                op = self._device_registration(inner)
                fn = node.args[0] if node.args else None
                if op and isinstance(fn, ast.Name) and fn.id in funcs:
                    funcs[fn.id]["default_op"] = op
            return
        if isinstance(inner, ast.Attribute) and inner.attr == "impl" and len(node.args) >= 2:
            op = self._device_registration(node, skip=2)
            fn = node.args[1]
            if op and isinstance(fn, ast.Name) and fn.id in funcs:
                funcs[fn.id]["default_op"] = op

    def function(self, info: FuncInfo) -> dict[str, Any]:
        calls: list[str] = []
        ext_ops: list[list[str]] = []
        launches: list[list[Any]] = []
        regs: list[list[Any]] = []
        capture: list[list[Any]] = []
        regions = (capture_sites.regions(info.node, lambda n: self.dotted(n, info))
                   if self.may_capture and info.may_open() else [])
        for region in regions:
            site = {"with": "with torch.cuda.graph(...)", "begin": "CUDAGraph.capture_begin()"}.get(
                region.kind, "make_graphed_callables")
            targets = [d for d in (self.dotted(c.func, info) for c in region.calls()
                                   if not isinstance(c.func, ast.Subscript)) if d]
            capture.append([f"{site} on line {region.line}", region.line, region.end, targets])
        args: list[list[Any]] = []
        cold_ranges = info.first_use()
        if self.index.mentions_prefill or self.index.mentions_roles:
            cold_ranges = [*cold_ranges, *info.branches(self.index.prefill, self.index.mentions_roles,
                                                        self.index.prefill_lengths)]
        cold: dict[str, tuple[str, str]] = {}  # callee -> (why, kind) of its first cold call
        warm: set[str] = set()
        # opt-in flags the function may pass on as is: its own, and the `self.x` ones its class's __init__ sets
        flags = opt_in_flags(info.node, info.own_nodes(), info.group("name"), info.group)
        if info.is_method and info.name != "__init__":
            flags = {**flags, **class_flags(self.index, info.owner_class)}
        replays: list[Any] | None = None
        for node in info.group("call"):
            func = node.func
            if replays is None and isinstance(func, ast.Attribute) and func.attr == "replay" and not node.args:
                if self.graph_receiver(func.value, info):
                    replays = [_short(ast.unparse(node)), node.lineno]
            if isinstance(func, ast.Subscript):
                base = self.dotted(func.value, info)
                generic = generic_instantiation(func)
                launches.append([base, _text_of(func.value), bool(self.index.is_launch(node)) and not generic,
                                 generic, node.lineno])
                continue
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
                loader = self.dotted(func.value.func, info)  # `get_module().run(...)`: an extension op
                if loader is not None:
                    ext_ops.append([loader, func.attr])
            callee = self.dotted(func, info)
            if callee is None:
                for base in self.super_init(node, info):  # `super().__init__(...)`: the base class's
                    calls.append(base)
                    args.append(self.call_record(node, base, info, flags))
                    where = next((c for c in cold_ranges if c.start <= node.lineno <= c.end), None)
                    if where is None:
                        warm.add(base)
                    else:
                        cold.setdefault(base, (where.why, where.kind))
                continue
            calls.append(callee)
            if callee.split(".", 1)[0] not in _EXTERNAL:  # maybe a call into the tree: what it passes, where
                args.append(self.call_record(node, callee, info, flags))
                where = next((c for c in cold_ranges if c.start <= node.lineno <= c.end), None)
                if where is None:
                    warm.add(callee)
                else:
                    cold.setdefault(callee, (where.why, where.kind))
            if callee.rpartition(".")[2] == "make_graphed_callables" and node.args:
                first = node.args[0]
                elts = first.elts if isinstance(first, (ast.Tuple, ast.List)) else [first]
                targets = [d for d in (self.dotted(e, info) for e in elts) if d]
                if targets:
                    capture.append([f"make_graphed_callables on line {node.lineno}", node.lineno, node.lineno,
                                    targets])
                continue
            reg = self.registration(node, callee, info)
            if reg is not None:
                regs.append(reg)
        decorators = []
        default_op = None
        for dec in info.node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            d = self.dotted(target, None)
            if d:
                decorators.append([d, isinstance(dec, ast.Call) and _host_only(dec)])
                if isinstance(dec, ast.Call) and registrar_like(d, self.registrars):
                    default_op = self._device_registration(dec) or default_op
        out: dict[str, Any] = {"line": info.node.lineno, "calls": sorted(set(calls))}
        if len(decorators) < len(info.node.decorator_list):
            out["unnamed_decos"] = True  # `@registry.add("x")` on a local object: it may register the function
        if decorators:
            out["decos"] = decorators
            out["params"] = _param_names(info.node)
            out["cx"] = sorted(self.index._constexpr_params(info.node) | _constexpr_annotated(info.node, self))
        if launches:
            out["launch"] = launches
        if args:
            out["args"] = args
        if any(c not in warm for c in cold):  # [callee, why, kind]: calls made only on a cold path
            out["cold"] = sorted([c, why, kind] for c, (why, kind) in cold.items() if c not in warm)
        if ext_ops:
            out["ext_ops"] = ext_ops
        if regs:
            out["regs"] = regs
        if capture:
            out["capture"] = capture
        if regions:
            out["opens_capture"] = True  # code written in the function itself is captured
        if replays is not None:
            out["replays"] = replays  # [text, line]: it replays a CUDA graph, so it runs around one
        if info.root_reason:
            out["root"] = info.root_reason
        if default_op:
            out["default_op"] = default_op
        if info.is_method:
            out["method"] = True
        own = [f for f in flags.values() if f.owner is None]
        if own:  # how callers fill its opt-in flags: [positional parameters, a staticmethod]
            a = info.node.args
            static = any(getattr(d, "id", getattr(d, "attr", "")) == "staticmethod" for d in info.node.decorator_list)
            out["flags"] = [[p.arg for p in [*a.posonlyargs, *a.args]], static]
        return out

    def graph_receiver(self, node: ast.expr, info: FuncInfo) -> bool:
        """Is ``node`` (the receiver of a ``.replay()`` call) a CUDA graph: a name in its text says graph
        (``graph``, ``self.cuda_graph``, ``runner.bwd_graph``, ``self.graphs[bs]``), or it is a local, a
        parameter or a ``self`` attribute bound to ``torch.cuda.CUDAGraph(...)`` (an annotation naming
        ``CUDAGraph`` counts). Any other object's ``replay()`` (``buffer.replay()``) is not one."""
        if _says_graph(node):
            return True
        if isinstance(node, ast.Name):
            return node.id in _graph_locals(info, self)
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
                and info.owner_class is not None):
            cls = _class_qualname(info)
            ctor = self.class_attrs().get(cls or "", {}).get(node.attr, "")
            return ctor.rpartition(".")[2] == "CUDAGraph"
        return False

    def class_attrs(self) -> dict[str, dict[str, str]]:
        if self._attrs is None:
            self._attrs = self.attributes()
        return self._attrs

    def attributes(self) -> dict[str, dict[str, str]]:
        """class qualname -> {attribute: dotted class} for ``self.attr = Cls(...)`` in ``__init__``, where
        every assignment of the attribute there builds the same resolvable class (``self.attr = A() if c
        else B()``, or a name assigned twice with different classes, is left out: never guessed)."""
        out: dict[str, dict[str, str]] = {}
        for info in self.index.functions:
            if info.name != "__init__" or not info.is_method:
                continue
            cls = info.qualname.rpartition(".")[0]
            seen: dict[str, str | None] = {}
            for node in info.own_nodes():
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    targets, value = [node.target], node.value
                else:
                    continue
                for target in targets:
                    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                            and target.value.id == "self"):
                        continue
                    ctor = self.dotted(value.func, info) if isinstance(value, ast.Call) else None
                    if target.attr in seen and seen[target.attr] != ctor:
                        ctor = None
                    seen[target.attr] = ctor
            known = {a: c for a, c in seen.items() if c}
            if known:
                out[cls] = known
        return out

    def super_init(self, node: ast.Call, info: FuncInfo) -> list[str]:
        """The ``__init__`` a ``super().__init__(...)`` call of a method runs (``super(C, self)`` for a class
        ``C`` of this module too), as ``base.__init__`` for each base class the class names: one for a single
        base, every one of several (which one runs follows the instances' MRO: each may). [] when the class
        or its bases cannot be named."""
        func = node.func
        if not (info.is_method and isinstance(func, ast.Attribute) and func.attr == "__init__"
                and isinstance(func.value, ast.Call) and isinstance(func.value.func, ast.Name)
                and func.value.func.id == "super" and "super" not in self.imports and "super" not in self.toplevel):
            return []
        given = func.value.args
        if not given:
            cls = _class_qualname(info)
        elif len(given) == 2 and isinstance(given[0], ast.Name) and given[0].id in self.classes:
            cls = given[0].id  # a top-level class of this module
        else:
            return []
        return [f"{base}.__init__" for base in self.classes.get(cls or "", ())
                if base.split(".", 1)[0] not in _EXTERNAL]

    def call_record(self, node: ast.Call, callee: str, info: FuncInfo,
                    flags: dict[str, Flag] | None = None) -> list[Any]:
        """[callee, line, called as an attribute, codes of positional args, codes of keywords, star], and when
        the call passes on an opt-in flag of the caller (``flags``) as is: {"#i" or keyword: [the function whose
        parameter it is ("" for the caller itself, else a qualname), the parameter]}."""
        fn, cls = info.node, info.owner_class
        star = any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords)
        given = [a for a in node.args if not isinstance(a, ast.Starred)]
        pos = "".join(self.coder.code(a, fn, cls) for a in given)
        kws = {k.arg: self.coder.code(k.value, fn, cls) for k in node.keywords if k.arg}
        bound = isinstance(node.func, ast.Attribute) and not _unbound_call(node, info)
        record = [callee, node.lineno, int(bound), pos, kws, int(star)]
        if flags:
            passed = [(f"#{i}", a) for i, a in enumerate(given)] + [(k.arg, k.value) for k in node.keywords if k.arg]
            forwards = {}
            for key, value in passed:
                flag = flags.get(flag_key(value) or "")
                if flag is not None:
                    forwards[key] = [flag.owner or "", flag.param]
            if forwards:
                record.append(forwards)
        return record

    def run(self) -> dict[str, Any]:
        statements = self.module_level()
        funcs = {info.qualname: self.function(info) for info in self.index.functions}
        attrs = self.class_attrs()
        main_calls: set[str] = set()
        for block in _main_blocks(self.tree):  # script code under `if __name__ == "__main__":`
            start, end = block.body[0].lineno, block.body[-1].end_lineno or block.body[-1].lineno
            for rec in funcs.values():
                if start <= rec["line"] <= end:
                    rec["main_block"] = True
            for node in ast.walk(block):
                if isinstance(node, ast.Call):
                    callee = self.dotted(node.func)
                    if callee:
                        main_calls.add(callee)
        for name, reason in self.index._registered:
            if name in funcs and "root" not in funcs[name]:
                funcs[name]["root"] = reason
        regs = []
        for stmt in statements:
            for node in _walk_expr(stmt):
                if isinstance(node, ast.Call):
                    callee = self.dotted(node.func)
                    if callee:
                        reg = self.registration(node, callee, None)
                        if reg is not None:
                            regs.append(reg)
                    self._call_form_registration(node, funcs)
        out: dict[str, Any] = {"imports": self.imports, "funcs": funcs}
        if self.cuda_ops:
            out["cuda_ops"] = sorted(self.cuda_ops)
        if self.star:
            out["star"] = self.star
        if self.alias:
            out["alias"] = self.alias
        if self.classes:
            out["classes"] = self.classes
        if attrs:
            out["attrs"] = attrs
        if regs:
            out["regs"] = regs
        if main_calls:
            out["main_calls"] = sorted(main_calls)
        if self.index.mentions_triton:
            out["triton"] = True
        if "graphcheck: expect" in self.index.source:
            out["expect"] = True
        return out


def _main_blocks(tree: ast.Module) -> list[ast.If]:
    """Top-level ``if __name__ == "__main__":`` statements (script code, never captured)."""
    out = []
    for stmt in tree.body:
        test = stmt.test if isinstance(stmt, ast.If) else None
        if (isinstance(stmt, ast.If) and isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
                and test.left.id == "__name__" and len(test.comparators) == 1
                and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "__main__"
                and isinstance(test.ops[0], ast.Eq)):
            out.append(stmt)
    return out


def _unbound_call(node: ast.Call, info: FuncInfo) -> bool:
    """``Base.__init__(self, ...)`` in a method: a method called through its class, the caller's own ``self``
    passed first (it fills the first parameter, as for a plain function)."""
    a = info.node.args
    own = [*a.posonlyargs, *a.args]
    if not info.is_method or not own or not node.args:
        return False
    first, this = node.args[0], own[0].arg
    func = node.func
    return (isinstance(first, ast.Name) and first.id == this and isinstance(func, ast.Attribute)
            and not (isinstance(func.value, ast.Name) and func.value.id == this))


def _class_qualname(info: FuncInfo) -> str | None:
    scope: FuncInfo | None = info
    while scope is not None and not scope.is_method:
        scope = scope.parent
    if scope is None:
        return None
    qual = scope.qualname
    return qual.rpartition(".")[0] or None


def _graph_locals(info: FuncInfo, summ: _Summarizer) -> set[str]:
    """Names the function binds to a ``CUDAGraph(...)`` (``g = torch.cuda.CUDAGraph()``) or annotates as one."""
    out: set[str] = set()
    args = info.node.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if arg.annotation is not None and "CUDAGraph" in ast.unparse(arg.annotation):
            out.add(arg.arg)
    for node in info.group("bind"):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            if "CUDAGraph" in ast.unparse(node.annotation):
                targets, value = [node.target], None
            else:
                targets, value = [node.target], node.value
        else:
            continue
        ctor = summ.dotted(value.func, info) if isinstance(value, ast.Call) else None
        if (value is None or (ctor is not None and ctor.rpartition(".")[2] == "CUDAGraph")
                or (not isinstance(value, ast.Call) and _says_graph(value))):  # g = self.graphs[bs]
            out.update(t.id for t in targets if isinstance(t, ast.Name))
    return out


def _says_graph(node: ast.AST) -> bool:
    """Does a name in the chain of ``node`` mention graph (``graph``, ``runner.bwd_graph``,
    ``self.cuda_graphs[bs]``, ``self.get_graph(bs)``)?"""
    while True:
        if isinstance(node, ast.Attribute):
            if "graph" in node.attr.lower():
                return True
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return isinstance(node, ast.Name) and "graph" in node.id.lower()


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _walk_expr(stmt: ast.stmt):
    """Nodes of one module-level statement, not entering nested blocks or definitions."""
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.stmt, ast.Lambda)):
                continue
            stack.append(child)


def _text_of(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts)) or "<kernel>"


def _param_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = fn.args
    return [arg.arg for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]]


def _constexpr_annotated(fn: ast.FunctionDef | ast.AsyncFunctionDef, s: _Summarizer) -> set[str]:
    out = set()
    a = fn.args
    for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
        if arg.annotation is not None:
            d = s.dotted(arg.annotation)
            if d and d.endswith(".constexpr"):
                out.add(arg.arg)
    return out


# device types a registration names (torch.library.register_kernel / impl); "default" is every device without
# a kernel of its own
_DEVICE_TYPES = NON_CUDA_DEVICE_KEYS | {"cuda", "default", "compositeexplicitautograd", "compositeimplicitautograd"}


def device_keys(call: ast.Call, skip: int) -> list[str]:
    """The device types a registration call names after its first ``skip`` arguments, lower-case, in order;
    empty when any string there is not a device type (not a registration by device)."""
    values = [*call.args[skip:], *(kw.value for kw in call.keywords if kw.arg in ("device_types", "types",
                                                                                  "dispatch_key"))]
    keys: list[str] = []
    for value in values:
        for item in (value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]):
            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                if item.value.lower() not in _DEVICE_TYPES:
                    return []
                keys.append(item.value.lower())
    return keys


def _host_only(call: ast.Call) -> bool:
    from graphcheck.lint.scope import _host_only_keys

    return bool(_host_only_keys(call, skip=0))


def parse(source: str) -> ast.Module | None:
    """``ast.parse(source)``, or None for a file that cannot be parsed."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def summarize(source: str, module: str, is_package: bool, registrars: tuple[str, ...] = (),
              tree: ast.Module | None = None, prefill_flags: Sequence[str] = DEFAULT_PREFILL_FLAGS,
              prefill_lengths: Sequence[str] = DEFAULT_PREFILL_LENGTHS) -> dict[str, Any]:
    """The module's facts; a file that cannot be parsed gives an empty summary (the lint pass reports it).
    ``tree``: ``parse(source)`` when the caller has it (it is read, never changed); ``prefill_flags``: the
    ``prefill-flags`` globs, ``prefill_lengths`` the ``prefill-lengths`` ones."""
    if tree is None:
        tree = parse(source)
    if tree is None:
        return {"imports": {}, "funcs": {}, "broken": True}
    try:
        return _Summarizer(tree, source, module, is_package, registrars, prefill_flags, prefill_lengths).run()
    except RecursionError:
        return {"imports": {}, "funcs": {}, "broken": True}
