"""Lint scope from a capture map: exactly the functions a recorded run captured.

``graphcheck lint --capture-map map.json [PATH...]`` lints the tree that holds
the map's files (the top package folder of each, or its folder outside a
package), with every recorded function given to the static layer as a capture
root (:class:`graphcheck.lint.project.ExtraRoot`), and keeps a finding only
when it lies in

* a recorded function (one that ran under capture; for the function holding
  the ``with torch.cuda.graph(...)`` block, only on the lines that ran under
  capture), marked ``capture_map: recorded``; or
* a function that a recorded function calls, directly or through other calls,
  in any module of the linted tree, that the run did not reach, marked
  ``capture_map: not-reached`` with the recorded function it is reached from
  and the call chain: code the capture region can run on other inputs.

Every other finding is dropped: the map says that code never ran under capture,
and nothing that ran under capture calls it. The call graph is the static
layer's project index (imports resolved across the tree, read with ``ast``;
nothing is imported or run). ``PATH`` limits the findings to files under it;
the tree read for calls stays the whole one.
"""

from __future__ import annotations

import dataclasses
import os
from collections import deque
from collections.abc import Sequence
from typing import Any

from graphcheck.findings import Finding
from graphcheck.record.capture_map import CaptureMap

RECORDED_REASON = "was recorded running under capture"


@dataclasses.dataclass
class Reached:
    """A function the run did not reach but a recorded one calls."""

    origin: str  # the recorded function it is reached from, as shown (qualname in its own module)
    chain: list[str]  # shown names, the recorded function first, this one last


@dataclasses.dataclass
class FileScope:
    recorded: dict[str, dict[str, Any]]  # qualname -> map function entry
    not_reached: dict[str, Reached] = dataclasses.field(default_factory=dict)  # qualname -> how it is reached


def package_root(path: str) -> str:
    """The folder to lint for the recorded file ``path``: its top package, or its folder."""
    folder = os.path.dirname(path)
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        return folder
    while True:
        parent = os.path.dirname(folder)
        if parent == folder or not os.path.isfile(os.path.join(parent, "__init__.py")):
            return folder
        folder = parent


def _outermost(paths: Sequence[str]) -> list[str]:
    """``paths`` without those inside another one."""
    out: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(path == o or path.startswith(o.rstrip(os.sep) + os.sep) for o in out):
            out.append(path)
    return sorted(out)


def _under(path: str, roots: Sequence[str]) -> bool:
    return not roots or any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


class MapScope:
    """Which lint findings a capture map keeps, and how they are marked."""

    def __init__(self, cmap: CaptureMap) -> None:
        self.cmap = cmap
        self.files: dict[str, FileScope] = {}
        for path, fns in cmap.functions_by_file().items():
            if not path.endswith(".py") or not os.path.isfile(path):
                continue
            self.files[os.path.realpath(path)] = FileScope({fn["qualname"]: fn for fn in fns})

    def tree(self, within: Sequence[str] = ()) -> list[str]:
        """What to lint: the package folders of the map's files, and ``within``."""
        return _outermost([package_root(p) for p in self.files] + [os.path.realpath(p) for p in within])

    def extra_roots(self) -> list[Any]:
        from graphcheck.lint.project import ExtraRoot

        return [ExtraRoot(path, qualname, reason=RECORDED_REASON)
                for path, scope in sorted(self.files.items()) for qualname in sorted(scope.recorded)]

    def follow_calls(self, index: Any) -> None:
        """Fill ``not_reached``: what the recorded functions call, through the project index's call graph."""
        by_path = {os.path.realpath(p): p for p in index.names}
        starts = []
        for path, scope in self.files.items():
            module = index.names.get(by_path.get(path, ""), (None,))[0]
            for qualname in scope.recorded:
                if module and f"{module}.{qualname}" in index.funcs:
                    starts.append(f"{module}.{qualname}")
        parent: dict[str, str | None] = dict.fromkeys(starts)
        queue = deque(starts)
        while queue:
            dotted = queue.popleft()
            for target in _callees(index, dotted):
                if target not in parent and target not in index.kernels:
                    parent[target] = dotted
                    queue.append(target)
        recorded = set(starts)
        for dotted, up in parent.items():
            if up is None or dotted in recorded:
                continue
            module, qualname, _ = index.funcs[dotted]
            path = os.path.realpath(index.by_module.get(module, ""))
            if path not in by_path:
                continue
            chain = [dotted]
            while parent.get(chain[-1]) is not None:
                chain.append(parent[chain[-1]])  # type: ignore[arg-type]
            chain.reverse()

            def show(d: str, module: str = module) -> str:
                mod, qual, _ = index.funcs[d]
                return qual if mod == module else f"{mod}.{qual}"

            scope = self.files.setdefault(path, FileScope({}))
            scope.not_reached[qualname] = Reached(show(chain[0]), [show(d) for d in chain])

    def keep(self, finding: Finding) -> Finding | None:
        """The finding marked with its place in the capture region, or None when outside it."""
        scope = self.files.get(os.path.realpath(finding.path))
        if scope is None or not finding.function:
            return None
        fn = scope.recorded.get(finding.function)
        if fn is not None:
            if fn.get("site") and finding.line not in fn["lines"]:
                return None
            n = len(fn["captures"])
            return dataclasses.replace(
                finding, message=f"{finding.message} [ran under capture in {n} recorded capture(s)]",
                evidence={**finding.evidence, "capture_map": "recorded", "captures": n})
        reached = scope.not_reached.get(finding.function)
        if reached is not None:
            shown = len(reached.chain) <= 2 or "reachable via" in finding.message  # the static layer's chain
            via = "" if shown else f" via {' -> '.join(reached.chain)}"
            return dataclasses.replace(
                finding, message=f"{finding.message} [not reached by the recorded run: called from "
                                 f"`{reached.origin}`{via}, which ran under capture]",
                evidence={**finding.evidence, "capture_map": "not-reached", "called_from": reached.origin,
                          "call_chain": reached.chain})
        return None

    def filter(self, findings: Sequence[Finding], within: Sequence[str] = ()) -> list[Finding]:
        roots = [os.path.realpath(p) for p in within]
        kept = []
        for f in findings:
            if not _under(os.path.realpath(f.path), roots):
                continue
            if f.layer != "static" or f.code.startswith("GC0"):
                kept.append(f)  # tool findings (unreadable file, ...) are about the file, not a function
                continue
            marked = self.keep(f)
            if marked is not None:
                kept.append(marked)
        return kept


def _callees(index: Any, dotted: str) -> list[str]:
    """Functions ``dotted`` calls or defines inside itself, resolved across the tree (as the static layer's walk)."""
    out = list(index.children.get(dotted, ()))
    for callee in index.funcs[dotted][2].get("calls", ()):
        found = index.resolve(callee)
        if found is None:
            continue
        kind, target = found
        if kind == "class":
            found = index.resolve(f"{target}.__init__")
            if found is None:
                continue
            kind, target = found
        if kind == "func":
            out.append(target)
    return out


def lint_with_map(cmap: CaptureMap, paths: Sequence[str], config: Any, **lint_options: Any) -> Any:
    """``lint_paths`` over the tree of the map's files, scoped by the map (findings under ``paths`` when given).

    ``lint_options`` go to :func:`graphcheck.lint.engine.lint_paths` (jobs, use_cache, ...)."""
    from graphcheck.lint import cache as cache_mod
    from graphcheck.lint import files as files_mod
    from graphcheck.lint.engine import LintResult, lint_paths
    from graphcheck.lint.project import ProjectIndex

    scope = MapScope(cmap)
    if not scope.files:
        return LintResult(findings=[], files_checked=0, lines=0, from_cache=0), scope
    # the map says what ran: nothing of it is left out as tests, examples or vendor code
    config = dataclasses.replace(config, all_functions=True, exclude=(), default_exclude=(), vendor_exclude=(),
                                 third_party=())
    tree = [_shown(p) for p in scope.tree(paths)]
    roots = scope.extra_roots()
    result = lint_paths(tree, config, extra_roots=roots, **lint_options)
    python = [sf.path for sf in files_mod.discover(tree, config).files if sf.language == "python"]
    use_cache = lint_options.get("use_cache", True)
    index = ProjectIndex(python, registrars=config.custom_op_registrars, entry_points=config.entry_points,
                         extra_roots=roots, jobs=lint_options.get("jobs") or 1, max_file_size=config.max_file_size,
                         cache_dir=cache_mod.cache_dir(config.root) if use_cache else None,
                         trust_stat=lint_options.get("trust_stat", True))
    scope.follow_calls(index)
    result.findings = scope.filter(result.findings, paths)
    return result, scope


def _shown(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def recorded_findings(cmap: CaptureMap, paths: Sequence[str] = ()) -> list[Finding]:
    """The findings the recorded run itself produced (capture layer), under ``paths`` when given."""
    roots = [os.path.realpath(p) for p in paths]
    out = []
    for f in cmap.findings():
        real = os.path.realpath(f.path)
        if roots and not any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots):
            continue
        out.append(dataclasses.replace(f, path=_shown(f.path)))
    return out


def audit_lint(cmap: CaptureMap, paths: Sequence[str], config: Any, **lint_options: Any) -> Any:
    """What ``audit`` / ``ci`` lint with ``--capture-map``: the map-scoped static findings under
    ``paths`` plus the findings the recorded run made there."""
    result, _ = lint_with_map(cmap, paths, config, **lint_options)
    result.findings = sorted(result.findings + recorded_findings(cmap, paths), key=Finding.sort_key)
    return result
