"""Ops of a Python extension module that nothing in the tree names, while the tree calls the module's other ops.

A ``PYBIND11_MODULE``/``NB_MODULE`` block binds C++ functions as attributes of an extension module
(``m.def("apply_rotary_pos_emb", &apply_rotary_pos_emb)``). ``graphcheck.lint.cpp_callers`` counts an op no Python
file names as live: a library's public op, called from outside. When the tree's own Python takes the module's other
ops one by one (``shadowkv.apply_rotary_pos_emb_new(...)``, ``from ext import op``) and nothing hands the module out
whole, an outside caller would have to import the extension itself and call an op its package never wraps: the op
is dead code of the tree. This module reads the two sides of that question:

The module must be the tree's own: imported through a package or folder of the tree (``from kernels import
shadowkv``, ``from . import _C``, ``import pkg._C as ops``). A module the tree imports at top level (``import
awq_inference_engine``, ``from EETQ import w8_a16_gemm``) is installed as a package of its own, and other projects
import it the same way and call its ops directly (TGI calls llm-awq's ``awq_inference_engine.gemm_forward_cuda``,
which llm-awq's own Python no longer names): such an op stays live.

``blocks_binding`` finds the module blocks of a C++ file that bind an op through the block's module variable
(``m.def("op", ...)``; a ``py::class_`` chain, a submodule or a ``TORCH_LIBRARY`` ``m.def``/``m.impl`` is not such a
binding, and any other binding of the op leaves it alone); ``module_uses`` reads a Python file's uses of a module
imported under one of the extension's names: attribute access (``mod.op``), ``getattr(mod, "literal")``, a
``from pkg.mod import op`` and tests of the module (``mod is None``, ``if mod:``) take ops one by one; anything else
(the module passed, returned, stored, ``getattr(mod, name)`` with a computed name, a star import, the module's name
given as a string to a call such as ``importlib.import_module`` or ``cpp_extension.load``, a top-level import) may
hand it out.
"""

from __future__ import annotations

import ast
import dataclasses
import re

# `PYBIND11_MODULE(name, m) {`, `NB_MODULE(name, m) {` (group 1: the module's name, group 2: its variable)
_BLOCK = re.compile(r"\b(?:PYBIND11_MODULE|NB_MODULE)\s*\(\s*([A-Za-z_]\w*)\s*,\s*([A-Za-z_]\w*)\s*\)\s*\{")
# `.def("op"` / `.impl("ns::op"` (group 1: the op), as ``cpp_callers._DEF_CALL`` reads a binding
_BINDING = re.compile(r'\.(?:def|impl)\s*\(\s*"\s*(?:[A-Za-z_]\w*::)*([A-Za-z_]\w*)')
# calls that load a module by its name (`importlib.import_module`, `__import__`, `cpp_extension.load`,
# `importlib.util.find_spec`/`spec_from_file_location`): a string naming the extension given to one may load it whole
_LOAD_CALL = re.compile(r"(?:\w*import\w*|load\w*|find_spec|spec_from\w*|reload)\Z")
# top-level packages of other libraries, whose modules are never the tree's extension (`torch._C`)
_OTHER_LIBRARIES = frozenset({"torch", "triton", "numpy", "jax", "tensorflow", "cupy", "scipy"})


@dataclasses.dataclass(frozen=True)
class ModuleBlock:
    """A ``PYBIND11_MODULE(name, var) { ... }`` block: its module ``name`` as written (a macro such as
    ``TORCH_EXTENSION_NAME``, or the literal name), and the ops ``var.def(...)`` binds in it, in order."""

    name: str
    ops: tuple[str, ...]


def blocks_binding(source: str, text: str, pairs: dict[int, int], op: str) -> list[ModuleBlock] | None:
    """The module blocks of a C++ file that bind ``op`` through their module variable; None when the file binds
    ``op`` any other way too (a class method, a submodule, ``TORCH_LIBRARY``). ``source`` is the file's text,
    ``text`` the same with comments and literals blanked (same length), ``pairs`` its matching brackets."""
    blocks: list[tuple[int, int, str, str]] = []
    for m in _BLOCK.finditer(text):
        close = pairs.get(m.end() - 1)
        if close is not None and close > m.end():
            blocks.append((m.end(), close, m.group(1), m.group(2)))
    found: list[ModuleBlock] = []
    for m in _BINDING.finditer(source):
        if m.group(1) != op or text[m.start()] != ".":  # another op, or in a comment
            continue
        block = next(((start, end, name, var) for start, end, name, var in blocks if start <= m.start() < end), None)
        if block is None or not _receiver_is(text, m.start(), block[3]):
            return None
        ops = tuple(dict.fromkeys(b.group(1) for b in _BINDING.finditer(source, block[0], block[1])
                                  if text[b.start()] == "." and _receiver_is(text, b.start(), block[3])))
        found.append(ModuleBlock(block[2], ops))
    return found


def _receiver_is(text: str, dot: int, var: str) -> bool:
    """Whether the ``.def`` at ``dot`` is called on the variable ``var`` itself (``m.def(``), not on a chain
    (``py::class_<X>(m, "X").def(``) or another object."""
    return re.search(r"(?<![\w.:>])" + re.escape(var) + r"\s*\Z", text[max(0, dot - 200):dot]) is not None


@dataclasses.dataclass
class ModuleUses:
    """What one Python file does with an extension module: ``taken`` the attributes it takes one by one (attribute
    -> how, ``shadowkv.gather_copy``), ``handed_out`` whether it may give the module to code outside the file."""

    taken: dict[str, str]
    handed_out: bool


def module_uses(tree: ast.Module, names: frozenset[str], roots: frozenset[str] | None) -> ModuleUses:
    """How Python file ``tree`` uses a module imported under one of ``names`` (the last part of the extension's
    dotted name: ``from kernels import shadowkv``, ``import pkg._C as ops``, ``import pkg._C``); ``roots`` are the
    top-level names the tree's code is imported under (``CallerIndex._roots``; None: unknown), so that another
    library's module of the same name (``torch._C``) is not the extension."""
    out = ModuleUses({}, False)
    local: set[str] = set()  # names bound to the module
    dotted: set[str] = set()  # `import pkg.ext` binds `pkg`: the module is the attribute chain `pkg.ext`

    def ours(module: str, level: int) -> bool:
        top = module.partition(".")[0]
        return level > 0 or (top not in _OTHER_LIBRARIES and (roots is None or top in roots))

    for n in ast.walk(tree):
        # the module imported at top level (`import ext`, `from ext import op`): installed as a package of its own,
        # which outside code imports the same way (TGI calls llm-awq's `awq_inference_engine.gemm_forward_cuda`)
        if isinstance(n, ast.ImportFrom) and not n.level and n.module in names:
            out.handed_out = True
        elif isinstance(n, ast.Import) and any(a.name in names for a in n.names):
            out.handed_out = True
        if isinstance(n, ast.ImportFrom) and ours(n.module or "", n.level):
            if (n.module or "").rpartition(".")[2] in names:  # `from pkg.ext import op`
                for a in n.names:
                    if a.name == "*":
                        out.handed_out = True
                    out.taken.setdefault(a.name, f"from {'.' * n.level}{n.module} import {a.name}")
            local.update(a.asname or a.name for a in n.names if a.name in names)
        elif isinstance(n, ast.Import):
            for a in n.names:
                if a.name.rpartition(".")[2] not in names or not ours(a.name, 0):
                    continue
                if a.asname or "." not in a.name:
                    local.add(a.asname or a.name)
                else:
                    dotted.add(a.name)
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.rpartition(".")[2] in names:
            if _loads_module(n, parents):
                out.handed_out = True
            continue
        if isinstance(n, ast.Name):
            if n.id not in local or not isinstance(n.ctx, ast.Load):
                continue
        elif not (isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and _chain(n) in dotted):
            continue
        how = _chain(n) if isinstance(n, ast.Attribute) else n.id
        taken = _taken(n, parents.get(id(n)))
        if taken is None:
            out.handed_out = True
        elif taken:
            out.taken.setdefault(taken, f"{how}.{taken}")
    return out


def _chain(node: ast.Attribute) -> str:
    """``a.b.c`` of an attribute chain on a name; ``""`` when its base is not a name."""
    parts: list[str] = []
    v: ast.expr = node
    while isinstance(v, ast.Attribute):
        parts.append(v.attr)
        v = v.value
    return ".".join([v.id, *reversed(parts)]) if isinstance(v, ast.Name) else ""


def _taken(node: ast.expr, parent: ast.AST | None) -> str | None:
    """The attribute a use of the module (``node``, under ``parent``) takes (``""``: none, a mere test of the
    module); None when the use may hand the module out."""
    if isinstance(parent, ast.Attribute) and parent.value is node:
        return parent.attr
    if isinstance(parent, ast.Compare) and all(
            x is node or (isinstance(x, ast.Constant) and x.value is None) for x in [parent.left, *parent.comparators]):
        return ""  # `mod is None`
    if isinstance(parent, (ast.If, ast.While, ast.Assert)) and parent.test is node:
        return ""
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        return ""
    if (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in ("getattr", "hasattr")
            and len(parent.args) >= 2 and parent.args[0] is node and isinstance(parent.args[1], ast.Constant)
            and isinstance(parent.args[1].value, str)):
        return parent.args[1].value
    return None


def _loads_module(node: ast.Constant, parents: dict[int, ast.AST]) -> bool:
    """Whether the string ``node`` (the extension's name) is given to a call that may load the module
    (``importlib.import_module("pkg.ext")``, ``cpp_extension.load(name="ext", ...)``), or indexes a mapping
    (``sys.modules["ext"]``); a build script's ``CUDAExtension(name="ext")``, ``setup(name=...)`` or a message
    (``print("ext")``) does not."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.keyword):
        parent = parents.get(id(parent))
    if isinstance(parent, ast.Subscript):
        return parent.slice is node
    if not isinstance(parent, ast.Call) or parent.func is node:
        return False
    func = parent.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return _LOAD_CALL.match(name) is not None
