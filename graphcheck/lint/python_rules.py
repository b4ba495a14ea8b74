"""Static rules for Python sources: host syncs, streams, host-to-device copies,
values baked into a launch, and host RNG / side effects on the capture path.

``lint_python(source, path)`` parses the text with ``ast`` (the code is never
imported or run) and checks every capture-reachable function (see
``graphcheck.lint.scope``), or every function with ``all_functions=True``.
Module-level and class-level code is setup code and is never checked.

Speed: a module that mentions none of ``triton``, ``torch.library``,
``custom_op``, ``register_kernel``, ``capturable``, ``.impl(``, an entry-point
name, or a subscript-call ``name[...](`` of an imported name (a launch of an
imported kernel) cannot hold a capture-reachable function, so it is not even
parsed; a syntax error in such a file is therefore not reported (it could not
hide a finding). With ``all_functions=True`` every file is parsed.

The function never raises: a syntax error is GC001, a file the parser cannot
handle (null bytes, nesting too deep) is GC002, and a failure of the rules
themselves is GC003.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any, cast

from graphcheck import rules
from graphcheck.config import (
    DEFAULT_DATA_DEPENDENT,
    DEFAULT_DEBUG_FLAGS,
    DEFAULT_EAGER,
    DEFAULT_HARNESS,
    DEFAULT_PREFILL_FLAGS,
    DEFAULT_PREFILL_LENGTHS,
    DEFAULT_UNCAPTURED,
)
from graphcheck.findings import Finding, Severity
from graphcheck.lint import callers, capture_sites
from graphcheck.lint.closures import ModuleFacts
from graphcheck.lint.cold_reach import PREFILL_CODE
from graphcheck.lint.coldpaths import BRANCH_KINDS, CACHE_MISS, OPTIONAL_ARGUMENT
from graphcheck.lint.files import glob_regex, python_lines
from graphcheck.lint.ranks import DEAD_BRANCH, Dead, dead_branches
from graphcheck.lint.scope import FuncInfo, ModuleIndex, may_be_reachable
from graphcheck.lint.stream_owner import borrowed_stream
from graphcheck.lint.values import (
    DEFAULT_HOST_NAMES,
    RANDOM_FACTORIES,
    is_builtin,
    is_cpu_device,
    optional_param,
)

_TEXT_LIMIT = 60
# evidence "path" of findings on paths capture does not run
_COLD_KINDS = (CACHE_MISS, OPTIONAL_ARGUMENT, DEAD_BRANCH, PREFILL_CODE, *BRANCH_KINDS)
# a reach reason that names a capture site (the kernel's first call may be inside the capture)
_CAPTURE_SITE = re.compile(r"torch\.cuda\.graph|capture_begin|make_graphed_callables|recorded")
# What each host read found by Facts.sync_kind does, after "`<the call>` "; {where} names the capture path.
_SYNC_READS = {
    "GC101": "synchronizes with the host{where}",
    "GC102": "converts a tensor to a Python scalar{where}, which synchronizes with the host",
    "GC103": "copies a tensor to a Python list{where}, which synchronizes with the host",
    "GC104": "copies a tensor to the host{where}, which synchronizes",
    "GC111": "iterates a tensor on the host{where}: every comparison synchronizes",
}

# torch functions by the rule they break; matched on the resolved dotted name.
_NONZERO = {"torch.nonzero", "torch.argwhere"}
_MASKED_SELECT = {"torch.masked_select"}
_UNIQUE = {"torch.unique", "torch.unique_consecutive", "torch.functional.unique", "torch.functional.unique_consecutive"}
_STREAM_CTORS = {"torch.cuda.Stream", "torch.cuda.Event", "torch.Stream", "torch.Event",
                 "torch.cuda.streams.Stream", "torch.cuda.streams.Event"}
_DEFAULT_STREAM = {"torch.cuda.default_stream", "torch.cuda.set_stream", "torch.cuda.streams.default_stream",
                   "torch.accelerator.set_stream"}
_STREAM_CONTEXT = {"torch.cuda.stream", "torch.cuda.StreamContext", "torch.cuda.streams.StreamContext"}
_ALLOCATORS = {"torch.empty", "torch.zeros", "torch.ones", "torch.full", "torch.empty_strided",
               "torch.arange", "torch.rand", "torch.randn", "torch.randint", "torch.randperm",
               "torch.linspace", "torch.eye"}
_ALLOC_METHODS = {"new_empty", "new_zeros", "new_ones", "new_full"}
# calls that put no kernel on the current stream (a side-stream block made only of these joins nothing)
_NO_DEVICE_WORK = {"empty", "empty_like", "empty_strided", "record_stream", "record", "record_event", "wait_stream",
                   "wait_event", "current_stream", "len", "range", "int", "size", "dim", "data_ptr"}
_SEED_FUNCS = {f"{m}.{f}" for m in ("torch", "torch.random", "torch.cuda", "torch.cuda.random")
               for f in ("manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed",
                         "get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all")}
_HOST_RNG_STATE = {"seed", "getstate", "setstate", "get_state", "set_state"}
_GEN_METHODS = {"manual_seed", "seed", "get_state", "set_state"}
_LOG_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}
_LOGGER_NAMES = {"logger", "log", "LOGGER", "LOG", "_logger", "_log", "_LOGGER", "_LOG"}
# builtins whose result stays a plain host value (a draw passed to them goes nowhere near the device)
_HOST_ONLY_BUILTINS = ("print", "int", "float", "round", "min", "max", "abs", "str", "bool", "len", "format")
_TIME_FUNCS = {"time.time", "time.perf_counter", "time.monotonic", "time.process_time", "time.time_ns",
               "time.perf_counter_ns", "time.monotonic_ns", "time.sleep"}


def lint_python(source: str, path: str, *, all_functions: bool = False,
                entry_points: Sequence[str] = (), context: dict[str, Any] | None = None,
                registrars: Sequence[str] = (), eager: Sequence[str] = DEFAULT_EAGER,
                harness: Sequence[str] = DEFAULT_HARNESS,
                uncaptured: Sequence[str] = DEFAULT_UNCAPTURED, tree: ast.Module | None = None) -> list[Finding]:
    """Static findings for one Python source text. Never raises.

    ``tree``: ``ast.parse(source)`` when the caller has it already (the tree the project index summarized).

    ``context`` (from ``ProjectIndex.context(...).to_dict()``) replaces the
    module-local view: which functions are capture-reachable and why (with the
    call chain from their root), imported names that resolve to ``triton`` through
    a re-export, and imported kernels. Without it the file is its own project: a
    one-file project index gives it the same roots, reachability and scope
    (``registrars``, ``eager``, ``harness`` and ``uncaptured`` as in ``[tool.graphcheck]``) that
    ``graphcheck lint`` gives the file alone.
    """
    try:
        if context is None and (all_functions or _may_hold_root(source, entry_points)):
            context = _own_project(source, path, entry_points, registrars, eager, harness, uncaptured)
        if not all_functions and (context is None or not (
                context.get("reach") or context.get("broken") or context.get("captures"))):
            return []
        if "\x00" in source:
            line = source.count("\n", 0, source.index("\x00")) + 1
            return [_tool_finding("GC002", path, line, 0,
                                  "the file contains a null byte, so it cannot be parsed as Python; not checked")]
        try:
            if tree is None:
                tree = ast.parse(source, filename=path)
        except SyntaxError as exc:
            return [_tool_finding("GC001", path, exc.lineno or 1, max((exc.offset or 1) - 1, 0),
                                  f"syntax error: {exc.msg}; the file was not checked")]
        except (RecursionError, MemoryError) as exc:
            return [_tool_finding("GC002", path, 1, 0,
                                  f"the file is nested too deeply for Python's parser ({type(exc).__name__}); not "
                                  "checked")]
        except ValueError as exc:
            return [_tool_finding("GC002", path, 1, 0, f"the file cannot be parsed as Python ({exc}); not checked")]
        return _Linter(tree, source, path, all_functions, entry_points, context).run()
    except Exception as exc:  # the rules themselves failed: report, never raise
        return [_tool_finding("GC003", path, 1, 0,
                              f"the Python rules failed on this file ({type(exc).__name__}: {exc}); it was not fully "
                              "checked")]


def _may_hold_root(source: str, entry_points: Sequence[str]) -> bool:
    """What the project index summarizes up front: a file that can hold a capture root."""
    from graphcheck.lint.project import ROOT_TOKENS

    return any(t in source for t in ROOT_TOKENS) or may_be_reachable(source, entry_points)


def _own_project(source: str, path: str, entry_points: Sequence[str], registrars: Sequence[str],
                 eager: Sequence[str], harness: Sequence[str],
                 uncaptured: Sequence[str] = DEFAULT_UNCAPTURED) -> dict[str, Any] | None:
    """The context a one-file project index gives the file (None when the source cannot be summarized)."""
    from graphcheck.lint.project import ProjectIndex

    index = ProjectIndex([path], registrars=registrars, entry_points=_local_entries(entry_points, path),
                         eager=eager, harness=harness, uncaptured=uncaptured, source=source)
    found = index.context(next(iter(index.names)))
    return found.to_dict() if found is not None else None


def _local_entries(entry_points: Sequence[str], path: str) -> list[str]:
    """Entry points as qualified names within the file at ``path``.

    ``module:qualname`` and bare qualnames (``Model.forward``) are kept as they are;
    a dotted ``pkg.ops.decode`` also yields ``decode`` when its module part
    (``pkg.ops``) and the file's dotted path end the same way (``src/pkg/ops.py``,
    ``pkg/ops/__init__.py``, or ``ops.py`` when linted from inside ``pkg``).
    """
    stem = re.sub(r"\.py$", "", path.replace("\\", "/"))
    file_parts = [p for p in stem.split("/") if p not in ("", ".", "..")]
    if file_parts and file_parts[-1] == "__init__":
        file_parts.pop()
    out = []
    for entry in entry_points:
        out.append(entry)
        if ":" in entry or not file_parts:
            continue
        parts = entry.split(".")
        for i in range(len(parts) - 1, 0, -1):  # the longest module part first
            module = parts[:i]
            n = min(len(module), len(file_parts))
            if module[-n:] == file_parts[-n:]:
                out.append(".".join(parts[i:]))
                break
    return out


def _data_dependent_op(qualname: str, chain: Sequence[str], patterns: Sequence[str]) -> str | None:
    """The name of a data-dependent-size op (``unique``, ``nonzero``, ...) this function implements or is
    reached through, or None."""
    globs = glob_regex(tuple(patterns))
    if globs is None:
        return None
    parts = [p for p in qualname.split(".") if p != "<locals>"]
    parts += [p for d in chain for p in d.split(".")]  # module names too: FlagGems keeps one op per file
    for part in parts:
        if globs.match(part):
            return part
    return None


def _allocates(qual: str | None, attr: str | None) -> bool:
    """A call that allocates a tensor of a size it is given: a torch factory (``_ALLOCATORS``, matched on the
    resolved name) or a ``new_*`` method of a tensor (``qual`` None: a method on a value)."""
    return qual in _ALLOCATORS or (qual is None and attr in _ALLOC_METHODS)


def _host_allocation(info: FuncInfo, resolve: Callable[[ast.AST], str | None]) -> int | None:
    """The line of an allocation with ``device="cpu"`` written out (not pinned: a pinned buffer is a staging
    area for device work) among the function's own nodes, or None. An allocation is what the allocation rule
    takes for one (``_allocates``, on the name ``resolve`` gives), or a ``torch.tensor`` built from data."""
    for node in info.group("call"):
        func = node.func
        qual = resolve(func)
        if not (qual == "torch.tensor" or _allocates(qual, func.attr if isinstance(func, ast.Attribute) else None)):
            continue
        kws = {kw.arg: kw.value for kw in node.keywords if kw.arg}
        device = kws.get("device")
        if isinstance(device, ast.Call) and device.args:  # torch.device("cpu")
            device = device.args[0]
        pinned = kws.get("pin_memory")
        if isinstance(device, ast.Constant) and device.value == "cpu" and not (
                isinstance(pinned, ast.Constant) and pinned.value is True):
            return node.lineno
    return None


def _rooted_in_local(node: ast.AST) -> bool:
    """``lens[i]``, ``x.view(-1).max()``: a value reached from a local name, not an attribute of some
    other object (``meta.lens``), whose device is anyone's guess."""
    while True:
        if isinstance(node, ast.Name):
            return True
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        elif isinstance(node, ast.BinOp):
            node = node.left
        else:
            return False


def _tool_finding(code: str, path: str, line: int, col: int, message: str) -> Finding:
    return rules.make_finding(code, message, path=path, line=line, col=col)


class _Linter:
    def __init__(self, tree: ast.Module, source: str, path: str, all_functions: bool,
                 entry_points: Sequence[str], context: dict[str, Any] | None = None) -> None:
        self.source = source
        self._lines: list[str] | None = None
        self.path = path
        self.context = context
        ctx = context or {}
        self.index = ModuleIndex(tree, source, aliases=ctx.get("aliases"), kernels=ctx.get("kernels"),
                                 prefill_flags=ctx.get("prefill_flags", DEFAULT_PREFILL_FLAGS),
                                 prefill_lengths=ctx.get("prefill_lengths", DEFAULT_PREFILL_LENGTHS))
        self.all_functions = all_functions
        self.entry_points = entry_points
        self.findings: list[Finding] = []
        self._seen: set[tuple[str, int, int]] = set()
        self.facts = ModuleFacts(self.index, host_names=ctx.get("host_names", DEFAULT_HOST_NAMES),
                                 guards=ctx.get("guards", ()), debug_flags=ctx.get("debug_flags", DEFAULT_DEBUG_FLAGS),
                                 callers=ctx.get("callers"))

    def run(self) -> list[Finding]:
        if self.context is not None:
            reach = self.context.get("reach", {})
            reachable: dict[FuncInfo, Any] = {
                info: reach[info.qualname] for info in self.index.functions
                if info.qualname in reach and not info.is_kernel}
        else:
            reachable = self.index.reachable(_local_entries(self.entry_points, self.path))
        if self.all_functions:
            targets = [(f, reachable.get(f)) for f in self.index.functions if not f.is_kernel]
        else:
            targets = [(f, reason) for f, reason in reachable.items()]
        off = (self.context or {}).get("off", {})
        may_capture = capture_sites.may_capture(self.source)  # once per file, not once per function
        for info in self.index.functions:  # capture regions first: their findings say where they are captured
            if (info.is_kernel or off.get(info.qualname) == "harness" or not may_capture
                    or not info.may_open()):
                continue
            for region in capture_sites.regions(info.node, self.index.aliases.resolve):
                _FunctionChecker(self, info, None, region).run()
        for info, reason in targets:
            _FunctionChecker(self, info, reason).run()
        self.findings.sort(key=lambda f: (f.line, f.col, f.code))
        return self.findings

    @property
    def lines(self) -> list[str]:
        """The source's lines, split when a finding first needs its text (most files have none)."""
        if self._lines is None:
            self._lines = python_lines(self.source)
        return self._lines

    def text(self, node: ast.AST) -> str:
        """The source text of ``node``, on one line and shortened."""
        start, end = node.lineno, getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
        col, end_col = node.col_offset, getattr(node, "end_col_offset", None)  # type: ignore[attr-defined]
        if start > len(self.lines):
            return "<expression>"
        if end - start > 5:
            end, end_col = start, None
        chunk = [self.lines[i - 1].encode() for i in range(start, min(end, len(self.lines)) + 1)]
        if end_col is not None and start == end:
            chunk[-1] = chunk[-1][:end_col]
        elif end_col is not None:
            chunk[-1] = chunk[-1][:end_col]
        chunk[0] = chunk[0][col:]
        text = " ".join(part.decode(errors="replace").strip() for part in chunk)
        if len(text) > _TEXT_LIMIT:
            text = text[: _TEXT_LIMIT - 3].rstrip() + "..."
        return text

    def char_col(self, node: ast.AST) -> int:
        line = node.lineno  # type: ignore[attr-defined]
        if line > len(self.lines):
            return node.col_offset  # type: ignore[attr-defined]
        return len(self.lines[line - 1].encode()[: node.col_offset].decode(errors="replace"))  # type: ignore[attr-defined]

    def report(self, code: str, node: ast.AST, info: FuncInfo, reason: str | None, message: str,
               region: capture_sites.Region | None = None, **evidence: object) -> int | None:
        key = (code, node.lineno, node.col_offset)  # type: ignore[attr-defined]
        if key in self._seen:
            return None
        self._seen.add(key)
        where = f" inside `{info.qualname}`"
        if region is not None:  # written in a capture region: captured, whatever reaches the function
            where = f" inside {region.label} in `{info.qualname}`"
            evidence = {**evidence, "captured": region.label}
        severity = evidence.pop("_severity", None) or rules.get(code).severity
        if isinstance(reason, list):  # from the project index: [reason, root, chain, guess]
            text, root, chain, guess = reason
            evidence = {**evidence, "root": root, "chain": chain}
            if guess and severity == "error":
                severity = "warning"
                evidence["reach"] = guess if isinstance(guess, str) else "guessed"
            reason = text
        if code == "GC404" and not _CAPTURE_SITE.search(reason or ""):
            severity = "info"  # the first call can be a warm-up outside capture
        if reason:
            where += f", which {reason}" if message.endswith("{where}") else f" (which {reason})"
        evidence = {k: v for k, v in evidence.items() if v is not None}
        finding = rules.make_finding(
            code, message.replace("{where}", where), path=self.path,
            line=node.lineno, col=self.char_col(node), function=info.qualname,  # type: ignore[attr-defined]
            evidence={"construct": self.text(node), **evidence})
        if severity != finding.severity:  # a guessed reach or device value is milder than the rule
            finding = dataclasses.replace(finding, severity=Severity.parse(cast(str, severity)))
        self.findings.append(finding)
        return len(self.findings) - 1


class _FunctionChecker:
    """All rules over one function's own nodes, in one pass."""

    def __init__(self, linter: _Linter, info: FuncInfo, reason: str | None,
                 region: capture_sites.Region | None = None) -> None:
        self.linter = linter
        self.region = region  # check only this capture region's statements, as captured code
        self.index = linter.index
        self.aliases = linter.index.aliases
        self.info = info
        self.reason = reason
        ctx = linter.context or {}
        self.facts = linter.facts.of(info)
        chain: list[str] = reason[2] if isinstance(reason, list) and len(reason) > 2 else []
        stem = re.split(r"[\\/]", linter.path)[-1].removesuffix(".py")
        self.data_dependent = _data_dependent_op(f"{stem}.{info.qualname}", chain,
                                                 ctx.get("data_dependent", DEFAULT_DATA_DEPENDENT))
        self._derived: list[tuple[int, int]] = []  # (finding index, line of the sync it follows from)
        self.host_alloc = _host_allocation(info, self.aliases.resolve)  # a CPU allocation: a host implementation
        self._regions: list[capture_sites.Region] | None = None  # the function's capture regions, when asked
        self._dead: list[Dead] | None = None  # branches the function's rank reads rule out, when asked

    def report(self, code: str, node: ast.AST, message: str, **evidence: object) -> None:
        if self.facts.off_capture and self.facts.off_capture_path(node.lineno):  # type: ignore[attr-defined]
            return  # guarded by `if not torch.cuda.is_current_stream_capturing():` or a debug flag
        origin = evidence.pop("_origin", None)
        if "_severity" not in evidence and rules.get(code).severity == "error" and self.region is None:
            # (code written in a capture region is captured, also when the region itself runs only once)
            cold = self.cold_path(node.lineno, node.col_offset)  # type: ignore[attr-defined]
            if cold is not None:
                why, kind, mild = cold
                message += f"; {why}"
                evidence = {**evidence, "path": kind}
                if mild:
                    evidence["_severity"] = "warning"
        if code == "GC104" and self.host_alloc is not None and "_severity" not in evidence:
            # `out = torch.zeros(..., device="cpu")` then `op(x.cpu(), out)`: the function computes on the host
            evidence = {**evidence, "_severity": "warning", "path": "host implementation"}
            message += (f"; `{self.info.qualname}` computes on the host (it allocates on the CPU on line "
                        f"{self.host_alloc}), so its callers choose to run it outside capture")
        if self.data_dependent and "_severity" not in evidence and rules.get(code).severity == "error":
            # a sync inside `unique`/`nonzero`/...: the op cannot size its output without one
            evidence = {**evidence, "_severity": "warning", "data_dependent": self.data_dependent}
            message += (f"; `{self.data_dependent}` is an op whose output size depends on the data by definition"
                        " (or that reads its data on the host by definition): aten synchronizes there too")
        index = self.linter.report(code, node, self.info, self.reason, message, self.region, **evidence)
        if index is not None and isinstance(origin, ast.AST):
            self._derived.append((index, origin.lineno))  # type: ignore[attr-defined]

    def cold_path(self, line: int, col: int) -> tuple[str, str, bool] | None:
        """(why, kind, milder) when ``line`` runs only on a first use or without an optional argument:
        a cached body, a cache-miss block, a function called only on a cache miss, an ``if p is None:``
        fallback. The fallback stays an error when a caller the project knows omits ``p`` (or passes None).
        A branch that a rank read before it rules out (``graphcheck.lint.ranks``) is one too."""
        if self._dead is None:
            node = self.info.node
            self._dead = dead_branches(node) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
        for dead in self._dead:
            if dead.start <= line <= dead.end:
                return f"it is in {dead.why}", DEAD_BRANCH, True
        first = self.facts.first_use_at(line, col)
        if first is not None:
            return f"it runs only {first.why}", first.kind, True
        prefill = self.facts.prefill_at(line, col)
        if prefill is not None:
            return f"it runs only {prefill.why}", prefill.kind, True
        cold = (self.linter.context or {}).get("cold", {}).get(self.info.qualname)
        if cold:  # [why, kind]: reached only through a call made on a cold path
            return f"it {cold[0]}", cold[1], True
        optional = self.facts.optional_at(line, col)
        if optional is None:
            return None
        param = optional.param
        table = (self.linter.context or {}).get("callers", {})
        flag = optional.flag
        if flag is not None:  # an opt-in flag: an error when a caller the project knows turns it on
            owner = self.info if flag.owner is None else self._method(flag.owner)
            if owner is None:
                return f"it runs only {optional.why}", OPTIONAL_ARGUMENT, True
            caller = callers.turning_on(owner, flag.param, table)
            if caller is not None:
                via = "" if flag.owner is None else f" through `{flag.owner}`'s `{flag.param}`"
                return (f"it runs when `{flag.name}` is on (default {flag.default}), and {caller}{via}",
                        OPTIONAL_ARGUMENT, False)
            off = callers.off_capture_callers(owner, flag.param, table, omitted=False)
            if off:
                shown = ", ".join(off[:3]) + (f" and {len(off) - 3} more" if len(off) > 3 else "")
                return (f"it runs only {optional.why}; only callers that never run under capture turn it on "
                        f"({shown})", OPTIONAL_ARGUMENT, True)
            return f"it runs only {optional.why}; no caller in the tree turns it on", OPTIONAL_ARGUMENT, True
        if param is not None and optional.why.startswith("when the caller omits"):
            caller = callers.omitting(self.info, param, table)
            if caller is not None:
                return f"it runs when `{param}` is omitted or None, as {caller} does", OPTIONAL_ARGUMENT, False
            off = callers.off_capture_callers(self.info, param, table, omitted=True)
            if off:
                shown = ", ".join(off[:3]) + (f" and {len(off) - 3} more" if len(off) > 3 else "")
                return (f"it runs only {optional.why}; only callers that never run under capture do ({shown})",
                        OPTIONAL_ARGUMENT, True)
            return f"it runs only {optional.why}; no caller in the tree does", OPTIONAL_ARGUMENT, True
        return f"it runs only {optional.why}", OPTIONAL_ARGUMENT, True

    def _method(self, qualname: str) -> FuncInfo | None:
        """A method of this module by its qualified name (``Cls.__init__``)."""
        cls, _, name = qualname.rpartition(".")
        return self.index.class_methods.get(cls, {}).get(name)

    def origin_sync(self, node: ast.AST | None) -> ast.AST | None:
        """The host sync a value comes from: the call itself, or the sync a host name was assigned from."""
        seen: set[str] = set()
        while isinstance(node, ast.Name) and node.id not in seen:
            seen.add(node.id)
            node = self.facts.host_origin.get(node.id)
        if isinstance(node, ast.Call) and self.facts.sync_kind(node) is not None:
            return node
        return None

    def _demote_derived(self, start: int) -> None:
        """One error per root cause: an allocation, grid, scalar or constexpr computed from a host sync that
        is reported as an error in the same function is a warning that points at the sync (a sync whose
        device is a guess is a warning itself, and then what follows from it keeps its severity)."""
        if not self._derived:
            return
        findings = self.linter.findings
        sync_lines = {f.line for f in findings[start:] if f.code.startswith("GC1") and f.severity == "error"}
        # a sync on a cold path (first use, optional-argument fallback) is a warning; what follows from it too
        cold_lines = {f.line: f.evidence["path"] for f in findings[start:]
                      if f.code.startswith("GC1") and f.evidence.get("path") in _COLD_KINDS
                      and f.severity == "warning"}
        for index, line in self._derived:
            finding = findings[index]
            if finding.severity != "error" or finding.line == line:
                continue
            if line in sync_lines:
                findings[index] = dataclasses.replace(
                    finding, severity=Severity.WARNING,
                    message=f"{finding.message}; it follows from the sync on line {line}",
                    evidence={**finding.evidence, "follows": line})
            elif line in cold_lines:
                findings[index] = dataclasses.replace(
                    finding, severity=Severity.WARNING,
                    message=f"{finding.message}; it follows from the sync on line {line}, which runs only on "
                            f"{'an' if cold_lines[line][:1] in 'aeiou' else 'a'} {cold_lines[line]} path",
                    evidence={**finding.evidence, "follows": line, "path": cold_lines[line]})

    def t(self, node: ast.AST) -> str:
        return self.linter.text(node)

    def run(self) -> None:
        start = len(self.linter.findings)
        self._run()
        self._demote_derived(start)

    def _run(self) -> None:
        nodes = list(self.region.nodes()) if self.region is not None else self.info.own_nodes()
        booleaned: set[int] = set()
        joins: list[int] = []
        forks: list[tuple[ast.With | ast.AsyncWith, ast.Call]] = []
        for node in nodes:
            if isinstance(node, (ast.If, ast.While, ast.Assert, ast.IfExp)):
                booleaned.add(id(node.test))
            elif isinstance(node, ast.comprehension):
                booleaned.update(id(cond) for cond in node.ifs)
            elif isinstance(node, ast.BoolOp):
                values = node.values if id(node) in booleaned else node.values[:-1]
                booleaned.update(id(v) for v in values)
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                booleaned.add(id(node.operand))
            if id(node) in booleaned and not isinstance(node, (ast.BoolOp,)) and not (
                    isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
                self.check_truthiness(node)
            if isinstance(node, ast.Call):
                self.check_call(node)
                if self._is_join(node):
                    joins.append(node.lineno)
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                self.check_subscript(node)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                forks.extend(self._forks(node))
        for with_node, entered in forks:
            end = with_node.end_lineno or with_node.lineno
            if not any(line > end for line in joins):
                message = (f"`{self.t(entered)}` forks work to a side stream{{where}} and nothing joins it back "
                           "(no `wait_stream`/`wait_event` after the block)")
                borrowed = self._borrowed_stream(with_node, entered.args[0]) if entered.args else None
                if borrowed is None:
                    self.report("GC202", with_node, message)
                else:
                    why, owner = borrowed
                    self.report("GC202", with_node, f"{message}; {why}, which may order and join it",
                                _severity="warning", stream_owner=owner)

    # -- GC111 -------------------------------------------------------------

    def check_truthiness(self, node: ast.AST) -> None:
        if isinstance(node, ast.Name) and self.facts.tensorish(node) and optional_param(self.info.node, node.id):
            # `if output:` on `output: Optional[Tensor]`: a None check; a real buffer raises, one element syncs
            self.report("GC111", node, f"`{node.id}` is an optional tensor parameter used as a Python bool{{where}}; "
                                       "it reads as a None check, but on a tensor it synchronizes when it has one "
                                       f"element and raises when it has more: write `if {node.id} is not None:`",
                        _severity="warning", optional="None check")
        elif self.facts.tensorish(node):
            self.report("GC111", node, f"`{self.t(node)}` is a tensor used as a Python bool{{where}}; "
                                       "evaluating it synchronizes with the host")
        elif isinstance(node, ast.Call) and self._bool_sync_call(node):
            self.report("GC111", node, f"`{self.t(node)}` reads a tensor comparison on the host{{where}}, "
                                       "which synchronizes")

    def _bool_sync_call(self, node: ast.Call) -> bool:
        qual = self.aliases.resolve(node.func)
        if qual in ("torch.equal", "torch.allclose", "torch.is_nonzero"):
            return True
        func = node.func
        return isinstance(func, ast.Attribute) and func.attr in ("equal", "allclose", "is_nonzero") and (
            qual is None and self.facts.tensorish(func.value))

    # -- calls -------------------------------------------------------------

    def check_call(self, node: ast.Call) -> None:
        facts = self.facts
        func = node.func
        qual = self.aliases.resolve(func)
        attr = func.attr if isinstance(func, ast.Attribute) else None
        method = attr is not None and qual is None  # a method call on a value, not a module function

        kind = facts.sync_kind(node)
        if kind in _SYNC_READS:
            receiver = func.value if isinstance(func, ast.Attribute) else (node.args[0] if node.args else None)
            known = receiver is not None and (kind in ("GC102", "GC111") or facts.tensorish(receiver)
                                              or _rooted_in_local(receiver))
            if known and isinstance(receiver, ast.Name) and facts.narrowed_tensor_only(receiver):
                known = False  # `if isinstance(p, Tensor): p.tolist()` on an untyped argument: which device?
            extra: dict[str, object] = {} if known else {"_severity": "warning", "device": "guessed"}
            self.report(kind, node, f"`{self.t(node)}` " + _SYNC_READS[kind], **extra)

        if qual in _NONZERO or (method and attr in ("nonzero", "argwhere")) or (
                qual == "torch.where" and len(node.args) == 1 and not node.keywords):
            self.report("GC105", node, f"`{self.t(node)}` has a data-dependent output size{{where}}, "
                                       "so it synchronizes with the host")
        elif qual in _MASKED_SELECT or (method and attr == "masked_select"):
            self.report("GC106", node, f"`{self.t(node)}` has a data-dependent output size{{where}}, "
                                       "so it synchronizes with the host")
        elif qual in _UNIQUE or (method and attr in ("unique", "unique_consecutive")
                                  and facts.tensorish(cast(ast.Attribute, func).value)):
            self.report("GC108", node, f"`{self.t(node)}` has a data-dependent output size{{where}}, "
                                       "so it synchronizes with the host")
        elif qual == "torch.repeat_interleave" or (method and attr == "repeat_interleave"):
            self.check_repeat_interleave(node, qual is not None)

        if qual in ("torch.cuda.synchronize", "torch.accelerator.synchronize", "torch.cuda.current_stream.synchronize"):
            self.report("GC110", node, f"`{self.t(node)}` blocks the host until the device is idle{{where}}")
        elif attr == "synchronize" and not node.args:
            receiver = func.value  # type: ignore[attr-defined]
            if self._is_stream(receiver):
                self.report("GC110", node, f"`{self.t(node)}` blocks the host until the stream is idle{{where}}")
            else:  # an event or an object of unknown type: waits for work that may be outside the capture
                self.report("GC110", node, f"`{self.t(node)}` blocks the host until the device work it waits "
                                           "for is done{where}", _severity="warning", device="guessed")

        if qual in _STREAM_CTORS:
            self.report("GC205", node, f"`{self.t(node)}` creates a CUDA stream or event{{where}}; create it "
                                       "once at setup")
        elif qual in _DEFAULT_STREAM and not (node.args and self._capturing_stream(node, node.args[0])):
            self.report("GC206", node, f"`{self.t(node)}` targets a stream that is not the capturing one{{where}}")

        self.check_h2d(node, qual, attr)
        if _allocates(qual, attr):
            self.check_allocation(node, qual, attr)
        if self.index.is_launch(node):
            self.check_launch(node)
        self.check_rng_and_effects(node, qual, attr)

    def _capturing_stream(self, at: ast.AST, expr: ast.AST) -> bool:
        """Does ``expr``, written at ``at``, name the stream a capture region around it captures on (the
        ``stream=`` of ``torch.cuda.graph``, the ``torch.cuda.stream(s)`` around ``capture_begin()``)?
        ``torch.cuda.current_stream()`` is the capturing stream anywhere inside a region."""
        line = at.lineno  # type: ignore[attr-defined]
        regions = [self.region] if self.region is not None else self._function_regions()
        inside = [r for r in regions if r.line <= line <= r.end]
        if not inside:
            return False
        if isinstance(expr, ast.Call) and (self.aliases.resolve(expr.func) or "").endswith(".current_stream"):
            return True
        key = capture_sites.stream_key(expr)
        return key is not None and any(key in r.streams for r in inside)

    def _is_stream(self, node: ast.AST) -> bool:
        """A CUDA stream or the device: `torch.cuda.current_stream()`, `self.side_stream`, `stream`."""
        if isinstance(node, ast.Call):
            qual = self.aliases.resolve(node.func) or ""
            return qual.rpartition(".")[2] in ("current_stream", "default_stream", "Stream", "ExternalStream")
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
        qual = self.aliases.resolve(node) or ""
        return "stream" in name.lower() or qual in ("torch.cuda", "torch.accelerator")

    def check_repeat_interleave(self, node: ast.Call, is_function: bool) -> None:
        if any(kw.arg == "output_size" for kw in node.keywords):
            return
        repeats = next((kw.value for kw in node.keywords if kw.arg == "repeats"), None)
        single = False
        if repeats is None:
            position = 1 if is_function else 0
            if len(node.args) > position:
                repeats = node.args[position]
            elif is_function and len(node.args) == 1:
                repeats, single = node.args[0], True
        if repeats is None:
            return
        if isinstance(repeats, ast.Constant) and isinstance(repeats.value, int):
            return
        if single or self.facts.tensorish(repeats):
            self.report("GC109", node, f"`{self.t(node)}` repeats by a tensor without `output_size=`{{where}}, "
                                       "so it synchronizes to size its output")

    # -- GC301 / GC302 -------------------------------------------------------

    def check_h2d(self, node: ast.Call, qual: str | None, attr: str | None) -> None:
        facts = self.facts
        if qual in ("torch.tensor", "torch.as_tensor"):
            device = next((kw.value for kw in node.keywords if kw.arg == "device"), None)
            data = node.args[0] if node.args else next((kw.value for kw in node.keywords if kw.arg == "data"), None)
            if device is None or data is None or is_cpu_device(self.aliases, device):
                return
            if isinstance(data, (ast.List, ast.Tuple)) and not data.elts:
                return  # an empty literal copies nothing
            host_data = facts.is_host_seq(data) or (
                isinstance(data, ast.Constant) and not isinstance(data.value, str)) or (
                facts.host_source(data) is not None)
            if (qual == "torch.tensor" and not facts.tensorish(data)) or host_data:
                self.report("GC301", node, f"`{self.t(node)}` builds a tensor on the host and copies it to "
                                           f"`{self.t(device)}`{{where}} from pageable memory")
            return
        if attr not in ("cuda", "to") or not isinstance(node.func, ast.Attribute):
            return
        receiver = node.func.value
        if not facts.is_host_tensor(receiver):
            return
        if attr == "to" and not self._to_device(node):
            return
        non_blocking = any(kw.arg == "non_blocking" and isinstance(kw.value, ast.Constant) and kw.value.value is True
                           for kw in node.keywords)
        if non_blocking and facts.is_pinned(receiver):
            return
        self.report("GC301", node, f"`{self.t(node)}` copies a tensor built on the host to the device{{where}}"
                                   + ("" if facts.is_pinned(receiver) else " from pageable memory"))

    def _to_device(self, node: ast.Call) -> bool:
        """``.to(x)`` moves to an accelerator (not a dtype, not the CPU)."""
        target = next((kw.value for kw in node.keywords if kw.arg == "device"), None)
        if target is None and node.args:
            target = node.args[0]
        if target is None:
            return False
        if is_cpu_device(self.aliases, target):
            return False
        if isinstance(target, ast.Constant):
            return isinstance(target.value, (str, int)) and not isinstance(target.value, bool)
        qual = self.aliases.resolve(target)
        if qual is not None and qual.startswith("torch.") and qual != "torch.device":
            return False  # torch.float16 and other dtypes
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        return "dtype" not in name.lower()

    def check_allocation(self, node: ast.Call, qual: str | None, attr: str | None) -> None:
        name = (qual or attr or "").rpartition(".")[2]
        sizes: list[ast.AST] = list(node.args[:1] if name in ("full", "new_full") else node.args)
        sizes += [kw.value for kw in node.keywords if kw.arg in ("size", "end", "start", "n", "m")]
        for size in sizes:
            source = self.facts.host_source(size)
            if source is not None:
                self.report("GC302", node, f"`{self.t(node)}` is sized from `{self.t(source)}`, a value read from "
                                           f"the device{{where}}; the size is fixed at capture",
                            _origin=self.origin_sync(source))
                return

    # -- GC107 -------------------------------------------------------------

    def check_subscript(self, node: ast.Subscript) -> None:
        index = node.slice
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        for part in parts:
            if self.facts.is_mask(part):
                self.report("GC107", node, f"`{self.t(node)}` indexes with a boolean mask{{where}}; the result "
                                           "size depends on the data, so it synchronizes")
                return

    # -- GC4xx -------------------------------------------------------------

    def check_launch(self, node: ast.Call) -> None:
        facts = self.facts
        kernel = self.index.launched_kernel(node)
        name = self.index.launched_kernel_name(node)
        grid = node.func.slice  # type: ignore[attr-defined]
        source = facts.host_source(grid)
        if source is not None:
            self.report("GC401", node, f"the grid `{self.t(grid)}` of the launch of `{name}`{{where}} is computed "
                                       f"from {self._origin(source)}, a value read from the device; it is baked "
                                       "at capture", kernel=name, _origin=self.origin_sync(source))
        else:
            baked = facts.baked_source(grid)
            if baked is not None:
                self.report("GC401", node, f"the grid `{self.t(grid)}` of the launch of `{name}`{{where}} is "
                                           f"computed from {self._origin(baked)}, a value read from a host tensor "
                                           "per call; it is baked at capture", kernel=name, _severity="warning",
                            value="host")
        args: list[tuple[str | None, ast.expr]] = []
        for i, arg in enumerate(node.args):
            param = kernel.params[i] if kernel is not None and i < len(kernel.params) else None
            args.append((param, arg))
        args += [(kw.arg, kw.value) for kw in node.keywords if kw.arg]
        for param, arg in args:
            label = f"`{param}`" if param else f"`{self.t(arg)}`"
            if kernel is not None and param in kernel.constexprs:
                why = facts.per_call_reason(arg)
                if why:
                    self.report("GC403", arg, f"tl.constexpr {label} of `{name}` gets `{self.t(arg)}`{{where}}, "
                                              f"which {why}: it recompiles per value and is baked at capture",
                                kernel=name, argument=param, _origin=self.origin_sync(facts.host_source(arg)))
                continue
            if facts.tensorish(arg) and not isinstance(arg, ast.Call):
                continue  # a tensor passes its address, which a host-sized allocation does not change per replay
            source = facts.host_source(arg)
            if source is not None:
                self.report("GC402", arg, f"argument {label} of the launch of `{name}`{{where}} is computed from "
                                          f"{self._origin(source)}, a value read from the device; it is baked "
                                          "at capture", kernel=name, argument=param, _origin=self.origin_sync(source))
                continue
            baked = facts.baked_source(arg)
            if baked is not None and not facts.tensorish(arg):
                self.report("GC402", arg, f"argument {label} of the launch of `{name}`{{where}} is computed from "
                                          f"{self._origin(baked)}, a value read from a host tensor per call; it "
                                          "is baked at capture", kernel=name, argument=param, _severity="warning",
                            value="host")
        if kernel is not None and kernel.autotuned:
            self.report("GC404", node, f"`{name}` is decorated with @triton.autotune and launched{{where}}; "
                                       "autotuning during capture runs benchmarks into the graph", kernel=name)

    def _origin(self, node: ast.AST) -> str:
        """"`n` (from `t.item()` on line 12)" for a host name, else the sync itself."""
        if isinstance(node, ast.Name):
            origin = self.facts.host_origin.get(node.id)
            if origin is None and self.facts.has(node.id, "hostread"):
                origin = self.facts.baked_source_of(node.id)
            if origin is not None and origin is not node:
                return f"`{node.id}` (from `{self.t(origin)}` on line {origin.lineno})"  # type: ignore[attr-defined]
        return f"`{self.t(node)}`"

    # -- GC2xx helpers -------------------------------------------------------

    def _forks(self, node: ast.With | ast.AsyncWith) -> list[tuple[ast.With | ast.AsyncWith, ast.Call]]:
        for item in node.items:
            expr = item.context_expr
            if isinstance(expr, ast.Call) and self.aliases.resolve(expr.func) in _STREAM_CONTEXT:
                arg = expr.args[0] if expr.args else None
                if isinstance(arg, ast.Call) and (self.aliases.resolve(arg.func) or "").endswith("current_stream"):
                    continue  # entering the current stream forks nothing
                if isinstance(arg, ast.Constant) and arg.value is None:
                    continue
                if arg is not None and self._capturing_stream(node, arg):
                    continue  # the stream the graph captures on: entering it forks nothing
                if not self._does_device_work(node.body):
                    continue  # only allocates or records: no kernel runs on the side stream
                return [(node, expr)]
        return []

    def _borrowed_stream(self, with_node: ast.With | ast.AsyncWith, arg: ast.expr) -> tuple[str, str] | None:
        """(why, owner) when the block enters a stream the function does not own (``stream_owner``); None
        when it owns it, and inside a capture region the function opens (capture ends in the function, so
        nothing after it can join the stream)."""
        line = with_node.lineno
        if self.region is not None or any(r.line <= line <= r.end for r in self._function_regions()):
            return None
        return borrowed_stream(self.info, arg, line, self.aliases.resolve, self.t)

    def _function_regions(self) -> list[capture_sites.Region]:
        if self._regions is None:
            self._regions = (capture_sites.regions(self.info.node, self.aliases.resolve)
                             if self.info.may_open() else [])
        return self._regions

    def _does_device_work(self, body: list[ast.stmt]) -> bool:
        """False when every statement only allocates or records (``out = torch.empty(...)``)."""
        for stmt in body:
            value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Expr)) else None
            if not isinstance(value, ast.Call):
                return True
            qual = self.aliases.resolve(value.func) or ""
            last = qual.rpartition(".")[2] if qual else getattr(value.func, "attr", getattr(value.func, "id", ""))
            if not (qual in _ALLOCATORS or last in _ALLOC_METHODS or last in _NO_DEVICE_WORK):
                return True
        return False

    def _is_join(self, node: ast.Call) -> bool:
        func = node.func
        if not isinstance(func, ast.Attribute):
            return False
        if func.attr in ("wait_stream", "wait_event"):
            return True
        return func.attr == "wait" and isinstance(func.value, ast.Name) and self.facts.has(func.value.id, "event")

    # -- GC5xx -------------------------------------------------------------

    def check_rng_and_effects(self, node: ast.Call, qual: str | None, attr: str | None) -> None:
        if qual is not None:
            head, _, last = qual.rpartition(".")
            if head in ("random", "numpy.random"):
                if last in _HOST_RNG_STATE:
                    self.report("GC502", node, f"`{self.t(node)}` reads or sets the host RNG state{{where}}")
                elif self._draw_reaches_device(node):
                    self.report("GC501", node, f"`{self.t(node)}` draws from a host RNG{{where}}; the draw is "
                                               "baked into the graph and replays identically")
                return
            if (qual in RANDOM_FACTORIES and not any(kw.arg == "generator" for kw in node.keywords)
                    and self.facts.host_factory_call(node)):
                if self._draw_reaches_device(node):  # (a CPU generator= is reported below, reaching or not)
                    self.report("GC501", node, f"`{self.t(node)}` draws from the host RNG (no `device=`){{where}}; "
                                               "the draw is baked into the graph and replays identically")
                return
            if qual in _SEED_FUNCS:
                self.report("GC502", node, f"`{self.t(node)}` reads or sets the RNG seed or state{{where}}")
                return
            if (head == "logging" and last in _LOG_METHODS) or qual == "warnings.warn":
                if self._formats_device_value(node):
                    self.report("GC503", node, f"`{self.t(node)}` formats a device value{{where}}; it syncs at "
                                               "capture and logs once, not on replay")
                return
            if qual in _TIME_FUNCS:
                self.report("GC503", node, f"`{self.t(node)}` is a host side effect{{where}}; it runs at "
                                           "capture, not on replay")
                return
        elif attr is not None:
            receiver = node.func.value  # type: ignore[attr-defined]
            if attr == "initial_seed" or (attr in _GEN_METHODS and self._is_generator(receiver)):
                self.report("GC502", node, f"`{self.t(node)}` reads or sets the RNG seed or state{{where}}")
                return
            if attr in _LOG_METHODS and isinstance(receiver, ast.Name) and (
                    receiver.id in _LOGGER_NAMES or receiver.id in self.index.loggers):
                if self._formats_device_value(node):
                    self.report("GC503", node, f"`{self.t(node)}` formats a device value{{where}}; it syncs at "
                                               "capture and logs once, not on replay")
                return
        elif is_builtin(self.aliases, node.func, ("print",)):
            if self._formats_device_value(node):
                self.report("GC503", node, f"`{self.t(node)}` prints a device value{{where}}; it syncs at capture "
                                           "and prints once, not on replay")
            return
        for kw in node.keywords:
            if kw.arg == "generator" and self._is_cpu_generator(kw.value):
                self.report("GC501", node, f"`{self.t(node)}` draws from CPU generator `{self.t(kw.value)}`"
                                           "{where}; the draw is baked into the graph")
                return

    def _draw_reaches_device(self, draw: ast.Call) -> bool:
        """Can a host RNG draw reach device work (a launch, a tensor, a caller)? Not when every use of it
        is a sleep, a log or print, arithmetic or a comparison (retry jitter, sampling a config)."""
        parents: dict[int, ast.AST] = {}
        nodes = self.info.own_nodes()
        for node in nodes:
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
        shuffles = isinstance(draw.func, ast.Attribute) and draw.func.attr == "shuffle"
        tainted: set[str] = {a.id for a in draw.args if isinstance(a, ast.Name)} if shuffles else set()
        pending: list[ast.AST] = [draw]
        seen: set[int] = set()
        while pending:
            node = pending.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            parent = parents.get(id(node))
            while parent is not None and isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp,
                                                             ast.IfExp, ast.FormattedValue, ast.JoinedStr)):
                node, parent = parent, parents.get(id(parent))
            if parent is None:
                return True
            if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
                for target in targets:
                    if not isinstance(target, ast.Name):
                        return True  # stored on an object or in a container: anyone may use it
                    tainted.add(target.id)
            elif parent is draw:
                continue
            elif isinstance(parent, ast.Subscript) and node is parent.value:
                pending.append(parent)  # `torch.randint(0, n, (1,))[0]`: still the host draw
                continue
            elif (isinstance(parent, ast.Attribute) and parent.attr in ("item", "tolist")
                  and isinstance(parents.get(id(parent)), ast.Call)):
                pending.append(parents[id(parent)])  # `.item()` of a host draw: the same value, on the host
                continue
            elif isinstance(parent, ast.Call) and node is not parent.func:
                qual = self.aliases.resolve(parent.func) or ""
                attr = parent.func.attr if isinstance(parent.func, ast.Attribute) else ""
                harmless = (qual in _TIME_FUNCS or qual == "warnings.warn" or qual.startswith("logging.")
                            or attr in _LOG_METHODS or is_builtin(self.aliases, parent.func, _HOST_ONLY_BUILTINS))
                if not harmless:
                    return True
            elif isinstance(parent, (ast.If, ast.While, ast.Assert, ast.Expr)):
                pass
            else:
                return True
            for other in nodes:
                if isinstance(other, ast.Name) and other.id in tainted and isinstance(other.ctx, ast.Load):
                    pending.append(other)
        return False

    def _formats_device_value(self, node: ast.Call) -> bool:
        """A log/print call whose arguments (or f-string parts) hold a device tensor."""
        for arg in [*node.args, *(kw.value for kw in node.keywords)]:
            parts = [v.value for v in arg.values if isinstance(v, ast.FormattedValue)] if isinstance(
                arg, ast.JoinedStr) else [arg]
            if any(self.facts.tensorish(p) for p in parts):
                return True
        return False

    def _is_generator(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return self.facts.has(node.id, "cpugen") or "gen" in node.id.lower()
        if isinstance(node, ast.Attribute):
            return "gen" in node.attr.lower()
        return isinstance(node, ast.Call) and (self.aliases.resolve(node.func) or "").endswith("Generator")

    def _is_cpu_generator(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return self.facts.has(node.id, "cpugen")
        return isinstance(node, ast.Call) and "cpugen" in self.facts.classify(node)
