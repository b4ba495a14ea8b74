"""Extension builds of the linted tree: C++ hazards in a file no build compiles are warnings.

A tree often keeps C++ sources that its own extension build never compiles: ``gemv_cuda_backup.cu`` next to
the ``gemv_cuda.cu`` that ``setup.py`` lists, an ``old/`` folder, an experiment. Their hazards never run. When
every build the tree names can be read to the end, the set of compiled files is known: the sources each
setuptools ``Extension``/``CUDAExtension``/``CppExtension``/``Pybind11Extension(name, sources=[...])``,
``torch.utils.cpp_extension.load(name=..., sources=[...])`` (and ``load_inline`` with literal code) or CMake
``add_library``/``add_executable``/``cuda_add_library``/``pybind11_add_module``/``Python_add_library``/
``target_sources`` lists (through ``set``/``list(APPEND)`` variables, ``file(GLOB ...)`` patterns, Python
``os.path.join``/``Path``/f-strings/``glob``), with relative paths resolved against the script's folder, and
every file those include, transitively. A ``.cu``/``.cpp``/``.cc``/``.cxx`` file outside that set, and a header
that only such files include, gets its errors made warnings that name the builds.

Any doubt leaves the tree alone: a source list that cannot be followed (a loop, a helper's return value, a
variable set twice, a custom extension class, a CMake function or generator expression), a listed file that
does not exist, a Makefile or shell script that runs a compiler, Bazel/Meson/SCons files, both setuptools and
CMake builds, a build script above the linted folder, an ``#include`` through a macro, no build at all. A file
is also left alone when it has a ``main`` (a program some other build may compile) or when its name (its stem,
as a word) appears anywhere else in the tree other than as a resolved build source (a JIT loader, an ``nvcc``
line, a README that says how to build it). Verdicts are cached under the stat of every file of the tree.
"""

from __future__ import annotations

import ast
import dataclasses
import glob as glob_mod
import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from graphcheck.findings import Finding, Severity
from graphcheck.lint.cache import read_verdicts, write_verdicts

if TYPE_CHECKING:
    from graphcheck.lint.cpp_callers import LintedSources

_CACHE_FILE = "cpp-builds-v1.json"
_MAX_FILE = 4 * 1024 * 1024
_MAX_ENTRIES = 100_000  # files of the tree walked, at most; past it, unknown
_MAX_READ = 64 * 1024 * 1024  # bytes read for the name search, at most; past it, unknown
_SOURCE_SUFFIXES = frozenset({".cu", ".cpp", ".cc", ".cxx", ".c", ".c++"})
_HEADER_SUFFIXES = frozenset({".h", ".hpp", ".hh", ".cuh", ".hxx", ".inl", ".inc", ".h++"})
_DEMOTED_SUFFIXES = frozenset({".cu", ".cpp", ".cc", ".cxx"})
# build systems not read here: their presence makes the tree's builds unknown
_OTHER_BUILDS = frozenset({"BUILD", "BUILD.bazel", "WORKSPACE", "WORKSPACE.bazel", "MODULE.bazel", "meson.build",
                           "SConstruct", "SConscript", "build.ninja", "xmake.lua", "premake5.lua", "premake4.lua",
                           "build.rs", "Jamfile", "Jamroot", "configure.ac", "configure.in", "Makefile.am"})
_OTHER_SUFFIXES = frozenset({".bzl", ".vcxproj", ".gyp", ".sln", ".pro"})
_MAKEFILES = frozenset({"Makefile", "makefile", "GNUmakefile"})
_MAKE_SUFFIXES = frozenset({".mk", ".make"})
_SCRIPT_SUFFIXES = frozenset({".sh", ".bash", ".zsh", ".bat", ".ps1"})
_ANCESTOR_BUILDS = frozenset({"setup.py", "pyproject.toml", "CMakeLists.txt", *_MAKEFILES, *_OTHER_BUILDS})
# a compiler run by a Makefile or a shell script
_COMPILER = re.compile(rb"(?<![\w.-])(?:nvcc|hipcc|g\+\+|gcc|clang\+\+|clang|icpx|nvc\+\+)(?![\w-])"
                       rb"|\$[({](?:CXX|CC|NVCC|CUDACXX)[)}]")
_MAIN = re.compile(rb"\bint\s+main\s*\(|\b(?:void|auto)\s+main\s*\(")
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*(?:([<"])([^>"\n]+)[>"]|([A-Za-z_]\w*))', re.MULTILINE)
# Python that compiles C++ itself (outside a build script, whose `nvcc` is a flags key or a version query)
_RUNTIME_BUILD = re.compile(rb"\b(?:nvcc|hipcc|nvrtc|NVRTC|SourceModule|RawModule|compile_cuda|cuda_compile)\b")
# a Python string that names a C++ source file (outside a resolved source list)
_SOURCE_STRING = re.compile(r"\.(?:cu|cuh|cpp|cc|cxx|c)\Z")
_SOURCE_BYTES = re.compile(rb"""\.(?:cu|cuh|cpp|cc|cxx|c)["']""")
_SETUPTOOLS_CLASSES = frozenset({"Extension", "CUDAExtension", "CppExtension", "Pybind11Extension"})
_CPP_EXTENSION_LOADS = frozenset({"load", "load_inline"})


class _Unknown(Exception):
    """A build that cannot be followed: the tree's compiled files are unknown."""


@dataclasses.dataclass
class _Build:
    where: str  # `path:line` of the build's call, below the tree's folder
    name: str  # the extension or target name ("" when not a literal)
    sources: list[str]  # absolute paths


@dataclasses.dataclass
class _Tree:
    top: str
    files: list[tuple[str, os.stat_result]]  # every file of the tree walked, with its stat
    consumed: dict[str, list[tuple[int, int]]] = dataclasses.field(default_factory=dict)  # path -> blanked spans
    consumed_at: dict[str, set[tuple[int, int]]] = dataclasses.field(default_factory=dict)  # path -> (line, col)


# ---------------------------------------------------------------------------------------------------------------
# Python build scripts

def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class _Scopes(ast.NodeVisitor):
    """Per scope (the module, each function): the names bound exactly once by ``name = value`` and never
    rebound, mutated or bound another way; the others are unresolvable."""

    def __init__(self, tree: ast.Module):
        self.parent: dict[ast.AST, ast.AST] = {}
        self.values: dict[ast.AST, dict[str, list[ast.expr]]] = {}
        self.bad: dict[ast.AST, set[str]] = {}
        self._scope: ast.AST = tree
        self.values[tree] = {}
        self.bad[tree] = set()
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
        self.visit(tree)

    def _bind_bad(self, name: str) -> None:
        self.bad[self._scope].add(name)

    def _targets(self, target: ast.AST) -> None:
        for n in ast.walk(target):
            if isinstance(n, ast.Name):
                self._bind_bad(n.id)
            elif isinstance(n, (ast.Subscript, ast.Attribute)):
                base = n.value
                while isinstance(base, (ast.Subscript, ast.Attribute)):
                    base = base.value
                if isinstance(base, ast.Name):
                    self._bind_bad(base.id)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        if not isinstance(node, ast.Lambda):
            self._bind_bad(node.name)
            for d in node.decorator_list:
                self.visit(d)
        outer = self._scope
        self._scope = node
        self.values[node] = {}
        self.bad[node] = set()
        for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                  *([node.args.vararg] if node.args.vararg else []), *([node.args.kwarg] if node.args.kwarg else [])]:
            self._bind_bad(a.arg)
        body = node.body if isinstance(node.body, list) else [node.body]
        for stmt in body:
            self.visit(stmt)
        self._scope = outer

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._bind_bad(node.name)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.values[self._scope].setdefault(node.targets[0].id, []).append(node.value)
        else:
            for t in node.targets:
                self._targets(t)
        self.visit(node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if isinstance(node.target, ast.Name) and node.value is not None:
            self.values[self._scope].setdefault(node.target.id, []).append(node.value)
            self.visit(node.value)
        else:
            self._targets(node.target)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._targets(node.target)
        self.visit(node.value)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self._targets(node.target)
        self.generic_visit(node)

    visit_AsyncFor = visit_For

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            if item.optional_vars is not None:
                self._targets(item.optional_vars)
        self.generic_visit(node)

    visit_AsyncWith = visit_With

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self._targets(node.target)
        self.visit(node.value)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            self._targets(t)

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> None:
        for name in node.names:
            self._bind_bad(name)
            self.bad[self._top()].add(name)

    visit_Nonlocal = visit_Global

    def _top(self) -> ast.AST:
        node = self._scope
        while node in self.parent:
            node = self.parent[node]
        return node

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for a in node.names:
            self._bind_bad((a.asname or a.name).partition(".")[0])

    visit_ImportFrom = visit_Import

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._bind_bad(node.name)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        # `srcs.append(...)`, `srcs.extend(...)`, `srcs += ...`: a list built step by step
        if isinstance(node.func, ast.Attribute) and node.func.attr in (
                "append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse", "update", "add",
                "discard", "setdefault", "__setitem__", "__iadd__"):
            base = node.func.value
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name):
                self._bind_bad(base.id)
                self.bad[self._top()].add(base.id)
        self.generic_visit(node)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self.generic_visit(node)  # comprehension targets are bound in the comprehension only (``_Eval``)


_Value = str | list  # a string (or path) or a list of them


class _Eval:
    """Evaluates a build script's source-list expression: strings, paths, lists; raises ``_Unknown``."""

    def __init__(self, script: str, tree: ast.Module, text: str, top: str, jit: bool):
        self.script = script
        self.folder = os.path.dirname(script)
        self.scopes = _Scopes(tree)
        self.aliases = self._aliases(tree)
        self.top = top
        self.jit = jit  # a runtime `load`: a relative path may be relative to the tree's folder too
        self.consumed: list[tuple[int, int, int, int]] = []
        self._busy: set[tuple[int, str]] = set()

    @staticmethod
    def _aliases(tree: ast.Module) -> dict[str, str]:
        out: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    out[a.asname or a.name.partition(".")[0]] = a.name if a.asname else a.name.partition(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    out[a.asname or a.name] = f"{node.module}.{a.name}"
        return out

    def qualified(self, func: ast.AST) -> str:
        dotted = _dotted(func)
        if dotted is None:
            return ""
        head, _, rest = dotted.partition(".")
        full = self.aliases.get(head, head)
        return f"{full}.{rest}" if rest else full

    def _scope_of(self, node: ast.AST) -> list[ast.AST]:
        chain = []
        while node in self.scopes.parent:
            node = self.scopes.parent[node]
            if node in self.scopes.values:
                chain.append(node)
        return chain

    def _lookup(self, name: str, at: ast.AST, local: dict[str, _Value]) -> _Value:
        if name in local:
            return local[name]
        if name == "__file__":
            return self.script
        for scope in self._scope_of(at):
            values = self.scopes.values[scope].get(name)
            if name in self.scopes.bad[scope] or (values and len(values) > 1):
                raise _Unknown(name)
            if values:
                key = (id(values[0]), name)
                if key in self._busy:
                    raise _Unknown(name)
                self._busy.add(key)
                try:
                    return self.eval(values[0], {})
                finally:
                    self._busy.discard(key)
        raise _Unknown(name)

    def eval(self, node: ast.AST, local: dict[str, _Value]) -> _Value:  # noqa: C901 - one case per node kind
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.consumed.append((node.lineno, node.col_offset, node.end_lineno or node.lineno,
                                  node.end_col_offset or node.col_offset))
            return node.value
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.FormattedValue):
                    if v.format_spec is not None:
                        raise _Unknown("format")
                    parts.append(self._str(self.eval(v.value, local)))
                else:
                    parts.append(self._str(self.eval(v, local)))
            return "".join(parts)
        if isinstance(node, (ast.List, ast.Tuple)):
            out: list = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    out += self._list(self.eval(e.value, local))
                else:
                    out.append(self._str(self.eval(e, local)))
            return out
        if isinstance(node, ast.Name):
            return self._lookup(node.id, node, local)
        if isinstance(node, ast.BinOp):
            left, right = self.eval(node.left, local), self.eval(node.right, local)
            if isinstance(node.op, ast.Add) and type(left) is type(right):
                return left + right  # type: ignore[operator]
            if isinstance(node.op, ast.Div) and isinstance(left, str) and isinstance(right, str):
                return os.path.join(left, right)
            raise _Unknown("operator")
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            return os.path.dirname(self._str(self.eval(node.value, local)))
        if isinstance(node, ast.ListComp) and len(node.generators) == 1 and not node.generators[0].is_async:
            gen = node.generators[0]
            if not isinstance(gen.target, ast.Name):
                raise _Unknown("comprehension")
            out = []
            for item in self._list(self.eval(gen.iter, local)):
                inner = {**local, gen.target.id: item}
                if all(self._test(c, inner) for c in gen.ifs):
                    out.append(self._str(self.eval(node.elt, inner)))
            return out
        if isinstance(node, ast.Call):
            return self._call(node, local)
        raise _Unknown(type(node).__name__)

    def _call(self, node: ast.Call, local: dict[str, _Value]) -> _Value:
        name = self.qualified(node.func)
        args = node.args
        if any(isinstance(a, ast.Starred) for a in args):
            raise _Unknown("starred")
        kw = {k.arg: k.value for k in node.keywords}
        method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        if name in ("os.path.join", "posixpath.join") or method == "joinpath":
            parts = [self._str(self.eval(node.func.value, local))] if method == "joinpath" and \
                isinstance(node.func, ast.Attribute) else []
            parts += [self._str(self.eval(a, local)) for a in args]
            if not parts or node.keywords:
                raise _Unknown("join")
            return os.path.join(*parts)
        if name in ("os.path.dirname", "os.path.abspath", "os.path.realpath", "os.path.normpath",
                    "os.path.expanduser") and len(args) == 1 and not kw:
            value = self._str(self.eval(args[0], local))
            if name.endswith("dirname"):
                return os.path.dirname(value)
            return os.path.normpath(self._absolute(value)) if name.endswith(("abspath", "realpath")) else value
        if name in ("pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "Path") and not kw:
            parts = [self._str(self.eval(a, local)) for a in args]
            return os.path.join(*parts) if parts else "."
        if name in ("str", "os.fspath", "os.path.join") and len(args) == 1 and not kw:
            return self._str(self.eval(args[0], local))
        if name in ("sorted", "list", "tuple") and len(args) == 1 and not kw:
            return self._list(self.eval(args[0], local))
        if name in ("glob.glob", "glob.iglob") and args and set(kw) <= {"recursive"}:
            recursive = "recursive" in kw and self._bool(kw["recursive"])
            return self._glob(self._str(self.eval(args[0], local)), recursive)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("glob", "rglob") and len(args) == 1 \
                and not kw and name not in ("glob.glob",):
            base = self._str(self.eval(node.func.value, local))
            pattern = self._str(self.eval(args[0], local))
            return self._glob(os.path.join(base, ("**/" if node.func.attr == "rglob" else "") + pattern), True)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("resolve", "absolute") and not args:
            return os.path.normpath(self._absolute(self._str(self.eval(node.func.value, local))))
        if name == "os.listdir" and len(args) == 1:
            folder = self._absolute(self._str(self.eval(args[0], local)))
            try:
                return sorted(os.listdir(folder))
            except OSError as exc:
                raise _Unknown("listdir") from exc
        raise _Unknown(name or "call")

    def _test(self, node: ast.AST, local: dict[str, _Value]) -> bool:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("endswith", "startswith") and len(node.args) == 1:
            value = self._str(self.eval(node.func.value, local))
            arg = self.eval(node.args[0], local)
            options = tuple(arg) if isinstance(arg, list) else (arg,)
            return value.endswith(options) if node.func.attr == "endswith" else value.startswith(options)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            left = self.eval(node.left, local)
            right = self.eval(node.comparators[0], local)
            found = left in right
            return found if isinstance(node.ops[0], ast.In) else not found
        if isinstance(node, ast.BoolOp):
            values = [self._test(v, local) for v in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not self._test(node.operand, local)
        raise _Unknown("condition")

    @staticmethod
    def _bool(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return node.value
        raise _Unknown("flag")

    @staticmethod
    def _str(value: _Value) -> str:
        if isinstance(value, str):
            return value
        raise _Unknown("not a string")

    @staticmethod
    def _list(value: _Value) -> list:
        if isinstance(value, list):
            return value
        raise _Unknown("not a list")

    def _absolute(self, path: str) -> str:
        return path if os.path.isabs(path) else os.path.join(self.folder, path)

    def _glob(self, pattern: str, recursive: bool) -> list[str]:
        if os.path.isabs(pattern):
            return sorted(glob_mod.glob(pattern, recursive=recursive))
        bases = [self.folder, *([self.top] if self.jit and self.top != self.folder else [])]
        found = [os.path.relpath(p, self.folder) for b in bases
                 for p in glob_mod.glob(os.path.join(glob_mod.escape(b), pattern), recursive=recursive)]
        return sorted(set(found))

    def paths(self, value: _Value) -> list[str]:
        """The files a source list names (relative to the script's folder; a runtime ``load``'s relative path
        also to the tree's folder); unknown when one names no file."""
        out = []
        for item in self._list(value) if isinstance(value, list) else [value]:
            item = self._str(item)
            cands = [item] if os.path.isabs(item) else [os.path.join(self.folder, item),
                                                        *([os.path.join(self.top, item)] if self.jit else [])]
            hits = [os.path.normpath(c) for c in cands if os.path.isfile(c)]
            if not hits:
                raise _Unknown(f"missing source {item}")
            out += hits
        return out


def _python_builds(path: str, raw: bytes, top: str, consumed: dict[str, list[tuple[int, int]]],
                   consumed_at: dict[str, set[tuple[int, int]]]) -> list[_Build]:
    """The extension builds a Python file makes (setuptools extensions, ``cpp_extension.load``); raises
    ``_Unknown`` for one it cannot follow."""
    try:
        text = raw.decode("utf-8")
        tree = ast.parse(text)
    except (SyntaxError, ValueError, UnicodeDecodeError) as exc:
        raise _Unknown("unparsable build script") from exc
    evaluator = _Eval(path, tree, text, top, jit=os.path.basename(path) != "setup.py")
    builds: list[_Build] = []
    shown = os.path.relpath(path, top)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "sources" and (
                not isinstance(node.ctx, ast.Load) or _mutated(node, evaluator.scopes.parent)):
            raise _Unknown("extension sources changed")
        if isinstance(node, ast.Name) and node.id == "cythonize":
            raise _Unknown("cython")
        if not isinstance(node, ast.Call):
            continue
        name = evaluator.qualified(node.func)
        last = name.rpartition(".")[2]
        if last.endswith("Extension") and last != "BuildExtension":
            if last not in _SETUPTOOLS_CLASSES:
                raise _Unknown(f"custom extension class {last}")
            given = {k.arg: k.value for k in node.keywords}
            if None in given:
                raise _Unknown("**kwargs")
            src = given.get("sources", node.args[1] if len(node.args) > 1 else None)
            ext = given.get("name", node.args[0] if node.args else None)
        elif last in _CPP_EXTENSION_LOADS and "cpp_extension" in name:
            given = {k.arg: k.value for k in node.keywords}
            if None in given:
                raise _Unknown("**kwargs")
            ext = given.get("name", node.args[0] if node.args else None)
            if last == "load_inline":
                for i, key in ((1, "cpp_sources"), (2, "cuda_sources")):
                    code = given.get(key, node.args[i] if len(node.args) > i else None)
                    if code is not None and not _literal_strings(code):
                        raise _Unknown("load_inline with computed code")
                builds.append(_Build(f"{shown}:{node.lineno}", _literal(ext), []))
                continue
            src = given.get("sources", node.args[1] if len(node.args) > 1 else None)
        else:
            continue
        if src is None:
            raise _Unknown("no sources")
        evaluator.consumed = []
        sources = evaluator.paths(evaluator.eval(src, {}))
        spans = consumed.setdefault(path, [])
        spans += _offsets(text, evaluator.consumed)
        consumed_at.setdefault(path, set()).update((a, b) for a, b, _, _ in evaluator.consumed)
        builds.append(_Build(f"{shown}:{node.lineno}", _literal(ext), sources))
    return builds


def _mutated(node: ast.Attribute, parent: dict[ast.AST, ast.AST]) -> bool:
    """Whether ``x.sources`` is the receiver of a mutating call (``ext.sources.append(...)``)."""
    up = parent.get(node)
    return isinstance(up, ast.Attribute) and up.attr in ("append", "extend", "insert", "remove", "__iadd__")


def _literal(node: ast.AST | None) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _literal_strings(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True
    return isinstance(node, (ast.List, ast.Tuple)) and all(_literal_strings(e) for e in node.elts)


def _offsets(text: str, spans: list[tuple[int, int, int, int]]) -> list[tuple[int, int]]:
    """AST (line, column) spans as byte offsets of the UTF-8 text."""
    starts = [0]
    for line in text.encode("utf-8").splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    out = []
    for l0, c0, l1, c1 in spans:
        if l0 - 1 < len(starts) and l1 - 1 < len(starts):
            out.append((starts[l0 - 1] + c0, starts[l1 - 1] + c1))
    return out


# ---------------------------------------------------------------------------------------------------------------
# CMake

# a CMake token: a bracket comment, a line comment, a quoted argument, a bracket argument, a paren, a word
_CMAKE_TOKEN = re.compile(r'#\[(=*)\[.*?\]\1\]|#[^\n]*|"(?:\\.|[^"\\])*"|\[(=*)\[.*?\]\2\]|[()]'
                          r'|[^\s()#"]+(?:"(?:\\.|[^"\\])*")?', re.DOTALL)
_CMAKE_TARGETS = frozenset({"add_library", "add_executable", "cuda_add_library", "cuda_add_executable",
                            "pybind11_add_module", "nanobind_add_module", "python_add_library",
                            "python3_add_library", "hip_add_library", "hip_add_executable", "target_sources"})
_CMAKE_KEYWORDS = frozenset({"STATIC", "SHARED", "MODULE", "OBJECT", "INTERFACE", "EXCLUDE_FROM_ALL", "WIN32",
                             "MACOSX_BUNDLE", "PRIVATE", "PUBLIC", "WITH_SOABI", "NO_EXTRAS", "THIN_LTO",
                             "OPT_SIZE", "SYSTEM", "NB_STATIC", "NB_SHARED", "STABLE_ABI", "NOMINSIZE", "LTO",
                             "NOSTRIP", "NB_SUPPRESS_WARNINGS", "FREE_THREADED", "USE_SABI", "OPTIONS", "NO_SONAME"})
_CMAKE_VAR = re.compile(r"\$\{([A-Za-z0-9_.+\-/]+)\}")
_CMAKE_BLOCKS = {"function": "endfunction", "macro": "endmacro", "foreach": "endforeach", "while": "endwhile"}
_CMAKE_SOURCE_COMMANDS = frozenset({*_CMAKE_TARGETS, "set", "list", "file", "add_subdirectory", "include"})


def _cmake_commands(text: str) -> list[tuple[str, list[tuple[str, bool]], int]]:
    """``(command, [(argument, quoted)], line)`` of a CMake file; raises ``_Unknown`` when it cannot be read."""
    out: list[tuple[str, list[tuple[str, bool]], int]] = []
    tokens = [(m.group(0), m.start()) for m in _CMAKE_TOKEN.finditer(text) if not m.group(0).startswith("#")]
    i = 0
    while i < len(tokens):
        word, at = tokens[i]
        if i + 1 >= len(tokens) or tokens[i + 1][0] != "(" or not re.fullmatch(r"[A-Za-z_]\w*", word):
            raise _Unknown("cmake syntax")
        depth, j, args = 1, i + 2, []
        while j < len(tokens) and depth:
            tok = tokens[j][0]
            if tok == "(":
                depth += 1
            elif tok == ")":
                depth -= 1
            if depth and tok not in "()":
                if tok.startswith("["):
                    raise _Unknown("cmake bracket argument")
                quoted = tok.startswith('"')
                args.append((tok[1:-1] if quoted else tok, quoted))
            j += 1
        if depth:
            raise _Unknown("cmake syntax")
        out.append((word.lower(), args, text.count("\n", 0, at) + 1))
        i = j
    return out


class _CMake:
    """Reads a CMake project from its top ``CMakeLists.txt``: the sources its targets list."""

    def __init__(self, top: str, cmake_modules: dict[str, list[str]]):
        self.top = top
        self.modules = cmake_modules  # `name.cmake` basename -> paths in the tree
        self.builds: list[_Build] = []
        self.read: set[str] = set()
        self.consumed: dict[str, list[tuple[int, int]]] = {}

    def project(self, path: str) -> None:
        folder = os.path.dirname(path)
        scope = {"CMAKE_SOURCE_DIR": folder, "PROJECT_SOURCE_DIR": folder, "CMAKE_CURRENT_SOURCE_DIR": folder,
                 "CMAKE_CURRENT_LIST_DIR": folder}
        self._file(path, folder, scope, 0)

    def _file(self, path: str, folder: str, scope: dict[str, str], depth: int) -> None:
        if depth > 16 or path in self.read and depth:
            raise _Unknown("cmake recursion")
        self.read.add(path)
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read(_MAX_FILE)
        except OSError as exc:
            raise _Unknown("cmake unreadable") from exc
        commands = _cmake_commands(text)
        functions: set[str] = set()
        nest: list[str] = []  # open blocks (`if`, `function`, ...)
        for name, args, line in commands:
            if name in _CMAKE_BLOCKS:
                if name in ("function", "macro") and args and not nest:
                    functions.add(args[0][0].lower())
                nest.append(_CMAKE_BLOCKS[name])
                continue
            if nest and name == nest[-1]:
                nest.pop()
                continue
            if name == "if":
                nest.append("endif")
                continue
            if any(b != "endif" for b in nest):
                if name in _CMAKE_SOURCE_COMMANDS:
                    raise _Unknown(f"cmake {name} in a loop or function")
                continue
            conditional = bool(nest)
            if name in functions:
                raise _Unknown("cmake function call")
            if name in ("externalproject_add", "fetchcontent_declare", "fetchcontent_makeavailable",
                        "add_custom_command", "add_custom_target", "execute_process", "try_compile",
                        "cmake_language", "variable_watch"):
                joined = " ".join(a for a, _ in args)
                if name != "fetchcontent_declare" or "SOURCE_DIR" in joined:
                    if name in ("add_custom_command", "add_custom_target", "execute_process") and not \
                            _COMPILER.search(joined.encode()):
                        continue
                    raise _Unknown(f"cmake {name}")
                continue
            if name == "project" and args:
                scope[f"{args[0][0]}_SOURCE_DIR"] = folder
                scope["PROJECT_SOURCE_DIR"] = folder
                continue
            if name == "set" and args:
                var = args[0][0]
                values = [a for a in args[1:] if a[0] not in ("PARENT_SCOPE",)]
                if any(a[0] == "CACHE" for a in values):
                    values = values[:[a[0] for a in values].index("CACHE")]
                value = ";".join(self._expand(a, scope, folder, strict=False) for a, _ in values)
                if conditional and var in scope:
                    value = ";".join(x for x in (scope[var], value) if x)
                scope[var] = value
                continue
            if name == "list" and len(args) >= 2:
                op, var = args[0][0].upper(), args[1][0]
                items = [self._expand(a, scope, folder, strict=False) for a, _ in args[2:]]
                if op in ("APPEND", "PREPEND"):
                    scope[var] = ";".join(x for x in (scope.get(var, ""), *items) if x)
                elif op in ("LENGTH", "GET", "FIND", "JOIN"):
                    if len(args) >= 3:
                        scope[args[-1][0]] = "\0"  # a result that is not a source list
                else:
                    scope[var] = "\0"  # REMOVE_ITEM, FILTER, TRANSFORM...: not followed
                continue
            if name == "file" and len(args) >= 2 and args[0][0].upper() in ("GLOB", "GLOB_RECURSE"):
                recursive = args[0][0].upper() == "GLOB_RECURSE"
                var = args[1][0]
                rest = args[2:]
                found: list[str] = []
                relative = None
                k = 0
                while k < len(rest):
                    word = rest[k][0]
                    if word in ("CONFIGURE_DEPENDS", "FOLLOW_SYMLINKS"):
                        k += 1
                        continue
                    if word in ("RELATIVE", "LIST_DIRECTORIES") and k + 1 < len(rest):
                        if word == "RELATIVE":
                            relative = self._expand(rest[k + 1][0], scope, folder)
                        k += 2
                        continue
                    for pat in self._expand(word, scope, folder).split(";"):
                        pat = pat if os.path.isabs(pat) else os.path.join(folder, pat)
                        found += _cmake_glob(pat, recursive)
                    k += 1
                if relative is not None:
                    found = [os.path.relpath(p, relative) for p in found]
                value = ";".join(sorted(set(found)))
                if conditional and var in scope:
                    value = ";".join(x for x in (scope[var], value) if x)
                scope[var] = value
                continue
            if name == "file":
                if args and args[0][0].upper() in ("WRITE", "APPEND", "GENERATE", "CONFIGURE", "COPY",
                                                   "DOWNLOAD", "STRINGS", "READ"):
                    if args[0][0].upper() in ("STRINGS", "READ") and len(args) >= 3:
                        scope[args[2][0]] = "\0"
                continue
            if name == "add_subdirectory" and args:
                sub = self._expand(args[0][0], scope, folder)
                sub = sub if os.path.isabs(sub) else os.path.join(folder, sub)
                child = os.path.join(sub, "CMakeLists.txt")
                if not os.path.isfile(child):
                    raise _Unknown("cmake subdirectory")
                inner = {**scope, "CMAKE_CURRENT_SOURCE_DIR": sub, "CMAKE_CURRENT_LIST_DIR": sub}
                self._file(child, sub, inner, depth + 1)
                continue
            if name == "include" and args:
                target = self._expand(args[0][0], scope, folder, strict=False)
                if target.endswith(".cmake") or os.sep in target or "/" in target:
                    path_ = target if os.path.isabs(target) else os.path.join(folder, target)
                    if not os.path.isfile(path_):
                        if path_.startswith(self.top):
                            raise _Unknown("cmake include")
                        continue
                else:
                    hits = self.modules.get(f"{target}.cmake", [])
                    if len(hits) > 1:
                        raise _Unknown("cmake include")
                    if not hits:
                        continue  # CMake's own module
                    path_ = hits[0]
                inner = {**scope, "CMAKE_CURRENT_LIST_DIR": os.path.dirname(path_)}
                self._file(path_, folder, inner, depth + 1)
                scope.update({k: v for k, v in inner.items() if k != "CMAKE_CURRENT_LIST_DIR"})
                continue
            if name in _CMAKE_TARGETS and args:
                target = args[0][0]
                rest = args[1:]
                if any(a[0] in ("IMPORTED", "ALIAS") for a in rest):
                    continue
                sources: list[str] = []
                k = 0
                while k < len(rest):
                    word = rest[k][0]
                    if word == "FILE_SET":
                        raise _Unknown("cmake file set")
                    if word in _CMAKE_KEYWORDS:
                        k += 1
                        continue
                    for item in self._expand(word, scope, folder).split(";"):
                        if not item or item.upper() in _CMAKE_KEYWORDS:
                            continue
                        p = os.path.normpath(item if os.path.isabs(item) else os.path.join(folder, item))
                        if not os.path.isfile(p):
                            if "_BINARY_DIR" in word or not p.startswith(self.top):
                                continue  # a generated file, or one outside the tree
                            raise _Unknown(f"cmake missing source {item}")
                        sources.append(p)
                    k += 1
                self.builds.append(_Build(f"{os.path.relpath(path, self.top)}:{line}", target,
                                          list(dict.fromkeys(sources))))
        if nest:
            raise _Unknown("cmake unbalanced blocks")

    def _expand(self, word: str, scope: dict[str, str], folder: str, strict: bool = True) -> str:
        """``word`` with its ``${VAR}`` references replaced; an unknown variable, a generator expression or an
        environment variable is unknown (``strict``) or left as is."""
        if "$<" in word or "$ENV{" in word:
            if strict:
                raise _Unknown("cmake generator expression")
            return "\0"

        def sub(m: re.Match[str]) -> str:
            var = m.group(1)
            if var in scope:
                if strict and "\0" in scope[var]:
                    raise _Unknown(f"cmake variable {var}")
                return scope[var]
            if var in ("CMAKE_CURRENT_BINARY_DIR", "CMAKE_BINARY_DIR", "PROJECT_BINARY_DIR"):
                return "/\0binary"
            if strict:
                raise _Unknown(f"cmake variable {var}")
            return "\0"

        for _ in range(8):
            new = _CMAKE_VAR.sub(sub, word)
            if new == word:
                break
            word = new
        if strict and ("${" in word or "\0" in word):
            if "\0binary" in word:
                return ""
            raise _Unknown("cmake variable")
        return word


def _cmake_glob(pattern: str, recursive: bool) -> list[str]:
    """CMake ``file(GLOB)``: ``*`` within a folder name; ``GLOB_RECURSE`` also descends into folders."""
    if not recursive:
        return [p for p in glob_mod.glob(pattern) if os.path.isfile(p)]
    folder, name = os.path.split(pattern)
    if any(c in folder for c in "*?["):
        raise _Unknown("cmake recursive glob with a folder pattern")
    return [p for p in glob_mod.glob(os.path.join(glob_mod.escape(folder), "**", name), recursive=True)
            if os.path.isfile(p)]


# ---------------------------------------------------------------------------------------------------------------
# The tree

def _walk(top: str, skip: str | None = None) -> list[tuple[str, os.stat_result]]:
    """Every file below ``top`` (hidden folders and the ``skip`` folder, the lint's cache, left out)."""
    out: list[tuple[str, os.stat_result]] = []
    todo = [top]
    while todo:
        folder = todo.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            if e.name.startswith(".") or e.name == "__pycache__":
                continue
            try:
                if e.is_dir(follow_symlinks=False):
                    if e.path != skip:
                        todo.append(e.path)
                elif e.is_file(follow_symlinks=False):
                    out.append((e.path, e.stat(follow_symlinks=False)))
            except OSError:
                continue
            if len(out) > _MAX_ENTRIES:
                raise _Unknown("tree too large")
    return out


def _ancestor_builds(top: str) -> bool:
    """Whether a folder above ``top`` (up to the repository's root, a folder holding ``.git``) holds a build
    script, which may compile the linted files from outside."""
    folder = top
    while not os.path.exists(os.path.join(folder, ".git")):
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent
        try:
            names = set(os.listdir(folder))
        except OSError:
            return True
        if names & _ANCESTOR_BUILDS:
            return True
    return False


def _read(path: str, sources: LintedSources | None) -> bytes:
    from graphcheck.lint.cpp_callers import read_source

    return read_source(path, sources, _MAX_FILE)


def _blanked(raw: bytes, spans: Sequence[tuple[int, int]]) -> bytes:
    """``raw`` with the byte ranges ``spans`` (the source strings a build resolved) made blanks."""
    if not spans:
        return raw
    buf = bytearray(raw)
    for a, b in spans:
        buf[a:b] = b" " * (b - a)
    return bytes(buf)


def _names_source(raw: bytes, consumed: set[tuple[int, int]]) -> bool:
    """Whether a Python file has a string (not a comment, not one of the ``consumed`` source-list strings, by
    their ``(line, column)``) that names a C++ source file; unparsable: True."""
    try:
        tree = ast.parse(raw)
    except (SyntaxError, ValueError):
        return True
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and _SOURCE_STRING.search(n.value.strip())
               and (n.lineno, n.col_offset) not in consumed for n in ast.walk(tree))


def _builds(tree: _Tree, sources: LintedSources | None) -> list[_Build]:
    """Every build the tree names, followed; raises ``_Unknown`` for any doubt."""
    if _ancestor_builds(tree.top):
        raise _Unknown("a build script above the linted folder")
    cmake_lists: list[str] = []
    modules: dict[str, list[str]] = {}
    python: list[str] = []
    toml: list[str] = []
    for path, _st in tree.files:
        base = os.path.basename(path)
        suffix = os.path.splitext(base)[1].lower()
        if base in _OTHER_BUILDS or suffix in _OTHER_SUFFIXES:
            raise _Unknown(f"build system not read: {base}")
        if base in _MAKEFILES or suffix in _MAKE_SUFFIXES or suffix in _SCRIPT_SUFFIXES:
            if _COMPILER.search(_read(path, None)):
                raise _Unknown(f"compiler run by {base}")
        elif base == "CMakeLists.txt":
            cmake_lists.append(path)
        elif suffix == ".cmake":
            modules.setdefault(base, []).append(path)
        elif suffix == ".py":
            python.append(path)
        elif base == "pyproject.toml":
            toml.append(path)
    builds: list[_Build] = []
    cmake_build = False
    for path in toml:
        raw = _read(path, None)
        if re.search(rb"meson|maturin|setuptools[-_]rust|hatch[-_]cpp|pdm[-_]backend", raw):
            raise _Unknown("pyproject build backend not read")
        if re.search(rb"scikit[-_]build|cmake", raw, re.IGNORECASE):
            cmake_build = True
    for path in python:
        raw = _read(path, sources)
        script: list[_Build] = []
        if b"Extension" in raw or b"cpp_extension" in raw or b"cythonize" in raw:
            script = _python_builds(path, raw, tree.top, tree.consumed, tree.consumed_at)
            builds += script
        left = _blanked(raw, tree.consumed.get(path, ()))
        if not script and _RUNTIME_BUILD.search(left):
            raise _Unknown(f"C++ compiled at run time by {os.path.basename(path)}")
        if _SOURCE_BYTES.search(left) and _names_source(raw, tree.consumed_at.get(path, set())):
            raise _Unknown(f"a C++ file named by {os.path.basename(path)}")
    if cmake_lists:
        if builds or not cmake_build and any(os.path.basename(p) == "setup.py" for p in python):
            raise _Unknown("more than one build system")
        folders = {os.path.dirname(p) for p in cmake_lists}
        roots = [p for p in cmake_lists if not any(os.path.dirname(p).startswith(f + os.sep) for f in folders)]
        reader = _CMake(tree.top, modules)
        for root in roots:
            reader.project(root)
        if set(cmake_lists) - reader.read:
            raise _Unknown("a CMakeLists.txt no project reads")
        builds += reader.builds
    elif cmake_build:
        raise _Unknown("a CMake build without CMakeLists.txt")
    if not builds:
        raise _Unknown("no build")
    return builds


def _closure(compiled: set[str], cpp_files: list[str]) -> set[str]:
    """``compiled`` and the tree's C++ files they include, transitively (a quoted or bracketed path matched by
    its tail, so that any file it may name counts); raises ``_Unknown`` for an ``#include`` through a macro."""
    by_base: dict[str, list[str]] = {}
    for p in cpp_files:
        by_base.setdefault(os.path.basename(p), []).append(p)
    seen = set(compiled)
    todo = list(compiled)
    while todo:
        path = todo.pop()
        for m in _INCLUDE.finditer(_read(path, None)):
            if m.group(3):
                raise _Unknown("#include through a macro")
            inc = m.group(2).decode("utf-8", "replace").strip()
            rel = os.path.normpath(inc)
            near = os.path.normpath(os.path.join(os.path.dirname(path), rel))
            tail = rel.lstrip("./" + os.sep) if not rel.startswith("..") else os.path.basename(rel)
            for k in by_base.get(os.path.basename(rel), ()):
                if k not in seen and (k == near or k.endswith(os.sep + tail)):
                    seen.add(k)
                    todo.append(k)
    return seen


def _verdicts(top: str, candidates: list[str], sources: LintedSources | None,
              tree: _Tree) -> dict[str, str | None]:
    """For each candidate C++ file: why no build compiles it (the reason's text), or None."""
    out: dict[str, str | None] = dict.fromkeys(candidates)
    try:
        builds = _builds(tree, sources)
        compiled = {p for b in builds for p in b.sources}
        cpp_files = [p for p, _ in tree.files
                     if os.path.splitext(p)[1].lower() in _SOURCE_SUFFIXES | _HEADER_SUFFIXES]
        built = _closure(compiled, cpp_files)
        unbuilt_sources = {p for p in cpp_files if p not in built
                           and os.path.splitext(p)[1].lower() in _SOURCE_SUFFIXES}
        included_by_unbuilt = _closure(unbuilt_sources, cpp_files) - unbuilt_sources
    except _Unknown:
        return out
    left = []
    for c in candidates:
        suffix = os.path.splitext(c)[1].lower()
        if c in built:
            continue
        if suffix not in _DEMOTED_SUFFIXES and c not in included_by_unbuilt:
            continue  # a header nothing in the tree includes: a public header another project may compile
        if _MAIN.search(_read(c, sources)):
            continue  # a program: some build of an executable may compile it
        left.append(c)
    if not left:
        return out
    named = _named_elsewhere(tree, left, sources)
    if named is None:
        return out
    for c in left:
        if c in named:
            continue
        out[c] = _reason(tree.top, c, builds)
    return out


def _named_elsewhere(tree: _Tree, candidates: list[str], sources: LintedSources | None) -> set[str] | None:
    """The candidates whose stem appears as a word in another file of the tree (outside ``#include`` lines and
    the source lists the builds resolved); None when the tree is too large to read."""
    stems = {c: os.path.splitext(os.path.basename(c))[0] for c in candidates}
    pattern = re.compile(rb"(?<![A-Za-z0-9_])(" + b"|".join(re.escape(s.encode()) for s in set(stems.values()))
                         + rb")(?![A-Za-z0-9_])")
    found: dict[str, set[str]] = {}  # stem -> files naming it
    total = 0
    for path, st in tree.files:
        if st.st_size > _MAX_FILE:
            continue
        raw = _read(path, sources)
        total += len(raw)
        if total > _MAX_READ:
            return None
        if b"\0" in raw[:4096]:
            continue  # a binary file
        raw = _blanked(raw, tree.consumed.get(path, ()))
        for m in pattern.finditer(raw):
            if _INCLUDE.match(raw, raw.rfind(b"\n", 0, m.start()) + 1):
                continue  # an `#include` line: the include closure's subject
            found.setdefault(m.group(1).decode(), set()).add(path)
    return {c for c, s in stems.items() if found.get(s, set()) - {c}}


def _reason(top: str, path: str, builds: list[_Build]) -> str:
    def one(b: _Build) -> str:
        listed = [os.path.relpath(p, os.path.dirname(os.path.join(top, b.where.rpartition(":")[0])))
                  for p in b.sources]
        shown = ", ".join(listed[:4]) + (f", and {len(listed) - 4} more" if len(listed) > 4 else "")
        named = f" `{b.name}`" if b.name else ""
        return f"{b.where}{named} compiles {shown}" if listed else f"{b.where}{named} compiles inline code only"

    shown = "; ".join(one(b) for b in builds[:3]) + (f"; and {len(builds) - 3} more builds" if len(builds) > 3
                                                    else "")
    return (f"no extension build of the tree compiles `{os.path.relpath(path, top)}` or includes it, so its code "
            f"never runs: {shown}")


# ---------------------------------------------------------------------------------------------------------------

def _key(tree: _Tree, candidates: list[str]) -> str:
    h = hashlib.blake2b(digest_size=16)
    try:
        h.update(Path(__file__).read_bytes())
    except OSError:
        h.update(b"cpp_builds")
    h.update(tree.top.encode("utf-8", "surrogateescape"))
    for path, st in tree.files:
        h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    h.update("\0".join(candidates).encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _load(cache_dir: Path | None, key: str) -> dict[str, str | None] | None:
    return read_verdicts(cache_dir, _CACHE_FILE, key, lambda v: v is None or isinstance(v, str))


def _save(cache_dir: Path | None, key: str, verdicts: dict[str, str | None]) -> None:
    write_verdicts(cache_dir, _CACHE_FILE, key, verdicts)


def _is_error(f: Finding) -> bool:
    return f.severity is Severity.ERROR and not f.code.startswith("GC0")


def demote_unbuilt(raw: dict[str, list[Finding]], files: Sequence[tuple[str, str]],
                   paths: Sequence[str | os.PathLike[str]], cache_dir: Path | None = None,
                   sources: LintedSources | None = None, lint_cache: Path | None = None) -> dict[str, list[Finding]]:
    """``raw`` (findings by file path) with the errors of each C++ file that no build of the tree compiles (nor
    includes) made warnings that say so. ``files``: ``(path, language)`` of every linted file; ``paths``: those
    named to the lint; the tree whose builds are read is the folder holding the named directories.
    ``lint_cache``: the lint's cache folder, used or not (never read as part of the tree)."""
    folders = [os.path.abspath(p) for p in paths if os.path.isdir(p)]
    try:
        top = os.path.commonpath(folders) if folders else ""
    except ValueError:
        top = ""
    cpp_paths = {path for path, language in files if language == "cpp"}
    candidates = sorted(path for path, found in raw.items() if path in cpp_paths and any(map(_is_error, found)))
    if not candidates or not top or not os.path.isdir(top):
        return raw
    top = os.path.abspath(top)
    try:
        skip = lint_cache if lint_cache is not None else cache_dir
        tree = _Tree(top, _walk(top, os.path.abspath(skip) if skip is not None else None))
    except _Unknown:
        return raw
    key = _key(tree, candidates)
    verdicts = _load(cache_dir, key)
    if verdicts is None or set(verdicts) != set(candidates):
        verdicts = _verdicts(top, candidates, sources, tree)
        _save(cache_dir, key, verdicts)
    out = dict(raw)
    for path in candidates:
        why = verdicts.get(path)
        if why is None:
            continue
        out[path] = [dataclasses.replace(f, severity=Severity.WARNING, message=f"{f.message} ({why})",
                                         evidence={**f.evidence, "build_check": "not compiled"})
                     if _is_error(f) else f for f in raw[path]]
    return out
