"""C++ ops whose Python callers all run off capture: their hazards are warnings that say why.

A PyTorch extension binds C++ functions as ops (``m.def("op", &f)`` or a lambda calling ``f`` in a
``PYBIND11_MODULE`` block, ``m.impl("op", ...)`` in ``TORCH_LIBRARY``). ``graphcheck.lint.cpp_callers``
counts any Python use of the op as live. This pass, run after it on the C++ errors left, asks the project
index about each Python function that uses the op: the use is live when the function is capture-reachable
(``graphcheck.lint.project``: reached from a capture root, or opening a capture region) and its name does
not say it is load-time or setup code (``load_gguf_tensor``, ``init_weights``; the C++ rules' setup words), nor
does ``uncaptured-functions`` name it by its load-time group (``process_weights_after_loading``,
``load_weights``, a ``weight_loader``) or by a project's own glob: engines load and post-process model weights
once, before they capture. When every such use is load-time code, the message says the op is only called at
load time.
A use that runs only through prefill is off capture too, however the function is reached
(``graphcheck.lint.cold_reach.cold_use``): it sits in a prefill branch of its function (``if q_len > 1:``,
``if prefill_meta := ...:``; or a non-CUDA platform or timing branch), the function is prefill code by its name
(``prefill_forward``), or every resolved caller reaches the function only through such a path (``cold_only``).
When every use is so, the message says the op runs only for prefill and names the branch and the chain.
A use in a function ``eager-functions`` names (FlashInfer's ``plan``/``begin_forward``, a metadata
builder) is off capture too: the plan step runs before the captured replay; when every use is one, the message
says the op runs only in the plan step.
A use at module or class level, in a string (a JIT source template) or in a file the index did not
summarize keeps the op live. When every in-tree Python use of every op that reaches a C++ function is off
capture, the function's errors become warnings naming those callers (GGUF dequantization ops called only by
weight loaders). An op no Python file names is left alone (callers outside the tree), as is any function with
a capture-reachable caller.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from graphcheck.config import PLAN_STEP, UNCAPTURED_GROUPS
from graphcheck.findings import Finding, Severity
from graphcheck.lint.cache import hash_modules, read_verdicts, write_verdicts
from graphcheck.lint.cold_reach import cold_use
from graphcheck.lint.cpp_callers import _LIVE, _OP, _PY, CallerIndex, LintedSources, _digest_of, timing_function
from graphcheck.lint.cpp_pyrefs import foreign
from graphcheck.lint.cpp_rules import is_setup_function
from graphcheck.lint.project import ScopeNames, _uncaptured_why

if TYPE_CHECKING:
    from graphcheck.lint.project import ProjectIndex

_COLD = "cold:"  # a referrer that is a Python function off capture: `cold:<dotted>|<shown>|<why>`
_PUB = "pub:"  # a public Python function no capture reaches: its in-tree callers decide; none: public API
_FOLLOW = 8  # levels of callers followed (op, wrapper, dispatch table, loader, ...)
# `uncaptured-functions` globs that make a Python use of an op cold: the load-time group, and a project's own
# globs (in no default group); teardown, prefill and the other groups leave it to the reach check
_LOAD_TIME = frozenset(UNCAPTURED_GROUPS["load-time"])
_GROUPED = frozenset(glob for globs in UNCAPTURED_GROUPS.values() for glob in globs)
_LOAD_MARK = "\0"  # leads the reason of a cold use in load-time code
_PREFILL_MARK = "\1"  # leads the reason of a cold use that runs only through prefill
_TIMING_MARK = "\2"  # leads the reason of a C++ caller whose name says it times kernels (a benchmark)
_TIMING_WHY = "its name says it times or benchmarks kernels, which engines do not capture"
_PLAN_MARK = "\3"  # leads the reason of a cold use in a plan step (a function eager-functions names)
_CACHE_FILE = "cpp-cold-ops-v1.json"  # this pass's answers, beside the lint cache


class _ReachIndex(CallerIndex):
    """A caller index whose Python uses are live only in capture-reachable, non-load-time functions."""

    follow = _FOLLOW  # Python wrappers, dispatch tables and loaders make chains longer than C++ callers

    def __init__(self, files: Sequence[tuple[str, str]], project: ProjectIndex, sources: LintedSources | None = None):
        super().__init__(files, sources)
        self.project = project
        self._plan: ScopeNames | None = None  # the plan-step globs of eager-functions

    def referrers(self, name: str) -> set[str]:
        if name.startswith(_COLD):
            return set()  # a Python function off capture: a dead end
        if name.startswith(_PUB):
            if name not in self._referrers:
                found = super().referrers(_PY + name[len(_PUB):])
                self._referrers[name] = found or {_LIVE}  # nothing in the tree calls it: public API
            return self._referrers[name]
        found = super().referrers(name)
        # a C++ caller named as kernel timing (`bench_flashinfer_prefill`, an nvbench body): a dead end, named
        timed = {ref for ref in found if ref != _LIVE and not ref.startswith((_OP, _PY, _COLD, _PUB))
                 and timing_function(ref)}
        if timed:
            found = (found - timed) | {f"{_COLD}{ref}|{ref}|{_TIMING_MARK}{_TIMING_WHY}" for ref in timed}
        return found

    def _python_referrers(self, i: int, name: str, own: bool = False) -> set[str]:
        path = self.files[i][0]
        module = self.project.names.get(path, (None,))[0]
        tree = self.py.tree(i)
        if tree is None:
            return {_LIVE}
        if module is None:
            return {_LIVE}
        # `def name(...)` at module level: a bare `name` in this file is that Python function, not the op
        shadowed = not own and any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                                   and s.name == name for s in tree.body)
        private_module = any(part.startswith("_") and not part.startswith("__") for part in Path(path).parts[-3:])
        docs, modules = self.py.skip(i, tree)
        out: set[str] = set()
        shown = Path(path).name
        # module-level statements: `op(...)` called outside any `with` block runs once, at import;
        # `TABLE = {"k": op}` makes `TABLE` an alias whose uses are the op's
        imported: set[int] = set()
        alias_of: dict[int, list[str]] = {}
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.With, ast.AsyncWith)):
                continue
            targets = [t.id for t in getattr(stmt, "targets", ()) if isinstance(t, ast.Name)]
            for n in ast.walk(stmt):
                if isinstance(n, ast.Call):
                    imported.add(id(n.func))
                if isinstance(stmt, ast.Assign) and targets and len(targets) == len(stmt.targets):
                    alias_of[id(n)] = targets

        def visit(node: ast.AST, qual: str | None, prefix: str, fn: ast.AST | None = None) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    inner = prefix + child.name
                    visit(child, inner, inner + ".<locals>.", child)
                    continue
                if isinstance(child, ast.ClassDef):
                    visit(child, qual, prefix + child.name + ".", fn)
                    continue
                hit = ((isinstance(child, ast.Name) and child.id == name and not shadowed)
                       or (isinstance(child, ast.Attribute) and child.attr == name and not foreign(child, modules))
                       or (isinstance(child, ast.Constant) and isinstance(child.value, str) and name in child.value
                           and id(child) not in docs))
                if hit:
                    if qual is None and id(child) in imported:
                        out.add(f"{_COLD}{module}.<module>|{shown}: module level|module-level code, run at import")
                    elif qual is None and id(child) in alias_of and not prefix and not isinstance(child, ast.Constant):
                        out.update(_PUB + t for t in alias_of[id(child)] if t != name)
                    elif isinstance(child, ast.Constant) or qual is None:
                        out.add(_LIVE)
                    elif not (own and qual.rpartition(".")[2] == name):
                        out.add(self._use(module, qual, shown, private_module, fn, getattr(child, "lineno", 0)))
                visit(child, qual, prefix, fn)

        visit(tree, None, "")
        return out

    def _use(self, module: str, qual: str, shown: str, private_module: bool, node: ast.AST | None = None,
             line: int = 0) -> str:
        """``_LIVE`` when a use in function ``qual`` of ``module`` (its ``def`` ``node``, the use on line
        ``line``) may run under capture; ``cold:<dotted>|<file>: <qual>|<why>`` when it runs off capture (load
        time, or only through prefill: ``cold_reach.cold_use``); ``py:f``/``pub:f`` for a function no capture
        reaches, whose own in-tree callers decide (nobody calls a public one: public API, live)."""
        project = self.project
        dotted = f"{module}.{qual}"
        cold = f"{_COLD}{dotted}|{shown}: {qual}|"
        fname = qual.rpartition(".")[2]
        if is_setup_function(fname):
            return cold + "its name says load-time or setup code"
        hit = project.uncaptured.match(qual, project.by_module.get(module))
        if hit is not None and (hit[1] in _LOAD_TIME or hit[1] not in _GROUPED):
            return cold + _LOAD_MARK * (hit[1] in _LOAD_TIME) + _uncaptured_why(*hit)
        rec = project.funcs.get(dotted)
        prefill = cold_use(project, dotted, node, line) if rec is not None else None
        if prefill is not None:  # a prefill branch or prefill code, however the function is reached
            return cold + _PREFILL_MARK * prefill[1] + prefill[0]
        if rec is not None and (rec[2].get("opens_capture") or dotted in project.parent):
            return _LIVE
        if project.eager.match(qual):  # FlashInfer's `plan`/`begin_forward`, a metadata builder
            if self._plan is None:
                self._plan = ScopeNames([g for g in project.eager.patterns if g in PLAN_STEP])
            if self._plan.match(qual):
                return cold + _PLAN_MARK + "a plan step (eager-functions), run before the captured replay"
            return cold + "eager code (eager-functions), run before or outside the captured replay"
        if rec is None and module in project.summaries:
            return _LIVE  # not a function the index knows: assume the worst
        # no capture reaches it (a file the index never summarized holds nothing capture-reachable)
        private = (fname.startswith("_") and not fname.startswith("__")) or private_module
        return (_PY if private else _PUB) + fname

    def cold_callers(self, name: str, depth: int = _FOLLOW, seen: frozenset[str] = frozenset()) -> list[str]:
        """The off-capture Python functions found through ``name``'s referrers (for the message)."""
        out: list[str] = []
        for ref in sorted(self.referrers(name) - seen - {name}):
            if ref.startswith(_COLD):
                out.append(ref[len(_COLD):])
                out.sort(key=lambda e: e.split("|", 2)[1])
            elif depth > 0:
                out += self.cold_callers(ref, depth - 1, seen | {name})
        return list(dict.fromkeys(out))


def _shown(entry: str) -> str:
    _dotted, shown, why = entry.split("|", 2)
    return f"`{shown}` ({why.lstrip(_LOAD_MARK + _PREFILL_MARK + _TIMING_MARK + _PLAN_MARK)})"


def demote_cold_ops(raw: dict[str, list[Finding]], files: Sequence[tuple[str, str]],
                    project: ProjectIndex | None, sources: LintedSources | None = None,
                    cache_dir: Path | None = None, settings: str = "",
                    tests: Sequence[str] = ()) -> dict[str, list[Finding]]:
    """``raw`` (findings by file path) with each C++ error in a function whose every in-tree Python caller
    (through the ops bound to it) is load-time or not capture-reachable made a warning that names them.
    ``files`` are ``(path, language)`` of every linted file; ``project`` the run's ``ProjectIndex``; ``sources``,
    if given, the files' bytes as ``cpp_callers.demote_uncalled`` read them (not read again). The answers are cached
    in ``cache_dir`` under the stat of every linted file and of the left-out ``tests`` (whose references the project
    index reads), the linter's own source and ``settings`` (the run's configuration and extra roots, which decide
    what the project index finds capture-reachable), so an unchanged tree asks no caller again."""
    if project is None:
        return raw
    cpp_paths = {path for path, language in files if language == "cpp"}
    names = sorted({f.function for path, found in raw.items() if path in cpp_paths for f in found
                    if f.severity is Severity.ERROR and f.function and not f.code.startswith("GC0")})
    if not names:
        return raw
    key = _digest_of(files, ["<cold-ops>", _lint_source_digest(), settings, *names], tests, sources)
    cached = read_verdicts(cache_dir, _CACHE_FILE, key,
                           lambda v: v is None or (isinstance(v, list) and all(isinstance(c, str) for c in v)))
    if cached is None:
        index = _ReachIndex(files, project, sources)
        cached = {}
        for name in names:
            cached[name] = None
            if index.uncalled(name) is None:
                continue
            cold = index.cold_callers(name)
            via_op = any(ref.startswith(_OP) or ref.startswith(_PY) for ref in _closure(index, name))
            if cold and via_op and _timed_ok(cold):  # reached only from Python, and every Python use is off capture
                cached[name] = cold
        write_verdicts(cache_dir, _CACHE_FILE, key, cached)
    verdicts: dict[str, list[str]] = {name: cold for name, cold in cached.items() if cold}
    if not verdicts:
        return raw
    out: dict[str, list[Finding]] = {}
    for path, found in raw.items():
        if path not in cpp_paths:
            out[path] = found
            continue
        out[path] = [_demoted(f, verdicts[f.function]) if f.severity is Severity.ERROR and f.function in verdicts
                     and not f.code.startswith("GC0") else f for f in found]
    return out


@functools.cache
def _lint_source_digest() -> str:
    """A digest of the static layer's own source: a cached verdict of this pass depends on most of it (the project
    index, the value model, the caller search)."""
    h = hashlib.blake2b(digest_size=16)
    hash_modules(h, sorted(path.name for path in Path(__file__).resolve().parent.glob("*.py")))
    return h.hexdigest()


def _timed_ok(cold: list[str]) -> bool:
    """Whether C++ callers named as kernel timing may count as off capture: only beside Python callers that all
    run only through prefill (a prefill-only op that a benchmark program also times)."""
    marks = [c.split("|", 2)[2][:1] for c in cold]
    return _TIMING_MARK not in marks or (_PREFILL_MARK in marks
                                         and all(m in (_PREFILL_MARK, _TIMING_MARK) for m in marks))


def _closure(index: _ReachIndex, name: str, depth: int = _FOLLOW) -> set[str]:
    refs = set(index.referrers(name))
    if depth > 0:
        for ref in list(refs):
            if not ref.startswith(_COLD) and ref != _LIVE:
                refs |= _closure(index, ref, depth - 1)
    return refs


def _demoted(f: Finding, cold: list[str]) -> Finding:
    cold = list({_shown(c): c for c in cold}.values())  # the same function in copies of a file: once
    cold.sort(key=lambda c: c.split("|", 2)[2].startswith(_TIMING_MARK))  # Python callers first
    shown = ", ".join(_shown(c) for c in cold[:3]) + (f", and {len(cold) - 3} more" if len(cold) > 3 else "")
    load_time = all(c.split("|", 2)[2].startswith(_LOAD_MARK) for c in cold)
    marks = [c.split("|", 2)[2][:1] for c in cold]
    prefill = _PREFILL_MARK in marks and all(m in (_PREFILL_MARK, _TIMING_MARK) for m in marks)
    plan = all(m == _PLAN_MARK for m in marks)
    if load_time:
        why = (f"`{f.function}` is only called at load time: every in-tree Python caller of it (through the op "
               f"bound to it) loads or processes model weights, once, before engines capture: {shown}")
    elif prefill:
        why = (f"`{f.function}` runs only for prefill: every in-tree Python caller of it (through the op bound to "
               f"it) calls it only through prefill, which engines do not capture (they capture decode)"
               + (", and its other callers time kernels" if _TIMING_MARK in marks else "") + f": {shown}")
    elif plan:
        shown = ", ".join(f"`{c.split('|', 2)[1]}`" for c in cold[:3]) + (
            f", and {len(cold) - 3} more" if len(cold) > 3 else "")
        why = (f"`{f.function}` runs only in the plan step: every in-tree Python caller of it (through the op bound "
               f"to it) is one, which engines run once per batch, before the captured replay (eager-functions): "
               f"{shown}")
    else:
        why = (f"every in-tree Python caller of `{f.function}` (through the op bound to it) runs off capture: "
               f"{shown}")
    return dataclasses.replace(f, severity=Severity.WARNING, message=f"{f.message} ({why})",
                               evidence={**f.evidence,
                                         "caller_check": ("load time" if load_time else "prefill only" if prefill
                                                          else "plan step" if plan else "python callers off capture"),
                                         "python_callers": [c.split("|", 2)[1] for c in cold]})

