"""Python uses of the tree's C++ names: which Python files name an op, and which function in them does.

``cpp_callers`` asks which Python files name a C++ function or op it found in their bytes. A Python
mention is a use of the op unless it is the tree's own Python function of that name (a module-level
``def``, a method of a class the file defines or imports, ``BitPack.unpack_3bit_32``, or ``self.f`` in a method
of a class that defines ``f``, whose base class defines it or whose subclass in the tree does), an attribute of
another library's module (``torch.matmul``, ``F.softmax``, or a module imported from a package that is
neither in the tree nor an extension it builds), a documentation string or a file path in a string.
``PythonRefs`` answers this over the linted files, parsing each Python file once per run, and says who
in a file makes the use: a private module-level function (``py:f``) that only its callers make live,
or ``<live>`` for anything else.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

_LIVE = "<live>"  # a referrer that is live: a binding, a use at module or class level, a public function
_PY = "py:"  # a referrer that is a private Python function; its own callers make it live

# a file path in a Python string (a build script's source list, `"csrc/rms_norm/rms_norm.cu"`): no use of a function
_PATH_STRING = re.compile(r"^(?=[^/\\]*[/\\]|.*\.(?:cu|cuh|cc|cpp|cxx|c|h|hpp|hh|inl|py|so|o)$)[\w.+\-/\\]+\Z")
# modules of other libraries: `torch.matmul`, `np.fill`, `F.softmax` name their function, not the tree's C++
# (`torch.ops.<ns>.f` and `torch.classes` do name the tree's ops: not listed)
_FOREIGN_MODULES = frozenset({
    "torch", "torch.nn", "torch.nn.functional", "torch.Tensor", "torch.linalg", "torch.special", "torch.fft",
    "torch.cuda", "torch.ops.aten", "numpy", "numpy.linalg", "numpy.random", "math", "cmath", "operator",
    "jax.numpy", "jax.lax", "triton.language", "scipy", "einops",
})


def python_skips(tree: ast.Module) -> tuple[set[int], dict[str, str]]:
    """What in a Python file never refers to the tree's C++: the ids of its documentation strings (a string
    that is a statement of its own, such as a docstring: prose that may say "fill in"), and the modules its
    imports bind (``np`` -> ``numpy``, ``F`` -> ``torch.nn.functional``), for ``foreign``."""
    docs: set[int] = set()
    modules: dict[str, str] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str):
            docs.add(id(n.value))
        elif isinstance(n, ast.Import):
            for a in n.names:
                if a.asname:
                    modules[a.asname] = a.name
                else:
                    top = a.name.partition(".")[0]
                    modules[top] = top
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            for a in n.names:
                modules[a.asname or a.name] = f"{n.module}.{a.name}"
    return docs, modules


def imported_receiver(node: ast.Attribute, modules: dict[str, str]) -> str | None:
    """The dotted module path ``node``'s receiver names through the file's imports (``modules``, from
    ``python_skips``): ``F`` in ``F.softmax`` -> ``"torch.nn.functional"``; None when its base is not an import."""
    parts: list[str] = []
    v = node.value
    while isinstance(v, ast.Attribute):
        parts.append(v.attr)
        v = v.value
    if not isinstance(v, ast.Name) or v.id not in modules:
        return None
    return ".".join([modules[v.id], *reversed(parts)])


def foreign(node: ast.Attribute, modules: dict[str, str]) -> bool:
    """Whether ``node`` is a function of another library's module (``torch.matmul``, ``F.softmax``,
    ``np.fill``), by what the file's imports bind (``modules``, from ``python_skips``): it does not name the
    tree's C++ function of the same name. ``torch.ops.<ns>.f`` is not foreign."""
    return imported_receiver(node, modules) in _FOREIGN_MODULES


class PythonRefs:
    """The Python side of a ``cpp_callers.CallerIndex``: which of the linted Python files name a C++ name, and
    who in them does. ``files`` are the run's ``(path, language)``; ``data`` gives each file's bytes; ``trees``
    and ``skips`` keep each file's parse and ``python_skips`` (shared with another index over the same files);
    ``mentions(name)`` are the files that hold ``name`` as a word; ``roots()`` the top-level names under which
    Python may import the tree's code (None: unknown)."""

    def __init__(self, files: Sequence[tuple[str, str]], data: Callable[[], list[bytes]],
                 trees: dict[int, ast.Module | None], skips: dict[int | str, tuple[set[int], dict[str, str]]],
                 mentions: Callable[[str], list[int]], roots: Callable[[], frozenset[str] | None]):
        self.files = files
        self._data = data
        self._trees = trees
        self._skips = skips
        self._mentions = mentions
        self._roots = roots
        self._defs: dict[str, set[tuple[str, str]]] = {}  # name -> {(path, class or "")} defining it in Python
        self._imported: dict[int | str, dict[str, tuple[int, str, str]]] = {}  # see ``_imports``
        self._bound: dict[int | str, set[str]] = {}  # see ``_rebound``
        self._self_attrs: dict[int | str, dict[int, ast.ClassDef]] = {}  # see ``_selves``
        self._by_path: dict[str, int] | None = None  # a linted Python file's normalized path -> its number

    def op_mentions(self, op: str, mentions: list[int]) -> list[int]:
        """``mentions`` of op ``op`` less the Python files whose every mention of it is an attribute of a class or
        module the tree defines in Python with a function of that name (``BitPack.unpack_3bit_32`` where
        ``hqq/core/bitpack.py`` defines ``class BitPack`` with ``def unpack_3bit_32``): a use of that Python
        function, not of the op."""
        if not self.defs_of(op, mentions) and self._roots() is None:
            return mentions
        out = []
        for i in mentions:
            tree = self.tree(i) if self.files[i][1] == "python" else None
            if tree is None or self.names_op(i, tree, op):
                out.append(i)
        return out

    def defs_of(self, name: str, mentions: list[int]) -> set[tuple[str, str]]:
        """``(path, class)`` of each top-level class of the tree's Python that defines a function ``name`` in its
        body, ``(path, "")`` of each module that defines one at module level (``mentions``: the files that
        mention ``name``, as the defining files do)."""
        if name not in self._defs:
            found: set[tuple[str, str]] = set()
            for i in mentions:
                tree = self.tree(i) if self.files[i][1] == "python" else None
                for node in tree.body if tree is not None else ():
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                        found.add((os.path.normpath(self.files[i][0]), ""))
                    elif isinstance(node, ast.ClassDef) and any(
                            isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) and b.name == name
                            for b in node.body):
                        found.add((os.path.normpath(self.files[i][0]), node.name))
            self._defs[name] = found
        return self._defs[name]

    def names_op(self, i: int | str, tree: ast.Module, name: str) -> bool:
        """Whether Python file ``i`` (a linted file's number, or the path of a file left out) names ``name`` other
        than as the tree's own Python function (``_method``) or another library's function, or in a
        documentation string."""
        docs, modules = self.skip(i, tree)
        for n in ast.walk(tree):
            if isinstance(n, ast.Name) and n.id == name and not self._function(i, tree, n):
                return True
            if (isinstance(n, ast.Attribute) and n.attr == name and not self._foreign(n, modules)
                    and not self._method(i, tree, n)):
                return True
            if (isinstance(n, ast.Constant) and isinstance(n.value, str) and name in n.value and id(n) not in docs
                    and not _PATH_STRING.match(n.value)):
                return True
        return False

    def _method(self, i: int | str, tree: ast.Module, node: ast.Attribute) -> bool:
        """Whether ``X.name`` (``node``) in Python file ``i`` names a function the tree defines in Python: ``X`` is a
        class of this file, or a class or module its imports bind (``from .bitpack import BitPack``, ``import
        pkg.mod as m``), whose definition has a function ``name``. Unresolved receivers (an extension module, a
        re-export, an object) are not."""
        if not isinstance(node.value, ast.Name):
            return False
        defs = self._defs.get(node.attr)
        if defs is None:  # the files are searched once per name
            defs = self.defs_of(node.attr, self._mentions(node.attr))
        if not defs:
            return False
        x = node.value.id
        path = os.path.normpath(self.files[i][0] if isinstance(i, int) else i)
        if (path, x) in defs:
            return True
        owner = self._selves(i, tree).get(id(node))
        if owner is not None:  # `self.name` in a method of class `owner`
            return self._own_method(i, tree, path, owner, defs)
        bound = self._imports(i, tree).get(x)
        if bound is None:
            return False
        level, module, attr = bound
        for where, cls in defs:
            if cls and attr == cls and _module_at(where, path, level, module):
                return True
            if not cls and _module_at(where, path, level, f"{module}.{attr}" if module and attr else module or attr):
                return True
        return False

    def _selves(self, i: int | str, tree: ast.Module) -> dict[int, ast.ClassDef]:
        """``self.x``/``cls.x`` attributes of Python file ``i``: the id of each such ``ast.Attribute`` whose receiver is
        the first parameter of a method defined directly in a top-level class body (not a ``staticmethod``), with
        that class."""
        if i not in self._self_attrs:
            out: dict[int, ast.ClassDef] = {}
            for cls in tree.body:
                if not isinstance(cls, ast.ClassDef):
                    continue
                for fn in cls.body:
                    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not fn.args.args or any(
                            isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list):
                        continue
                    me = fn.args.args[0].arg
                    if any(isinstance(n, ast.arg) and n.arg == me for n in ast.walk(fn) if n is not fn.args.args[0]):
                        continue  # rebound by an inner function's parameter: not sure which object it is
                    for n in ast.walk(fn):
                        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == me:
                            out[id(n)] = cls
            self._self_attrs[i] = out
        return self._self_attrs[i]

    def _own_method(self, i: int | str, tree: ast.Module, path: str, owner: ast.ClassDef,
                    defs: set[tuple[str, str]]) -> bool:
        """Whether ``self.name`` in a method of class ``owner`` (file ``i`` at ``path``) is the tree's Python method
        ``name`` (``defs``: where the tree defines it): ``owner`` defines it, or a base class of ``owner`` named in
        this file or imported from the tree's module that defines it does, or a class that derives from ``owner``
        (in this file, or in a file importing ``owner`` from here) does: the base class calls a method its
        subclasses give (ShadowKV's ``LLM`` calls ``self.apply_rotary_pos_emb``, which ``Llama`` defines)."""
        if (path, owner.name) in defs:
            return True
        bound = self._imports(i, tree)
        for base in owner.bases:
            b = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
            if b is None:
                continue
            if (path, b) in defs:
                return True
            imp = bound.get(b) if isinstance(base, ast.Name) else None
            if imp is not None and any(cls == imp[2] and _module_at(where, path, imp[0], imp[1])
                                       for where, cls in defs):
                return True
        if self._by_path is None:
            self._by_path = {os.path.normpath(p): k for k, (p, language) in enumerate(self.files)
                             if language == "python"}
        for where, cls in defs:
            k = self._by_path.get(where)
            sub = self.tree(k) if k is not None and cls else None
            if k is None or sub is None:
                continue
            for node in sub.body:
                if not (isinstance(node, ast.ClassDef) and node.name == cls):
                    continue
                for base in node.bases:
                    if not (isinstance(base, ast.Name) and base.id == owner.name):
                        continue
                    if where == path:
                        return True
                    imp = self._imports(k, sub).get(owner.name)
                    if imp is not None and imp[2] == owner.name and _module_at(path, where, imp[0], imp[1]):
                        return True
        return False

    def _function(self, i: int | str, tree: ast.Module, node: ast.Name) -> bool:
        """Whether the bare name ``node`` in Python file ``i`` is a Python function the tree defines: one defined at
        module level in this file that nothing else in the file binds (an import, an assignment, a parameter), or
        one an import binds from the tree's module that defines it (``from .mpt import rms_norm``)."""
        defs = self._defs.get(node.id)
        if defs is None:
            defs = self.defs_of(node.id, self._mentions(node.id))
        if not any(not cls for _, cls in defs):
            return False
        path = os.path.normpath(self.files[i][0] if isinstance(i, int) else i)
        bound = self._imports(i, tree).get(node.id)
        if bound is None:
            return (path, "") in defs and node.id not in self._rebound(i, tree)
        level, module, attr = bound
        return attr == node.id and any(not cls and _module_at(where, path, level, module) for where, cls in defs)

    def _rebound(self, i: int | str, tree: ast.Module) -> set[str]:
        """Names Python file ``i`` binds other than by a ``def``: assignment and loop targets, parameters, classes,
        ``global``/``nonlocal`` names, and what its imports bind."""
        if i not in self._bound:
            out: set[str] = set(self._imports(i, tree))
            for n in ast.walk(tree):
                if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                    out.add(n.id)
                elif isinstance(n, ast.arg):
                    out.add(n.arg)
                elif isinstance(n, ast.ClassDef):
                    out.add(n.name)
                elif isinstance(n, (ast.Global, ast.Nonlocal)):
                    out.update(n.names)
                elif isinstance(n, ast.Import):
                    out.update((a.asname or a.name).partition(".")[0] for a in n.names)
            self._bound[i] = out
        return self._bound[i]

    def _foreign(self, node: ast.Attribute, modules: dict[str, str]) -> bool:
        """``foreign``, or an attribute of a module imported from a top-level package that is neither in the tree
        (no folder or Python file of that name) nor an extension the tree builds (``roots``): ``ops.rms_norm``
        after ``from vllm._C import ops`` in a tree that is not vLLM names vLLM's op. ``torch.ops.<ns>`` is the
        tree's. Unknown (not foreign) when the tree names no extension build."""
        if foreign(node, modules):
            return True
        roots = self._roots()
        if roots is None:
            return False
        dotted = imported_receiver(node, modules)
        if dotted is None:
            return False
        if dotted.startswith(("torch.ops.", "torch.classes.")) or dotted in ("torch.ops", "torch.classes"):
            return False
        return dotted.partition(".")[0] not in roots

    def _imports(self, i: int | str, tree: ast.Module) -> dict[str, tuple[int, str, str]]:
        """What Python file ``i``'s imports bind: local name -> (level, module, imported name) (``from ..a import
        B as C``: ``C`` -> ``(2, "a", "B")``; ``import a.b as m``: ``m`` -> ``(0, "a.b", "")``)."""
        if i not in self._imported:
            out: dict[str, tuple[int, str, str]] = {}
            for n in ast.walk(tree):
                if isinstance(n, ast.Import):
                    for a in n.names:
                        if a.asname:
                            out[a.asname] = (0, a.name, "")
                        elif "." not in a.name:
                            out[a.name] = (0, a.name, "")
                elif isinstance(n, ast.ImportFrom):
                    for a in n.names:
                        out[a.asname or a.name] = (n.level, n.module or "", a.name)
            self._imported[i] = out
        return self._imported[i]

    def tree(self, i: int) -> ast.Module | None:
        """Python file ``i`` parsed once per run; None when it does not parse."""
        if i not in self._trees:
            try:
                self._trees[i] = ast.parse(self._data()[i].decode("utf-8", "replace"))
            except (SyntaxError, ValueError, RecursionError):
                self._trees[i] = None
        return self._trees[i]

    def skip(self, i: int | str, tree: ast.Module) -> tuple[set[int], dict[str, str]]:
        """``python_skips`` of Python file ``i`` (parsed as ``tree``), once per run."""
        if i not in self._skips:
            self._skips[i] = python_skips(tree)
        return self._skips[i]

    def referrers(self, i: int, name: str, own: bool = False) -> set[str]:
        """Who references ``name`` in Python file ``i``: the enclosing function (``py:f``) when it is a
        private module-level function (a leading ``_``, or in a private module such as ``_custom_ops.py``)
        that only its callers make live; ``_LIVE`` for anything else (module or class level, a method, a
        decorated or public function, a string that names it, a file that does not parse). With ``own``
        (``name`` is itself a Python function), a use inside a function of that name is recursion."""
        tree = self.tree(i)
        if tree is None:
            return {_LIVE}
        private_module = any(part.startswith("_") and not part.startswith("__")
                             for part in Path(self.files[i][0]).parts[-3:])
        docs, modules = self.skip(i, tree)
        out: set[str] = set()

        def visit(node: ast.AST, fn: ast.AST | None, in_class: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    visit(child, child if fn is None else fn, in_class and fn is None)
                    continue
                if isinstance(child, ast.ClassDef):
                    visit(child, fn, True)
                    continue
                hit = ((isinstance(child, ast.Name) and child.id == name
                        and not (not own and self._function(i, tree, child)))
                       or (isinstance(child, ast.Attribute) and child.attr == name
                           and not self._foreign(child, modules)
                           and not (not own and self._method(i, tree, child)))
                       or (isinstance(child, ast.Constant) and isinstance(child.value, str) and name in child.value
                           and not _PATH_STRING.match(child.value)
                           and id(child) not in docs))
                if hit:
                    if isinstance(child, ast.Constant) or fn is None or in_class:
                        out.add(_LIVE)
                    elif not (own and fn.name == name):  # type: ignore[attr-defined]
                        private = fn.name.startswith("_") or private_module  # type: ignore[attr-defined]
                        decorated = bool(fn.decorator_list)  # type: ignore[attr-defined]
                        out.add(_PY + fn.name if private and not decorated else _LIVE)  # type: ignore[attr-defined]
                visit(child, fn, in_class)

        visit(tree, None, False)
        return out


def _module_at(path: str, importer: str, level: int, module: str) -> bool:
    """Whether Python file ``path`` is module ``module`` as file ``importer`` imports it (``level`` dots of a
    relative import; an absolute one matches by the trailing folders)."""
    if not module:
        return False
    rel = os.path.join(*module.split("."))
    options = (rel + ".py", os.path.join(rel, "__init__.py"))
    if level:
        base = os.path.dirname(importer)
        for _ in range(level - 1):
            base = os.path.dirname(base)
        return path in {os.path.normpath(os.path.join(base, o)) for o in options}
    return any(path == o or path.endswith(os.sep + o) for o in options)
