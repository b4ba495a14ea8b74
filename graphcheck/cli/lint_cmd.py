"""``graphcheck lint PATH...``: the static checks, over files and directories."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import Any

from graphcheck.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, emit, output_problem

DESCRIPTION = """\
Lint Python and CUDA C++ sources for CUDA-graph hazards without importing or
running them. Directories are searched recursively (.git, virtual environments,
build and cache folders are skipped). Settings come from [tool.graphcheck] in the
nearest pyproject.toml (or --config); command-line options override them.
"""

EPILOG = """\
exit codes:
  0  no finding at or above --fail-on
  1  findings at or above --fail-on (a finding on a line whose
     "# graphcheck: expect[CODE]" marker names its code is expected and never
     counts; a marker whose finding is missing is GC008)
  2  usage or configuration error (a path that does not exist, an unknown rule
     code, a bad config file)

scope ([tool.graphcheck] keys; docs/guide/lint.md):
  entry-points, custom-op-registrars  more capture roots
  eager-functions, harness-functions  code never captured: not checked (--all-functions checks it)
  uncaptured-functions                code engines run outside capture although a root reaches it
                                      (teardown, prefill and chunked paths, disaggregation KV
                                      transfer, *_torch references, model loading such as
                                      process_weights_after_loading): its errors are warnings that say why
  capture-guards, debug-flags         branches that do not run under capture
  default-exclude, vendor-exclude     paths not linted below a directory

examples:
  graphcheck lint src/ csrc/
  graphcheck lint --format sarif --output graphcheck.sarif .
  graphcheck lint --select GC1,GC201 --ignore GC503 ops.py
"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "lint", help="static checks on Python and CUDA C++ files", description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="files or directories to lint (with --capture-map: limits the map's files to these)")
    p.add_argument("--statistics", action="store_true",
                   help="print how many findings each rule has (most frequent first) instead of the findings")
    p.add_argument("--format", choices=("text", "concise", "json", "sarif", "github"), default="text",
                   help="report format: text (default; rich on a terminal, plain otherwise), concise (one line "
                        "per finding), json (an array of "
                        "findings), sarif (SARIF 2.1.0 for code scanning), github (workflow annotations)")
    p.add_argument("--output", "-o", metavar="FILE",
                   help="write the report to FILE instead of stdout (a one-line summary still goes to stderr)")
    p.add_argument("--select", metavar="CODES",
                   help="only these rules: comma-separated codes or prefixes (GC101,GC2); replaces config select")
    p.add_argument("--ignore", metavar="CODES",
                   help="skip these rules: comma-separated codes or prefixes; added to config ignore")
    p.add_argument("--config", metavar="FILE",
                   help="read settings from FILE (a pyproject.toml with [tool.graphcheck], or a graphcheck.toml "
                        "with the keys at top level) instead of searching for one")
    p.add_argument("--fail-on", choices=("error", "warning", "info", "never"), default=None,
                   help="lowest severity that makes the exit code 1 (default: warning, or config fail-on)")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings (same as --fail-on "
                                                            "never)")
    p.add_argument("--all-functions", action="store_true", default=None,
                   help="lint every Python function, not only capture-reachable ones")
    p.add_argument("--capture-map", metavar="MAP",
                   help="lint exactly the functions a `graphcheck record` run captured (plus what they call that "
                        "the run did not reach, marked as such); other code is out of scope")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the lint cache (in "
                                                           "$XDG_CACHE_HOME/graphcheck or "
                        "~/.cache/graphcheck, or $GRAPHCHECK_CACHE_DIR)")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="worker processes (default: the number of CPUs; 1 runs in-process)")
    p.set_defaults(run=run)


def scope_note(result, all_functions: bool) -> str:
    """How many functions the Python rules checked, and how many they skipped as not capture-reachable."""
    if all_functions:
        return "functions checked: all (--all-functions)"
    return (f"functions in capture scope: {result.functions_in_scope}; not capture-reachable, skipped: "
            f"{result.functions_skipped} (--all-functions, or entry-points in [tool.graphcheck])")


def capture_note(site: str, uncalled: str = "") -> str:
    """Whether the linted tree captures graphs itself: the errors of a tree that never does (a kernel library,
    research code run eagerly) are hazards for the engine that captures its ops, which the reader should know.
    ``uncalled``: the C++ capture the tree begins only in code nothing in it calls, named when there is one."""
    if site:
        return f"captures its own graphs: {site}"
    where = f" in code the tree calls; {uncalled}" if uncalled else ""
    return ("captures no graph itself (no `torch.cuda.graph`, `capture_begin`, `cudaStreamBeginCapture` or "
            f"`make_graphed_callables` outside tests and benchmarks{where}): errors are hazards for an engine that "
            "captures this code")


def run(args: argparse.Namespace) -> int:
    from graphcheck import config as config_mod
    from graphcheck.findings import at_or_above
    from graphcheck.lint.engine import lint_paths
    from graphcheck.record.schema import MapError
    from graphcheck.report import Summary, render
    from graphcheck.report.summary import one_line

    if not args.paths and not args.capture_map:
        print("graphcheck lint: error: give at least one PATH (or --capture-map MAP)", file=sys.stderr)
        return EXIT_USAGE
    try:
        problem = output_problem(args.output, args.paths)
        if problem:
            raise config_mod.ConfigError(problem)
        if any(not p for p in args.paths):
            raise config_mod.ConfigError("an empty path was given")
        if args.config:
            config = config_mod.load_file(args.config)
        else:
            config = config_mod.discover(args.paths[0] if args.paths else ".")
        overrides: dict[str, Any] = {}
        if args.select is not None:
            overrides["select"] = config_mod.parse_selectors(args.select, "--select")
        if args.ignore is not None:
            overrides["ignore"] = config.ignore + config_mod.parse_selectors(args.ignore, "--ignore")
        if args.all_functions:
            overrides["all_functions"] = True
        if args.fail_on:
            overrides["fail_on"] = args.fail_on
        config = config.with_overrides(**overrides)
        if args.jobs is not None and args.jobs < 1:
            raise config_mod.ConfigError("--jobs must be at least 1")
        if args.capture_map:
            from graphcheck.record.capture_map import CaptureMap
            from graphcheck.record.scope import lint_with_map

            result, _ = lint_with_map(CaptureMap.load(args.capture_map), args.paths, config, jobs=args.jobs,
                                      use_cache=not args.no_cache)
        else:
            result = lint_paths(args.paths, config, jobs=args.jobs, use_cache=not args.no_cache)
    except config_mod.ConfigError as exc:
        print(f"graphcheck lint: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except MapError as exc:
        print(f"graphcheck lint: error: {exc}", file=sys.stderr)
        return EXIT_USAGE

    summary = Summary(files_checked=result.files_checked, lines=result.lines, seconds=result.seconds,
                      from_cache=result.from_cache)
    if result.files_excluded:
        summary.notes.append(f"{result.files_excluded} files excluded (tests, benchmarks, examples, docs, non-CUDA "
                             "vendor backends, copies of other projects (third-party folders, vendored library "
                             "checkouts); `default-exclude`/`vendor-exclude`/`third-party` in [tool.graphcheck], or "
                             "name the path)")
    summary.notes.append(scope_note(result, config.all_functions))
    if result.capture_site is not None:
        summary.notes.append(capture_note(result.capture_site, result.uncalled_capture))
    for skipped in result.skipped:
        print(f"graphcheck lint: skipped {skipped}: not a Python or CUDA C++ file", file=sys.stderr)

    to_terminal = args.output is None and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    width = shutil.get_terminal_size().columns if to_terminal else None
    if args.statistics:
        from graphcheck.report.concise import render_statistics

        report = render_statistics(result.findings)
    else:
        report = render(result.findings, args.format, summary=summary,
                        color=to_terminal and args.format == "text", width=width)
    if not emit(report, args.output, "graphcheck lint", one_line(result.findings, summary)):
        return EXIT_USAGE

    fail_on = "never" if args.exit_zero else config.fail_on
    if fail_on != "never" and at_or_above(result.findings, fail_on):
        return EXIT_FINDINGS
    return EXIT_OK
