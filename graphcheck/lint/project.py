"""The project index: modules, imports across the tree, capture roots and reachability.

Built once per lint run from per-file summaries (``graphcheck.lint.summary``),
which are computed in parallel and cached by file content. Only files that can
hold a capture root are summarized up front (they mention Triton, a registrar,
a capture API, ``capturable`` or a configured entry point); a module is summarized
later, on demand, when a name resolves into it (an import chain, a call from a
reachable function), so a large tree costs little more than its kernel files.

Resolution follows imports inside the tree: ``from pkg import triton`` where
``pkg/__init__.py`` does ``import triton`` is ``triton``; re-exports, ``*``
imports, relative imports, module-level aliases and base classes (for
``self.method()``) are followed. A name that leads outside the tree stays
external; a call that cannot be resolved is dropped, never guessed.

Capture roots: functions that launch a kernel (Triton ``k[grid](...)``, cuTile
``ct.launch``, CuTe-DSL ``cute.compile`` or a ``@cute.jit``/``@cute.kernel``
function), functions registered as custom ops (``torch.library``, any call or
decorator whose name contains ``register_custom_op``, the configured
``custom-op-registrars``), functions called inside ``with torch.cuda.graph(...)``,
between ``capture_begin()`` and ``capture_end()`` or passed to
``make_graphed_callables``, ``@graphcheck.capturable`` functions, configured
entry points and extra roots (a recorded capture map). Reachability walks the
call graph from the roots; each reachable function keeps the chain that reaches it.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import json
import os
import re
import tempfile
from collections import deque
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

from graphcheck.config import (
    DEFAULT_EAGER,
    DEFAULT_HARNESS,
    DEFAULT_PREFILL_FLAGS,
    DEFAULT_PREFILL_LENGTHS,
    DEFAULT_UNCAPTURED,
    UNCAPTURED_GROUPS,
)
from graphcheck.lint import callers as callers_mod
from graphcheck.lint import deadcode
from graphcheck.lint import pool as lint_pool
from graphcheck.lint import summary as summary_mod
from graphcheck.lint.files import common_folder
from graphcheck.lint.scope import (
    _CUSTOM_OP,
    _LIB_IMPL,
    DEVICE_DECORATORS,
    TRITON_DECORATORS,
    may_be_reachable,
)

ROOT_TOKENS = ("triton", "torch.library", "custom_op", "register_kernel", "capturable", ".impl(",
               "cuda.graph", "CUDAGraph", "make_graphed_callables", "capture_begin", "cutlass", "cuda.tile",
               "graphcheck: expect", "autograd.Function", "import Function", "module().", "nn.Module",
               "import Module")
_DEF_LINE = re.compile(rb"^[ \t]*(?:async[ \t]+)?def[ \t]", re.MULTILINE)
_DEF_WORD = re.compile(rb"def[ \t]")
_DEF_INDENT = re.compile(rb"[ \t]*(?:async[ \t]+)?")


def count_def_lines(data: bytes) -> int:
    """``len(_DEF_LINE.findall(data))``: the lines that open a ``def``. A line-anchored pattern is tried at
    every position of the file; this looks for the literal ``def`` and checks what leads to it on its line."""
    n = 0
    for m in _DEF_WORD.finditer(data):
        at = m.start()
        if _DEF_INDENT.fullmatch(data, data.rfind(b"\n", 0, at) + 1, at):
            n += 1
    return n
_CACHE_FILE = "index-v1.json"
_FORMAT = 1
_MAX_ROUNDS = 64
_AUTOGRAD_FUNCTION = {"torch.autograd.Function", "torch.autograd.function.Function"}
# nn.Module itself and the model base classes of libraries outside the tree that derive from it
_NN_MODULE = {"torch.nn.Module", "torch.nn.modules.module.Module", "transformers.PreTrainedModel",
              "transformers.modeling_utils.PreTrainedModel", "diffusers.ModelMixin",
              "diffusers.models.modeling_utils.ModelMixin"}
# imported names worth following through re-exports when they are not called (kernel DSL modules)
_DSL_NAMES = {"triton", "tl", "language", "libdevice", "tldevice", "cute", "cutlass", "ct", "tile", "torch"}
_MAX_DEPTH = 24
_CAPTURE_CALLS = {"capture_begin", "capture_end", "graph", "make_graphed_callables"}  # a context that captures
_SCRIPT = "<__main__>"  # the caller a script's `if __name__ == "__main__":` block stands for


class ScopeNames:
    """Globs on a function's qualified name: a glob with a dot matches the qualified name (or one of
    its enclosing prefixes: ``Builder.build`` covers ``Builder.build.<locals>.f``), a glob without one
    matches any single part of it (the function's own name, an enclosing class or function)."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(p for p in patterns if p)
        dotted = [fnmatch.translate(p) for p in self.patterns if "." in p]
        plain = [fnmatch.translate(p) for p in self.patterns if "." not in p]
        self._dotted = re.compile("|".join(dotted)) if dotted else None
        self._plain = re.compile("|".join(plain)) if plain else None
        self._parts: dict[str, bool] = {}  # a name part -> whether a glob without a dot matches it (parts repeat)

    def _plain_match(self, part: str) -> bool:
        hit = self._parts.get(part)
        if hit is None:
            hit = self._parts[part] = self._plain is not None and self._plain.match(part) is not None
        return hit

    def match(self, qual: str) -> bool:
        if not self.patterns:
            return False
        parts = [p for p in qual.split(".") if p != "<locals>"]
        for k in range(1, len(parts) + 1):
            if self._plain is not None and self._plain_match(parts[k - 1]):
                return True
            if self._dotted is not None and k > 1 and self._dotted.match(".".join(parts[:k])):
                return True
        return False


def _any_glob(globs: Sequence[str]) -> re.Pattern[str] | None:
    """One regex matching (from the start, to the end) what any of ``globs`` matches, lower-cased; None for none."""
    return re.compile("|".join(fnmatch.translate(g.lower()) for g in globs)) if globs else None


class UncapturedNames:
    """``uncaptured-functions``: globs naming code that engines run outside capture, although a capture root
    reaches it. A glob without ``/`` or ``.`` matches, case-insensitively, the function's name, an enclosing
    class or function, or the stem of its file; one with a dot the qualified name (or an enclosing prefix);
    one with ``/`` the file's path. ``!glob`` keeps a name (with ``/``: a path) that matches it from matching
    anything (``!*decode*``: ``chunked_prefill_paged_decode`` also runs decode)."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(p for p in patterns if p and p != "!")
        keep = [p[1:].lower() for p in self.patterns if p.startswith("!")]
        self._keep_names = [k for k in keep if "/" not in k]
        self._keep_paths = [k for k in keep if "/" in k]
        given = [p for p in self.patterns if not p.startswith("!")]
        self._paths = [p for p in given if "/" in p]
        self._dotted = [p for p in given if "/" not in p and "." in p]
        self._plain = [p for p in given if "/" not in p and "." not in p]
        # each list as one regex, asked first: most names match no glob (the reach walks ask it of every function)
        self._keep_rx, self._plain_rx, self._dotted_rx = (_any_glob(g) for g in (self._keep_names, self._plain,
                                                                                 self._dotted))

    def match(self, qual: str, path: str | None) -> tuple[str, str] | None:
        """(the name, prefix or file that matched, the glob), or None. The function's own name is tried first."""
        if not self.patterns:
            return None
        parts = [p for p in qual.split(".") if p != "<locals>"]
        stem = os.path.basename(path).rpartition(".")[0] if path else ""
        for i, name in enumerate([*reversed(parts), stem]):
            low = name.lower()
            if not low or self._plain_rx is None or not self._plain_rx.match(low):
                continue
            if self._keep_rx is not None and self._keep_rx.match(low):
                continue
            for glob in self._plain:
                if fnmatch.fnmatchcase(low, glob.lower()):
                    return (os.path.basename(path or "") if i == len(parts) else name), glob
        dotted_rx = self._dotted_rx
        for k in range(2, len(parts) + 1) if dotted_rx is not None else ():
            prefix = ".".join(parts[:k])
            if dotted_rx is None or not dotted_rx.match(prefix.lower()):
                continue
            for glob in self._dotted:
                if fnmatch.fnmatchcase(prefix.lower(), glob.lower()):
                    return prefix, glob
        if path and self._paths:
            posix = path.replace(os.sep, "/").lower()
            if not any(fnmatch.fnmatchcase(posix, k) for k in self._keep_paths):
                for glob in self._paths:
                    if fnmatch.fnmatchcase(posix, glob.lower()):
                        return os.path.basename(path), glob
        return None


class VendorPaths:
    """Files of non-CUDA backends that ``vendor-exclude`` does not drop because no whole part of their path
    matches it: a part with a vendor word as one of its ``_``/``-``/``.`` separated tokens
    (``fla/modules/backends/triton_ascend/``, ``ops/npu_fused.py``). Parts are taken below the common folder of
    the tree's files, so a folder above the tree never counts."""

    def __init__(self, globs: Sequence[str], files: Sequence[str]) -> None:
        words = set()
        for glob in globs:
            word = glob.replace("*", "").removesuffix(".py").strip("_-.").lower()
            if word.isalpha():
                words.add(word)
        self.words = frozenset(words)
        self.base = ""
        if self.words and files:
            self.base = common_folder(files)
        self._memo: dict[str, str | None] = {}

    def reason(self, path: str) -> str | None:
        if not self.words or not self.base:
            return None
        if path not in self._memo:
            why = None
            rel = os.path.relpath(os.path.abspath(path), self.base)
            parts = rel.replace(os.sep, "/").split("/")
            parts[-1] = parts[-1].rpartition(".")[0] or parts[-1]
            for part in parts:
                if part in ("", ".", ".."):
                    continue
                word = next((t for t in re.split(r"[_\-.]+", part.lower()) if t in self.words), None)
                if word is not None:
                    why = (f"`{part}` in its path names `{word}`: a backend for a non-CUDA accelerator, which "
                           f"CUDA graphs never run on; vendor-exclude word `{word}`")
                    break
            self._memo[path] = why
        return self._memo[path]


def _uncaptured_why(name: str, glob: str) -> str:
    """The reason a finding under an ``uncaptured-functions`` match is a warning, by the glob's default group."""
    group = next((g for g, globs in UNCAPTURED_GROUPS.items() if glob in globs), None)
    if group == "teardown":
        text = f"`{name}` is teardown, which engines do not capture"
    elif group == "prefill":
        text = f"`{name}` looks like a prefill path; engines capture decode"
    elif group == "disaggregation":
        text = f"`{name}` is KV transfer for prefill/decode disaggregation, outside the model forward"
    elif group == "reference":
        text = f"`{name}` looks like a reference implementation, not the kernel path engines capture"
    elif group == "load-time":
        text = f"`{name}` is load-time code: engines load and process model weights once, before they capture"
    else:
        text = f"`{name}` is configured as code engines do not capture"
    return f"{text}; uncaptured-functions `{glob}`"


# modules of reference implementations (`cute_ref_ops.py`, `mega_reference.py`): harness code by their name
_REFERENCE_MODULE = ScopeNames(["*_ref", "ref_*", "*_ref_*", "*reference*"])


@dataclasses.dataclass(frozen=True)
class ExtraRoot:
    """A function named from outside the source (a recorded capture map): file and qualified name."""

    path: str
    qualname: str
    reason: str = "was recorded running under capture"


@dataclasses.dataclass
class Reach:
    reason: str  # the phrase after "which": "launches Triton kernel `k`", "is called from `f`, which ..."
    root: str  # dotted name of the root
    chain: list[str]  # dotted names, root first, this function last
    guess: bool | str  # the root or a link of the chain is a heuristic ("unreferenced": a dead launcher;
    # "tests-only": one only tests refer to in a tree that captures its own graphs)


@dataclasses.dataclass
class FileContext:
    """What the project knows about one file that the file alone cannot: handed to ``lint_python``."""

    reach: dict[str, list[Any]]  # qualname -> [reason, root, chain, guess]
    aliases: dict[str, str]  # local name -> external dotted name, through in-tree re-exports
    kernels: dict[str, list[Any]]  # local name of an imported kernel -> [name, params, constexprs, autotuned]
    broken: bool = False  # the file did not parse: the rules report it
    captures: list[str] = dataclasses.field(default_factory=list)  # qualnames that open a capture region
    off: dict[str, str] = dataclasses.field(default_factory=dict)  # qualname -> "harness"|"eager" (never captured)
    # qualname -> in-tree call records (graphcheck.lint.callers); qualname -> [why it runs only on a cold path,
    # the kind of that path: "cache miss" or "prefill branch"]
    callers: dict[str, list[Any]] = dataclasses.field(default_factory=dict)
    cold: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"reach": self.reach, "aliases": self.aliases, "kernels": self.kernels, "broken": self.broken,
                "captures": self.captures, "off": self.off, "callers": self.callers, "cold": self.cold}

    def digest(self) -> str:
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


# --- module names ---------------------------------------------------------------------


class _PackageDirs:
    def __init__(self) -> None:
        self.memo: dict[str, bool] = {}

    def is_package(self, directory: str) -> bool:
        hit = self.memo.get(directory)
        if hit is None:
            hit = self.memo[directory] = os.path.isfile(os.path.join(directory, "__init__.py"))
        return hit


def module_names(paths: Iterable[str]) -> dict[str, tuple[str, bool]]:
    """path -> (dotted module name, is a package ``__init__``); names unique (a clash gets a private name)."""
    dirs = _PackageDirs()
    out: dict[str, tuple[str, bool]] = {}
    taken: set[str] = set()
    for path in paths:
        directory, base = os.path.split(path)
        stem = base.removesuffix(".py")
        is_package = stem == "__init__"
        parts = [] if is_package else [stem]
        while dirs.is_package(directory):
            directory, name = os.path.split(directory)
            parts.append(name)
            if not name:
                break
        parts.reverse()
        name = ".".join(p for p in parts if p) or stem
        if name in taken or not all(p.isidentifier() for p in name.split(".")):
            name = "~" + path
        taken.add(name)
        out[path] = (name, is_package)
    return out


# --- workers ----------------------------------------------------------------------------


_EAGER_LEVELS = 3  # levels of callers followed up from a root to find that only harness/eager code calls it


def _summarize_chunk(tasks: list[tuple[str, str, bool, bool, tuple[str, ...], tuple[str, ...], int, tuple[str, ...],
                                     tuple[str, ...], bool]]) -> list[dict]:
    out = []
    for path, module, is_package, force, registrars, words, max_size, prefill, lengths, keep in tasks:
        out.append(_summarize_one(path, module, is_package, force, registrars, words, max_size, keep, prefill,
                                  lengths))
    return out


def _summarize_one(path: str, module: str, is_package: bool, force: bool, registrars: tuple[str, ...],
                   words: tuple[str, ...], max_size: int, keep: bool = False,
                   prefill: tuple[str, ...] = DEFAULT_PREFILL_FLAGS,
                   lengths: tuple[str, ...] = DEFAULT_PREFILL_LENGTHS) -> dict:
    """One file's cache entry fields and summary. ``keep``: the rules pass of this run will run in this
    process on files it summarized (``lint_pool.Workers``), so the parsed tree is kept for it."""
    res: dict[str, Any] = {"path": path, "ok": False}
    try:
        st = os.stat(path)
        res["size"], res["mtime_ns"] = st.st_size, st.st_mtime_ns
        if st.st_size > max_size:
            return res
        with open(path, "rb") as fh:
            data = fh.read(max_size + 1)
    except OSError:
        return res
    from graphcheck.lint.cache import digest
    from graphcheck.lint.files import decode

    res["digest"] = digest(data)
    res["defs"] = count_def_lines(data)
    res["lines"] = data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)
    res["ok"] = True
    if b"\x00" in data[:8192]:
        return res
    try:
        source = decode(data, "python")
    except (UnicodeDecodeError, LookupError, SyntaxError):
        return res
    seed = any(t in source for t in ROOT_TOKENS) or may_be_reachable(source, words)
    res["seed"] = seed
    if seed or force:
        try:
            tree = summary_mod.parse(source)  # None: a file that does not parse, opaque to the index
            res["summary"] = (summary_mod.summarize(source, module, is_package, registrars, tree, prefill, lengths)
                              if tree is not None else {"imports": {}, "funcs": {}, "broken": True})
            if keep and tree is not None and not res["summary"].get("broken"):
                lint_pool.keep_tree(path, source, tree)
        except Exception:  # a summary bug must not stop the run; the file is then opaque to the index
            res["summary"] = {"imports": {}, "funcs": {}, "broken": True}
    return res


def _run(tasks: list, jobs: int, workers: lint_pool.Workers | None = None) -> list[dict]:
    if workers is not None:
        return workers.map_chunks(_summarize_chunk, tasks, place=_task_path)
    return lint_pool.map_chunks(_summarize_chunk, tasks, jobs)


def _task_path(task: tuple) -> str:
    return task[0]


# --- the cache ----------------------------------------------------------------------------


class _IndexCache:
    """``path -> [size, mtime_ns, digest, defs, seed, summary-or-None, lines]`` for one settings key (JSON)."""

    def __init__(self, directory: Path | None, key: str) -> None:
        self.file = Path(directory) / _CACHE_FILE if directory is not None else None
        self.key = key
        self.entries: dict[str, list[Any]] = {}
        self.dirty = False
        if self.file is None:
            return
        try:
            with open(self.file, "rb") as fh:
                data = json.loads(fh.read())
            if isinstance(data, dict) and data.get("format") == _FORMAT and data.get("key") == key:
                entries = data.get("entries")
                if isinstance(entries, dict):
                    self.entries = entries
        except Exception:
            self.entries = {}

    def lookup(self, path: str, size: int, mtime_ns: int) -> list[Any] | None:
        entry = self.entries.get(path)
        if isinstance(entry, list) and len(entry) == 7 and entry[0] == size and entry[1] == mtime_ns:
            return entry
        return None

    def store(self, res: dict) -> None:
        self.entries[res["path"]] = [res.get("size"), res.get("mtime_ns"), res.get("digest"), res.get("defs", 0),
                                     bool(res.get("seed")), res.get("summary"), res.get("lines", 0)]
        self.dirty = True

    def save(self) -> None:
        if self.file is None or not self.dirty:
            return
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            gitignore = self.file.parent / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("# created by graphcheck\n*\n")
            fd, tmp = tempfile.mkstemp(dir=self.file.parent, prefix=".index-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"format": _FORMAT, "key": self.key, "entries": self.entries}, fh, separators=(",", ":"))
            os.replace(tmp, self.file)
        except OSError:
            pass


def _cache_key(registrars: tuple[str, ...], words: tuple[str, ...],
               prefill: tuple[str, ...] = DEFAULT_PREFILL_FLAGS,
               lengths: tuple[str, ...] = DEFAULT_PREFILL_LENGTHS) -> str:
    from graphcheck import __version__

    h = hashlib.blake2b(digest_size=16)
    h.update(f"{_FORMAT}|{__version__}|{sorted(registrars)}|{sorted(words)}|{sorted(prefill)}|{sorted(lengths)}"
             .encode())
    here = Path(__file__).resolve().parent
    # every module of the lint package: a summary is built through several (capture_sites, files, ...),
    # and a new one needs no entry in a list here
    for path in sorted(here.glob("*.py")):
        try:
            h.update(path.name.encode() + b"\0" + path.read_bytes())
        except OSError:
            h.update(path.name.encode())
    return h.hexdigest()


# --- the index ----------------------------------------------------------------------------


class ProjectIndex:
    """Summaries of the tree's modules, name resolution across them, roots and reachability."""

    def __init__(self, files: Sequence[str], *, registrars: Sequence[str] = (), entry_points: Sequence[str] = (),
                 extra_roots: Sequence[ExtraRoot] = (), jobs: int = 1, cache_dir: Path | None = None,
                 max_file_size: int = 10**7, trust_stat: bool = True, eager: Sequence[str] = DEFAULT_EAGER,
                 harness: Sequence[str] = DEFAULT_HARNESS, uncaptured: Sequence[str] = DEFAULT_UNCAPTURED,
                 vendor: Sequence[str] = (), source: str | None = None,
                 workers: lint_pool.Workers | None = None, references: Sequence[str] | None = None,
                 tests: Collection[str] = (), prefill_flags: Sequence[str] = DEFAULT_PREFILL_FLAGS,
                 prefill_lengths: Sequence[str] = DEFAULT_PREFILL_LENGTHS) -> None:
        """``source``: the text of the one file in ``files``, not read from disk and not cached (the
        no-project mode of ``lint_python``: the file is its own project, with the same roots and scope).
        ``vendor``: the ``vendor-exclude`` globs; a file whose path below the tree's common folder has a part
        with one of their words as a ``_``/``-`` separated token (``backends/triton_ascend/``) is a non-CUDA
        backend, and what it holds is code engines run outside capture (``vendor_reason``).
        ``workers``: the run's worker processes, kept for the rules pass, which then finds the trees the
        summaries were made from (``lint_pool.keep_tree``).
        ``references``: when a tree is linted, the Python files of it that are not linted (default excludes);
        launcher roots that neither they nor the linted files refer to are walked as uncaptured code
        (``graphcheck.lint.deadcode``). None (a file linted alone): no such test. ``tests``: those of
        ``references`` that are tests, benchmarks or examples; in a tree that captures its own graphs, a launcher
        only they refer to is walked as uncaptured code too. ``prefill_flags``: the ``prefill-flags`` globs (names
        a prefill branch's test reads, ``graphcheck.lint.coldpaths``); ``prefill_lengths``: the
        ``prefill-lengths`` globs (query lengths a prefill branch's test compares with 1)."""
        self.registrars = tuple(registrars)
        self.prefill_flags = tuple(prefill_flags)
        self.prefill_lengths = tuple(prefill_lengths)
        self.eager = ScopeNames(eager)
        self.harness = ScopeNames(harness)
        self.uncaptured = UncapturedNames(uncaptured)
        self.vendor = VendorPaths(vendor, files)
        self._off_memo: dict[str, str | None] = {}
        self._uncaptured_memo: dict[str, str | None] = {}
        self.entry_points = tuple(e for e in entry_points if e)
        self.extra_roots = tuple(extra_roots)
        self.jobs = jobs
        self.workers = workers
        self.references = references
        self.tests = tests
        # launcher root -> why nothing in the tree (or, in an application, nothing but its tests) refers to it
        self.unreferenced: dict[str, str] = {}
        self._dead_texts: dict[str, str] = {}  # such a reason -> its evidence: "unreferenced" or "tests-only"
        self.max_file_size = max_file_size
        words = tuple(sorted({e.rsplit(":", 1)[-1].rsplit(".", 1)[-1] for e in self.entry_points}
                             | {r.rpartition(".")[2] for r in self.registrars}))
        self.words = tuple(w for w in words if w)
        self.names = module_names(sorted(files))
        self.by_module: dict[str, str] = {name: path for path, (name, _) in self.names.items()}
        # without trust in size and mtime (the CI gate), every file is read again
        self.cache = _IndexCache(cache_dir if trust_stat else None,
                                 _cache_key(self.registrars, self.words, self.prefill_flags,
                                            self.prefill_lengths))
        self.entries: dict[str, list[Any]] = {}  # path -> cache entry
        self.summaries: dict[str, dict[str, Any]] = {}  # module -> summary
        if source is not None:
            (path,) = self.names
            module, is_package = self.names[path]
            summ = summary_mod.summarize(source, module, is_package, self.registrars,
                                         prefill_flags=self.prefill_flags, prefill_lengths=self.prefill_lengths)
            lines = source.count("\n") + (0 if not source or source.endswith("\n") else 1)
            defs = count_def_lines(source.encode(errors="replace"))
            self._take(path, [len(source), 0, None, defs, True, summ, lines])
            self._build()
            return
        extra_paths = {os.path.normpath(os.path.abspath(r.path)) for r in self.extra_roots}
        self._load(list(self.names), force=extra_paths)
        self._build()
        self.cache.save()

    # -- loading -----------------------------------------------------------

    def _load(self, paths: list[str], force: set[str] | None = None, all_forced: bool = False) -> None:
        """Summarize ``paths`` (or take them from the cache). They are taken in the order of ``paths``, whichever
        worker finishes first and whether an entry came from the cache: the order of the index decides the order
        of the roots, and so which chain a reachable function is named with, which must not vary between runs."""
        force = force or set()
        tasks = []
        taken: dict[str, list[Any] | None] = {}
        for path in paths:
            forced = all_forced or path in force
            try:
                st = os.stat(path)
                entry = self.cache.lookup(path, st.st_size, st.st_mtime_ns)
            except OSError:
                entry = None
            if entry is not None and (entry[5] is not None or not forced):
                taken[path] = entry
                continue
            taken[path] = None
            module, is_package = self.names[path]
            tasks.append((path, module, is_package, forced, self.registrars, self.words, self.max_file_size,
                          self.prefill_flags, self.prefill_lengths))
        # trees are kept where the rules pass will run: in the run's workers, or here when it has one job
        keep = self.workers is not None and (self.workers.jobs <= 1 or self.workers.pooled(len(tasks)))
        for res in _run([(*task, keep) for task in tasks], self.jobs, self.workers):
            if not res.get("ok"):
                self.entries[res["path"]] = [None, None, None, 0, False, None, 0]
                continue
            self.cache.store(res)
            taken[res["path"]] = self.cache.entries[res["path"]]
        for path, entry in taken.items():
            if entry is not None:
                self._take(path, entry)

    def _take(self, path: str, entry: list[Any]) -> None:
        self.entries[path] = entry
        if entry[5] is not None:
            self.summaries[self.names[path][0]] = entry[5]

    # -- building ----------------------------------------------------------

    def _build(self) -> None:
        for _ in range(_MAX_ROUNDS):
            self._missing: set[str] = set()
            self._index_definitions()
            self._find_roots()
            self._walk()
            self._contexts_imports()
            wanted = sorted(self.by_module[m] for m in self._missing
                            if m in self.by_module and m not in self.summaries)
            if not wanted:
                dropped = self._drop_eager_only_roots()
                if self.references is not None:
                    where = self.cache.file.parent if self.cache.file is not None else None
                    dead = deadcode.unreferenced(self, self.references, where, self.cache.key, self.tests)
                    self.unreferenced = {d: why for d, (_kind, why) in dead.items()}
                    self._dead_texts = {why: kind for kind, why in dead.values()}
                if dropped or self.unreferenced:
                    self._walk()
                return
            self._load(wanted, all_forced=True)
            for path in wanted:  # an unreadable module must not be asked for again
                self.summaries.setdefault(self.names[path][0], {"imports": {}, "funcs": {}, "broken": True})

    def _index_definitions(self) -> None:
        self.funcs: dict[str, tuple[str, str, dict[str, Any]]] = {}
        self.classes: dict[str, list[str]] = {}
        self.children: dict[str, list[str]] = {}
        self.attrs: dict[str, dict[str, str]] = {}  # class -> {attribute: dotted class built in __init__}
        self._memo: dict[str, Any] = {}
        self._module_memo: dict[str, bool] = {}
        self._reverse_calls: dict[str, list[tuple[str, str, str]]] | None = None  # call_edges()
        # ops the tree registers a CUDA kernel for: their "default" kernels never see a CUDA tensor
        self.cuda_ops: set[str] = {op for summ in self.summaries.values() for op in summ.get("cuda_ops", ())}
        self._uncaptured_memo.clear()
        for module, summ in self.summaries.items():
            for qual, rec in summ.get("funcs", {}).items():
                dotted = f"{module}.{qual}"
                self.funcs[dotted] = (module, qual, rec)
                if ".<locals>." in qual:
                    parent = dotted.rsplit(".<locals>.", 1)[0]
                    self.children.setdefault(parent, []).append(dotted)
            for qual, bases in summ.get("classes", {}).items():
                self.classes[f"{module}.{qual}"] = bases
            for qual, attrs in summ.get("attrs", {}).items():
                self.attrs[f"{module}.{qual}"] = attrs
        self.kernels: dict[str, str] = {}
        self.autotuned: set[str] = set()
        for dotted, (_, _, rec) in self.funcs.items():
            for deco, _host in rec.get("decos", ()):
                canon = self.canonical(deco)
                if canon in TRITON_DECORATORS:
                    self.kernels[dotted] = "triton"
                    if TRITON_DECORATORS[canon] == "autotune":
                        self.autotuned.add(dotted)
                elif canon.endswith(("cute.kernel", "cute.jit")):
                    self.kernels.setdefault(dotted, "cute")
                elif canon.startswith("cuda.tile") and canon.endswith(".kernel"):
                    self.kernels.setdefault(dotted, "tile")
                elif canon in DEVICE_DECORATORS:
                    self.kernels.setdefault(dotted, DEVICE_DECORATORS[canon])

    # -- resolution --------------------------------------------------------

    def resolve(self, dotted: str, depth: int = 0) -> tuple[str, str] | None:
        """("func"|"class"|"module"|"ext", dotted) for a dotted name, or None when it cannot be resolved."""
        if depth > _MAX_DEPTH:
            return None
        hit = self._memo.get(dotted, False)
        if hit is not False:
            return hit
        self._memo[dotted] = None  # a cycle resolves to nothing
        result = self._resolve(dotted, depth)
        self._memo[dotted] = result
        return result

    def _resolve(self, dotted: str, depth: int) -> tuple[str, str] | None:
        if dotted in self.funcs:
            return ("func", dotted)
        if dotted in self.classes:
            return ("class", dotted)
        parts = dotted.split(".")
        for i in range(len(parts), 0, -1):
            module = ".".join(parts[:i])
            if module in self.by_module:
                if module not in self.summaries:
                    self._missing.add(module)
                    return None
                rest = parts[i:]
                if not rest:
                    return ("module", module)
                return self._resolve_in(module, rest, depth)
        return ("ext", dotted)

    def _resolve_in(self, module: str, rest: list[str], depth: int) -> tuple[str, str] | None:
        summ = self.summaries[module]
        name, tail = rest[0], rest[1:]
        own = f"{module}.{name}"
        if own in self.funcs and not tail:
            return ("func", own)
        if own in self.classes:
            return self._member(own, tail, depth) if tail else ("class", own)
        for table in ("imports", "alias"):
            target = summ.get(table, {}).get(name)
            if target and target != own:
                return self.resolve(".".join([target, *tail]), depth + 1)
        for star in summ.get("star", ()):
            if star in self.by_module and star != module:
                if star not in self.summaries:
                    self._missing.add(star)
                    continue
                found = self._resolve_in(star, rest, depth + 1)
                if found is not None:
                    return found
        return None

    def _member(self, cls: str, tail: list[str], depth: int) -> tuple[str, str] | None:
        """A method of ``cls`` (or of a base class); ``("instance", C)`` for an attribute that ``__init__``
        sets to a ``C(...)`` of the tree, and a method of ``C`` for ``attr.method``."""
        if depth > _MAX_DEPTH or not tail:
            return None
        own = f"{cls}.{tail[0]}"
        if len(tail) == 1 and own in self.funcs:
            return ("func", own)
        held = self._attribute_class(cls, tail[0], depth)
        if held is not None:
            if len(tail) == 1:
                return ("instance", held)
            return self._member(held, tail[1:], depth + 1) if len(tail) == 2 else None
        if len(tail) != 1:
            return None
        for base in self.classes.get(cls, ()):
            found = self.resolve(base, depth + 1)
            if found is not None and found[0] == "class":
                member = self._member(found[1], tail, depth + 1)
                if member is not None:
                    return member
        return None

    def _attribute_class(self, cls: str, attr: str, depth: int) -> str | None:
        """The class of the tree that ``cls.__init__`` (or a base class's) assigns to ``self.attr``, or None."""
        if depth > _MAX_DEPTH:
            return None
        ctor = self.attrs.get(cls, {}).get(attr)
        if ctor is not None:
            found = self.resolve(ctor, depth + 1)
            return found[1] if found is not None and found[0] == "class" else None
        for base in self.classes.get(cls, ()):
            found = self.resolve(base, depth + 1)
            if found is not None and found[0] == "class":
                held = self._attribute_class(found[1], attr, depth + 1)
                if held is not None:
                    return held
        return None

    def is_module_class(self, cls: str, depth: int = 0) -> bool:
        """Does the class of the tree derive from ``torch.nn.Module``?"""
        hit = self._module_memo.get(cls)
        if hit is not None:
            return hit
        self._module_memo[cls] = False  # a cycle is not a module
        out = False
        for base in self.classes.get(cls, ()):
            found = self.resolve(base, depth + 1)
            if found is None:
                continue
            if found[0] == "ext" and found[1] in _NN_MODULE:
                out = True
            elif found[0] == "class" and depth < _MAX_DEPTH and self.is_module_class(found[1], depth + 1):
                out = True
            if out:
                break
        self._module_memo[cls] = out
        return out

    def canonical(self, dotted: str) -> str:
        found = self.resolve(dotted)
        return found[1] if found is not None and found[0] in ("ext", "func", "class") else dotted

    # -- roots -------------------------------------------------------------

    def _is_registrar(self, raw: str) -> bool:
        canon = self.canonical(raw)
        last = canon.rpartition(".")[2]
        raw_last = raw.rpartition(".")[2]
        if canon in _CUSTOM_OP or canon in _LIB_IMPL:
            return True
        if "register_custom_op" in last or "register_custom_op" in raw_last:
            return True
        return any(r in (canon, raw, last, raw_last) or canon.endswith("." + r) for r in self.registrars)

    def _find_roots(self) -> None:
        self.roots: dict[str, tuple[str, bool]] = {}  # dotted -> (reason, guess)
        self.forced: set[str] = set()  # capture sites, entry points, recorded roots: facts, never dropped

        def add(dotted: str, reason: str, guess: bool = False, forced: bool = False) -> None:
            if dotted in self.kernels:
                return
            if not forced and self.off_scope(dotted) is not None:
                return  # a test, benchmark or script main, or an eager metadata builder: not captured code
            if forced:
                self.forced.add(dotted)
            old = self.roots.get(dotted)
            if old is None or (old[1] and not guess):
                self.roots[dotted] = (reason, guess)

        for dotted, (_module, qual, rec) in self.funcs.items():
            if rec.get("root"):
                add(dotted, rec["root"])
            for deco, host_only in rec.get("decos", ()):
                canon = self.canonical(deco)
                if canon.startswith("graphcheck") and canon.endswith(".capturable"):
                    add(dotted, "is marked @graphcheck.capturable")
                elif not host_only and self._is_registrar(deco):
                    add(dotted, f"is registered as a custom op with `{deco.rpartition('.')[2]}`")
            for base, text, local_launch, generic, _line in rec.get("launch", ()):
                if generic:
                    continue
                found = self.resolve(base) if base else None
                if found is not None and found[0] == "func":
                    kind = self.kernels.get(found[1])
                    if kind == "triton":
                        add(dotted, f"launches Triton kernel `{text}`")
                    continue
                if found is not None and found[0] in ("class", "module", "instance"):
                    continue
                if local_launch:
                    add(dotted, f"launches Triton kernel `{text}`", guess=found is None and base is not None)
            for callee in rec.get("calls", ()):
                canon = self.canonical(callee)
                if canon.startswith("cuda.tile") and canon.endswith(".launch"):
                    add(dotted, "launches a cuTile kernel with `ct.launch`")
                elif canon.endswith("cute.compile"):
                    add(dotted, "compiles a CuTe-DSL kernel with `cute.compile`")
                elif self.kernels.get(canon) == "cute":
                    add(dotted, f"launches CuTe-DSL kernel `{canon.rpartition('.')[2]}`")
            for loader, op in rec.get("ext_ops", ()):
                found = self.resolve(loader)
                if found is not None and found[0] == "func" and self._is_module_loader(found[1]):
                    add(dotted, f"calls extension op `{found[1].rpartition('.')[2]}().{op}`")
            for site, _start, _end, targets in rec.get("capture", ()):
                for target in targets:
                    called = self._call_target(target)  # a function, a class's __init__, a module's forward
                    if called is not None:
                        add(called, f"is called inside `{site.split(' on line')[0]}` in `{qual}`", forced=True)
        regs = [r for summ in self.summaries.values() for r in summ.get("regs", ())]
        regs += [r for (_, _, rec) in self.funcs.values() for r in rec.get("regs", ())]
        if regs:
            for callee, given, host_only in regs:
                if host_only or not self._is_registrar(callee):
                    continue
                for target in given:
                    found = self.resolve(target)
                    if found is not None and found[0] == "func":
                        add(found[1], f"is registered as a custom op with `{callee.rpartition('.')[2]}`")
        for cls, bases in self.classes.items():
            if any(self.canonical(b) in _AUTOGRAD_FUNCTION for b in bases):
                for method in ("forward", "backward"):
                    if f"{cls}.{method}" in self.funcs:
                        add(f"{cls}.{method}", f"is the {method} of torch.autograd.Function "
                                               f"`{cls.rpartition('.')[2]}` (captured by make_graphed_callables "
                                               "and compiled graphs)")
        for cls in self.classes:  # engines capture model forwards whole: a guess, a fact when a root calls it
            forward = f"{cls}.forward"
            if forward in self.funcs and self.is_module_class(cls):
                add(forward, f"is the forward of nn.Module `{cls.rpartition('.')[2]}`, which engines run under "
                              "CUDA-graph capture", guess=True)
        for entry in self.entry_points:
            for dotted in self._entry_matches(entry):
                add(dotted, "is a configured entry point", forced=True)
        for extra in self.extra_roots:
            path = os.path.normpath(os.path.abspath(extra.path))
            if path in self.names:
                dotted = f"{self.names[path][0]}.{extra.qualname}"
                if dotted in self.funcs:
                    add(dotted, extra.reason, forced=True)

    def _drop_eager_only_roots(self) -> bool:
        """A root (a launcher, say) whose every caller in the tree is eager-phase or harness code, or such a
        root itself, runs eagerly too: `_apply_metadata()` called only from `init_forward_metadata`. A root
        with no caller in the tree is public API and stays. True when a root was dropped."""
        candidates = [r for r in self.roots if r not in self.forced]
        if not candidates:
            return False
        edges = self.call_edges()
        saved, self._missing = self._missing, set()  # resolve what is loaded; load nothing more for this
        scripted = set()  # called from a script's `if __name__ == "__main__":` block
        for summ in self.summaries.values():
            for callee in summ.get("main_calls", ()):
                found = self.resolve(callee)
                if found is not None and found[0] == "func":
                    scripted.add(found[1])
        self._missing = saved
        # the callers of the roots, and of their callers, a few levels up: a tester's helper that calls the
        # launcher (`Tester.check -> _match -> _launch`) makes the launcher harness-only too
        callers: dict[str, set[str]] = {}
        wanted = set(candidates)
        asked: set[str] = set()
        for _level in range(_EAGER_LEVELS):
            wanted -= asked
            if not wanted:
                break
            asked |= wanted
            for target in wanted:
                for caller, _callee, _how in edges.get(target, ()):
                    if caller != target:
                        callers.setdefault(target, set()).add(caller)
                if target in scripted:
                    callers.setdefault(target, set()).add(_SCRIPT)
            wanted = {c for t in wanted for c in callers.get(t, ())
                      if c != _SCRIPT and self.off_scope(c) is None and c not in asked}
        eager_only: set[str] = set()
        changed = True
        while changed:
            changed = False
            for fn in asked:
                found_callers = callers.get(fn)
                if fn in eager_only or not found_callers:
                    continue
                if all(c == _SCRIPT or c in eager_only or self.off_scope(c) is not None for c in found_callers):
                    eager_only.add(fn)
                    changed = True
        eager_only &= set(candidates)
        for root in eager_only:
            del self.roots[root]
        return bool(eager_only)

    def _call_target(self, callee: str) -> str | None:
        """The function a call runs: a function, or the ``__init__`` of a class; None when unresolved or neither."""
        found = self._call_target_how(callee)
        return found[0] if found is not None else None

    def _call_target_how(self, callee: str) -> tuple[str, str] | None:
        """(the function a call runs, how the call names it: "func", "class" (its ``__init__``) or "instance"
        (the ``__call__`` or nn.Module ``forward`` of an attribute's class)), or None."""
        found = self.resolve(callee)
        if found is None:
            return None
        if found[0] == "func":
            return found[1], "func"
        if found[0] == "class":
            init = self._member(found[1], ["__init__"], 0)
            return (init[1], "class") if init is not None else None
        if found[0] == "instance":  # `self.layer(x)`: the class's own __call__, or an nn.Module's forward
            call = self._member(found[1], ["__call__"], 0)
            if call is None and self.is_module_class(found[1]):
                call = self._member(found[1], ["forward"], 0)
            return (call[1], "instance") if call is not None and call[0] == "func" else None
        return None

    def call_edges(self) -> dict[str, list[tuple[str, str, str]]]:
        """The reverse call map: callee dotted -> ``(caller dotted, the call as written, how)`` for every call of
        every indexed function that resolves (``_call_target_how``), callers in index order. Built once, after
        the last round of loading (memoized until the definitions are indexed again); it resolves only what is
        loaded. It serves the eager-only roots, the cold-only roots and the call records
        (``graphcheck.lint.callers``)."""
        if self._reverse_calls is not None:
            return self._reverse_calls
        edges: dict[str, list[tuple[str, str, str]]] = {}
        saved, self._missing = self._missing, set()
        for caller, (_module, _qual, rec) in self.funcs.items():
            for callee in rec.get("calls", ()):
                found = self._call_target_how(callee)
                if found is not None:
                    edges.setdefault(found[0], []).append((caller, callee, found[1]))
        self._missing = saved
        self._reverse_calls = edges
        return edges

    def off_scope(self, dotted: str) -> str | None:
        """"harness" or "eager" when the function is never captured code: reach neither starts nor passes there."""
        if dotted in self._off_memo:
            return self._off_memo[dotted]
        module, qual, rec = self.funcs[dotted]
        out = None
        if (rec.get("main_block") or self.harness.match(qual)
                or (self.harness.patterns and _REFERENCE_MODULE.match(module.rpartition(".")[2]))):
            out = "harness"
        elif self.eager.match(qual):
            out = "eager"
        self._off_memo[dotted] = out
        return out

    def _is_module_loader(self, dotted: str) -> bool:
        """A cached function that builds or loads a compiled extension (``@functools.cache def get_x_module()``)."""
        name = dotted.rpartition(".")[2].lower()
        if "module" not in name and "jit" not in name:
            return False
        decos = [self.canonical(d) for d, _ in self.funcs[dotted][2].get("decos", ())]
        return any(d in ("functools.cache", "functools.lru_cache") for d in decos)

    def _entry_matches(self, entry: str) -> list[str]:
        if ":" in entry:
            module, qual = entry.split(":", 1)
            dotted = f"{module}.{qual}"
            return [dotted] if dotted in self.funcs else [
                d for d, (_, q, _) in self.funcs.items() if q == qual and d.startswith(module.rpartition(".")[2])]
        if entry in self.funcs:
            return [entry]
        # a bare qualified name (`forward` is the module-level function, not `Model.forward`), or one with
        # its module's dotted name (or the end of it) in front
        return [d for d, (_, q, _) in self.funcs.items()
                if q == entry or (entry.endswith("." + q) and d.endswith("." + entry))]

    # -- reachability ------------------------------------------------------

    def _walk(self) -> None:
        """Breadth-first from the roots, in two passes: first through code that can run under capture, then
        on through what ``uncaptured-functions`` names, so a function reached both ways keeps the captured
        chain and one reached only through uncaptured code keeps the reason (``self.why_uncaptured``)."""
        self.parent: dict[str, tuple[str | None, str]] = {}  # dotted -> (parent, edge: "root"|"call"|"nested")
        self.why_uncaptured: dict[str, str] = {}
        queue: deque[str] = deque()
        later: deque[str] = deque()
        # roots that are guesses (an nn.Module's forward) are walked after the facts, so a function both
        # reach keeps the chain from the fact
        guesses = deque(d for d, (_, guess) in self.roots.items() if guess)

        def start(root: str) -> None:
            self.parent[root] = (None, "root")
            why = None if root in self.forced else (self.uncaptured_reason(root) or self.unreferenced.get(root))
            if why is not None:
                self.why_uncaptured[root] = why
                later.append(root)
            else:
                queue.append(root)

        for dotted, (_, guess) in self.roots.items():
            if not guess:
                start(dotted)
        for second in (False, True):
            if second:
                queue = later
            while queue or (guesses and not second):
                if not queue:
                    root = guesses.popleft()
                    if root not in self.parent:
                        start(root)
                    continue
                dotted = queue.popleft()
                inherited = self.why_uncaptured.get(dotted)
                for target, edge in self._edges(dotted):
                    if target in self.parent or target in self.kernels or self.off_scope(target) is not None:
                        continue
                    why = self.uncaptured_reason(target) or inherited
                    if why is not None and not second:
                        later.append(dotted)  # walked again in the second pass, from the captured caller
                        continue
                    self.parent[target] = (dotted, edge)
                    if why is not None:
                        self.why_uncaptured[target] = why
                    queue.append(target)

    def _edges(self, dotted: str) -> Iterable[tuple[str, str]]:
        """(function, "nested"|"call"): the functions defined in ``dotted`` and those it calls."""
        for child in self.children.get(dotted, ()):
            yield child, "nested"
        for callee in self.funcs[dotted][2].get("calls", ()):
            target = self._call_target(callee)
            if target is not None:
                yield target, "call"

    def uncaptured_reason(self, dotted: str) -> str | None:
        """Why ``dotted`` is code engines run outside capture (``uncaptured-functions``, a vendor path, the
        default kernel of an op with a CUDA kernel, a function that replays a CUDA graph and opens no capture
        region itself), or None."""
        if dotted in self._uncaptured_memo:
            return self._uncaptured_memo[dotted]
        module, qual, rec = self.funcs[dotted]
        path = self.by_module.get(module)
        hit = self.uncaptured.match(qual, path)
        why = None
        if hit is not None and not (hit[0] in ("__enter__", "__exit__") and self._capture_context(dotted)):
            why = _uncaptured_why(*hit)
        elif hit is None and path is not None:
            why = self.vendor.reason(path)
        op = rec.get("default_op")
        if why is None and op is not None and op in self.cuda_ops:
            why = (f"it is the default kernel of `{op}`, which also has a kernel registered for CUDA: CUDA "
                   "tensors dispatch there, so this one runs only on other devices")
        replays = rec.get("replays")
        if why is None and replays and not rec.get("opens_capture"):
            why = (f"`{qual}` replays a CUDA graph (`{replays[0]}`, line {replays[1]}), so it runs eagerly "
                   "around the graph, not inside a capture")
        self._uncaptured_memo[dotted] = why
        return why

    def _capture_context(self, dotted: str) -> bool:
        """Whether the class of ``dotted`` (an ``__enter__``/``__exit__``) begins or ends a graph capture."""
        cls = dotted.rpartition(".")[0]
        for method in ("__enter__", "__exit__"):
            rec = self.funcs.get(f"{cls}.{method}", (None, None, {}))[2]
            if rec.get("opens_capture") or any(c.rpartition(".")[2] in _CAPTURE_CALLS for c in rec.get("calls", ())):
                return True
        return False

    def _contexts_imports(self) -> None:
        """Resolve the imports of files that hold reachable code or kernels (may ask for more modules)."""
        modules = {self.funcs[d][0] for d in self.parent} | {self.funcs[d][0] for d in self.kernels}
        for module in modules:
            for local, target in self.summaries[module].get("imports", {}).items():
                if local in _DSL_NAMES or target.rpartition(".")[2] in _DSL_NAMES:
                    self.resolve(target)

    # -- answers -------------------------------------------------------------

    def chain(self, dotted: str) -> list[str]:
        out = [dotted]
        seen = {dotted}
        while True:
            parent = self.parent.get(out[-1], (None, "root"))[0]
            if parent is None or parent in seen:
                break
            out.append(parent)
            seen.add(parent)
        out.reverse()
        return out

    def reach(self, dotted: str, module: str) -> Reach | None:
        if dotted not in self.parent:
            return None
        chain = self.chain(dotted)
        root = chain[0]
        root_reason, guessed = self.roots.get(root, ("is a capture root", False))
        guess: bool | str = guessed
        uncaptured = self.why_uncaptured.get(dotted)
        dead = self._dead_texts.get(uncaptured) if uncaptured is not None else None

        def show(d: str) -> str:
            mod, qual, _ = self.funcs[d]
            return qual if mod == module else f"{mod}.{qual}"

        if len(chain) == 1:
            reason = root_reason
        else:
            parent = chain[-2]
            edge = "is defined inside" if self.parent[dotted][1] == "nested" else "is called from"
            if len(chain) == 2:
                reason = f"{edge} `{show(parent)}`, which {root_reason}"
            else:
                via = " -> ".join(show(d) for d in chain)
                reason = f"is reachable via {via} (`{show(root)}` {root_reason})"
        if uncaptured is not None:  # reached only through code engines run outside capture: a guess
            reason += f" ({uncaptured})"
            guess = dead or True
        return Reach(reason, root, chain, guess)

    def context(self, path: str) -> FileContext | None:
        """What the lint of one file needs from the project, or None when the file was not summarized."""
        module = self.names.get(path, (None,))[0]
        summ = self.summaries.get(module) if module else None
        if summ is None:
            return None
        reach = {}
        captures: list[str] = []
        off: dict[str, str] = {}
        for qual, rec in summ.get("funcs", {}).items():
            dotted = f"{module}.{qual}"
            how = self.reach(dotted, str(module))
            if how is not None:
                reach[qual] = [how.reason, how.root, how.chain, how.guess]
            if rec.get("opens_capture"):
                captures.append(qual)
            if dotted in self.funcs and self.off_scope(dotted) is not None:
                off[qual] = str(self.off_scope(dotted))
        aliases: dict[str, str] = {}
        kernels: dict[str, list[Any]] = {}
        self._missing = set()
        for local, target in summ.get("imports", {}).items():
            found = self.resolve(target)
            if found is None:
                continue
            if found[0] == "ext" and found[1] != target:
                aliases[local] = found[1]
            elif found[0] == "func" and found[1] in self.kernels and self.kernels[found[1]] == "triton":
                rec = self.funcs[found[1]][2]
                kernels[local] = [local, rec.get("params", []), rec.get("cx", []), found[1] in self.autotuned]
        table, cold = callers_mod.call_table(self), callers_mod.cold_table(self)
        calls = {q: table[f"{module}.{q}"] for q in reach if f"{module}.{q}" in table}
        # a class's __init__ for its reachable methods: whether a caller turns on a `self.x` opt-in flag it sets
        for cls in {q.rpartition(".")[0] for q in reach if "." in q}:
            init = f"{cls}.__init__"
            if init not in calls and f"{module}.{init}" in table:
                calls[init] = table[f"{module}.{init}"]
        cold_here = {q: cold[f"{module}.{q}"] for q in reach if f"{module}.{q}" in cold}
        return FileContext(reach, aliases, kernels, bool(summ.get("broken")), captures, off, calls, cold_here)

    def extension_entry(self, modules: set[str]) -> tuple[str, str] | None:
        """A function that calls into compiled C++ under capture: ``(function, how)`` for the first capture
        region or capture-reachable function that calls a name of one of the extension ``modules``
        (``import _ext as e; e.op(x)``, resolved through imports), or a capture-reachable function that calls
        an op of a module it loads (``get_module().op(x)``); None when none does."""
        for dotted, (_module, _qual, rec) in self.funcs.items():  # calls made inside a capture region
            for _site, _start, _end, targets in rec.get("capture", ()):
                for callee in targets:
                    if any(part in modules for part in callee.split(".")[:-1]):
                        return dotted, f"`{callee}`"
        for dotted in self.parent:
            rec = self.funcs[dotted][2]
            for loader, op in rec.get("ext_ops", ()):
                found = self.resolve(loader)
                if found is not None and found[0] == "func" and self._is_module_loader(found[1]):
                    return dotted, f"`{loader.rpartition('.')[2]}().{op}`"
            if modules:
                for callee in rec.get("calls", ()):
                    hit = next((part for part in callee.split(".")[:-1] if part in modules), None)
                    if hit is not None:
                        return dotted, f"`{callee}`"
        return None

    def in_scope(self, path: str) -> bool:
        module = self.names.get(path, (None,))[0]
        summ = self.summaries.get(module) if module else None
        if summ is None:
            return False
        return any(f"{module}.{q}" in self.parent for q in summ.get("funcs", {}))

    def counts(self) -> tuple[int, int]:
        """(functions in capture scope, functions skipped as not capture-reachable)."""
        total = sum(int(e[3] or 0) for e in self.entries.values())
        # a function that opens a capture region has code in scope, whatever reaches it
        regions = sum(1 for d, (_, _, rec) in self.funcs.items() if rec.get("opens_capture") and d not in self.parent)
        in_scope = len(self.parent) + regions
        skipped = max(0, total - in_scope - len(self.kernels))
        return in_scope, skipped

    def file_facts(self, path: str) -> tuple[str | None, int]:
        """(content digest, line count) of a Python file, as read while indexing."""
        entry = self.entries.get(path)
        return (entry[2], int(entry[6] or 0)) if entry else (None, 0)

    def has_expect(self, path: str) -> bool:
        module = self.names.get(path, (None,))[0]
        return bool(module and self.summaries.get(module, {}).get("expect"))
