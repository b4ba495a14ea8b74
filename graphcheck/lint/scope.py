"""Module structure and capture reachability for the Python rules.

One walk over the module's *statements* (never its expressions) finds imports,
functions with their qualified names, Triton kernels and their ``tl.constexpr``
parameters, ``torch.library`` registrations and module-level helpers (Library
objects, CPU generators, loggers). Roots of capture reachability are then
functions that launch a Triton kernel, registered custom-op implementations,
``@graphcheck.capturable`` functions and configured entry points; reachability
follows calls by bare name to functions of the module and ``self.m()`` /
``cls.m()`` / ``Class.m()`` calls to methods of the same class, and covers
functions nested in a reachable one. Everything is iterative, so a pathological
module cannot exhaust the interpreter stack.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import re
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, cast

from graphcheck.config import DEFAULT_PREFILL_FLAGS, DEFAULT_PREFILL_LENGTHS
from graphcheck.lint.aliases import Aliases
from graphcheck.lint.coldpaths import Cold, branch_ranges, first_use_ranges, prefill_words

_FUNC_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPE_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

TRITON_DECORATORS = {
    "triton.jit": "jit",
    "triton.runtime.jit": "jit",
    "triton.runtime.jit.jit": "jit",
    "triton.autotune": "autotune",
    "triton.runtime.autotune": "autotune",
    "triton.runtime.autotuner.autotune": "autotune",
    "triton.heuristics": "heuristics",
    "triton.runtime.heuristics": "heuristics",
    "triton.runtime.autotuner.heuristics": "heuristics",
}
# Device code of kernel DSLs whose bodies are traced into a kernel, never run as host Python per call:
# TileLang's `@T.prim_func` / `@T.macro` (a TIR function; its `if`s and loops are on device values)
DEVICE_DECORATORS = {
    "tilelang.language.prim_func": "tilelang",
    "tilelang.language.macro": "tilelang",
    "tvm.script.tir.prim_func": "tilelang",
    "tvm.script.parser.tir.prim_func": "tilelang",
}
_CUSTOM_OP = {"torch.library.custom_op", "torch._library.custom_ops.custom_op"}
_LIB_IMPL = {"torch.library.impl", "torch.library.register_kernel"}
_LIBRARY_CTORS = {"torch.library.Library"}
_AUTOGRAD_FUNCTIONS = frozenset({"torch.autograd.Function", "torch.autograd.function.Function",
                                 "torch.autograd.function.InplaceFunction"})
# methods of a torch.autograd.Function whose first parameter is the autograd context (`ctx`)
CTX_METHODS = frozenset({"forward", "setup_context", "backward", "jvp", "vjp"})
# ctx methods that neither store nor hand out anything the value model follows
_CTX_CALLS = frozenset({"save_for_backward", "mark_non_differentiable", "mark_dirty", "set_materialize_grads",
                        "save_for_forward"})
# Device types (torch.library dispatch keys, lower-case) a CUDA graph never runs on.
NON_CUDA_DEVICE_KEYS = frozenset({"meta", "cpu", "xpu", "mps", "hpu", "npu", "xla", "mtia", "ipu", "lazy", "mlu",
                                  "musa", "privateuse1"})
# Dispatch keys whose implementation never runs on the device during capture: a registration naming only these is
# no capture root.
_HOST_ONLY_KEYS = NON_CUDA_DEVICE_KEYS | {"fake", "abstractimpl"}


_TRUTHY = frozenset({"1", "true", "yes", "on", "y", "t"})
_ENV_READS = frozenset({"os.getenv", "os.environ.get"})


def env_opt_in(value: ast.AST, resolve) -> str | None:
    """The environment key when ``value`` is an opt-in switch that is off unless the environment sets it:
    ``os.getenv("K", "0") == "1"``, ``os.environ.get("K") == "1"``, ``os.getenv("K", "false").lower() in ("1",
    "true")``, ``bool(int(os.getenv("K", "0")))``; ``resolve`` gives a call's dotted name."""
    if isinstance(value, ast.Compare) and len(value.ops) == 1:
        op, right = value.ops[0], value.comparators[0]
        if isinstance(op, ast.Eq):
            wanted = [right]
        elif isinstance(op, ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            wanted = list(right.elts)
        else:
            return None
        if not wanted or not all(isinstance(w, ast.Constant) and isinstance(w.value, str)
                                 and w.value.lower() in _TRUTHY for w in wanted):
            return None
        return _env_read(value.left, resolve, numeric=False)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "bool" \
            and len(value.args) == 1 and isinstance(value.args[0], ast.Call) \
            and isinstance(value.args[0].func, ast.Name) and value.args[0].func.id == "int" and value.args[0].args:
        return _env_read(value.args[0].args[0], resolve, numeric=True)
    return None


def _env_read(node: ast.AST, resolve, numeric: bool) -> str | None:
    """The key of ``os.getenv(K, D)`` / ``os.environ.get(K, D)`` (through ``.lower()``/``.strip()``/``str()``)
    whose default ``D`` (None when left out) is off."""
    while isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("lower", "strip", "upper", "casefold"):
        node = node.func.value
    if not (isinstance(node, ast.Call) and resolve(node.func) in _ENV_READS and node.args
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) and len(node.args) <= 2):
        return None
    default = node.args[1] if len(node.args) == 2 else None
    if default is None:
        return None if numeric else node.args[0].value
    if not isinstance(default, ast.Constant):
        return None
    off = (default.value in ("0", 0, "") if numeric
           else default.value is None or (isinstance(default.value, str) and default.value.lower() not in _TRUTHY))
    return node.args[0].value if off else None


# words a platform or timing test spells (graphcheck.lint.coldpaths.branch_ranges): a module without any has none
_ROLE_WORDS = re.compile(r"npu|xpu|mlu|musa|hpu|tpu|ascend|cpu|mps|neuron|gaudi|cambricon|habana|xla|tim(?:e|ing)|"
                         r"profil|bench")


@dataclasses.dataclass
class KernelInfo:
    name: str
    params: list[str]
    constexprs: set[str]
    autotuned: bool
    line: int


@dataclasses.dataclass(eq=False)
class FuncInfo:
    node: ast.FunctionDef | ast.AsyncFunctionDef
    qualname: str
    owner_class: str | None  # class of the nearest enclosing method
    is_method: bool
    parent: FuncInfo | None
    children: list[FuncInfo] = dataclasses.field(default_factory=list)
    is_kernel: bool = False
    root_reason: str | None = None  # why a decorator makes it capture-reachable
    _own: list[ast.AST] | None = None
    _groups: dict[str, list[ast.AST]] | None = None

    @property
    def name(self) -> str:
        return self.node.name

    def own_nodes(self) -> list[ast.AST]:
        """Every node of this function in source order, nested defs excluded (shared: never change it)."""
        if self._own is None:
            self._own = own_nodes_of(self.node)
        return self._own

    def group(self, name: str) -> list[Any]:
        """The own nodes of one kind (:data:`NODE_GROUPS`: ``call``, ``attribute``, ``name``, ``assign``,
        ``bind``, ``lookup``, ``branch``, ``if``, ``with``), in the order of :meth:`own_nodes`: one pass over the
        function sorts them for every walk of the summary and the value model that looks at one kind only
        (never change the list)."""
        if self._groups is None:
            groups: dict[str, list[ast.AST]] = {g: [] for g in _GROUP_NAMES}
            kinds = NODE_GROUPS.get
            for node in self.own_nodes():
                for g in kinds(type(node), ()):
                    groups[g].append(node)
            self._groups = groups
        return self._groups[name]

    def first_use(self) -> list[Cold]:
        """``coldpaths.first_use_ranges`` of this function (shared: never change it)."""
        memo = node_memo(self.node)
        found = memo.get("first_use")
        if found is None:
            found = memo["first_use"] = first_use_ranges(
                self.node, self.own_nodes(), self.group("if"), self.group("lookup"), self.group("assign"))
        return found

    def branches(self, prefill: tuple[str, ...], roles: bool, lengths: tuple[str, ...] = ()) -> list[Cold]:
        """``coldpaths.branch_ranges`` of this function's own nodes (shared: never change it); ``prefill``: the
        ``prefill-flags`` globs the module may spell (``ModuleIndex.prefill``), ``lengths`` its
        ``prefill-lengths`` globs (``ModuleIndex.prefill_lengths``)."""
        memo = node_memo(self.node)
        key = ("branches", prefill, roles, lengths)
        found = memo.get(key)
        if found is None:
            found = memo[key] = branch_ranges(self.group("if"), prefill, roles, lengths)
        return found

    def may_open(self) -> bool:
        """:func:`may_open` of this function's own nodes."""
        memo = node_memo(self.node)
        found = memo.get("may_open")
        if found is None:
            found = memo["may_open"] = bool(self.group("with")) or may_open(self.group("call"))
        return found


def may_open(nodes: Iterable[ast.AST]) -> bool:
    """Can a function with these (own) nodes open a capture region: a ``with``, a ``capture_begin()`` or a
    ``make_graphed_callables(...)`` call? A cheap test before ``capture_sites.regions`` walks it again."""
    for node in nodes:
        if isinstance(node, (ast.With, ast.AsyncWith)):
            return True
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("capture_begin", "make_graphed_callables"):
                return True
    return False


# the groups of own nodes FuncInfo.group gives, by the exact type of a node (a parsed tree has no subclasses)
NODE_GROUPS: dict[type, tuple[str, ...]] = {
    ast.Call: ("call",),
    ast.Attribute: ("attribute",),
    ast.Name: ("name",),
    ast.Assign: ("assign", "bind", "lookup"),
    ast.AnnAssign: ("bind",),
    ast.AugAssign: ("bind",),
    ast.NamedExpr: ("bind", "lookup"),
    ast.For: ("bind",),
    ast.AsyncFor: ("bind",),
    ast.comprehension: ("bind",),
    ast.If: ("branch", "if"),
    ast.BoolOp: ("branch",),
    ast.IfExp: ("branch",),
    ast.With: ("with",),
    ast.AsyncWith: ("with",),
}
_GROUP_NAMES = sorted({g for groups in NODE_GROUPS.values() for g in groups})
_MEMO = "_graphcheck_memo"


def node_memo(fn: ast.AST) -> dict:
    """Facts computed from a function's own subtree, kept on its node. A tree the project index summarized
    is kept for the rules pass (``pool.keep_tree``): both passes then read one walk of each function. Trees
    are never changed after parsing, so a fact stays true for as long as its node lives."""
    memo = fn.__dict__.get(_MEMO)
    if memo is None:
        memo = {}
        setattr(fn, _MEMO, memo)
    return memo


def all_param_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Every parameter name of ``fn``, ``*args`` and ``**kwargs`` included."""
    a = fn.args
    return {arg.arg for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if arg is not None}


def local_names(info: FuncInfo) -> set[str]:
    """The names a function binds itself, so that they hide a module's or an enclosing function's: its
    parameters, the names it assigns or deletes, and the defs, classes and imports in its own body (memoized on
    its node; never change the set)."""
    memo = node_memo(info.node)
    found = memo.get("local_names")
    if found is None:
        found = all_param_names(info.node)
        for node in info.own_nodes():
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                found.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                found.update((a.asname or a.name).split(".")[0] for a in node.names)
        memo["local_names"] = found
    return found


def own_nodes_of(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """``own_statement_nodes(fn.body)``, walked once per node (see :func:`node_memo`; never change it)."""
    memo = node_memo(fn)
    own = memo.get("own")
    if own is None:
        own = memo["own"] = own_statement_nodes(fn.body)
    return own


def iter_own_nodes(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """Pre-order walk of a function body (and its lambdas), iteratively.

    Nested functions and classes are separate scopes and are skipped; the
    function's parameter defaults and decorators belong to the enclosing scope.
    """
    return iter_own_statements(fn.body)


def iter_own_statements(statements: Iterable[ast.stmt]) -> Iterator[ast.AST]:
    """Pre-order walk of ``statements`` and what they hold, iteratively; a nested function or class is
    yielded but not entered (its body is another scope)."""
    return iter(own_statement_nodes(statements))


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))``, read without its two generators (the value model's walks over
    an expression call it for every node)."""
    out: list[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            out.extend(item for item in value if isinstance(item, ast.AST))
    return out


def own_statement_nodes(statements: Iterable[ast.stmt]) -> list[ast.AST]:
    """:func:`iter_own_statements` as a list. The children of a node are those ``ast.iter_child_nodes``
    gives, in its order, read here without its two generators (a third of the walk's time)."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(statements)
    stack.reverse()
    append, pop, push, node_type = out.append, stack.pop, stack.append, ast.AST
    while stack:
        node = pop()
        append(node)
        if isinstance(node, _SCOPE_DEFS):
            continue
        start = len(stack)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, node_type):
                push(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, node_type):
                        push(item)
        if len(stack) - start > 1:
            stack[start:] = stack[start:][::-1]
    return out


class ModuleIndex:
    """Structure of one module: imports, functions, kernels, registrations."""

    def __init__(self, tree: ast.Module, source: str, aliases: dict[str, str] | None = None,
                 kernels: dict[str, list] | None = None,
                 prefill_flags: Sequence[str] = DEFAULT_PREFILL_FLAGS,
                 prefill_lengths: Sequence[str] = DEFAULT_PREFILL_LENGTHS) -> None:
        """``aliases`` and ``kernels`` come from the project index: imported names that resolve,
        through in-tree re-exports, to an external module (``triton``), and imported Triton kernels.
        ``prefill_flags``: the ``prefill-flags`` globs (names a prefill branch's test reads);
        ``prefill_lengths``: the ``prefill-lengths`` globs (query lengths a prefill test compares with 1)."""
        self.source = source
        self.aliases = Aliases()
        self.functions: list[FuncInfo] = []
        self.module_funcs: dict[str, FuncInfo] = {}
        self.class_methods: dict[str, dict[str, FuncInfo]] = {}
        self.class_defs: dict[str, list[ast.ClassDef]] = {}  # class name -> its definitions (any nesting)
        self.kernels: dict[str, KernelInfo] = {}
        self.libraries: set[str] = set()
        self.cpu_generators: set[str] = set()
        # module-level names bound once to a tensor built on the host (`CHUNK = torch.tensor(128)`, no device)
        self.host_tensors: set[str] = set()
        # `torch.set_default_device("cuda")` somewhere in the module: device-less factories make device tensors
        self.default_device_accelerator = False
        self.loggers: set[str] = set()
        self.module_names: set[str] = set()
        # module-level name -> (environment key, line) of an off-by-default switch
        self.env_switches: dict[str, tuple[str, int]] = {}
        self._registered: list[tuple[str, str]] = []  # (function name, reason)
        self._deferred_calls: list[ast.Call] = []
        self._module_assigns: list[ast.Assign | ast.AnnAssign] = []
        self._walk(tree)
        if aliases:
            self.aliases.names.update(aliases)
        for local, (name, params, constexprs, autotuned) in (kernels or {}).items():
            self.kernels.setdefault(local, KernelInfo(name, list(params), set(constexprs), bool(autotuned), 0))
        for node in self._module_assigns:
            self._module_assign(node)
        self.aliases.shadowed = set(self.module_funcs) | self.module_names | {
            s.name for s in tree.body if isinstance(s, ast.ClassDef)}
        for call in self._deferred_calls:
            self._registration_call(call)
            if self.aliases.resolve(call.func) == "torch.set_default_device" and _device_kw_is_cuda(call):
                self.default_device_accelerator = True
        for info in self.functions:
            self._classify_decorators(info)
        self.mentions_triton = "triton" in source
        # a prefill branch is a test naming a prefill flag: a module that never spells it has none
        low = source.lower()
        flags = tuple(prefill_flags)
        self.mentions_prefill = any(word in low for word in prefill_words(flags))
        self.prefill: tuple[str, ...] = flags if self.mentions_prefill else ()  # the globs, when it may hold one
        lengths = tuple(prefill_lengths)
        self.prefill_lengths: tuple[str, ...] = (lengths if any(word in low for word in prefill_words(lengths))
                                                 else ())  # likewise for a query-length test (`q_len > 1`)
        self.mentions_prefill = self.mentions_prefill or bool(self.prefill_lengths)
        # platform and timing branches test a flag that spells a non-CUDA platform or timing/profiling
        self.mentions_roles = _ROLE_WORDS.search(low) is not None
        self._lines: list[str] | None = None
        # memos of the value model (graphcheck.lint.values): function node id -> returns only host values;
        # autograd class -> what its forward hands backward through ctx
        self.returns_host_memo: dict[int, bool] = {}
        self.ctx_host_memo: dict[str, Any] = {}
        self._ctx_writes: dict[str, CtxWrites | None] = {}
        self._method_classes: dict[str, int] | None = None

    def method_classes(self) -> dict[str, int]:
        """Method name -> how many classes of the module define it (built on first use)."""
        if self._method_classes is None:
            counts: dict[str, int] = {}
            for methods in self.class_methods.values():
                for name in methods:
                    counts[name] = counts.get(name, 0) + 1
            self._method_classes = counts
        return self._method_classes

    def autograd_class(self, name: str) -> bool:
        """Is ``name`` the one class of that name in the module, a ``torch.autograd.Function`` subclass (directly
        or through another class of the module)?"""
        seen: set[str] = set()
        while name not in seen:
            seen.add(name)
            defs = self.class_defs.get(name, ())
            if len(defs) != 1:
                return False
            bases = defs[0].bases
            if any(self.aliases.resolve(b) in _AUTOGRAD_FUNCTIONS for b in bases):
                return True
            local = [b.id for b in bases if isinstance(b, ast.Name) and b.id in self.class_defs]
            if len(local) != 1:
                return False
            name = local[0]
        return False

    def ctx_writes(self, cls: str) -> CtxWrites | None:
        """What the methods of autograd class ``cls`` put on their context: the argument lists of
        ``ctx.save_for_backward(...)`` in ``forward``/``setup_context`` and the values of ``ctx.attr = v``; None
        when it cannot all be seen (the context passed to a call or bound to another name, used by a nested
        function, a starred or keyword save, a subclass in the module, no ``forward`` of its own). Memoized."""
        if cls in self._ctx_writes:
            return self._ctx_writes[cls]
        self._ctx_writes[cls] = None
        methods = self.class_methods.get(cls, {})
        if not self.autograd_class(cls) or ("forward" not in methods and "setup_context" not in methods):
            return None
        if any(isinstance(b, ast.Name) and b.id == cls for defs in self.class_defs.values() for d in defs
               for b in d.bases):
            return None  # a subclass's forward may save other values for this backward
        saves: list[tuple[list[ast.expr], FuncInfo]] = []
        attrs: dict[str, list[tuple[ast.expr, FuncInfo]] | None] = {}
        for name, info in methods.items():
            if name not in CTX_METHODS or (name == "forward" and "setup_context" in methods):
                continue  # (with a setup_context, forward takes no context)
            params = [a.arg for a in [*info.node.args.posonlyargs, *info.node.args.args]]
            if not params:
                return None
            ctx = params[0]
            if any(ctx in {n.id for n in ast.walk(c.node) if isinstance(n, ast.Name)} for c in info.children):
                return None
            uses = 0
            for node in info.group("name"):
                if node.id == ctx:
                    uses += 1
            attr_uses = 0
            for node in info.group("attribute"):
                if isinstance(node.value, ast.Name) and node.value.id == ctx:
                    attr_uses += 1
            if uses != attr_uses:
                return None  # `helper(ctx, ...)`, `c = ctx`: writes this walk cannot see
            for call in info.group("call"):
                func = call.func
                if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == ctx
                        and func.attr == "save_for_backward"):
                    if name not in ("forward", "setup_context") or call.keywords or any(
                            isinstance(a, ast.Starred) for a in call.args):
                        return None
                    saves.append((list(call.args), info))
            for node in info.group("bind"):
                targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
                for target in targets:
                    for elt in ast.walk(target) if target is not None else ():
                        if (isinstance(elt, ast.Attribute) and isinstance(elt.value, ast.Name) and elt.value.id == ctx
                                and isinstance(elt.ctx, ast.Store)):
                            value = getattr(node, "value", None)
                            if elt is target and isinstance(node, (ast.Assign, ast.AnnAssign)) and value is not None:
                                found = attrs.setdefault(elt.attr, [])
                                if found is not None:
                                    found.append((value, info))
                            else:
                                attrs[elt.attr] = None  # unpacked into, augmented, or a loop target: unknown
        writes = CtxWrites(saves, attrs)
        self._ctx_writes[cls] = writes
        return writes

    def line(self, number: int) -> str:
        """The text of one source line (1-based), or "" past the end."""
        if self._lines is None:
            self._lines = self.source.split("\n")
        return self._lines[number - 1] if 0 < number <= len(self._lines) else ""

    # -- structure ---------------------------------------------------------

    def _walk(self, tree: ast.Module) -> None:
        # (statement, qualname prefix, enclosing function, class name, owner class)
        stack: list[tuple[ast.stmt, str, FuncInfo | None, str | None, str | None]] = [
            (s, "", None, None, None) for s in reversed(tree.body)
        ]
        while stack:
            stmt, prefix, func, cls, owner = stack.pop()
            if isinstance(stmt, _FUNC_DEFS):
                info = FuncInfo(stmt, prefix + stmt.name, cls if cls else owner, cls is not None, func)
                self.functions.append(info)
                if func is not None:
                    func.children.append(info)
                elif cls is None:
                    self.module_funcs[stmt.name] = info
                if cls is not None:
                    self.class_methods.setdefault(cls, {})[stmt.name] = info
                inner = prefix + stmt.name + ".<locals>."
                stack.extend((s, inner, info, None, info.owner_class) for s in reversed(stmt.body))
                continue
            if isinstance(stmt, ast.ClassDef):
                self.class_defs.setdefault(stmt.name, []).append(stmt)
                inner = prefix + stmt.name + "."
                stack.extend((s, inner, func, stmt.name, owner) for s in reversed(stmt.body))
                continue
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.aliases.add(stmt)
                continue
            if func is None and cls is None and isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                self._module_assigns.append(stmt)
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                self._deferred_calls.append(stmt.value)
            for field in ("body", "orelse", "finalbody"):
                block = getattr(stmt, field, None)
                if isinstance(block, list):
                    stack.extend((s, prefix, func, cls, owner) for s in reversed(block) if isinstance(s, ast.stmt))
            for handler in getattr(stmt, "handlers", ()) or ():
                stack.extend((s, prefix, func, cls, owner) for s in reversed(handler.body))
            for case in getattr(stmt, "cases", ()) or ():
                stack.extend((s, prefix, func, cls, owner) for s in reversed(case.body))

    def _module_assign(self, node: ast.Assign | ast.AnnAssign) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        for name in names:  # `X = os.getenv("X", "0") == "1"`: an opt-in switch, off unless the environment sets it
            key = env_opt_in(node.value, self.aliases.resolve) if node.value is not None else None
            if key is not None and name not in self.module_names:
                self.env_switches[name] = (key, node.lineno)
            else:
                self.env_switches.pop(name, None)
        rebound = self.module_names.intersection(names)
        self.module_names.update(names)
        self.host_tensors.difference_update(rebound)  # bound twice: no longer one known value
        value = node.value
        if not isinstance(value, ast.Call):
            return
        qual = self.aliases.resolve(value.func)
        if _host_built(value, qual) and not rebound:
            self.host_tensors.update(names)
        if qual in _LIBRARY_CTORS:
            self.libraries.update(names)
        elif qual in ("torch.Generator", "torch._C.Generator") and not _device_kw_is_cuda(value):
            self.cpu_generators.update(names)
        elif qual == "logging.getLogger":
            self.loggers.update(names)

    def _registration_call(self, call: ast.Call) -> None:
        """``lib.impl("op", fn, "CUDA")`` and ``torch.library.custom_op(...)(fn)``."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "impl" and len(call.args) >= 2:
            fn = call.args[1]
            if isinstance(fn, ast.Name) and not _host_only_keys(call, skip=2):
                self._registered.append((fn.id, "is registered as a torch.library implementation"))
            return
        if isinstance(func, ast.Call) and call.args and isinstance(call.args[0], ast.Name):
            qual = self.aliases.resolve(func.func)
            if qual in _CUSTOM_OP or (qual in _LIB_IMPL and not _host_only_keys(func, skip=1)):
                self._registered.append((call.args[0].id, f"is registered with {qual}"))
            return
        qual = self.aliases.resolve(func)
        if qual in _LIB_IMPL:
            for kw in call.keywords:
                if kw.arg == "func" and isinstance(kw.value, ast.Name) and not _host_only_keys(call, skip=1):
                    self._registered.append((kw.value.id, f"is registered with {qual}"))

    def _classify_decorators(self, info: FuncInfo) -> None:
        kinds = []
        for dec in info.node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            qual = self.aliases.resolve(target)
            if qual in TRITON_DECORATORS:
                kinds.append(TRITON_DECORATORS[qual])
                continue
            if qual in DEVICE_DECORATORS:
                info.is_kernel = True  # device code: no host rule reads it, reachability does not enter it
                continue
            if qual in _CUSTOM_OP:
                info.root_reason = f"is registered as a custom op with {qual}"
            elif qual in _LIB_IMPL:
                if not (isinstance(dec, ast.Call) and _host_only_keys(dec, skip=1)):
                    info.root_reason = f"is registered with {qual}"
            elif qual is not None and qual.startswith("graphcheck") and qual.endswith(".capturable"):
                info.root_reason = "is marked @graphcheck.capturable"
            elif isinstance(dec, ast.Call) and isinstance(target, ast.Attribute):
                owner = target.value
                if target.attr == "impl" and isinstance(owner, ast.Name) and owner.id in self.libraries:
                    if not _host_only_keys(dec, skip=1):
                        info.root_reason = f"is registered with {owner.id}.impl"
                elif target.attr == "register_kernel" and not _host_only_keys(dec, skip=0):
                    info.root_reason = "is registered as a custom op kernel with register_kernel"
        if kinds:
            info.is_kernel = True
            if info.parent is None and not info.is_method:
                self.kernels[info.name] = KernelInfo(
                    info.name, _param_names(info.node), self._constexpr_params(info.node),
                    "autotune" in kinds, info.node.lineno)

    def _constexpr_params(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
        out = set()
        a = fn.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
            ann = arg.annotation
            if ann is None:
                continue
            if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
                if ann.value.split(".")[-1] == "constexpr":
                    out.add(arg.arg)
                continue
            qual = self.aliases.resolve(ann)
            if qual and qual.startswith("triton") and qual.endswith(".constexpr"):
                out.add(arg.arg)
        return out

    # -- reachability ------------------------------------------------------

    def roots(self, entry_points: Sequence[str]) -> dict[FuncInfo, str]:
        roots: dict[FuncInfo, str] = {}
        entries = [_entry_qualname(e) for e in entry_points if e]
        registered = dict(self._registered)
        candidates = _launch_candidate_lines(self.source)
        for info in self.functions:
            if info.is_kernel:
                continue
            reason = info.root_reason
            if reason is None and info.parent is None and not info.is_method and info.name in registered:
                reason = registered[info.name]
            if reason is None and any(_entry_matches(e, info.qualname) for e in entries):
                reason = "is a configured entry point"
            if reason is None and _has_candidate(candidates, info.node):
                kernels = [self.launched_kernel_name(c) for c in self.launches(info)]
                if kernels:
                    reason = f"launches Triton kernel `{kernels[0]}`"
            if reason is not None:
                roots[info] = reason
        return roots

    def reachable(self, entry_points: Sequence[str]) -> dict[FuncInfo, str]:
        """Capture-reachable functions, each with why it is reachable."""
        found = dict(self.roots(entry_points))
        queue = deque(found)
        while queue:
            info = queue.popleft()
            for child in info.children:
                if child not in found and not child.is_kernel:
                    found[child] = f"is defined inside `{info.qualname}`"
                    queue.append(child)
            for callee in self.callees(info):
                if callee not in found and not callee.is_kernel:
                    found[callee] = f"is called from `{info.qualname}`"
                    queue.append(callee)
        return found

    def callees(self, info: FuncInfo) -> Iterator[FuncInfo]:
        for node in info.own_nodes():
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name):
                target = self._lookup_name(info, func.id)
                if target is not None:
                    yield target
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                owner = func.value.id
                if owner in ("self", "cls") and info.owner_class:
                    cls = info.owner_class
                elif owner in self.class_methods:
                    cls = owner
                else:
                    continue
                target = self.class_methods.get(cls, {}).get(func.attr)
                if target is not None:
                    yield target

    def _lookup_name(self, info: FuncInfo, name: str) -> FuncInfo | None:
        scope: FuncInfo | None = info
        while scope is not None:
            for child in scope.children:
                if child.name == name:
                    return child
            scope = scope.parent
        return self.module_funcs.get(name)

    # -- Triton launches ---------------------------------------------------

    def launches(self, info: FuncInfo) -> list[ast.Call]:
        return [n for n in info.own_nodes() if isinstance(n, ast.Call) and self.is_launch(n)]

    def is_launch(self, call: ast.Call) -> bool:
        """``kern[grid](...)``: a subscript of a kernel, then a call.

        A kernel defined in the module is always accepted. Any other
        ``name[...](...)`` / ``obj.attr[...](...)`` is accepted as a launch of an
        imported kernel when the module uses Triton (or imported the name), the
        name is not a module-level table or a class (``OrderedSet[str]()``,
        ``HANDLERS[op](x)``) and the subscript looks like a grid: a tuple, list,
        lambda, a name or call mentioning ``grid`` or ``cdiv``.
        """
        func = call.func
        if not isinstance(func, ast.Subscript):
            return False
        base = func.value
        if isinstance(base, ast.Name) and base.id in self.kernels:
            return True
        if generic_instantiation(func):
            return False
        if not _looks_like_grid(func.slice):
            return False
        if isinstance(base, ast.Name):
            name = base.id
            if name.lstrip("_")[:1].isupper() or name in self.module_names or name in self.module_funcs:
                return False
            return self.mentions_triton or self.aliases.is_imported(name)
        if isinstance(base, ast.Attribute):
            if base.attr.lstrip("_")[:1].isupper():
                return False
            root: ast.expr = base
            while isinstance(root, ast.Attribute):
                root = root.value
            return self.mentions_triton or (isinstance(root, ast.Name) and self.aliases.is_imported(root.id))
        return False

    def launched_kernel_name(self, call: ast.Call) -> str:
        base = cast(ast.Subscript, call.func).value  # a launch is kernel[grid](...)
        parts = []
        while isinstance(base, ast.Attribute):
            parts.append(base.attr)
            base = base.value
        if isinstance(base, ast.Name):
            parts.append(base.id)
        return ".".join(reversed(parts)) or "<kernel>"

    def launched_kernel(self, call: ast.Call) -> KernelInfo | None:
        base = cast(ast.Subscript, call.func).value
        if isinstance(base, ast.Name):
            return self.kernels.get(base.id)
        return None


@dataclasses.dataclass
class CtxWrites:
    """What an autograd class's methods store on their context (:meth:`ModuleIndex.ctx_writes`)."""
    saves: list[tuple[list[ast.expr], FuncInfo]]  # the arguments of each ctx.save_for_backward call, and where
    attrs: dict[str, list[tuple[ast.expr, FuncInfo]] | None]  # ctx.attr -> values assigned (None: not all seen)


def ctx_param(info: FuncInfo, index: ModuleIndex) -> str | None:
    """The context parameter's name when ``info`` is a ``forward``/``backward``/``setup_context``/``jvp``/``vjp``
    of a ``torch.autograd.Function`` subclass of the module, else None."""
    if not info.is_method or info.owner_class is None or info.name not in CTX_METHODS:
        return None
    params = info.node.args.posonlyargs + info.node.args.args
    if not params or not index.autograd_class(info.owner_class):
        return None
    return params[0].arg


def _looks_like_grid(node: ast.AST) -> bool:
    if isinstance(node, (ast.Tuple, ast.List, ast.Lambda)):
        return True
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return "grid" in node.id.lower() or "cdiv" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return "grid" in node.attr.lower() or "cdiv" in node.attr.lower()
    return False


def _param_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = fn.args
    return [arg.arg for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]]


def _host_only_keys(call: ast.Call, skip: int) -> bool:
    """True if a registration call names a host-only dispatch key (Meta, CPU)."""
    values = [*call.args[skip:], *(kw.value for kw in call.keywords)]
    for value in values:
        strings: list[ast.AST] = list(value.elts) if isinstance(value, (ast.Tuple, ast.List)) else [value]
        keys = [s.value.lower() for s in strings if isinstance(s, ast.Constant) and isinstance(s.value, str)]
        if keys and all(k in _HOST_ONLY_KEYS for k in keys):
            return True
    return False


# torch calls that build a tensor on the default device when given no device (the legacy typed constructors too)
_HOST_BUILDERS = frozenset({"torch.tensor", "torch.as_tensor", "torch.zeros", "torch.ones", "torch.empty",
                            "torch.full", "torch.arange", "torch.linspace", "torch.eye", "torch.FloatTensor",
                            "torch.DoubleTensor", "torch.HalfTensor", "torch.LongTensor", "torch.IntTensor",
                            "torch.BoolTensor", "torch.ByteTensor"})


def _host_built(call: ast.Call, qual: str | None) -> bool:
    """A tensor built with no device (or a CPU one): on the host, unless the module sets a default device."""
    if qual not in _HOST_BUILDERS:
        return False
    for kw in call.keywords:
        if kw.arg is None:
            return False
        if kw.arg == "device":
            return isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str) and \
                kw.value.value.split(":")[0] == "cpu"
    return True


def _device_kw_is_cuda(call: ast.Call) -> bool:
    for arg in [*call.args[:1], *(kw.value for kw in call.keywords if kw.arg == "device")]:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("cuda"):
            return True
        if not isinstance(arg, ast.Constant):
            return True  # a device expression: assume it is the accelerator
    return False


def _entry_qualname(entry: str) -> str:
    return entry.split(":", 1)[1] if ":" in entry else entry


def _entry_matches(entry: str, qualname: str) -> bool:
    return entry == qualname


_CANDIDATE = re.compile(r"\]\s*\(")


def _launch_candidate_lines(source: str) -> list[int]:
    """Lines holding ``](`` (a possible ``kern[grid](`` launch), sorted."""
    lines = []
    pos = 0
    line = 1
    for match in _CANDIDATE.finditer(source):
        line += source.count("\n", pos, match.start())
        pos = match.start()
        lines.append(line)
    return lines


def _has_candidate(lines: list[int], node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    start = node.lineno
    end = getattr(node, "end_lineno", None) or start
    i = bisect.bisect_left(lines, start)
    return i < len(lines) and lines[i] <= end


_PRECHECK_TOKENS = ("triton", "torch.library", "custom_op", "register_kernel", "capturable", ".impl(")
# the names an import binds: a parenthesized list may span lines, and so may a backslash continuation
_IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+\S+[ \t]+)?import[ \t]+(\([^)]*\)|(?:[^\n#\\]|\\\r?\n)+)", re.M)


def may_be_reachable(source: str, entry_points: Sequence[str]) -> bool:
    if any(token in source for token in _PRECHECK_TOKENS):
        return True
    if "](" in source:
        # `name[...](` / `name.attr[...](` of an imported name: a launch of an
        # imported kernel in a module that never mentions triton itself.
        names = set()
        for match in _IMPORT_LINE.finditer(source):
            for part in re.sub(r"#[^\n]*|[\\()]", " ", match.group(1)).split(","):
                words = part.split()
                if words:
                    names.add(words[-1].strip("()").split(".")[0])
        names.discard("")
        if names:
            alternatives = "|".join(map(re.escape, sorted(names)))
            pattern = rf"\b(?:{alternatives})(?:\.\w+)*\s*\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]\s*\("
            if re.search(pattern, source):
                return True
    for entry in entry_points:
        name = entry.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
        if name and name in source:
            return True
    return False


_BUILTIN_TYPES = {
    "int", "str", "float", "bool", "bytes", "list", "dict", "tuple", "set", "frozenset", "object", "type",
    "complex", "Any", "Optional", "Union", "Callable", "None",
}
# ``Name[...](...)`` of these is a generic instantiation, never a kernel launch.
GENERIC_FACTORIES = {
    "defaultdict", "OrderedDict", "deque", "Counter", "ChainMap", "dict", "list", "set", "frozenset", "tuple",
    "type", "Queue", "SimpleQueue", "WeakValueDictionary", "WeakKeyDictionary",
}


def type_like(node: ast.AST) -> bool:
    """A subscript element that names a type (``str``, ``torch.Tensor``, ``list[int]``)."""
    if isinstance(node, ast.Name):
        return node.id in _BUILTIN_TYPES
    if isinstance(node, ast.Constant):
        return node.value is None or isinstance(node.value, str)
    if isinstance(node, ast.Attribute):
        return node.attr[:1].isupper() and node.attr not in ("T",)
    if isinstance(node, ast.Subscript):
        return type_like(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return type_like(node.left) and type_like(node.right)
    return False


def generic_instantiation(func: ast.Subscript) -> bool:
    """``defaultdict[str, int](f)``, ``list[int]()``: a typed constructor call, not a launch."""
    base = func.value
    name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else ""
    if name in GENERIC_FACTORIES:
        return True
    elts = func.slice.elts if isinstance(func.slice, ast.Tuple) else [func.slice]
    return any(type_like(e) for e in elts) and all(type_like(e) or isinstance(e, ast.Name) for e in elts)
