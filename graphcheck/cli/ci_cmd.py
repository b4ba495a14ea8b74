"""``graphcheck ci --base REF``: the pull-request gate.

Lint the Python and CUDA C++ files changed since the merge base of REF and
HEAD (the working tree, so uncommitted edits count too), keep the findings on
changed lines, and audit the changed kernel modules that declare cases (their
case findings are all reported: a case checks the module as a whole).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

from graphcheck.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from graphcheck.layers import GPU_CHOICES

DESCRIPTION = """\
Check what a pull request changes. Files changed since the merge base of REF and
HEAD (including uncommitted and untracked files) are linted, and only findings
on added or modified lines are reported (--all-lines reports every finding in
the changed files). Changed Python files that declare cases (GRAPHCHECK_CASES or
graphcheck_cases()) are audited: their cases run through the GPU-free layer and,
where a CUDA device exists, the capture layer.

Under GitHub Actions (GITHUB_ACTIONS set) findings are also printed as workflow
annotations, and a short summary is appended to $GITHUB_STEP_SUMMARY when set.
"""

EPILOG = """\
exit codes:
  0  no new finding at or above --fail-on
  1  new findings
  2  usage error: REF missing (fetch it, or use fetch-depth: 0), not a git
     repository, bad configuration

examples:
  graphcheck ci --base origin/main
  graphcheck ci --base origin/main --sarif graphcheck.sarif
  graphcheck ci --base HEAD~1 --all-lines src/ops
"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ci", help="lint and audit what changed since a base ref (pull-request gate)", description=DESCRIPTION,
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", metavar="PATH", help="only consider changed files under these paths")
    p.add_argument("--base", required=True, metavar="REF", help="the branch or commit the change is compared with "
                   "(e.g. origin/main)")
    p.add_argument("--all-lines", action="store_true",
                   help="report every finding in the changed files, not only those on changed lines")
    p.add_argument("--sarif", metavar="FILE", help="also write the findings as SARIF 2.1.0 to FILE")
    p.add_argument("--statistics", action="store_true",
                   help="print how many findings each rule has (most frequent first) instead of the findings")
    p.add_argument("--format", choices=("text", "concise", "json", "github"), default="text",
                   help="what goes to stdout: text (default), json, github (annotations only)")
    p.add_argument("--gpu", choices=GPU_CHOICES, default="auto",
                   help="capture layer for audited cases: auto (where CUDA exists), off, required")
    p.add_argument("--no-audit", action="store_true", help="lint only; do not run the cases of changed modules")
    p.add_argument("--fail-on", choices=("error", "warning", "info", "never"), default=None,
                   help="lowest severity that makes the exit code 1 (default: warning, or config fail-on)")
    p.add_argument("--config", metavar="FILE", help="read [tool.graphcheck] settings from FILE")
    p.add_argument("--capture-map", metavar="MAP",
                   help="lint only the functions a `graphcheck record` run captured (of the changed files), and "
                        "add that run's findings on changed lines")
    p.set_defaults(run=run)


def _err(message: str) -> int:
    print(f"graphcheck ci: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _under(path: Path, roots: list[Path]) -> bool:
    return not roots or any(path == r or r in path.parents for r in roots)


# a file that could not be checked, or whose expect markers were not met, is reported wherever it points
_TOOL_CODES = ("GC001", "GC002", "GC003", "GC008")


def step_summary(findings, n_files: int, n_cases: int, base: str, sarif: str | None) -> str:
    """One markdown paragraph for ``$GITHUB_STEP_SUMMARY``."""
    from graphcheck.report.summary import counts_by_code

    expected = sum(1 for f in findings if f.expected)
    findings = [f for f in findings if not f.expected]
    if not findings:
        verdict = "**graphcheck: no new CUDA-graph hazards.**"
    else:
        codes = ", ".join(f"{code} ({name}) x{n}" for code, name, _, n in counts_by_code(findings))
        verdict = f"**graphcheck: {len(findings)} new finding{'s' if len(findings) != 1 else ''}**: {codes}."
    text = (f"{verdict} Checked {n_files} changed file{'s' if n_files != 1 else ''} since `{base[:12]}` and "
            f"{n_cases} declared case{'s' if n_cases != 1 else ''} of changed kernel modules.")
    if expected:
        text += (f" {expected} expected finding{'s' if expected != 1 else ''}"
                 " (`graphcheck: expect` markers) not counted.")
    if findings:
        text += " Each finding is annotated on its line"
        text += "; the SARIF report feeds code scanning." if sarif else "."
    return text + "\n\n"


def run(args: argparse.Namespace) -> int:
    from graphcheck import config as config_mod
    from graphcheck import gitdiff
    from graphcheck.audit import AuditResult, run_cases, verify_expectations
    from graphcheck.findings import at_or_above
    from graphcheck.lint.engine import lint_paths
    from graphcheck.lint.files import language_of
    from graphcheck.record.schema import MapError
    from graphcheck.report import render
    from graphcheck.report.audit_table import render_audit, to_dict
    from graphcheck.targets import Target, add_cwd_to_path, case_source_for_file, declares_cases

    add_cwd_to_path()  # kernel modules in the working directory import as they would under `python -m`

    started = time.perf_counter()
    try:
        changes = gitdiff.changes_since(args.base)
    except gitdiff.GitError as exc:
        return _err(str(exc))
    if changes.note:
        print(f"graphcheck ci: note: {changes.note}", file=sys.stderr)

    roots = []
    repo = Path(os.path.realpath(changes.root))
    for given in args.paths:
        if not given:
            return _err("an empty path was given")
        if not os.path.exists(given):
            return _err(f"{given}: no such file or directory")
        real = Path(os.path.realpath(given))
        if real != repo and repo not in real.parents:
            return _err(f"{given}: outside the repository ({changes.root}); nothing there can have changed")
        roots.append(real)
    changed: list[Path] = []
    for rel in sorted(changes.files):
        path = changes.root / rel
        if language_of(rel) and path.is_file() and _under(Path(os.path.realpath(path)), roots):
            changed.append(path)
    shown = [os.path.relpath(p) for p in changed]

    try:
        config = config_mod.load_file(args.config) if args.config else config_mod.discover(changes.root)
        if args.fail_on:
            config = config.with_overrides(fail_on=args.fail_on)
        if args.capture_map and shown:
            from graphcheck.record.capture_map import CaptureMap
            from graphcheck.record.scope import audit_lint

            linted = audit_lint(CaptureMap.load(args.capture_map), shown, config,
                                use_cache=_trusted_cache(changes.root), trust_stat=False)
        else:
            linted = lint_paths(shown, config, use_cache=_trusted_cache(changes.root),
                                trust_stat=False) if shown else None
    except (config_mod.ConfigError, MapError) as exc:
        return _err(str(exc))

    lint_findings = []
    for f in linted.findings if linted else []:
        if args.all_lines or f.code in _TOOL_CODES or changes.is_changed_line(f.path, f.line):
            lint_findings.append(f)

    kernel_files = [p for p in changed if p.suffix == ".py" and declares_cases(p)]
    result = AuditResult([Target(s, [s], []) for s in shown], lint_findings, [], [],
                         files_checked=linted.files_checked if linted else 0, lines=linted.lines if linted else 0)
    if kernel_files and not args.no_audit:
        try:
            # shown as audit shows them: relative to the working directory
            result.cases, result.discovery_findings = run_cases(
                [case_source_for_file(Path(os.path.relpath(p))) for p in kernel_files], gpu=args.gpu)
        except (RuntimeError, ValueError) as exc:
            return _err(str(exc))
        verify_expectations(result)
        for target in result.targets:
            if Path(target.given).resolve() in {p.resolve() for p in kernel_files}:
                target.case_sources = [target.given]
    findings = sorted(result.findings, key=lambda f: f.sort_key())
    result.seconds = time.perf_counter() - started

    if args.statistics:
        from graphcheck.report.concise import render_statistics

        sys.stdout.write(render_statistics(findings))
    elif args.format == "concise":
        sys.stdout.write(render_audit(result, "concise"))
    elif args.format == "json":
        data = to_dict(result)
        data["base"] = changes.base
        data["changed_files"] = shown
        from graphcheck.report import strict_json

        sys.stdout.write(strict_json.dumps(data, indent=2) + "\n")
    elif args.format == "github":
        sys.stdout.write(render(findings, "github"))
    else:
        to_terminal = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        print(f"graphcheck ci: {len(shown)} changed file{'s' if len(shown) != 1 else ''} to check since "
              f"{args.base} ({changes.base[:12]}){'' if args.all_lines else '; reporting changed lines only'}")
        # a changed file without cases is not a reason to teach case declaration here
        sys.stdout.write(render_audit(result, "text", color=to_terminal, declare_hint=False))
        if os.environ.get("GITHUB_ACTIONS"):
            sys.stdout.write(render(findings, "github"))
    sys.stdout.flush()

    if args.sarif:
        repo_relative = [dataclasses.replace(f, path=_repo_path(f.path, changes)) for f in findings]
        try:
            with open(args.sarif, "w", encoding="utf-8") as fh:
                fh.write(render(repo_relative, "sarif", srcroot=str(changes.root)))
        except OSError as exc:
            return _err(f"cannot write {args.sarif}: {exc.strerror or exc}")

    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        try:
            with open(summary_file, "a", encoding="utf-8") as fh:
                fh.write(step_summary(findings, len(shown), len(result.cases), changes.base, args.sarif))
        except OSError as exc:
            print(f"graphcheck ci: warning: cannot append to GITHUB_STEP_SUMMARY: {exc}", file=sys.stderr)

    fail_on = config.fail_on
    return EXIT_FINDINGS if fail_on != "never" and at_or_above(findings, fail_on) else EXIT_OK


def _trusted_cache(root: Path) -> bool:
    """Whether the lint cache may be used: never one inside the checked-out tree, which the change
    under review could have planted (``$GRAPHCHECK_CACHE_DIR`` pointing into the repository)."""
    from graphcheck.lint import cache as cache_mod

    directory = cache_mod.cache_dir(root)
    if directory is not None and cache_mod.is_inside(directory, root):
        print(f"graphcheck ci: note: not using the lint cache in {directory}: it is inside the repository",
              file=sys.stderr)
        return False
    return directory is not None


def _repo_path(path: str, changes) -> str:
    try:
        return changes.relative(path)
    except ValueError:
        return path
