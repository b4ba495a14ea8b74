"""The audit driver shared by ``graphcheck audit``, ``graphcheck ci`` and the pytest plugin.

An audit target is a dotted module name (a package stands for every module in
it), a ``.py`` file or a directory. Auditing one means: lint its source files
(never importing them), then import the modules that textually declare cases
(``GRAPHCHECK_CASES`` / ``graphcheck_cases``) and run each case through
:func:`graphcheck.check`. Nothing here re-implements a check. Findings expected
by ``# graphcheck: expect[...]`` markers do not fail an audit; markers the trace
or capture layer owed and did not meet are GC008 (:func:`verify_expectations`).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphcheck.findings import Finding, at_or_above
from graphcheck.layers import GPU_CHOICES, GpuMode, cuda_available  # noqa: F401  (GPU_CHOICES: re-exported)

# target resolution lives in graphcheck.targets; these names stay importable from here
from graphcheck.targets import (  # noqa: F401
    CASE_MARKERS,
    Target,
    TargetError,
    case_source_for_file,
    declares_cases,
    module_name_for_file,
)
from graphcheck.targets import display as _display
from graphcheck.targets import resolve as resolve_target

if TYPE_CHECKING:
    from graphcheck.api import Report


@dataclasses.dataclass
class CaseResult:
    source: str  # "<module or file>::<case name>"
    name: str
    report: Report  # imported for type checking only: importing api is lazy
    seconds: float = 0.0


@dataclasses.dataclass
class AuditResult:
    targets: list[Target]
    lint_findings: list[Finding]
    #: import failures and broken declarations (GC004 / GC005)
    discovery_findings: list[Finding]
    cases: list[CaseResult]
    files_checked: int = 0
    lines: int = 0
    seconds: float = 0.0
    #: GC008 from the dynamic layers: ``expect`` markers a layer that ran owed and did not meet
    expectation_findings: list[Finding] = dataclasses.field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        """Every finding, with a hazard the static layer and a dynamic layer both report on the same line
        (same code) shown once: see :func:`merge_layers`."""
        dynamic = [f for case in self.cases for f in case.report.findings]
        return merge_layers(list(self.lint_findings), dynamic) + list(self.discovery_findings) \
            + list(self.expectation_findings)

    def failed(self, fail_on: str) -> bool:
        return fail_on != "never" and bool(at_or_above(self.findings, fail_on))


def merge_layers(static: list[Finding], dynamic: list[Finding]) -> list[Finding]:
    """``static`` + ``dynamic``, where the dynamic findings with the code and line of a static finding are
    folded into it: one finding, at the static layer's exact column, whose ``evidence["layers"]`` names
    every layer that saw it (and ``evidence["cases"]`` the cases). It is expected only if all of them were.
    """
    keyed: dict[tuple[str, int, str], list[Finding]] = {}
    for f in dynamic:
        keyed.setdefault((os.path.normpath(f.path), f.line, f.code), []).append(f)
    out = []
    for f in static:
        seen = keyed.pop((os.path.normpath(f.path), f.line, f.code), None)
        if not seen:
            out.append(f)
            continue
        layers = [layer for layer in ("static", "trace", "capture") if layer == "static" or
                  any(d.layer == layer for d in seen)]
        cases = list(dict.fromkeys(d.case for d in seen if d.case))
        evidence = {**dict(f.evidence), "layers": layers}
        if cases:
            evidence["cases"] = cases
        out.append(dataclasses.replace(f, case=cases[0] if len(cases) == 1 else f.case, evidence=evidence,
                                       expected=f.expected and all(d.expected for d in seen)))
    return out + [f for group in keyed.values() for f in group]


# --- running --------------------------------------------------------------------------


def check_gpu_mode(gpu: str | GpuMode) -> GpuMode:
    """The :class:`GpuMode` named by ``gpu``; raises RuntimeError for ``required`` without CUDA."""
    mode = GpuMode.parse(gpu)
    if mode is GpuMode.REQUIRED and not cuda_available():
        raise RuntimeError("--gpu required, but no CUDA device is available")
    return mode


ProgressFn = Callable[[str, int, int], None]


def run_cases(sources: Sequence[str], gpu: str = "auto", examples: int = 4, timeout: float = 120.0,
              progress: ProgressFn | None = None, isolate: bool = True,
              workers: int | None = None, pool: Any = None) -> tuple[list[CaseResult], list[Finding]]:
    """Discover the cases of each source and check every one.

    A module that fails to import, or a broken declaration, becomes a finding
    (GC004 / GC005); a case that raises becomes GC004 in its report.
    ``isolate`` (the default) imports the modules and runs the cases in worker
    processes (:mod:`graphcheck.workers`), so a module or case that exits,
    crashes or hangs costs one finding (GC004, GC006, GC007), not the run;
    ``workers`` caps how many run at once; ``pool`` is a
    :class:`graphcheck.workers.pool.WorkerPool` already started (left open).
    """
    mode = check_gpu_mode(gpu)
    if sources:
        from graphcheck.extras import require_torch

        require_torch("running the declared cases")
    if isolate:
        from graphcheck.workers.run import run_sources

        runs, problems = run_sources(sources, gpu=mode, examples=examples, timeout=timeout, progress=progress,
                                     workers=workers, pool=pool)
        results = []
        for run in runs:
            run.report.findings = [_relative(f) for f in run.report.findings]
            results.append(CaseResult(run.source, run.name, run.report, run.seconds))
    else:
        results, problems = _run_in_process(sources, mode, examples, timeout, progress)
    from graphcheck.expectations import mark_expected

    return results, mark_expected(_relative(f) for f in problems)


def _run_in_process(sources: Sequence[str], mode: str, examples: int, timeout: float,
                    progress: ProgressFn | None) -> tuple[list[CaseResult], list[Finding]]:
    from graphcheck.api import check
    from graphcheck.discovery import discover

    declared = []
    problems: list[Finding] = []
    for source in sources:
        found = discover(source, interpret=None if mode is not GpuMode.OFF else True)
        declared += found.cases
        problems += found.findings
    results = []
    for i, (source, case) in enumerate(declared):
        if progress:
            progress(case.name, i, len(declared))
        started = time.perf_counter()
        report = check(case, gpu=mode, examples=examples, timeout=timeout)
        report.findings = [_relative(f) for f in report.findings]
        results.append(CaseResult(source, case.name, report, time.perf_counter() - started))
    if progress:
        progress("", len(declared), len(declared))
    return results, problems


def verify_expectations(result: AuditResult) -> list[Finding]:
    """GC008 for the ``expect`` markers of each case-declaring file that its trace or capture layer owed.

    A layer gives a verdict on a file only when it ran (passed or failed, not
    skipped) for every case the file declares. Stores and returns the findings.
    """
    from graphcheck.expectations import declaring_file, missing_dynamic

    by_file: dict[str, list[CaseResult]] = {}
    for case in result.cases:
        path = declaring_file(case.source)
        if path is not None:
            by_file.setdefault(os.path.realpath(path), []).append(case)
    ran = {}
    for path, cases in by_file.items():
        ran[path] = [layer for layer in ("trace", "capture")
                     if all(layer in c.report.layers and c.report.layers[layer].ran for c in cases)]
    findings = [f for c in result.cases for f in c.report.findings]
    result.expectation_findings = missing_dynamic(ran, findings, display=lambda p: _display(Path(p)))
    return result.expectation_findings


def _relative(finding: Finding) -> Finding:
    """The finding with its path relative to the working directory when under it, as lint shows paths."""
    if not os.path.isabs(finding.path):
        return finding
    shown = _display(Path(finding.path))
    return finding if shown == finding.path else dataclasses.replace(finding, path=shown)


def audit(targets: Sequence[str], *, gpu: str = "auto", examples: int = 4, config=None, timeout: float = 120.0,
          lint: bool = True, progress: ProgressFn | None = None, isolate: bool = True,
          workers: int | None = None, capture_map=None,
          lint_progress: Callable[[int, int], None] | None = None) -> AuditResult:
    """Lint and run the cases of every target. Raises :class:`TargetError` for a bad target.

    ``progress(case name, done, total)`` hears of each finished case and ``lint_progress(done, total)``
    of the files linted (not with ``capture_map``).

    With ``isolate`` (the default) the cases run in worker processes that start
    before the lint, so their start-up overlaps it.

    ``capture_map`` (a :class:`graphcheck.record.capture_map.CaptureMap`) scopes the lint to the
    functions the recorded run captured and adds the run's own findings (``graphcheck.record.scope``).
    """
    from graphcheck.lint.engine import lint_paths

    started = time.perf_counter()
    resolved = [resolve_target(t) for t in targets]
    check_gpu_mode(gpu)  # fail before the lint when --gpu required cannot be met
    result = AuditResult(resolved, [], [], [])
    sources = list(dict.fromkeys(s for t in resolved for s in t.case_sources))
    pool = None
    if isolate and sources:
        from graphcheck.workers.run import start_pool

        pool = start_pool(check_gpu_mode(gpu), len(sources), workers)
    try:
        if lint:
            paths = list(dict.fromkeys(p for t in resolved for p in t.lint_paths))
            if paths:
                from graphcheck import config as config_mod

                cfg = config if config is not None else config_mod.discover(paths[0])
                if capture_map is not None:
                    from graphcheck.record.scope import audit_lint

                    linted = audit_lint(capture_map, paths, cfg)
                else:
                    linted = lint_paths(paths, cfg, progress=lint_progress)
                result.lint_findings = linted.findings
                result.files_checked, result.lines = linted.files_checked, linted.lines
        result.cases, result.discovery_findings = run_cases(sources, gpu=gpu, examples=examples, timeout=timeout,
                                                            progress=progress, isolate=isolate, workers=workers,
                                                            pool=pool)
    finally:
        if pool is not None:
            pool.close(graceful=sys.exc_info()[0] is None)
    verify_expectations(result)
    result.seconds = time.perf_counter() - started
    return result
