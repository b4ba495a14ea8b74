"""Lint scope from a capture map: exactly the functions a recorded run captured.

``graphcheck lint --capture-map map.json`` lints the files the map names with
every function checked, then keeps a finding only when it lies in

* a recorded function (one that ran under capture; for the function holding
  the ``with torch.cuda.graph(...)`` block, only on the lines that ran under
  capture), marked ``capture_map: recorded``; or
* a function a recorded function calls (directly or through other such calls,
  in the same module) that the run did not reach, marked ``capture_map:
  not-reached`` with the recorded caller: code the capture region can run on
  other inputs.

Every other finding is dropped: the map says that code never ran under capture.
The call graph is the static layer's per-module index
(:class:`graphcheck.lint.scope.ModuleIndex`), read with ``ast``; nothing is
imported or run.
"""

from __future__ import annotations

import ast
import dataclasses
import os
from collections import deque
from collections.abc import Sequence
from typing import Any

from graphcheck.findings import Finding
from graphcheck.record.capture_map import CaptureMap


@dataclasses.dataclass
class FileScope:
    recorded: dict[str, dict[str, Any]]  # qualname -> map function entry
    not_reached: dict[str, str]  # qualname -> the recorded function it is called from


def _not_reached(path: str, recorded: dict[str, dict[str, Any]]) -> dict[str, str]:
    from graphcheck.lint.scope import ModuleIndex

    try:
        with open(path, "rb") as fh:
            source = fh.read().decode("utf-8", errors="replace")
        index = ModuleIndex(ast.parse(source, filename=path), source)
    except (OSError, SyntaxError, ValueError, RecursionError):
        return {}
    by_name = {info.qualname: info for info in index.functions}
    found: dict[str, str] = {}
    queue = deque((by_name[q], q) for q in recorded if q in by_name)
    while queue:
        info, origin = queue.popleft()
        for callee in list(index.callees(info)) + list(info.children):
            q = callee.qualname
            if callee.is_kernel or q in recorded or q in found:
                continue
            found[q] = origin
            queue.append((callee, origin))
    return found


class MapScope:
    """Which lint findings a capture map keeps, and how they are marked."""

    def __init__(self, cmap: CaptureMap) -> None:
        self.cmap = cmap
        self.files: dict[str, FileScope] = {}
        for path, fns in cmap.functions_by_file().items():
            if not path.endswith(".py") or not os.path.isfile(path):
                continue
            recorded = {fn["qualname"]: fn for fn in fns}
            self.files[os.path.realpath(path)] = FileScope(recorded, _not_reached(path, recorded))

    def paths(self, within: Sequence[str] = ()) -> list[str]:
        """The map's Python files, limited to those under ``within`` when given."""
        roots = [os.path.realpath(p) for p in within]
        out = []
        for path in sorted(self.files):
            if not roots or any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots):
                out.append(path)
        return out

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
        caller = scope.not_reached.get(finding.function)
        if caller is not None:
            return dataclasses.replace(
                finding, message=f"{finding.message} [called from `{caller}`, which ran under capture; "
                                 "not reached by the recorded run]",
                evidence={**finding.evidence, "capture_map": "not-reached", "called_from": caller})
        return None

    def filter(self, findings: Sequence[Finding]) -> list[Finding]:
        kept = []
        for f in findings:
            if f.layer != "static" or f.code.startswith("GC0"):
                kept.append(f)  # tool findings (unreadable file, ...) are about the file, not a function
                continue
            marked = self.keep(f)
            if marked is not None:
                kept.append(marked)
        return kept


def lint_with_map(cmap: CaptureMap, paths: Sequence[str], config: Any, **lint_options: Any) -> Any:
    """``lint_paths`` over the map's files (under ``paths`` when given), scoped by the map.

    ``lint_options`` go to :func:`graphcheck.lint.engine.lint_paths` (jobs, use_cache, ...)."""
    from graphcheck.lint.engine import LintResult, lint_paths

    scope = MapScope(cmap)
    files = scope.paths(paths)
    if not files:
        return LintResult(findings=[], files_checked=0, lines=0, from_cache=0), scope
    config = dataclasses.replace(config, all_functions=True, exclude=())
    result = lint_paths([_shown(f) for f in files], config, **lint_options)
    result.findings = scope.filter(result.findings)
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
