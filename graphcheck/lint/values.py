"""What a function's names hold: the intra-function def-use pass.

A single linear pass over a function's assignments (and ``for`` targets) gives
each local name a set of *kinds*:

- ``tensor``: a tensor value (parameter annotated ``torch.Tensor``, assigned
  from a ``torch.*`` call or a tensor method, a subscript or arithmetic of a
  tensor, or a name used with a tensor-only attribute such as ``.shape``,
  ``.stride()``, ``.data_ptr()``, ``.contiguous()``, ``.item()``);
- ``host``: a value synchronized to the host (``.item()``, ``int(t)``,
  ``.tolist()``, ``.cpu()``, ``max(t)``), or derived from one;
- ``mask``: a boolean tensor (a tensor comparison, ``isnan``, ``.bool()``,
  ``logical_*``);
- ``loop``: a value that changes every iteration of a Python loop;
- ``hostseq`` / ``hosttensor`` / ``pinned``: Python sequences, tensors built
  from them on the host, and such tensors in pinned memory;
- ``cpugen``: a CPU ``torch.Generator``; ``event``: an object ``.record()`` was
  called on;
- ``hostconst``: a module-level tensor built once on the host (``CHUNK =
  torch.tensor(128)``): reading it is no sync and gives the same value every call.

The heuristics favour precision: an unannotated parameter with no tensor-only
use is not a tensor, so rules that need a tensor stay quiet on it.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import re
from collections.abc import Callable, Iterable, Sequence
from typing import cast

from graphcheck.config import DEFAULT_DEBUG_FLAGS
from graphcheck.lint.aliases import Aliases
from graphcheck.lint.coldpaths import (
    DEBUG_NEGATED,
    Cold,
    Flag,
    debug_level_name,
    flag_key,
    name_words,
    opt_in_flags,
    optional_ranges,
    verbose_flag,
)
from graphcheck.lint.files import glob_regex
from graphcheck.lint.scope import FuncInfo, ModuleIndex, child_nodes, ctx_param, local_names

_MAX_DEPTH = 40

# Attributes / methods whose use marks an unannotated name as a tensor.
TENSOR_HINT_ATTRS = {
    "shape", "stride", "data_ptr", "contiguous", "is_cuda", "numel", "element_size",
    "item", "tolist", "is_contiguous", "storage_offset", "view", "new_empty", "new_zeros",
    "masked_fill", "masked_fill_", "index_select", "unsqueeze", "squeeze",
}
# Of those, the plain attributes of a tensor; the others are tensor methods and mark a
# name only when called (``entry.numel`` read as a field is some other object's).
_TENSOR_HINT_FIELDS = {"shape", "is_cuda"}
# Attributes of a tensor that are tensors themselves.
TENSOR_VIEW_ATTRS = {"T", "mT", "H", "mH", "data", "grad", "real", "imag"}
# Tensor methods that return something other than a tensor.
# (``is_*``/``has_*``/``get_*`` methods are covered by their prefix, see ``_PREDICATE_PREFIXES``.)
NON_TENSOR_METHODS = {
    # Python ints and tuples of them: sizes, ranks, strides, offsets, addresses
    "item", "tolist", "size", "dim", "ndimension", "numel", "nelement", "stride",
    "data_ptr", "element_size", "storage_offset", "dense_dim", "sparse_dim", "dim_order",
    "__len__", "__index__", "__int__", "__float__", "__bool__", "nbytes", "itemsize",
    # Python bools
    "is_contiguous", "is_floating_point", "is_complex", "is_pinned", "is_set_to", "is_coalesced",
    "is_shared", "is_signed", "is_inference", "is_nonzero", "is_same_size", "has_names", "equal",
    "allclose",
    # other objects: the device index, storages, type names, arrays, hook handles
    "get_device", "type", "untyped_storage", "storage", "storage_type", "numpy", "record_stream",
    "synchronize", "register_hook", "register_post_accumulate_grad_hook", "backward",
}
# Methods that reduce: their result is a tensor whatever the receiver looks like.
REDUCTIONS = {
    "sum", "max", "min", "mean", "prod", "any", "all", "amax", "amin", "argmax",
    "argmin", "norm", "std", "var", "count_nonzero", "cumsum", "logsumexp",
}
_TENSOR_MODULES = {"torch", "torch.functional", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft"}
# torch.* functions that do not return a tensor.
NON_TENSOR_TORCH = {
    "device", "dtype", "Size", "is_tensor", "is_storage", "is_floating_point", "is_complex",
    "numel", "get_default_dtype", "is_grad_enabled", "finfo", "iinfo", "no_grad",
    "enable_grad", "inference_mode", "set_grad_enabled", "manual_seed", "seed",
    "initial_seed", "typename", "result_type", "promote_types", "can_cast",
    "set_default_dtype", "compile", "get_device", "equal", "allclose", "is_nonzero",
    "Generator", "Stream", "Event", "get_rng_state", "set_rng_state", "is_inference_mode_enabled",
    "broadcast_shapes", "is_same_size", "get_default_device", "set_default_device", "get_num_threads",
    "set_num_threads", "get_num_interop_threads", "use_deterministic_algorithms", "is_autocast_enabled",
    "get_autocast_dtype", "get_autocast_gpu_dtype", "set_printoptions", "sym_int", "sym_float", "sym_max",
    "sym_min", "sym_not", "is_warn_always_enabled", "are_deterministic_algorithms_enabled",
}
# Functions and methods named like predicates or accessors return plain values.
_PREDICATE_PREFIXES = ("is_", "are_", "has_", "get_", "set_", "use_", "supports_", "_")
SHAPE_ATTRS = {"shape", "ndim", "dtype", "device", "is_cuda", "itemsize", "layout", "is_contiguous"}
SHAPE_METHODS = {"size", "stride", "dim", "numel", "element_size", "ndimension", "nelement", "dense_dim",
                 "sparse_dim", "storage_offset"}
_MASK_FUNCS = {
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "logical_and", "logical_or",
    "logical_not", "logical_xor", "eq", "ne", "gt", "ge", "lt", "le", "isin", "isclose",
    "signbit", "greater", "less", "greater_equal", "less_equal", "not_equal",
}
_MASK_METHODS = _MASK_FUNCS | {"bool"}
# comparisons whose result is a Python bool whatever the operands (`t == 0` of a tensor is a tensor)
IDENTITY_OPS = (ast.Is, ast.IsNot, ast.In, ast.NotIn)
_SEQ_NODES = (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.Set)
_SEQ_ANNOTATIONS = {"list", "List", "tuple", "Tuple", "Sequence", "int", "float", "Iterable"}
_HOST_TENSOR_CTORS = {"torch.tensor", "torch.as_tensor", "torch.from_numpy"}
# the legacy typed constructors: `torch.FloatTensor([s])` is a CPU tensor (the torch.cuda.* ones are not)
_LEGACY_CTORS = {"torch.FloatTensor", "torch.DoubleTensor", "torch.HalfTensor", "torch.BFloat16Tensor",
                 "torch.LongTensor", "torch.IntTensor", "torch.ShortTensor", "torch.CharTensor", "torch.ByteTensor",
                 "torch.BoolTensor"}
# how backward reads what forward saved
_SAVED_ATTRS = ("saved_tensors", "saved_variables")
# torch factories that draw from the default RNG: on the host unless given a device (or a default device is set)
RANDOM_FACTORIES = {"torch.rand", "torch.randn", "torch.randint", "torch.randperm"}
# Factories whose result lives on the default device: the host, without `device=`, `out=` or a default device.
_FACTORIES = RANDOM_FACTORIES | {
    "torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.arange", "torch.range", "torch.linspace",
    "torch.logspace", "torch.eye", "torch.empty_strided", "torch.tril_indices", "torch.triu_indices",
}
# Tensor metadata fixed for a captured call: never a per-call value for a constexpr.
_STRUCTURE_ATTRS = SHAPE_ATTRS | {"requires_grad", "nbytes", "is_leaf", "is_sparse", "is_quantized", "names", "ndim"}
_STRUCTURE_METHODS = {"is_floating_point", "is_complex", "is_contiguous", "element_size", "get_device",
                      "data_ptr", "is_signed", "requires_grad_", "nbytes"}
# Builtin types a `type(x) is T` test narrows `x` to: host containers and scalars, never a tensor.
_HOST_TYPES = {"list", "tuple", "dict", "set", "frozenset", "int", "float", "bool", "str", "bytes"}
DEFAULT_HOST_NAMES = ("*_cpu", "*_np", "*_numpy", "*_host", "*_pinned")


def class_flags(index: ModuleIndex, cls: str | None) -> dict[str, Flag]:
    """The ``self.x`` opt-in flags of class ``cls`` (memoized on the index), by their text: ``__init__`` sets
    ``self.x = p`` from an opt-in flag ``p`` of its own (``coldpaths.opt_in_flags``), once, and nothing else in
    the module stores an attribute of that name (no ``setattr`` either). One definition of the class only."""
    if cls is None:
        return {}
    memo: dict[str, dict[str, Flag]] = index.__dict__.setdefault("_class_flags", {})
    hit = memo.get(cls)
    if hit is not None:
        return hit
    out: dict[str, Flag] = {}
    memo[cls] = out
    init = index.class_methods.get(cls, {}).get("__init__")
    if init is None or len(index.class_defs.get(cls, ())) != 1 or "setattr(" in index.source:
        return out
    flags = opt_in_flags(init.node, init.own_nodes(), init.group("name"), init.group)
    if not flags:
        return out
    candidates: dict[str, Flag] = {}
    for node in init.group("assign"):
        if (len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in flags and flag_key(node.targets[0]) is not None):
            flag = flags[node.value.id]
            attr = node.targets[0].attr
            candidates[attr] = Flag(f"self.{attr}", flag.param, flag.default, init.qualname)
    if not candidates:
        return out
    stores: dict[str, int] | None = index.__dict__.get("_attribute_stores")
    if stores is None:  # attribute name -> stores anywhere in the module's functions (once per module)
        stores = index.__dict__["_attribute_stores"] = {}
        for info in index.functions:
            for node in info.group("attribute"):
                if type(node.ctx) is not ast.Load:
                    stores[node.attr] = stores.get(node.attr, 0) + 1
    for attr, flag in candidates.items():
        if stores.get(attr) == 1:
            out[flag.name] = flag
    return out


def is_builtin(aliases: Aliases, node: ast.AST, names: Iterable[str]) -> bool:
    """``node`` is a reference to one of Python's builtins ``names``: not imported, not defined or
    assigned at module level (FlagGems' ``def any(inp)`` is a device op, not the builtin)."""
    return isinstance(node, ast.Name) and node.id in names and not aliases.is_bound(node.id)


class FunctionFacts:
    """Kinds of the local names of one function, and expression predicates."""

    def __init__(self, info: FuncInfo, index: ModuleIndex, host_names: Sequence[str] = DEFAULT_HOST_NAMES,
                 guards: Sequence[str] = (), debug_flags: Sequence[str] = DEFAULT_DEBUG_FLAGS,
                 inherited: dict[str, set[str]] | None = None,
                 facts_of: Callable[[FuncInfo], FunctionFacts | None] | None = None) -> None:
        """``inherited``: kinds a nested function's names get from its enclosing functions
        (``graphcheck.lint.closures``). ``facts_of``: the facts of another function of the module (None while
        they are being built), for the return kinds of helpers and what an autograd forward saves; without
        it they are built here, with the same settings."""
        self.info = info
        self.index = index
        self.aliases = index.aliases
        self._settings = (tuple(host_names), tuple(guards), tuple(debug_flags))
        self._facts_of = facts_of
        self.kinds: dict[str, set[str]] = {}
        self.host_origin: dict[str, ast.AST] = {}
        self._baked_origin: dict[str, ast.AST] = {}
        self.host_names = tuple(host_names)
        self._host_name_memo: dict[str, bool] = {}
        self._debug = _compile_globs(debug_flags)
        self._typed_tensors: set[str] = set()  # tensors by annotation or by the value assigned, not by use
        # name -> the tuple/list literal it was bound to (None once bound to anything else), so that
        # `snap = (x.cpu(), n); a, b = snap` gives each name its own element's kinds
        self._literals: dict[str, ast.Tuple | ast.List | None] = {}
        # lines under `with torch.device(<not the CPU>):`, where device-less factories make device tensors
        # (the walks below each read one group of the function's own nodes, sorted by kind in one pass)
        self._device_blocks = [
            (node.body[0].lineno, _last_line(node.body)) for node in info.group("with")
            if any(
                isinstance(item.context_expr, ast.Call) and self.aliases.resolve(item.context_expr.func)
                == "torch.device" and not is_cpu_device(self.aliases, item.context_expr) for item in node.items)]
        self._params(info.node)
        # in a backward of an autograd Function: the context's name, which saved positions and attributes hold
        # host values (every save/assignment in forward a host value)
        self._ctx = ctx_param(info, index) if info.name not in ("forward", "setup_context") else None
        self._ctx_saved: tuple[bool, ...] | None = None
        self._ctx_attrs: frozenset[str] = frozenset()
        if self._ctx is not None and info.owner_class is not None:
            self._ctx_saved, self._ctx_attrs = self._ctx_host(info.owner_class)
        for name, kinds in (inherited or {}).items():
            for kind in kinds:
                self._add(name, kind)
        nodes = info.own_nodes()
        # `is_t = isinstance(x, torch.Tensor)` then `if is_t:` narrows x like the call itself
        self._isinstance_alias: dict[str, ast.Call] = {}
        # names narrowed in one arm of a conditional expression: id(Name node) -> state
        self._node_narrow: dict[int, str] = {}
        assigns: list[ast.Assign] = info.group("assign")
        for node in assigns:
            if (len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and isinstance(node.value, ast.Call)
                    and is_builtin(self.aliases, node.value.func, ("isinstance",))):
                self._isinstance_alias[node.targets[0].id] = node.value
        # branches: (first line, last line, name, what the test says the name is there)
        self.narrowed: list[tuple[int, int, str, str]] = []
        # line ranges that never run under capture (guarded by is_current_stream_capturing)
        self.off_capture: list[tuple[int, int]] = []
        for node in info.group("branch"):
            if isinstance(node, ast.If):
                self._branches(node, guards)
            elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
                self._and_chain(node)
            elif isinstance(node, ast.IfExp):
                self._conditional(node)
        self._host_rebinds()
        # lines that run once per key (cached work) or only when an optional argument is omitted
        self.first_use = info.first_use()
        attr_flags = class_flags(index, info.owner_class) if info.is_method and info.name != "__init__" else None
        self.optional = optional_ranges(info.node, nodes, index.env_switches, info.group("branch"), attr_flags,
                                        info.group("name"), info.group)
        self.prefill = (info.branches(index.prefill, index.mentions_roles, index.prefill_lengths)
                        if index.mentions_prefill or index.mentions_roles else [])
        calls: list[ast.Call] = info.group("call")
        called = {id(node.func) for node in calls}
        for node in info.group("attribute"):  # (names get kinds in a set looked up by name: order is no matter)
            if node.attr in TENSOR_HINT_ATTRS and isinstance(node.value, ast.Name):
                if node.attr in _TENSOR_HINT_FIELDS or id(node) in called:
                    self._add(node.value.id, "tensor")
        for call in calls:
            if isinstance(call.func, ast.Attribute) and call.func.attr == "record":
                if isinstance(call.func.value, ast.Name):
                    self._add(call.func.value.id, "event")
        for name in index.cpu_generators:
            self._add(name, "cpugen")
        if index.host_tensors and not index.default_device_accelerator:
            for name in index.host_tensors - local_names(info):
                for kind in ("hosttensor", "hostval", "hostconst"):  # one value, the same on every call
                    self._add(name, kind)
        # names the function binds to a tensor's metadata (`shape = w.shape`, `dtype = w.dtype`, `n = w.size(0)`)
        self._metadata_names = {
            t.id for node in assigns if _is_metadata(node.value) for t in node.targets if isinstance(t, ast.Name)}
        for node in info.group("bind"):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._bind(target, node.value)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                self._bind(node.target, node.value)
            elif isinstance(node, ast.NamedExpr):
                self._bind(node.target, node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                self._bind_loop(node.target, node.iter)

    # -- branches ----------------------------------------------------------

    def _branches(self, node: ast.If, guards: Sequence[str]) -> None:
        body = (node.body[0].lineno, _last_line(node.body))
        orelse = (node.orelse[0].lineno, _last_line(node.orelse)) if node.orelse else None
        test, negated = node.test, False
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, negated = test.operand, not negated
        if _capturable_flag(test):
            # `if not is_cg_capturable:` runs only when the caller said the call is not graph-capturable;
            # under `if capturable:` the else branch is that path
            off = body if negated else orelse
            if off is not None:
                self.off_capture.append(off)
            return
        if not negated and isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and any(
                _not_capturable(v) for v in test.values):
            self.off_capture.append(body)  # `if not capturable and ...:` (the operands: ``_and_chain``)
        if self.debug_test(test):
            # `if self.debug_mode:` / `if logger.isEnabledFor(...)` / `if envs.CHECK_X:` checks are off in
            # captured serving; under `if not debug:` the else branch is the debug one
            off = body if not negated else orelse
            if off is not None:
                self.off_capture.append(off)
            elif (negated and isinstance(node.body[-1], ast.Return)
                  and any(stmt is node for stmt in getattr(self.info.node, "body", ()))):
                # `if not validation_enabled(): return` opening the function: the rest of it is the debug path
                fn_end = getattr(self.info.node, "end_lineno", None) or body[1]
                self.off_capture.append((body[1] + 1, fn_end))
            return
        host_side = _host_device_test(test)
        if host_side is not None:
            # `if x.device.type != "cuda":` / `if x.is_cpu:` / `if not x.is_cuda:`: a CPU path, never captured
            off = body if host_side != negated else orelse
            if off is not None:
                self.off_capture.append(off)
        capturing = self._is_capture_test(test, guards)
        if capturing:
            off = orelse if not negated else body
            if off is not None:
                self.off_capture.append(off)
            elif not negated and _exits(node.body):
                # `if is_current_stream_capturing(): raise ...`: what follows never runs under capture
                fn_end = getattr(self.info.node, "end_lineno", None) or body[1]
                self.off_capture.append((body[1] + 1, fn_end))
            return
        facts = []  # (name, state when the test is true, state when false)
        if isinstance(test, ast.Name) and test.id in self._isinstance_alias:
            test = self._isinstance_alias[test.id]
        parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and not negated else [test]
        for part in parts:
            fact = self._narrowing(part)
            if fact is not None:
                facts.append(fact)
        fn_end = getattr(self.info.node, "end_lineno", None) or body[1]
        for name, yes, no in facts:
            if negated:
                yes, no = no, yes
            if yes:
                self.narrowed.append((*body, name, yes))
            if yes == "tensor" and not node.orelse and _exits(node.body) and no is not None:
                # `if isinstance(scale, Tensor): raise ...`: below the test, scale is no tensor
                self.narrowed.append((_last_line(node.body) + 1, fn_end, name, no))
            if yes == "tensor" and _rebinds(node.body, name):
                # `if isinstance(p, Tensor): p = tuple(p.tolist())`: after the branch p is no tensor
                self.narrowed.append((_last_line(node.body) + 1, fn_end, name, "nottensor"))
            if no and orelse is not None and len(parts) == 1:
                self.narrowed.append((*orelse, name, no))

    def debug_test(self, test: ast.AST) -> bool:
        """A test that is true only when debugging or checking: a flag named like ``debug-flags``
        (``self.debug_mode``, ``envs.VLLM_CHECK_X``, ``os.environ.get("X_DEBUG")``, ``__debug__``),
        ``logger.isEnabledFor(...)``, a verbose or trace flag (``self.verbose``, ``enable_trace``), a debug or
        verbosity level above a threshold (``self.verbosity > 1``, ``2 <= event_level``; the same notion as the C++
        rules', ``coldpaths.debug_level_name``), or an ``and`` of tests one of which is such a flag."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return any(self.debug_test(v) for v in test.values)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            if self._debug is not None and _level_above(test):
                return True
            level = _level_name(test.left) or _level_name(test.comparators[0])
            if level and not self._debug_name(level):
                return False  # a verbosity level compared so that it may hold at the default level
            return self.debug_test(test.left)
        if isinstance(test, ast.Call):
            func = test.func
            if isinstance(func, ast.Attribute) and func.attr == "isEnabledFor":
                return True
            qual = self.aliases.resolve(func) or ""
            if qual in ("os.environ.get", "os.getenv") or (isinstance(func, ast.Attribute) and func.attr in (
                    "get", "getenv", "get_bool", "get_bool_env_var", "get_env_bool")) or qual.endswith(
                    ("get_bool_env_var", "get_env_bool")):
                key = test.args[0] if test.args else None
                return isinstance(key, ast.Constant) and isinstance(key.value, str) and self._debug_name(key.value)
            # `validation_enabled()`, `is_debug_mode()`: a switch read through a call of no arguments whose name
            # is a debug flag's and says it is a switch (not `validate()`/`check_inputs()`, which do the checking)
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if not (name and not test.args and not test.keywords and self._debug_name(name)
                    and not _SWITCH_WORDS.isdisjoint(name_words(name))):
                return False
            # a switch of this module that reads the environment with a default of on (`os.environ.get(K, "1")`)
            # runs its checks in serving
            callee = self.index.module_funcs.get(name) if isinstance(func, ast.Name) else None
            return callee is None or not _env_default_on(callee.node)
        if isinstance(test, ast.Subscript) and isinstance(test.slice, ast.Constant) and isinstance(
                test.slice.value, str):
            return self._debug_name(test.slice.value)
        name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
        return bool(name) and (self._debug_name(name) or (self._debug is not None and verbose_flag(name)))

    def _debug_name(self, name: str) -> bool:
        low = name.lower()
        if _NEGATED_FLAG.search(low):
            return False  # `skip_checks`, `disable_debug`: true when the checks do *not* run
        return self._debug is not None and self._debug.match(low) is not None

    def _conditional(self, node: ast.IfExp) -> None:
        """``t.item() if isinstance(t, Tensor) else float(t)``: each arm sees the narrowed name."""
        test, negated = node.test, False
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, negated = test.operand, not negated
        if isinstance(test, ast.Name) and test.id in self._isinstance_alias:
            test = self._isinstance_alias[test.id]
        fact = self._narrowing(test)
        if fact is None:
            return
        name, yes, no = fact
        if negated:
            yes, no = no, yes
        for arm, state in ((node.body, yes), (node.orelse, no)):
            if state is None:
                continue
            for sub in ast.walk(arm):
                if isinstance(sub, ast.Name) and sub.id == name:
                    self._node_narrow[id(sub)] = state

    def _host_rebinds(self) -> None:
        """``beta = beta if isinstance(beta, float) else 1.0`` in the function's own body (not in a loop or a
        branch): below it, ``beta`` is no tensor, whatever its parameter's annotation allowed."""
        fn = self.info.node
        fn_end = getattr(fn, "end_lineno", None)
        body = list(getattr(fn, "body", ()))
        for k, stmt in enumerate(body):
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                    and isinstance(stmt.value, ast.IfExp)) or fn_end is None:
                continue
            name = stmt.targets[0].id
            if all(self._host_arm(arm, name) for arm in live_arms(stmt.value)):
                # up to the statement that binds the name again (the whole statement: a loop may run it earlier)
                end = next((later.lineno - 1 for later in body[k + 1:] if _stores(later, name)), fn_end)
                self.narrowed.append(((stmt.end_lineno or stmt.lineno) + 1, end, name, "nottensor"))

    def _host_arm(self, arm: ast.expr, name: str) -> bool:
        """An arm that is a literal, or ``name`` itself where the test says it is no tensor."""
        if isinstance(arm, ast.Constant):
            return True
        return isinstance(arm, ast.Name) and arm.id == name and self._node_narrow.get(id(arm)) == "nottensor"

    def _and_chain(self, node: ast.BoolOp) -> None:
        """``isinstance(k, int) and 0 < k <= K``: the operands after a test see it narrowed.
        ``not is_cg_capturable and torch.equal(...)``: the operands after the negated flag run only off
        capture (their lines, from the first line no earlier operand reaches)."""
        last = node.values[-1]
        end = getattr(last, "end_lineno", None) or last.lineno
        off_done = False
        for i, value in enumerate(node.values[:-1]):
            fact = self._narrowing(value)
            if fact is not None and fact[1] == "nottensor":
                self.narrowed.append((node.values[i + 1].lineno, end, fact[0], "nottensor"))
            if not off_done and _not_capturable(value):
                off_done = True
                start = max([node.values[i + 1].lineno] + [
                    (getattr(v, "end_lineno", None) or v.lineno) + 1 for v in node.values[:i]])
                if start <= end:
                    self.off_capture.append((start, end))

    def _is_capture_test(self, test: ast.AST, guards: Sequence[str]) -> bool:
        if not isinstance(test, ast.Call):
            return False
        qual = self.aliases.resolve(test.func) or ""
        last = qual.rpartition(".")[2] if qual else getattr(test.func, "attr", getattr(test.func, "id", ""))
        if last == "is_current_stream_capturing":
            return True
        return any(g == qual or g == last or qual.endswith("." + g) for g in guards)

    def _narrowing(self, test: ast.AST) -> tuple[str, str | None, str | None] | None:
        """``isinstance(x, T)`` / ``x is None``: (name, what x is if true, what x is if false)."""
        if isinstance(test, ast.Call) and is_builtin(self.aliases, test.func, ("isinstance",)) and len(test.args) == 2:
            name, kind = test.args
            if not isinstance(name, ast.Name):
                return None
            types = kind.elts if isinstance(kind, ast.Tuple) else [kind]
            tensor = any(cast(str, self.aliases.resolve(t) or getattr(t, "attr", getattr(t, "id", "")))
                         .endswith("Tensor") for t in types)
            if tensor:
                return (name.id, "tensor", "nottensor")
            return (name.id, "nottensor", None)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            typed = self._type_test(test)
            if typed is not None:
                return typed
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name):
            right = test.comparators[0]
            if isinstance(right, ast.Constant) and right.value is None:
                if isinstance(test.ops[0], ast.Is):
                    return (test.left.id, "nottensor", None)
                if isinstance(test.ops[0], ast.IsNot):
                    return (test.left.id, None, "nottensor")
        return None

    def _type_test(self, test: ast.Compare) -> tuple[str, str | None, str | None] | None:
        """``type(x) is list`` / ``type(x) is not list`` / ``type(x) == tuple`` (also ``torch.Tensor``):
        (name, what x is if true, what x is if false), like the matching ``isinstance`` test."""
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if not (isinstance(left, ast.Call) and is_builtin(self.aliases, left.func, ("type",))
                and len(left.args) == 1 and not left.keywords and isinstance(left.args[0], ast.Name)):
            return None
        name = left.args[0].id
        kind = cast(str, self.aliases.resolve(right) or getattr(right, "attr", getattr(right, "id", "")))
        if kind.endswith("Tensor"):
            yes, no = "tensor", "nottensor"
        elif isinstance(right, ast.Name) and right.id in _HOST_TYPES and not self.aliases.is_bound(right.id):
            yes, no = "nottensor", None
        else:
            return None
        if isinstance(op, (ast.Is, ast.Eq)):
            return (name, yes, no)
        if isinstance(op, (ast.IsNot, ast.NotEq)):
            return (name, no, yes)
        return None

    def narrowed_at(self, name: str, line: int) -> str | None:
        state = None
        for start, end, n, what in self.narrowed:
            if n == name and start <= line <= end:
                state = what  # the innermost (latest) branch wins
        return state

    def narrowed_tensor_only(self, node: ast.Name) -> bool:
        """A name known as a tensor only because an ``isinstance(x, Tensor)`` test holds here: its device is
        not established (an ``int[]`` argument someone may pass as a CPU tensor)."""
        if node.id in self._typed_tensors:
            return False
        state = self._node_narrow.get(id(node)) if self._node_narrow else None
        return (state or self.narrowed_at(node.id, node.lineno)) == "tensor"

    def in_guarded_branch(self, line: int) -> bool:
        return any(start <= line <= end for start, end, _, _ in self.narrowed)

    def off_capture_path(self, line: int) -> bool:
        return any(start <= line <= end for start, end in self.off_capture)

    def first_use_at(self, line: int, col: int = 0) -> Cold | None:
        """The innermost first-use (cached) range holding ``line``/``col``, or None."""
        return _innermost(self.first_use, line, col)

    def prefill_at(self, line: int, col: int = 0) -> Cold | None:
        """The innermost prefill, non-CUDA platform or timing branch holding ``line``/``col``, or None."""
        return _innermost(self.prefill, line, col)

    def optional_at(self, line: int, col: int = 0) -> Cold | None:
        """The innermost optional-argument fallback holding ``line``/``col``, or None."""
        return _innermost(self.optional, line, col)

    # -- host values ---------------------------------------------------------

    def host_named(self, name: str) -> bool:
        hit = self._host_name_memo.get(name)
        if hit is None:
            globs = glob_regex(self.host_names)
            hit = self._host_name_memo[name] = globs is not None and globs.match(name) is not None
        return hit

    def is_host_value(self, node: ast.AST, depth: int = 0) -> bool:
        """Does ``node`` hold a host (CPU or numpy) value, so reading it needs no device sync?"""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(node, ast.Name):
            return self.has(node.id, "hostval") or self.host_named(node.id)
        if isinstance(node, ast.Attribute):
            if node.attr in self._ctx_attrs and isinstance(node.value, ast.Name) and node.value.id == self._ctx:
                return True  # `ctx.scale`: forward assigned it only host values
            return self.host_named(node.attr) or (node.attr in TENSOR_VIEW_ATTRS
                                                  and self.is_host_value(node.value, depth + 1))
        if isinstance(node, ast.Subscript):
            saved = self._saved_position(node)
            if saved is not None:
                return saved  # `ctx.saved_tensors[1]`
            return self.is_host_value(node.value, depth + 1)
        if isinstance(node, ast.BinOp):
            sides = (node.left, node.right)
            hosts = [self.is_host_value(s, depth + 1) for s in sides]
            return any(hosts) and not any(not h and self.tensorish(s, depth + 1) for s, h in zip(sides, hosts))
        if isinstance(node, ast.UnaryOp):
            return self.is_host_value(node.operand, depth + 1)
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            hosts = [self.is_host_value(s, depth + 1) for s in operands]
            return any(hosts) and not any(not h and self.tensorish(s, depth + 1) for s, h in zip(operands, hosts))
        if isinstance(node, ast.Call):
            func = node.func
            qual = self.aliases.resolve(func)
            if qual is not None:
                if qual.split(".", 1)[0] in ("numpy", "np"):
                    return True
                if qual.endswith((".get_rng_state", ".get_rng_state_all")):
                    return True  # RNG state is a CPU tensor, for CUDA generators too
                if self.host_tensor_call(node) or self.host_factory_call(node) or self.legacy_ctor_call(node):
                    return True
                device = _kw(node, "device")
                if device is not None and qual.startswith("torch.") and is_cpu_device(self.aliases, device):
                    return True  # torch.empty(..., device="cpu")

                # `torch.prod(torch.tensor(shape))`, `torch.any(x_cpu < 0)`: an op on host tensors stays there
                module = qual.rpartition(".")[0]
                return (module in _TENSOR_MODULES and bool(node.args) and _kw(node, "device") is None
                        and self.is_host_value(node.args[0], depth + 1)
                        and not any(self.tensorish(a, depth + 1) for a in node.args[1:]))
            helper = self._helper(func)
            if helper is not None and self.returns_host(helper):
                return True  # a helper of this module returning a CPU tensor
            if isinstance(func, ast.Attribute):
                attr = func.attr
                if attr in ("cpu", "numpy", "tolist") and not node.args:
                    return True
                if attr in ("get_state", "graphsafe_get_state") and not node.args:
                    return True  # a generator's state is a CPU tensor
                if attr == "to":
                    return self.to_cpu(node) or (self.is_host_value(func.value, depth + 1) and not self._moves(node))
                if attr in ("cuda", "pin_memory"):
                    return attr == "pin_memory"
                return self.is_host_value(func.value, depth + 1)
        return False

    def _moves(self, node: ast.Call) -> bool:
        """``.to(x)`` with a device argument (not a dtype)."""
        target = _kw(node, "device") or (node.args[0] if node.args else None)
        if target is None:
            return False
        if isinstance(target, ast.Constant):
            return isinstance(target.value, (str, int)) and not isinstance(target.value, bool)
        qual = self.aliases.resolve(target)
        if qual is not None and qual.startswith("torch.") and qual != "torch.device":
            return False
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        return "dtype" not in name.lower()

    def baked_source(self, expr: ast.AST) -> ast.AST | None:
        """A read of a host tensor or array (``x_cpu.max().item()``) that ``expr`` derives from, or None.

        Not a sync, but the value is fixed when a graph is captured."""
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Call) and self._host_read(node):
                return node
            if isinstance(node, ast.Name) and self.has(node.id, "hostread"):
                return node
            stack.extend(child_nodes(node))
        return None

    def baked_source_of(self, name: str) -> ast.AST | None:
        return self._baked_origin.get(name)

    def structural(self, expr: ast.AST) -> bool:
        """Built only from shapes, sizes, strides, ``len()`` and literals (``B * H``, ``list(x.shape)``,
        ``torch.prod(torch.tensor(batch))`` where ``*batch, L = x.shape``): fixed by the call's shapes."""
        names = 0
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Attribute) and node.attr in _STRUCTURE_ATTRS:
                names += 1
                continue
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr in SHAPE_METHODS:
                    names += 1
                    stack.extend(node.args)
                    continue
                if is_builtin(self.aliases, func, ("len",)):
                    names += 1
                    continue
                qual = self.aliases.resolve(func)
                if is_builtin(self.aliases, func, ("int", "list", "tuple", "max", "min", "sum", "abs")) or (
                        qual in ("torch.tensor", "torch.prod", "math.prod", "triton.cdiv", "torch.Size")
                        and _kw(node, "device") is None):
                    stack.extend(node.args)
                    continue
                return False
            if isinstance(node, ast.Name):
                if not self.has(node.id, "shape"):
                    return False
                names += 1
                continue
            if isinstance(node, (ast.Subscript, ast.BinOp, ast.UnaryOp, ast.Tuple, ast.List, ast.Starred)):
                stack.extend(ast.iter_child_nodes(node))
                continue
            if isinstance(node, (ast.Constant, ast.expr_context, ast.operator, ast.unaryop, ast.Slice)):
                if isinstance(node, ast.Slice):
                    stack.extend(ast.iter_child_nodes(node))
                continue
            return False
        return names > 0

    def _host_read(self, node: ast.Call) -> bool:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("item", "tolist") and not node.args:
            if isinstance(func.value, ast.Name) and self.has(func.value.id, "hostconst"):
                return False  # a module's host tensor built once: the same value on every call
            return self.is_host_value(func.value)
        if isinstance(func, ast.Name) and len(node.args) == 1 and is_builtin(self.aliases, func, ("int", "float")):
            arg = node.args[0]
            hosts = [n.id for n in ast.walk(arg) if isinstance(n, ast.Name)
                     and (self.has(n.id, "hostval") or self.host_named(n.id))]
            if hosts and all(self.has(n, "hostconst") for n in hosts):
                return False  # `int(CHUNK.item() * 4)`: from a module's host constant, the same every call
            return (self.is_host_value(arg) and not isinstance(arg, (ast.Name, ast.Attribute))
                    and not self.structural(arg))
        return False

    # -- building ----------------------------------------------------------

    def _add(self, name: str, kind: str) -> None:
        self.kinds.setdefault(name, set()).add(kind)

    def _params(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        a = fn.args
        for star in (a.vararg, a.kwarg):
            if star is not None and star.annotation is not None:
                # `*tensors: torch.Tensor` annotates each element: `tensors` is a tuple (`**kw`, a dict) on the host
                self._add(star.arg, "hostseq")
        shadowed = _shadowed_by_constants(fn)
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
            if arg.annotation is None or arg.arg in shadowed:
                continue
            text = _annotation_text(arg.annotation)
            if names_tensor_type(text) and not _CONTAINER_ANNOTATION.match(_strip_optional(text)):
                if self._comment_says_host(arg.lineno):
                    self._add(arg.arg, "hostval")  # `n: torch.Tensor,  # CPU tensor [1]`
                else:
                    self._add(arg.arg, "tensor")
                    self._typed_tensors.add(arg.arg)
            elif text.split("[", 1)[0].split(".")[-1] in _SEQ_ANNOTATIONS and "[" in text:
                self._add(arg.arg, "hostseq")

    def _comment_says_host(self, line: int) -> bool:
        text = self.index.line(line)
        if "#" not in text:
            return False
        return _HOST_COMMENT.search(text.split("#", 1)[1]) is not None

    def _bind(self, target: ast.AST, value: ast.expr) -> None:
        kinds = self.classify(value)
        if self.in_guarded_branch(getattr(value, "lineno", 0)):
            kinds.discard("host")  # a value read under an isinstance/None test does not taint the rest
        if isinstance(target, ast.Name):
            literal = value if isinstance(value, (ast.Tuple, ast.List)) else None
            self._literals[target.id] = literal if target.id not in self._literals else None
            for kind in kinds:
                self._add(target.id, kind)
            if "tensor" in kinds:
                self._typed_tensors.add(target.id)
            if "host" in kinds and target.id not in self.host_origin:
                self.host_origin[target.id] = self._own_source(target.id, value)
            if "hostread" in kinds and target.id not in self._baked_origin:
                self._baked_origin[target.id] = self.baked_source(value) or value
        elif isinstance(target, (ast.Tuple, ast.List)):
            elem_kinds = kinds - {"hostseq", "hosttensor", "pinned", "cpugen", "event"}
            if isinstance(value, ast.Name) and self._literals.get(value.id) is not None:
                value = self._literals[value.id] or value  # bound once, to a literal: unpack its elements
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                # `a, b = x.size(0), y.max().item()`: each name gets its own value's kinds
                for elt, part in zip(target.elts, value.elts):
                    if not isinstance(elt, ast.Starred):
                        self._bind(elt, part)
                return
            saved = self._ctx_saved if self._saved_tuple(value) else None
            if saved is not None and (len(saved) != len(target.elts)
                                      or any(isinstance(e, ast.Starred) for e in target.elts)):
                saved = None
            for n, elt in enumerate(target.elts):
                if isinstance(elt, ast.Starred):
                    elt = elt.value
                if isinstance(elt, ast.Name):
                    # `absmax, shape, dtype = state` where the function also binds `shape = w.shape`: the name
                    # holds metadata, whatever the unpacked value was taken for
                    meta = elt.id in self._metadata_names
                    for kind in elem_kinds - {"tensor", "mask"} if meta else elem_kinds:
                        self._add(elt.id, kind)
                    if saved is not None and saved[n]:
                        # `a, scale = ctx.saved_tensors` where forward saved a CPU tensor second
                        self._add(elt.id, "hosttensor")
                        self._add(elt.id, "hostval")
                    if "host" in elem_kinds and elt.id not in self.host_origin:
                        self.host_origin[elt.id] = self.host_source(value) or value

    def _own_source(self, name: str, value: ast.expr) -> ast.AST:
        """Where ``name = value`` gets its host value. ``n = t.max().item() if n is None else n`` names ``n``
        itself as the host value it reads: the origin is the sync in the value, not the name."""
        source = self.host_source(value) or value
        if isinstance(source, ast.Name) and source.id == name:
            syncs = [n for n in ast.walk(value) if isinstance(n, ast.Call) and self.sync_kind(n) is not None]
            return syncs[0] if syncs else value
        return source

    def _bind_loop(self, target: ast.AST, iterable: ast.expr) -> None:
        kinds = {"loop"}
        if self.host_source(iterable) is not None:
            kinds.add("host")
        if isinstance(target, ast.Name) and self.holds_host_values(iterable):
            kinds.add("hostval")  # an element of host values is a host value: reading it needs no sync
        if self.tensorish(iterable):
            kinds.add("tensor")
        names = [target] if isinstance(target, ast.Name) else [
            e for e in getattr(target, "elts", ()) if isinstance(e, ast.Name)]
        for name in names:
            self._literals[name.id] = None
            for kind in kinds:
                self._add(name.id, kind)
            if "host" in kinds and name.id not in self.host_origin:
                self.host_origin[name.id] = self.host_source(iterable) or iterable

    def classify(self, value: ast.expr) -> set[str]:
        kinds: set[str] = set()
        if self.host_source(value) is not None:
            kinds.add("host")
        if self.is_host_value(value):
            kinds.add("hostval")
        if self.baked_source(value) is not None:
            kinds.add("hostread")
        if self.tensorish(value):
            kinds.add("tensor")
        if self.is_mask(value, strict=True):
            kinds.add("mask")
        if self.per_call_reason(value, loop_only=True):
            kinds.add("loop")
        if isinstance(value, _SEQ_NODES) or self.is_host_seq(value):
            kinds.add("hostseq")
        if self.structural(value):
            kinds.add("shape")
        if isinstance(value, (ast.ListComp, ast.GeneratorExp, ast.List, ast.Tuple)) and self.holds_host_values(value):
            kinds.add("hostvals")
        if isinstance(value, ast.Subscript) and self._saved_position(value):
            kinds.add("hosttensor")
        if isinstance(value, ast.Call):
            qual = self.aliases.resolve(value.func)
            if self.host_tensor_call(value) or self.legacy_ctor_call(value):
                kinds.add("hosttensor")
                pinned = _kw(value, "pin_memory")  # `pin_memory=<a flag the caller sets>`: taken as pinned
                if pinned is not None and not (isinstance(pinned, ast.Constant) and not pinned.value):
                    kinds.add("pinned")
            elif (isinstance(value.func, ast.Attribute) and value.func.attr == "pin_memory"
                  and self.is_host_tensor(value.func.value)):
                kinds.update(("hosttensor", "pinned"))
            elif qual in ("torch.Generator", "torch._C.Generator") and not _device_is_accelerator(value):
                kinds.add("cpugen")
        return kinds

    # -- predicates --------------------------------------------------------

    def has(self, name: str, kind: str) -> bool:
        return kind in self.kinds.get(name, ())

    def tensorish(self, node: ast.AST, depth: int = 0) -> bool:
        """Heuristic: does ``node`` evaluate to a torch tensor?"""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(node, ast.Name):
            if self.has(node.id, "hostval") or self.host_named(node.id):
                return False
            state = self._node_narrow.get(id(node)) if self._node_narrow else None
            if state is not None:
                return state == "tensor"
            if self.narrowed and self.narrowed_at(node.id, node.lineno) == "nottensor":
                return False
            return self.has(node.id, "tensor")
        if isinstance(node, ast.Attribute):
            if self.host_named(node.attr):
                return False
            return node.attr in TENSOR_VIEW_ATTRS and self.tensorish(node.value, depth + 1)
        if isinstance(node, ast.Subscript):
            return self.tensorish(node.value, depth + 1)
        if isinstance(node, ast.BinOp):
            return self.tensorish(node.left, depth + 1) or self.tensorish(node.right, depth + 1)
        if isinstance(node, ast.UnaryOp):
            return not isinstance(node.op, ast.Not) and self.tensorish(node.operand, depth + 1)
        if isinstance(node, ast.Compare):
            if any(isinstance(op, IDENTITY_OPS) for op in node.ops):
                return False
            if any(isinstance(c, ast.Constant) and c.value is None for c in (node.left, *node.comparators)):
                return False  # `mask != None`: a tensor refuses None, so Python compares identity: a plain bool
            return self.tensorish(node.left, depth + 1) or any(self.tensorish(c, depth + 1) for c in node.comparators)
        if isinstance(node, ast.IfExp):
            return any(self.tensorish(arm, depth + 1) for arm in live_arms(node))
        if isinstance(node, ast.Call):
            return self.tensor_call(node, depth)
        return False

    def tensor_call(self, node: ast.Call, depth: int = 0) -> bool:
        func = node.func
        qual = self.aliases.resolve(func)
        if qual is not None and qual.startswith("torch."):
            module, _, name = qual.rpartition(".")
            if qual.startswith("torch.ops."):
                return not any(part.startswith(_PREDICATE_PREFIXES[:-1]) for part in qual.split(".")[2:])
            return (module in _TENSOR_MODULES and name not in NON_TENSOR_TORCH and not name[:1].isupper()
                    and not name.startswith(_PREDICATE_PREFIXES))
        if isinstance(func, ast.Attribute):
            if func.attr in NON_TENSOR_METHODS or func.attr.startswith(_PREDICATE_PREFIXES):
                return False
            if func.attr in ("cpu", "tolist") or (func.attr == "to" and self.to_cpu(node)):
                return False
            if func.attr == "cuda" or (func.attr == "to" and self._moves(node)):
                return self.tensorish(func.value, depth + 1) or self.is_host_value(func.value, depth + 1)
            if self.is_host_value(func.value, depth + 1):
                return False
            if func.attr in REDUCTIONS:
                return qual is None  # `t.sum()`, not a module function such as `np.max`
            return self.tensorish(func.value, depth + 1)
        return False

    def is_mask(self, node: ast.AST, strict: bool = False, depth: int = 0) -> bool:
        """A boolean tensor. ``strict`` also requires comparisons to involve a tensor."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(node, ast.Compare):
            if any(isinstance(op, IDENTITY_OPS) for op in node.ops):
                return False
            return self.tensorish(node) if strict else True
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            return self.is_mask(node.operand, strict, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
            return self.is_mask(node.left, strict, depth + 1) or self.is_mask(node.right, strict, depth + 1)
        if isinstance(node, ast.Name):
            return self.has(node.id, "mask")
        if isinstance(node, ast.Call):
            qual = self.aliases.resolve(node.func)
            if qual is not None and qual.startswith("torch."):
                return qual.rpartition(".")[2] in _MASK_FUNCS
            func = node.func
            if isinstance(func, ast.Attribute):
                if func.attr in _MASK_METHODS:
                    return func.attr != "bool" or not node.args
                if func.attr == "to" and node.args:
                    return self.aliases.resolve(node.args[0]) == "torch.bool"
        return False

    def sync_kind(self, node: ast.Call) -> str | None:
        """The GC1xx code of a call that moves a device value to the host, or None.

        Only the syncs whose *result* is a host value (used by the taint pass):
        ``.item()``, ``int/float/bool(t)``, ``.tolist()``, ``.cpu()``/``.numpy()``/
        ``.to("cpu")`` and builtin ``max/min/sum/any/all(t)``.
        """
        func = node.func
        if isinstance(func, ast.Attribute):
            attr = func.attr
            if attr in ("item", "tolist", "cpu", "numpy", "to") and self.is_host_value(func.value):
                return None  # reading a host tensor or array does not touch the device
            if attr == "item" and not node.args and not node.keywords:
                return "GC101"
            if attr == "tolist" and not node.args and not node.keywords:
                return "GC103"
            if attr in ("cpu", "numpy") and not node.args:
                return "GC104"
            if attr == "to" and self.to_cpu(node):
                return "GC104"
            return None
        if isinstance(func, ast.Name) and len(node.args) == 1 and not node.keywords:
            if self.is_host_value(node.args[0]):
                return None
            if is_builtin(self.aliases, func, ("int", "float", "bool")) and self.tensorish(node.args[0]):
                return "GC102"
            if is_builtin(self.aliases, func, ("max", "min", "sum", "any", "all")) and self.tensorish(node.args[0]):
                return "GC111"
        return None

    def to_cpu(self, node: ast.Call) -> bool:
        targets = [*node.args[:1], *(kw.value for kw in node.keywords if kw.arg == "device")]
        for target in targets:
            if (isinstance(target, ast.Constant) and isinstance(target.value, str)
                    and target.value.split(":")[0] == "cpu"):
                return True
            if isinstance(target, ast.Call) and self.aliases.resolve(target.func) == "torch.device" and target.args:
                arg = target.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.split(":")[0] == "cpu":
                    return True
        return False

    def host_source(self, expr: ast.AST) -> ast.AST | None:
        """The host-sync expression (or host name) ``expr`` derives from, or None."""
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Call) and self.sync_kind(node) is not None:
                return node
            if isinstance(node, ast.Name) and self.has(node.id, "host"):
                return node
            stack.extend(child_nodes(node))
        return None

    def per_call_reason(self, expr: ast.AST, loop_only: bool = False) -> str | None:
        """Why ``expr`` differs from call to call (for constexprs), or None.

        Shape-like accesses (``.shape``, ``.size()``, ``.stride()``, ``.dim()``,
        ``.numel()``, ``.dtype``, ``len()``) are safe whatever they are applied to;
        literals, module constants and parameters with no tensor evidence are
        safe too.
        """
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Attribute) and node.attr in _STRUCTURE_ATTRS:
                continue
            if isinstance(node, ast.IfExp) and _constant_truth(node.test) is not None:
                stack.extend(live_arms(node))  # `a if not None else x`: the other arm never runs
                continue
            if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                continue  # `x is None`: fixed by the call's structure, not by tensor values
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute) and (func.attr in SHAPE_METHODS or func.attr in _STRUCTURE_METHODS
                                                        or func.attr.startswith(("is_", "has_"))):
                    continue
                if is_builtin(self.aliases, func, ("len", "isinstance", "hasattr", "type")):
                    continue
                qual = self.aliases.resolve(func) or ""
                if qual.rpartition(".")[2].startswith(("is_", "has_")) or qual.rpartition(".")[2] in _STRUCTURE_METHODS:
                    continue
                if not loop_only and self.sync_kind(node) is not None:
                    return "derives from a value synchronized to the host"
                if not loop_only and self.tensor_call(node):
                    return "is a tensor value"
            if isinstance(node, ast.Name):
                kinds = self.kinds.get(node.id, ())
                if ("shape" in kinds and "host" not in kinds) or "hostconst" in kinds:
                    continue  # fixed by the call's shapes, or a module's host constant
                if "loop" in kinds and ("host" in kinds or "tensor" in kinds or "hostread" in kinds):
                    return f"changes every iteration of a loop over values read at run time (`{node.id}`)"
                if not loop_only and "hostread" in kinds and "host" not in kinds:
                    return f"derives from `{node.id}`, a value read from a host tensor per call"
                if not loop_only:
                    if "host" in kinds:
                        return f"derives from `{node.id}`, a value synchronized to the host"
                    if "tensor" in kinds:
                        return f"is derived from tensor `{node.id}`"
            stack.extend(child_nodes(node))
        return None

    def is_host_seq(self, node: ast.AST) -> bool:
        if isinstance(node, _SEQ_NODES):
            return True
        if isinstance(node, ast.Name):
            return self.has(node.id, "hostseq")
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr == "tolist":
                return True
            return is_builtin(self.aliases, node.func, ("list", "tuple", "range", "sorted"))
        return False

    def host_tensor_call(self, node: ast.Call) -> bool:
        """``torch.tensor(data)``/``as_tensor``/``from_numpy`` built on the host."""
        qual = self.aliases.resolve(node.func)
        if qual not in _HOST_TENSOR_CTORS:
            return False
        if qual == "torch.from_numpy":
            return True
        data = node.args[0] if node.args else _kw(node, "data")
        if data is None:
            return False
        device = _kw(node, "device")
        if device is not None and not is_cpu_device(self.aliases, device):
            return False
        if device is None and not self.default_device_is_host(node):
            return False
        if qual == "torch.tensor":
            return not self.tensorish(data)
        return self.is_host_seq(data)

    def legacy_ctor_call(self, node: ast.Call) -> bool:
        """``torch.FloatTensor([s])``, ``torch.LongTensor(n)``: a legacy typed constructor, on the host (unless the
        module sets a default device: taken as moving them too)."""
        return (self.aliases.resolve(node.func) in _LEGACY_CTORS and not any(kw.arg == "device" for kw in node.keywords)
                and self.default_device_is_host(node))

    # -- across functions: helpers' returns, the autograd context ----------

    def _facts(self, info: FuncInfo) -> FunctionFacts | None:
        if self._facts_of is not None:
            return self._facts_of(info)
        host_names, guards, debug_flags = self._settings
        return FunctionFacts(info, self.index, host_names, guards, debug_flags)

    def _helper(self, func: ast.expr) -> FuncInfo | None:
        """The function of this module a call's ``func`` names: ``helper`` (module level), ``self.helper`` /
        ``cls.helper`` (a method of the caller's class, defined in no other class of the module) or
        ``Cls.helper``."""
        if isinstance(func, ast.Name):
            return self.index.module_funcs.get(func.id)
        if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
            return None
        owner = func.value.id
        if owner in ("self", "cls"):
            owner = self.info.owner_class or ""
        elif owner not in self.index.class_defs:
            return None
        method = self.index.class_methods.get(owner, {}).get(func.attr)
        if method is None or len(self.index.class_defs.get(owner, ())) != 1:
            return None
        if self.index.method_classes().get(func.attr, 0) != 1:
            return None  # another class of the module defines it too: a subclass may override it
        return method

    def returns_host(self, info: FuncInfo) -> bool:
        """Does ``info`` return only host values (``torch.tensor([n], device="cpu")``, ``x.cpu()``)? Judged by
        its ``return`` expressions with its own value model; a generator or coroutine never does. Memoized."""
        memo = self.index.returns_host_memo
        key = id(info.node)
        if key in memo:
            return memo[key]
        memo[key] = False  # recursion guard
        if isinstance(info.node, ast.AsyncFunctionDef):
            return False
        own = info.own_nodes()
        if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own):
            return False
        values = [n.value for n in own if isinstance(n, ast.Return)]
        if not values or any(v is None for v in values):
            return False
        facts = self._facts(info)
        memo[key] = facts is not None and all(facts.is_host_value(v) for v in values if v is not None)
        return memo[key]

    def _ctx_host(self, cls: str) -> tuple[tuple[bool, ...] | None, frozenset[str]]:
        """For autograd class ``cls``: which positions of ``ctx.saved_tensors`` hold host tensors (None when the
        saves differ in length or cannot all be seen) and which ``ctx`` attributes only ever get host values.
        Memoized on the module index."""
        memo = self.index.ctx_host_memo
        if cls in memo:
            return cast("tuple[tuple[bool, ...] | None, frozenset[str]]", memo[cls])
        memo[cls] = (None, frozenset())
        writes = self.index.ctx_writes(cls)
        if writes is None:
            return None, frozenset()
        facts: dict[int, FunctionFacts | None] = {}

        def host(value: ast.expr, where: FuncInfo) -> bool:
            if id(where) not in facts:
                facts[id(where)] = self._facts(where)
            judge = facts[id(where)]
            return judge is not None and judge.is_host_value(value)

        saved: tuple[bool, ...] | None = None
        lengths = {len(args) for args, _ in writes.saves}
        if len(lengths) == 1:
            saved = tuple(all(host(args[i], where) for args, where in writes.saves) for i in range(lengths.pop()))
        attrs = frozenset(attr for attr, values in writes.attrs.items()
                          if values and all(host(v, where) for v, where in values))
        memo[cls] = (saved, attrs)
        return saved, attrs

    def _saved_tuple(self, node: ast.AST) -> bool:
        """``ctx.saved_tensors`` in a backward."""
        return (self._ctx is not None and isinstance(node, ast.Attribute) and node.attr in _SAVED_ATTRS
                and isinstance(node.value, ast.Name) and node.value.id == self._ctx)

    def _saved_position(self, node: ast.Subscript) -> bool | None:
        """For ``ctx.saved_tensors[i]``: whether forward saved a host tensor at ``i``; None for other subscripts."""
        if self._ctx_saved is None or not self._saved_tuple(node.value):
            return None
        index, sign = node.slice, 1
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
            index, sign = index.operand, -1
        if not isinstance(index, ast.Constant) or type(index.value) is not int:
            return False
        n = sign * index.value
        return -len(self._ctx_saved) <= n < len(self._ctx_saved) and self._ctx_saved[n]

    def default_device_is_host(self, node: ast.AST) -> bool:
        """Does a device-less factory at ``node`` make a host tensor? Not under ``with torch.device("cuda"):``
        nor in a module that calls ``torch.set_default_device`` with something other than the CPU."""
        if self.index.default_device_accelerator:
            return False
        line = getattr(node, "lineno", 0)
        return not any(first <= line <= last for first, last in self._device_blocks)

    def host_factory_call(self, node: ast.Call) -> bool:
        """``torch.randint(0, n, (1,))``, ``torch.zeros(n)``...: a factory given no ``device=`` (nor ``out=``)
        makes a tensor on the default device, the host unless the code sets another one."""
        if self.aliases.resolve(node.func) not in _FACTORIES:
            return False
        if any(kw.arg in ("device", "out") or kw.arg is None for kw in node.keywords):
            return False  # a device given (a CPU one is handled by the caller), an out= buffer, or **kwargs
        generator = _kw(node, "generator")
        if generator is not None and not (isinstance(generator, ast.Name) and self.has(generator.id, "cpugen")):
            return False  # a generator's device decides where the draw happens
        return self.default_device_is_host(node)

    def holds_host_values(self, node: ast.AST) -> bool:
        """A list, tuple or comprehension whose every element is a host value (``[bt[i] for i in r]`` of a
        ``.cpu()`` copy), a name bound to one, or a host tensor or array (iterating it yields host values)."""
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return self.is_host_value(node.elt)
        if isinstance(node, (ast.List, ast.Tuple)):
            return bool(node.elts) and all(self.is_host_value(e) for e in node.elts)
        if isinstance(node, ast.Name) and self.has(node.id, "hostvals"):
            return True
        return self.is_host_value(node)

    def is_host_tensor(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Call):
            return self.host_tensor_call(node)
        return isinstance(node, ast.Name) and self.has(node.id, "hosttensor")

    def is_pinned(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr == "pin_memory":
                return True
            pinned = _kw(node, "pin_memory")  # pin_memory=<a flag the caller sets>: taken as pinned
            return pinned is not None and not (isinstance(pinned, ast.Constant) and not pinned.value)
        return isinstance(node, ast.Name) and self.has(node.id, "pinned")


_SWITCH_WORDS = frozenset({"enabled", "enable", "on", "mode", "active", "flag", "is", "should", "use"})
def _level_name(node: ast.AST) -> str:
    """The name of a debug or verbosity level (``self.verbosity``, ``event_level()``), or ""."""
    if isinstance(node, ast.Call) and not node.args and not node.keywords:
        node = node.func
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name if name and debug_level_name(name) else ""


def _level_above(test: ast.Compare) -> bool:
    """``level > 0``, ``level >= 2``, ``level >= threshold``, ``2 <= level`` where ``level`` (a name, an attribute
    or a call of no arguments) is a debug or verbosity level (``coldpaths.debug_level_name``): off at the default
    level (0 or less)."""
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(op, (ast.Lt, ast.LtE)):  # `2 <= level` -> `level >= 2`
        left, right = right, left
        op = ast.GtE() if isinstance(op, ast.LtE) else ast.Gt()
    if not _level_name(left) or not isinstance(op, (ast.Gt, ast.GtE)):
        return False
    if isinstance(right, ast.Constant):
        value = right.value
        if isinstance(value, bool) or not isinstance(value, int):
            return False
        return value >= (0 if isinstance(op, ast.Gt) else 1)
    return isinstance(right, (ast.Name, ast.Attribute))


_NEGATED_FLAG = DEBUG_NEGATED  # shared with the C++ debug branches (coldpaths.debug_name)
_NEGATION_WORDS = frozenset({"not", "no", "non", "skip", "disable", "disabled"})


def _capturable_flag(node: ast.AST) -> bool:
    """A flag that says the call is CUDA-graph capturable (``capturable``, ``is_cg_capturable``,
    ``self.graph_capturable``): a name or attribute with the ``_``-separated word ``capturable`` and no
    negating word (``not_capturable`` says the opposite)."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    words = set(name.lower().split("_"))
    return "capturable" in words and not words & _NEGATION_WORDS


def _not_capturable(node: ast.AST) -> bool:
    """``not capturable``: true only when the call is not graph-capturable."""
    negated = False
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node, negated = node.operand, not negated
    return negated and _capturable_flag(node)
_HOST_COMMENT = re.compile(r"(?i)\b(cpu|host|pinned)\b")


def _is_metadata(value: ast.AST) -> bool:
    """``x.shape`` / ``x.dtype`` / ``x.device`` / ``x.size()`` (and such): a host value describing a tensor."""
    if isinstance(value, ast.Attribute):
        return value.attr in ("shape", "dtype", "device", "layout", "ndim")
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr in ("size", "dim", "stride", "numel"))


def _compile_globs(patterns: Sequence[str]) -> re.Pattern[str] | None:
    return _compiled_globs(tuple(patterns))


@functools.lru_cache(maxsize=64)
def _compiled_globs(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """One regex for the globs (built once per list: every function's facts ask for the same one)."""
    pats = [fnmatch.translate(p.lower()) for p in patterns if p]
    return re.compile("|".join(pats)) if pats else None


def _strip_optional(text: str) -> str:
    """``Optional[list[Tensor]]`` / ``list[Tensor] | None`` -> ``list[Tensor]``."""
    text = text.strip()
    for head in ("typing.Optional[", "Optional["):
        if text.startswith(head) and text.endswith("]"):
            return text[len(head):-1].strip()
    for tail in ("| None", "|None"):
        if text.endswith(tail):
            return text[: -len(tail)].strip()
    if text.startswith(("None |", "None|")):
        return text.split("|", 1)[1].strip()
    return text


def _host_device_test(test: ast.AST) -> bool | None:
    """True when ``test`` holds only for a tensor off the accelerator (``x.device.type == "cpu"``,
    ``x.device.type != "cuda"``, ``x.is_cpu``), False when only on it (``x.is_cuda``,
    ``x.device.type == "cuda"``), None for any other test."""
    if isinstance(test, ast.Attribute) and test.attr in ("is_cpu", "is_cuda"):
        return test.attr == "is_cpu"
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq))):
        return None
    left, right = test.left, test.comparators[0]
    if isinstance(left, ast.Constant):
        left, right = right, left
    if not (isinstance(left, ast.Attribute) and left.attr == "type" and isinstance(left.value, ast.Attribute)
            and left.value.attr == "device"):
        return None
    equal = isinstance(test.ops[0], ast.Eq)
    if isinstance(right, ast.Constant) and right.value in ("cpu", "meta"):
        return equal
    if isinstance(right, ast.Constant) and right.value == "cuda":
        return not equal
    if not isinstance(right, ast.Constant):  # `!= flag_gems.device`, `!= self.device_type`: the accelerator
        return not equal
    return None


_OFF_DEFAULTS = frozenset({"", "0", "false", "no", "off", "none"})


def _env_default_on(fn: ast.AST) -> bool:
    """Whether ``fn`` reads an environment switch with a default of on: ``os.environ.get(K, "1")``,
    ``get_env_bool(K, True)``."""
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name not in ("get", "getenv") and "env" not in name.lower():
            continue
        defaults = node.args[1:2] + [k.value for k in node.keywords if k.arg == "default"]
        for default in defaults:
            if isinstance(default, ast.Constant) and default.value is not None and (
                    str(default.value).strip().lower() not in _OFF_DEFAULTS if isinstance(default.value, str)
                    else bool(default.value)):
                return True
    return False


def _exits(block: list[ast.stmt]) -> bool:
    return bool(block) and isinstance(block[-1], (ast.Raise, ast.Return))


_CONTAINER_ANNOTATION = re.compile(r"^(typing\.)?(List|list|Tuple|tuple|Sequence|Dict|dict|Iterable|Mapping|Set|set)\[")


def _innermost(ranges: list[Cold], line: int, col: int) -> Cold | None:
    best = None
    for cold in ranges:
        if cold.holds(line, col) and (best is None or cold.end - cold.start <= best.end - best.start):
            best = cold
    return best


def _shadowed_by_constants(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Parameters the function's own body sets to a literal (``topk = 2``) at its top level before reading them:
    whatever the caller passed (a tensor, by the annotation) is never used, so the name holds the literal."""
    params = {arg.arg for arg in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
    read: set[str] = set()
    out: set[str] = set()
    for stmt in fn.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Constant) and not isinstance(stmt.value.value, (bytes, type(...)))):
            name = stmt.targets[0].id
            if name in params and name not in read:
                out.add(name)
            continue
        read |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
    return out


def _constant_truth(test: ast.expr) -> bool | None:
    """The truth of a test made of a literal and ``not`` (``None``, ``not None``, ``1``), None for any other test."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, not negated
    if not isinstance(test, ast.Constant):
        return None
    return bool(test.value) != negated


def live_arms(node: ast.IfExp) -> list[ast.expr]:
    """The arms of a conditional expression that can run: one when its test is a literal, else both."""
    truth = _constant_truth(node.test)
    if truth is None:
        return [node.body, node.orelse]
    return [node.body if truth else node.orelse]


def _stores(stmt: ast.stmt, name: str) -> bool:
    """Whether ``stmt`` binds ``name`` anywhere in it (an assignment, a loop target, a ``with ... as``)."""
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(stmt))


def _rebinds(block: list[ast.stmt], name: str) -> bool:
    for stmt in block:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            value = stmt.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in (
                    "tuple", "list", "int", "float", "bool"):
                return True
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in (
                    "tolist", "item"):
                return True
    return False


def _last_line(block: list[ast.stmt]) -> int:
    last = block[-1]
    return getattr(last, "end_lineno", None) or last.lineno


_TYPE_NAME = re.compile(r"[A-Za-z_][\w.]*")


def names_tensor_type(annotation: str) -> bool:
    """Does an annotation's text name a tensor type: a name whose last part ends in ``Tensor`` (``torch.Tensor``,
    ``Optional[Tensor]``, ``DTensor``, ``QuantizedTensor``)? ``TensorParallelContext`` or ``TensorMeta`` only
    contain the word and are other classes."""
    return any(name.rpartition(".")[2].endswith("Tensor") for name in _TYPE_NAME.findall(annotation))


def _annotation_text(node: ast.AST) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    try:
        return ast.unparse(node)
    except (RecursionError, ValueError):
        return ""


def _kw(node: ast.Call, name: str) -> ast.expr | None:
    for kw in node.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _kw_true(node: ast.Call, name: str) -> bool:
    value = _kw(node, name)
    return isinstance(value, ast.Constant) and value.value is True


def is_cpu_device(aliases: Aliases, node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is None or (isinstance(node.value, str) and node.value.split(":")[0] in ("cpu", "meta"))
    if isinstance(node, ast.Call) and aliases.resolve(node.func) == "torch.device" and node.args:
        return is_cpu_device(aliases, node.args[0])
    return False


def _device_is_accelerator(node: ast.Call) -> bool:
    device = _kw(node, "device") or (node.args[0] if node.args else None)
    if device is None:
        return False
    if isinstance(device, ast.Constant):
        return isinstance(device.value, str) and device.value.split(":")[0] not in ("cpu", "meta")
    return True


def optional_param(fn: ast.AST, name: str) -> bool:
    """Is ``name`` a parameter of ``fn`` annotated ``Optional[...]`` / ``... | None`` or defaulting to ``None``,
    never rebound in the function? Its bare truthiness (``if output:``) is then a None check written loosely."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    pairs = [*zip(positional, defaults), *zip(a.kwonlyargs, a.kw_defaults)]
    for arg, default in pairs:
        if arg.arg != name:
            continue
        none_default = isinstance(default, ast.Constant) and default.value is None
        text = _annotation_text(arg.annotation) if arg.annotation is not None else ""
        if not (none_default or (text and _strip_optional(text) != text.strip())):
            return False
        return not any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del))
                       for n in ast.walk(fn))
    return False
