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
import importlib.util
import os
import time
from pathlib import Path
from typing import Callable, Sequence

from graphcheck.findings import Finding, at_or_above
from graphcheck.layers import GPU_CHOICES, GpuMode, cuda_available  # noqa: F401  (GPU_CHOICES: re-exported)

CASE_MARKERS = ("GRAPHCHECK_CASES", "graphcheck_cases")
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules", "build", "dist",
                        ".tox", ".nox", ".eggs", ".graphcheck_cache", ".pytest_cache", "site-packages"})


class TargetError(Exception):
    """A target that is neither an importable module, nor a file, nor a directory."""


@dataclasses.dataclass
class Target:
    """What one command-line target stands for."""

    given: str
    lint_paths: list[str]
    #: things :func:`graphcheck.discovery.discover` accepts: module names or file paths
    case_sources: list[str]


@dataclasses.dataclass
class CaseResult:
    source: str  # "<module or file>::<case name>"
    name: str
    report: object  # graphcheck.api.Report (typed loosely: importing api is lazy)
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
        out = list(self.lint_findings) + list(self.discovery_findings) + list(self.expectation_findings)
        for case in self.cases:
            out += case.report.findings
        return out

    def failed(self, fail_on: str) -> bool:
        return fail_on != "never" and bool(at_or_above(self.findings, fail_on))


# --- what a target means ---------------------------------------------------------------


def declares_cases(path: "str | os.PathLike[str]") -> bool:
    """Whether a Python file mentions a case declaration (a text check; nothing is imported)."""
    from graphcheck.lint.files import read_regular

    try:  # a FIFO or device named *.py is not a module; reading it could block forever
        text = read_regular(os.fspath(path)).decode("utf-8", errors="replace")
    except OSError:
        return False
    return any(marker in text for marker in CASE_MARKERS)


def _python_files(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if d not in _SKIP_DIRS and not d.startswith(".")
                             and not os.path.exists(os.path.join(dirpath, d, "pyvenv.cfg")))
        out += [Path(dirpath) / n for n in sorted(filenames) if n.endswith(".py")]
    return out


def _package_dir_map(root: Path) -> dict[str, Path]:
    """``[tool.setuptools.package-dir]`` of the pyproject.toml in ``root`` (package name -> folder)."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return {}
    try:
        from graphcheck.config import tomllib

        with open(pyproject, "rb") as fh:
            data = tomllib.load(fh)
        mapping = data.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    except Exception:
        return {}
    return {name: (root / folder).resolve() for name, folder in mapping.items() if isinstance(folder, str)}


def _origin_is(name: str, path: Path) -> bool:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        return False
    return bool(spec and spec.origin) and os.path.realpath(spec.origin) == os.path.realpath(path)


def module_name_for_file(path: "str | os.PathLike[str]") -> str | None:
    """The dotted name that imports ``path``, when it lies in an importable package.

    Files inside a package (a folder with ``__init__.py``) must be imported by
    name so that their relative imports work. The name is found from the chain
    of ``__init__.py`` folders, or from a ``[tool.setuptools.package-dir]``
    mapping in a ``pyproject.toml`` above the file, and kept only when importing
    it would load this very file. None for a standalone file.
    """
    path = Path(path).resolve()
    if not (path.parent / "__init__.py").is_file():
        return None
    parts = [] if path.name == "__init__.py" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    candidates = [".".join(parts)]
    for root in (path.parent, *path.parents):
        for package, mapped in _package_dir_map(root).items():
            try:
                rest = path.relative_to(mapped)
            except ValueError:
                continue
            tail = list(rest.with_suffix("").parts)
            if tail and tail[-1] == "__init__":
                tail.pop()
            candidates.insert(0, ".".join([p for p in package.split(".") if p] + tail))
        if (root / "pyproject.toml").is_file():
            break
    for name in candidates:
        if name and _origin_is(name, path):
            return name
    return None


def _case_source_for_file(path: Path) -> str:
    return module_name_for_file(path) or str(path)


def resolve_target(given: str) -> Target:
    """Turn a command-line target into files to lint and sources of cases."""
    path = Path(given)
    if path.is_dir():
        files = [p for p in _python_files(path) if declares_cases(p)]
        return Target(given, [given], [_case_source_for_file(p) for p in files])
    if path.is_file():
        sources = [_case_source_for_file(path)] if path.suffix == ".py" and declares_cases(path) else []
        return Target(given, [given], sources)
    if os.path.lexists(path) and os.path.exists(path):  # a FIFO or device: lint reports it (GC002)
        return Target(given, [given], [])
    if given.endswith(".py") or os.sep in given or "/" in given:
        raise TargetError(f"{given}: no such file or directory")
    try:
        spec = importlib.util.find_spec(given)
    except (ImportError, ValueError) as exc:
        raise TargetError(f"{given}: cannot find module ({type(exc).__name__}: {exc})") from None
    if spec is None:
        raise TargetError(f"{given}: not a file, a directory or an importable module")
    if spec.submodule_search_locations:
        lint, sources = [], []
        for location in spec.submodule_search_locations:
            base = Path(location)
            lint.append(_display(base))
            for p in _python_files(base):
                if not declares_cases(p):
                    continue
                rel = p.relative_to(base).with_suffix("").parts
                if rel and rel[-1] == "__init__":
                    rel = rel[:-1]
                sources.append(".".join((given, *rel)))
        return Target(given, lint, sources)
    if not spec.origin or not os.path.isfile(spec.origin):
        raise TargetError(f"{given}: module has no source file to check")
    sources = [given] if declares_cases(spec.origin) else []
    return Target(given, [_display(Path(spec.origin))], sources)


def _display(path: Path) -> str:
    """Relative to the working directory when under it (reports read better)."""
    try:
        if Path(path).resolve().is_relative_to(Path.cwd().resolve()):
            return os.path.relpath(path).replace(os.sep, "/")
    except (ValueError, OSError):
        pass
    return str(path)


# --- running --------------------------------------------------------------------------


def check_gpu_mode(gpu: "str | GpuMode") -> GpuMode:
    """The :class:`GpuMode` named by ``gpu``; raises RuntimeError for ``required`` without CUDA."""
    mode = GpuMode.parse(gpu)
    if mode is GpuMode.REQUIRED and not cuda_available():
        raise RuntimeError("--gpu required, but no CUDA device is available")
    return mode


ProgressFn = Callable[[str, int, int], None]


def run_cases(sources: Sequence[str], gpu: str = "auto", examples: int = 4, timeout: float = 120.0,
              progress: ProgressFn | None = None) -> tuple[list[CaseResult], list[Finding]]:
    """Discover the cases of each source and check every one.

    A module that fails to import, or a broken declaration, becomes a finding
    (GC004 / GC005); a case that raises becomes GC004 in its report.
    """
    from graphcheck.api import check
    from graphcheck.discovery import discover

    mode = check_gpu_mode(gpu)
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
    from graphcheck.expectations import mark_expected

    return results, mark_expected(_relative(f) for f in problems)


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
          lint: bool = True, progress: ProgressFn | None = None) -> AuditResult:
    """Lint and run the cases of every target. Raises :class:`TargetError` for a bad target."""
    from graphcheck.lint.engine import lint_paths

    started = time.perf_counter()
    resolved = [resolve_target(t) for t in targets]
    check_gpu_mode(gpu)  # fail before the lint when --gpu required cannot be met
    result = AuditResult(resolved, [], [], [])
    if lint:
        paths = list(dict.fromkeys(p for t in resolved for p in t.lint_paths))
        if paths:
            from graphcheck import config as config_mod

            cfg = config if config is not None else config_mod.discover(paths[0])
            linted = lint_paths(paths, cfg)
            result.lint_findings = linted.findings
            result.files_checked, result.lines = linted.files_checked, linted.lines
    sources = list(dict.fromkeys(s for t in resolved for s in t.case_sources))
    result.cases, result.discovery_findings = run_cases(sources, gpu=gpu, examples=examples, timeout=timeout,
                                                        progress=progress)
    verify_expectations(result)
    result.seconds = time.perf_counter() - started
    return result
