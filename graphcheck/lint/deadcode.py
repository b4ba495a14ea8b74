"""Launcher roots that nothing in the linted tree references: dead code, or API only outside code calls.

A module-level function that launches a kernel (or calls an extension op) is a capture root; with no caller in
the tree it was kept as public API. On an application tree such a function is often a leftover copy
(``fuse_scale_shift_kernel`` pasted into a module that others import only for other names). ``unreferenced``
finds the roots that no file of the tree names, counting the files excluded from findings by default (tests,
benchmarks, examples: a library's tests exercise its API), so the project index walks them as code engines do
not capture: their findings, and those reached only through them, are warnings that say why.

A reference is any use the tree could reach the function by: in its own module any use of the name but the
function's own recursion (a call, a callback, a dict entry, ``partial(f)``, ``@f``, ``__all__``); elsewhere an
import of it from its module (``from m import f``, aliases, relative imports; a re-export in a package
``__init__`` is such an import), ``m.f`` through an import of ``m``, a star import of ``m``, any string equal to
the name or ending in ``.f``/``:f`` (``getattr(x, "f")``, ``__all__``, a config list), and an attribute ``.f`` on
anything not known to be another module. A module that looks its names up dynamically (a module-level
``__getattr__``, ``globals()``, ``vars()``, ``sys.modules``; or elsewhere ``getattr(m, name)``, ``vars(m)``,
``m.__dict__``, ``import_module("m")``) has all its functions referenced. A file that cannot be read or parsed
refers to every name it contains as a word. When in doubt a function is referenced: a false demotion of live
code hides a real hazard. Nothing is imported or executed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from typing import Any

from graphcheck.lint import files as files_mod
from graphcheck.lint.callers import _LAUNCH_REASONS as LAUNCH_REASONS

# decorators that do not register or hand out the function they wrap
_PLAIN_DECORATORS = {"functools.cache", "functools.lru_cache", "functools.wraps", "torch.no_grad",
                     "torch.inference_mode", "torch.compile", "torch.compiler.disable", "torch._dynamo.disable",
                     "torch.amp.custom_fwd", "torch.cuda.amp.custom_fwd", "contextlib.contextmanager"}
_DYNAMIC_CALLS = {"getattr", "vars", "dir", "getmembers", "import_module", "__import__"}
# a module that looks its own names up: globals()[name], vars(), exec, sys.modules[__name__], __getattr__
_OWN_DYNAMIC = re.compile(rb"\b(?:globals|vars|locals|exec|eval)\s*\(|\bsys\.modules\b|\bdef\s+__getattr__\b")
# what a file may reach a whole module by (a star import, a dynamic lookup): parsed when it names a module's stem
_DYNAMIC_BYTES = (b"import *", b"getattr", b"vars(", b"dir(", b"__dict__", b"getmembers", b"import_module", b"__import__")


def reason(name: str) -> str:
    return f"no reference to `{name}` in the linted tree: dead code, or API that only outside code calls"


def unreferenced(index: Any, extra_files: Sequence[str]) -> dict[str, str]:
    """Dotted names of the index's launcher roots that nothing in the tree refers to -> why. ``extra_files``:
    Python files of the tree that are not linted (default excludes), scanned for references only."""
    candidates: dict[str, tuple[str, str, str]] = {}  # dotted -> (module, name, path)
    for dotted, (why, guess) in index.roots.items():
        if dotted in index.forced or guess or not str(why).startswith(LAUNCH_REASONS):
            continue
        module, qual, rec = index.funcs[dotted]
        path = index.by_module.get(module)
        if "." in qual or rec.get("method") or path is None or index.off_scope(dotted) is not None:
            continue
        if rec.get("unnamed_decos") or any(index.canonical(d) not in _PLAIN_DECORATORS
                                           for d, _host in rec.get("decos", ())):
            continue  # a decorator may register or hand the function out
        candidates[dotted] = (module, qual, path)
    if not candidates:
        return {}
    names = dict(index.names)
    for path, named in _module_names(extra_files, names).items():
        names[path] = named
    scan = _Scan(index, names, candidates)
    for path in names:
        scan.file(path)
    return {d: reason(candidates[d][1]) for d in candidates if d not in scan.live}


def _module_names(paths: Sequence[str], taken: dict[str, tuple[str, bool]]) -> dict[str, tuple[str, bool]]:
    from graphcheck.lint.project import module_names

    return module_names(sorted(set(paths) - set(taken)))


class _Scan:
    def __init__(self, index: Any, names: dict[str, tuple[str, bool]], candidates: dict[str, tuple[str, str, str]]):
        self.index = index
        self.names = names
        self.modules = set(index.by_module) | {m for m, _ in names.values()}
        self.candidates = candidates
        self.live: set[str] = set()
        self.by_name: dict[str, list[str]] = {}
        self.by_module: dict[str, list[str]] = {}
        self.own: dict[str, list[str]] = {}  # path -> candidates defined there
        stems: set[str] = set()
        for dotted, (module, name, path) in candidates.items():
            self.by_name.setdefault(name, []).append(dotted)
            self.by_module.setdefault(module, []).append(dotted)
            self.own.setdefault(path, []).append(dotted)
            stems.add(module.rpartition(".")[2])
        alternatives = b"|".join(re.escape(n.encode()) for n in sorted(self.by_name))
        self.words = re.compile(rb"(?<!def )\b(" + alternatives + rb")\b")
        self.stems = re.compile(rb"\b(" + b"|".join(re.escape(s.encode()) for s in sorted(stems)) + rb")\b")

    def file(self, path: str) -> None:
        if len(self.live) == len(self.candidates):
            return
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            return
        words = {m.decode() for m in self.words.findall(data)}  # uses of the names, their definitions left out
        own = self.own.get(path, ())
        if own and (words or _OWN_DYNAMIC.search(data)):
            # its own module names it (a call, a callback, __all__; a recursion counts too), or looks names up
            dynamic = _OWN_DYNAMIC.search(data) is not None
            self.live.update(d for d in own if dynamic or self.candidates[d][1] in words)
        words = {w for w in words if any(d not in own for d in self.by_name[w])}
        dynamic = any(b in data for b in _DYNAMIC_BYTES) and self.stems.search(data) is not None
        if not words and not dynamic:
            return
        tree = None
        if b"\x00" not in data[:8192]:
            try:
                tree = ast.parse(files_mod.decode(data, "python"))
            except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError, MemoryError):
                tree = None
        if tree is None:  # unreadable: every name it holds as a word is referenced
            for name in words:
                self.live.update(self.by_name[name])
            return
        module, is_package = self.names.get(path, ("", False))
        _Refs(self, module, is_package, tree, words).run()

    def module_of(self, dotted: str) -> str | None:
        """The tree's module a dotted module name names: itself, or the in-tree one it ends or is the end of."""
        if dotted in self.modules:
            return dotted
        last = dotted.rpartition(".")[2]
        for module in self.by_module:
            if module.endswith("." + dotted) or dotted.endswith("." + module) or module.rpartition(".")[2] == last:
                return module
        return None


class _Refs:
    """The references of one parsed file to the candidates."""

    def __init__(self, scan: _Scan, module: str, is_package: bool, tree: ast.Module, words: set[str]):
        self.scan = scan
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.tree = tree
        self.words = words
        self.bound: dict[str, str] = {}  # local name -> dotted name it was imported as

    def live(self, dotteds: Iterable[str]) -> None:
        self.scan.live.update(dotteds)

    def absolute(self, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = self.package.split(".") if self.package else []
        if node.level > 1:
            base = base[: len(base) - (node.level - 1)] if node.level - 1 <= len(base) else []
        return ".".join([*base, *([node.module] if node.module else [])])

    def names_module(self, dotted: str) -> str | None:
        """The candidate module ``dotted`` (a module name as written) names, or None (another module)."""
        if dotted in self.scan.modules:
            return dotted if dotted in self.scan.by_module else None
        return self.scan.module_of(dotted)

    def run(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.partition(".")[0]
                    self.bound[local] = alias.name if alias.asname else local
            elif isinstance(node, ast.ImportFrom):
                source = self.absolute(node)
                for alias in node.names:
                    if alias.name == "*":
                        hit = self.names_module(source)
                        if hit is not None:
                            self.live(self.scan.by_module[hit])
                        continue
                    self.bound[alias.asname or alias.name] = f"{source}.{alias.name}"
                    if alias.name in self.words:
                        hit = self.names_module(source)
                        self.live(d for d in self.scan.by_name[alias.name]
                                  if hit is not None and self.scan.candidates[d][0] == hit)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 300:
                text = node.value
                last = re.split(r"[.:]", text)[-1]
                if last in self.words and (last == text or re.fullmatch(r"[\w.]+[.:]\w+", text)):
                    self.live(self.scan.by_name[last])
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Attribute) and node.attr in self.words:
                self.attribute(node)
            elif isinstance(node, ast.Attribute) and node.attr == "__dict__":  # m.__dict__[name]
                self.whole(node.value)
            elif isinstance(node, ast.Call):
                self.dynamic(node)

    def dotted(self, node: ast.AST) -> str | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.append(node.id)
        parts.reverse()
        head = self.bound.get(parts[0])
        if head is None:
            return None
        return ".".join([head, *parts[1:]])

    def attribute(self, node: ast.Attribute) -> None:
        name = node.attr
        base = self.dotted(node.value)
        if base is None:  # `self.f`, `obj.f`, `get_ops().f`: anything may be the module
            self.live(self.scan.by_name[name])
            return
        hit = self.names_module(base)
        if hit is None and base not in self.scan.modules:
            return  # another module, outside the tree and not named like a candidate's
        self.live(d for d in self.scan.by_name[name] if hit is not None and self.scan.candidates[d][0] == hit)

    def dynamic(self, node: ast.Call) -> None:
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if called not in _DYNAMIC_CALLS or not node.args:
            return
        first = node.args[0]
        if called in ("import_module", "__import__"):
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                hit = self.names_module(first.value)
                if hit is not None:
                    self.live(self.scan.by_module[hit])
            return
        if called == "getattr" and len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
            return  # a literal name: counted as a string
        self.whole(first)

    def whole(self, node: ast.AST) -> None:
        """A dynamic lookup in the module ``node`` names: all its candidates are referenced."""
        target = self.dotted(node)
        if target is not None:
            hit = self.names_module(target)
            if hit is not None:
                self.live(self.scan.by_module[hit])
