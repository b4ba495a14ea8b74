"""Launcher roots that nothing in the linted tree references: dead code, or API only outside code calls.

A module-level function that launches a kernel (or calls an extension op) is a capture root; with no caller in
the tree it was kept as public API. On an application tree such a function is often a leftover copy
(``fuse_scale_shift_kernel`` pasted into a module that others import only for other names). ``unreferenced``
finds the roots that no file of the tree names, counting the files excluded from findings by default (tests,
benchmarks, examples: a library's tests exercise its API), in modules that another linted file imports (the
tree's own code uses the module, not the function; a module nothing in the tree imports is a library's API), so
the project index walks them as code engines do not capture: their findings, and those reached only through
them, are warnings that say why.

An application tree is different: one whose linted code captures its own graphs (``capture_site``: a ``with
torch.cuda.graph`` body, ``capture_begin()``, ``make_graphed_callables`` in a linted file, not in harness code,
a non-CUDA backend or a function or file named for benchmarking, profiling, tuning or timing). What it captures
is its own step, which reaches what the linted code refers to; a launcher that only its tests, benchmarks or
examples refer to (vLLM's ``pack_seq_triton``, which ``test_pack_unpack_triton.py`` calls while the engine
imports its module for another name) is walked as uncaptured too, with a reason that names the referring file
and the capture site. In a tree with no capture site of its own (a kernel library) the tests still count.

A reference is any use the tree could reach the function by: in its own module any use of the name in the
code (a call, a callback, a dict entry, ``partial(f)``, ``@f``, ``__all__``, a recursion; not a mention in a
comment or a docstring); elsewhere an
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
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

from graphcheck.lint import files as files_mod
from graphcheck.lint.callers import _LAUNCH_REASONS as LAUNCH_REASONS
from graphcheck.lint.coldpaths import MEASURING_WORDS

# decorators that do not register or hand out the function they wrap
_PLAIN_DECORATORS = {"functools.cache", "functools.lru_cache", "functools.wraps", "torch.no_grad",
                     "torch.inference_mode", "torch.compile", "torch.compiler.disable", "torch._dynamo.disable",
                     "torch.amp.custom_fwd", "torch.cuda.amp.custom_fwd", "contextlib.contextmanager"}
_DYNAMIC_CALLS = {"getattr", "vars", "dir", "getmembers", "import_module", "__import__"}
# the first name of what a dynamic lookup searches: getattr(m, name), vars(m), dir(m), getmembers(m), m.__dict__
_LOOKUP = re.compile(rb"(?:\bgetattr\(\s*|\bvars\(\s*|\bdir\(\s*|\bgetmembers\(\s*)([A-Za-z_]\w*)|"
                     rb"\b([A-Za-z_]\w*)(?:\.\w+)*\.__dict__\b")
_LOOKUP_CALLS = (b"getattr(", b"vars(", b"dir(", b"getmembers(")
_SPACED_LOOKUP = re.compile(rb"\b(?:getattr|vars|dir|getmembers)\(\s")
# a module that looks its own names up: globals()[name], vars(), exec, sys.modules[__name__], __getattr__
_OWN_DYNAMIC = re.compile(rb"\b(?:globals|vars|locals|exec|eval)\s*\(|\bsys\.modules\b|\bdef\s+__getattr__\b")
# what a file may reach a whole module by (a star import, a dynamic lookup): parsed when it imports a module
# of that stem (or names one in a file that imports modules by name)
_DYNAMIC_BYTES = (b"import *", b"getattr", b"vars(", b"dir(", b"__dict__", b"getmembers", b"import_module",
                  b"__import__")


def reason(name: str) -> str:
    return f"no reference to `{name}` in the linted tree: dead code, or API that only outside code calls"


def tests_reason(name: str, referrer: str, site: str) -> str:
    return (f"only tests, benchmarks or examples refer to `{name}` ({referrer}) in this application tree, which "
            f"captures its own graphs ({site}): code its captured step does not reach")


# words of a function or file that measures kernels (a timing, profiling, tuning or benchmark capture): a capture
# there times a kernel; it is not the application's own captured step
_MEASURING = MEASURING_WORDS | {"benchmarks", "perf", "perftest", "time", "timeit", "test", "tests", "testing"}
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")


def _measures(name: str) -> bool:
    """Whether a name (``_opus_run_perftest``, ``AutoTuner``, ``bench_utils``) has a measuring word."""
    return any(w.lower() in _MEASURING for w in _WORD.findall(name))


def capture_site(index: Any, base: str) -> str | None:
    """Where the linted code captures its own graphs: the first capture site (``with torch.cuda.graph``,
    ``capture_begin()``, ``make_graphed_callables``) of a linted file, outside harness or eager code, a
    non-CUDA backend and measuring code (a function or file named for benchmarking, profiling, tuning, timing
    or testing: a capture that times a kernel), as ``"`site` at path:line in `qualname`"`` with the path
    below ``base``; None for a kernel library."""
    return shown_site(first_capture(index), base)


def first_capture(index: Any) -> tuple[str, str, int, str] | None:
    """(site, path, line, qualname) of ``capture_site``'s capture site, to show below any folder
    (``shown_site``); None when the linted code captures no graph itself."""
    for dotted, (module, qual, rec) in index.funcs.items():
        captures = rec.get("capture")
        path = index.by_module.get(module)
        if not captures or path is None or index.off_scope(dotted) is not None or index.vendor.reason(path):
            continue
        stem = os.path.basename(path).rpartition(".")[0]
        if any(_measures(part) for part in [stem, *qual.split(".")]):
            continue
        return captures[0][0], path, captures[0][1], qual
    return None


def shown_site(first: tuple[str, str, int, str] | None, base: str) -> str | None:
    """``first_capture``'s answer as ``"`site` at path:line in `qualname`"`` with the path below ``base``."""
    if first is None:
        return None
    site, path, line, qual = first
    return f"`{site.split(' on line')[0]}` at {_shown(path, base)}:{line} in `{qual}`"


def _shown(path: str, base: str) -> str:
    return os.path.relpath(path, base).replace(os.sep, "/") if base else os.path.basename(path)


def unreferenced(index: Any, extra_files: Sequence[str], cache_dir: Path | None = None,
                 settings: str = "", tests: Collection[str] = ()) -> dict[str, tuple[str, str]]:
    """Dotted names of the index's launcher roots that nothing in the tree refers to -> (kind, why), kind
    ``"unreferenced"``; and, in an application tree (``capture_site``), those that only the files of ``tests``
    refer to, kind ``"tests-only"``. ``extra_files``: Python files of the tree that are not linted (default
    excludes), scanned for references only; ``tests``: those of them excluded as tests, benchmarks, examples
    (not the non-CUDA backends). ``cache_dir``: where the answer is kept, keyed on ``settings`` (the index's
    cache key), the candidates, the capture site and the size and mtime of every file scanned, so a run on an
    unchanged tree reads no file for it."""
    candidates: dict[str, tuple[str, str, str]] = {}  # dotted -> (module key, name, path)
    edges = index.call_edges()  # a call the index resolves to it is a reference: no file needs reading for it
    for dotted, (why, guess) in index.roots.items():
        if dotted in index.forced or guess or not str(why).startswith(LAUNCH_REASONS):
            continue
        module, qual, rec = index.funcs[dotted]
        path = index.by_module.get(module)
        if "." in qual or rec.get("method") or path is None or index.off_scope(dotted) is not None:
            continue
        if any(caller != dotted for caller, _callee, _how in edges.get(dotted, ())):
            continue
        if rec.get("unnamed_decos") or any(index.canonical(d) not in _PLAIN_DECORATORS
                                           for d, _host in rec.get("decos", ())):
            continue  # a decorator may register or hand the function out
        candidates[dotted] = (_key(path), qual, path)
    if not candidates:
        return {}
    linted = list(index.names)
    extra = [p for p in extra_files if p not in index.names]
    base = files_mod.common_folder([*linted, *extra])
    site = capture_site(index, base) if any(p in tests for p in extra) else None
    # in an application tree the tests are read last, each on its own: what they alone refer to is known
    test_paths = [p for p in extra if p in tests] if site is not None else []
    paths = [*linted, *(p for p in extra if p not in test_paths)]
    key = _cache_key(settings, candidates, paths, test_paths, site or "") if cache_dir is not None else ""
    cached = _cached(cache_dir, key)
    if cached is not None:
        dead_names, by_tests = cached
    else:
        scan = _Scan(candidates)
        # the likeliest references first (package re-exports, the candidates' own modules): a candidate found
        # live leaves the search, so fewer files are parsed
        first = [p for p in linted if p.endswith("__init__.py") or p in scan.own]
        taken = set(first)
        for path in [*first, *(p for p in paths if p not in taken)]:
            scan.file(path)
        by_tests = {}
        for path in test_paths:
            before = set(scan.live)
            scan.file(path)
            for dotted in scan.live - before:
                by_tests[dotted] = path
        dead_names = [d for d in candidates if d not in scan.live]
        suspects = [*dead_names, *by_tests]
        if suspects:
            used = _imported_modules({candidates[d][0] for d in suspects}, linted)
            dead_names = [d for d in dead_names if candidates[d][0] in used]
            by_tests = {d: p for d, p in by_tests.items() if candidates[d][0] in used}
        _store(cache_dir, key, dead_names, by_tests)
    out = {d: ("unreferenced", reason(candidates[d][1])) for d in dead_names if d in candidates}
    if site is not None:
        for dotted, path in by_tests.items():
            if dotted in candidates:
                out[dotted] = ("tests-only", tests_reason(candidates[dotted][1], _shown(path, base), site))
    return out


_CACHE_FILE = "deadcode-v2.json"


def _cache_key(settings: str, candidates: dict[str, tuple[str, str, str]], paths: list[str],
               test_paths: list[str], site: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(settings.encode() + b"\0" + "\0".join(sorted(candidates)).encode() + b"\0" + site.encode())
    for tag, group in ((b"r", paths), (b"t", test_paths)):
        for path in sorted(group):
            try:
                st = os.stat(path)
                h.update(tag + f"\0{path}\0{st.st_size}\0{st.st_mtime_ns}".encode())
            except OSError:
                h.update(tag + f"\0{path}\0-".encode())
    return h.hexdigest()


def _cached(cache_dir: Path | None, key: str) -> tuple[list[str], dict[str, str]] | None:
    if cache_dir is None:
        return None
    try:
        with open(Path(cache_dir) / _CACHE_FILE, "rb") as fh:
            data = json.loads(fh.read())
        if (isinstance(data, dict) and data.get("key") == key and isinstance(data.get("dead"), list)
                and isinstance(data.get("tests"), dict)):
            return [str(d) for d in data["dead"]], {str(d): str(p) for d, p in data["tests"].items()}
    except (OSError, ValueError):
        pass
    return None


def _store(cache_dir: Path | None, key: str, dead: list[str], tests: dict[str, str]) -> None:
    if cache_dir is None:
        return
    try:
        Path(cache_dir).mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".deadcode-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"key": key, "dead": dead, "tests": tests}, fh)
        os.replace(tmp, Path(cache_dir) / _CACHE_FILE)
    except OSError:
        pass


def _imported_modules(keys: set[str], paths: Sequence[str]) -> set[str]:
    """The module keys of ``keys`` that another linted file imports (``from m import g``, ``import m``,
    ``from pkg import m``). An unreferenced launcher is dead only in a module the tree's own code uses for
    other names; in a module nothing in the tree imports (a kernel library's leaf module, a wrapper file
    linted with its package) it is the API others call, and its findings stay errors. Files the scan could
    not read or parse import nothing here, which keeps the findings errors."""
    stems = {key.rpartition("/")[2].encode() for key in keys}
    used: set[str] = set()
    for path in paths:
        own = _key(path)
        folder = os.path.dirname(os.path.abspath(path)).replace(os.sep, "/")
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if not any(stem in data for stem in stems) or b"import" not in data or b"\x00" in data[:8192]:
            continue
        try:
            tree = ast.parse(files_mod.decode(data, "python"))
        except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            named: list[str] = []
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = _import_source(node, folder)
                named = [source, *(_member(source, alias.name) for alias in node.names)]
            for module in named:
                used.update(k for k in _modules_named(module, keys) if k != own)
        if used >= keys:
            break
    return used


def _import_source(node: ast.ImportFrom, folder: str) -> str:
    """The module a ``from`` import in a file of ``folder`` names: dotted as written, or a path for a
    relative one."""
    if not node.level:
        return node.module or ""
    base = folder
    for _ in range(node.level - 1):
        base = base.rpartition("/")[0]
    return "/".join([base, *(node.module.split(".") if node.module else [])])


def _member(module: str, name: str) -> str:
    return f"{module}/{name}" if module.startswith("/") else f"{module}.{name}"


def _modules_named(module: str, keys: Iterable[str]) -> list[str]:
    """The module keys of ``keys`` an import names: ``module`` is a path (``/t/pkg/ops``, from a relative
    import) or a dotted name as written (``pkg.ops``), which names every module whose path ends so."""
    if module.startswith("/"):
        return [module] if module in keys else []
    tail = "/" + module.replace(".", "/")
    return [k for k in keys if k.endswith(tail)]


def _key(path: str) -> str:
    """A module's file as a module: ``/t/pkg/ops`` for ``/t/pkg/ops.py``, ``/t/pkg`` for ``/t/pkg/__init__.py``.
    Imports are matched against it by path, so folders without ``__init__.py`` (namespace packages) and trees
    linted below their import root resolve alike."""
    path = os.path.abspath(path).replace(os.sep, "/")
    stem = path.rpartition(".")[0] if path.endswith(".py") else path
    return stem.rpartition("/")[0] if stem.endswith("/__init__") else stem


class _Scan:
    def __init__(self, candidates: dict[str, tuple[str, str, str]]):
        self.candidates = candidates
        self.live: set[str] = set()
        self.by_name: dict[str, list[str]] = {}
        self.by_module: dict[str, list[str]] = {}  # module key -> its candidates
        self.own: dict[str, list[str]] = {}  # path -> candidates defined there
        for dotted, (key, name, path) in candidates.items():
            self.by_name.setdefault(name, []).append(dotted)
            self.by_module.setdefault(key, []).append(dotted)
            self.own.setdefault(path, []).append(dotted)
        self.compiled = -1
        self.compile()

    def compile(self) -> None:
        """The patterns of the names and module stems of the candidates not yet found live."""
        pending = [c for d, c in self.candidates.items() if d not in self.live]
        names = sorted({name for _key, name, _path in pending})
        stems = sorted({key.rpartition("/")[2] for key, _name, _path in pending})
        self.names = [n.encode() for n in names]
        self.words = re.compile(rb"(?<!def )\b(" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b")
        alternatives = b"|".join(re.escape(s.encode()) for s in stems)
        self.stems = re.compile(rb"\b(" + alternatives + rb")\b")
        # an import statement naming a stem (a parenthesized name list may span lines)
        self.imports = re.compile(rb"^[ \t]*(?:from|import)\b[^\n(]*(?:\([^)]*)?\b(?:" + alternatives + rb")\b", re.M)
        self.compiled = len(self.live)

    def file(self, path: str) -> None:
        left = len(self.candidates) - len(self.live)
        if not left:
            return
        if len(self.live) - self.compiled > max(4, left // 4):
            self.compile()
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            return
        # uses of the names, their definitions left out (a substring test first: one regex of many names is slow)
        words = ({m.decode() for m in self.words.findall(data)} if any(n in data for n in self.names) else set())
        own = self.own.get(path, ())
        if own and _OWN_DYNAMIC.search(data):  # its own module looks its names up
            self.live.update(own)
        # its own module names it (a call, a callback, __all__; a recursion counts too): read in the parsed
        # module, where a mention in a comment or a docstring is no use
        words = {w for w in words if any(d not in self.live for d in self.by_name[w])}
        dynamic = any(b in data for b in _DYNAMIC_BYTES) and self.dynamic(data)
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
        _Refs(self, path, tree, words, [d for d in own if d not in self.live]).run()

    def dynamic(self, data: bytes) -> bool:
        """Whether the file may look up a pending candidate's module as a whole: it imports a module of that
        stem and star-imports or looks up (``getattr(x, name)``, ``vars(x)``, ``x.__dict__``, ...) a name that
        import statement holds, or it imports modules by name and names a stem. A cheap test before a parse."""
        if (b"import_module" in data or b"__import__" in data) and self.stems.search(data) is not None:
            return True
        ends = ((m.start(), data.find(b"\n", m.end())) for m in self.imports.finditer(data))
        statements = b"\n".join(data[start:end] if end >= 0 else data[start:] for start, end in ends)
        if not statements:
            return False
        if b"import *" in statements:
            return True
        if _SPACED_LOOKUP.search(data):  # `getattr( m, name)`: the exact test below would miss it
            heads = {m.group(1) or m.group(2) for m in _LOOKUP.finditer(data)}
            return any(re.search(rb"\b" + re.escape(head) + rb"\b", statements) for head in heads)
        return any(any(call + name in data for call in _LOOKUP_CALLS) or name + b".__dict__" in data
                   for name in set(re.findall(rb"\w+", statements)))

    def modules(self, module: str) -> list[str]:
        """The candidates' module keys an import names (``_modules_named``)."""
        return _modules_named(module, self.by_module)


class _Refs:
    """The references of one parsed file to the candidates."""

    def __init__(self, scan: _Scan, path: str, tree: ast.Module, words: set[str], own: Sequence[str] = ()):
        self.scan = scan
        self.own: dict[str, list[str]] = {}  # name -> the candidates this module defines under it
        for dotted in own:
            self.own.setdefault(scan.candidates[dotted][1], []).append(dotted)
        self.folder = os.path.dirname(os.path.abspath(path)).replace(os.sep, "/")
        self.tree = tree
        self.words = words
        self.bound: dict[str, str] = {}  # local name -> the module or member it was imported as (see modules())

    def live(self, dotteds: Iterable[str]) -> None:
        self.scan.live.update(dotteds)

    def hit(self, module: str, name: str | None = None) -> None:
        """``module`` (see ``_Scan.modules``) is referenced: its candidate ``name``, or all of them."""
        for key in self.scan.modules(module):
            self.live(d for d in self.scan.by_module[key] if name is None or self.scan.candidates[d][1] == name)

    def run(self) -> None:
        later: list[ast.AST] = []  # attributes and calls, read once every import of the file is bound
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Attribute, ast.Call)):
                later.append(node)
            elif isinstance(node, ast.Name) and node.id in self.own:  # a use in its own module
                self.live(self.own[node.id])
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.partition(".")[0]
                    self.bound[local] = alias.name if alias.asname else local
            elif isinstance(node, ast.ImportFrom):
                source = _import_source(node, self.folder)
                for alias in node.names:
                    if alias.name == "*":
                        self.hit(source)
                        continue
                    self.bound[alias.asname or alias.name] = _member(source, alias.name)
                    if alias.name in self.words:
                        self.hit(source, alias.name)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 300:
                text = node.value
                last = text if text in self.words else re.split(r"[.:]", text)[-1] if "." in text or ":" in text else ""
                if last in self.words and (last == text or re.fullmatch(r"[\w.]+[.:]\w+", text)):
                    self.live(self.scan.by_name[last])
        for node in later:
            if isinstance(node, ast.Attribute) and node.attr in self.words:
                self.attribute(node)
            elif isinstance(node, ast.Attribute) and node.attr == "__dict__":  # m.__dict__[name]
                self.whole(node.value)
            elif isinstance(node, ast.Call):
                self.dynamic(node)

    def dotted(self, node: ast.AST) -> str | None:
        """The module or member an expression names through this file's imports, or None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.bound:
            return None
        out = self.bound[node.id]
        for part in reversed(parts):
            out = _member(out, part)
        return out

    def attribute(self, node: ast.Attribute) -> None:
        base = self.dotted(node.value)
        if base is None:  # `self.f`, `obj.f`, `get_ops().f`: anything may be the module
            self.live(self.scan.by_name[node.attr])
        else:  # `m.f` through an import of m; another module's `f` is not a reference
            self.hit(base, node.attr)

    def dynamic(self, node: ast.Call) -> None:
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if called not in _DYNAMIC_CALLS or not node.args:
            return
        first = node.args[0]
        if called in ("import_module", "__import__"):
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                self.hit(first.value)
            return
        if called == "getattr" and len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
            return  # a literal name: counted as a string
        self.whole(first)

    def whole(self, node: ast.AST) -> None:
        """A dynamic lookup in the module ``node`` names: all its candidates are referenced."""
        target = self.dotted(node)
        if target is not None:
            self.hit(target)
