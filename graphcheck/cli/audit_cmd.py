"""``graphcheck audit TARGET...``: lint a kernel module and run every case it declares."""

from __future__ import annotations

import argparse
import os
import sys

from graphcheck.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, emit, output_problem, positive_seconds
from graphcheck.layers import GPU_CHOICES

DESCRIPTION = """\
Audit kernel modules: the static lint of their source, then every declared case
(GRAPHCHECK_CASES or graphcheck_cases()) through the GPU-free trace layer and,
where a CUDA device exists, the capture layer. A TARGET is a dotted module name
(a package means every module in it), a .py file, or a directory.
"""

EPILOG = """\
exit codes:
  0  no finding at or above --fail-on
  1  findings at or above --fail-on (expected findings, named by a
     "# graphcheck: expect[CODE]" marker on their line, never count; a marker
     whose finding is missing is GC008)
  2  usage or configuration error (a target that does not exist, --gpu required
     without a CUDA device)

examples:
  graphcheck audit graphcheck.kernels
  graphcheck audit my_pkg.ops.merge --format sarif --output audit.sarif
  graphcheck audit examples/hazards/item_in_wrapper.py --gpu off
"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "audit", help="lint a kernel module and run its declared cases", description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("targets", nargs="+", metavar="TARGET", help="module names, .py files or directories")
    p.add_argument("--gpu", choices=GPU_CHOICES, default="auto",
                   help="auto (default): the capture layer runs where CUDA exists and is skipped otherwise; "
                        "off: GPU-free layers only; required: exit 2 without a CUDA device")
    p.add_argument("--statistics", action="store_true",
                   help="print how many findings each rule has (most frequent first) instead of the findings")
    p.add_argument("--format", choices=("text", "concise", "json", "sarif", "github"), default="text",
                   help="report format: text (default), concise (one line per finding), json (findings and per-case "
                        "results), "
                        "sarif, github")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--fail-on", choices=("error", "warning", "info", "never"), default=None,
                   help="lowest severity that makes the exit code 1 (default: warning, or config fail-on)")
    p.add_argument("--examples", type=int, default=4, metavar="N",
                   help="input seeds per case whose launch plans are compared (default 4, at least 2)")
    p.add_argument("--timeout", type=positive_seconds, default=120.0, metavar="SECONDS",
                   help="per-case limit for the capture layer (default 120)")
    p.add_argument("--no-lint", action="store_true", help="run the declared cases only, without the static lint")
    p.add_argument("--config", metavar="FILE", help="read [tool.graphcheck] settings from FILE")
    p.add_argument("--capture-map", metavar="MAP",
                   help="lint only the functions a `graphcheck record` run captured, and add that run's findings")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from graphcheck import config as config_mod
    from graphcheck.audit import TargetError, audit
    from graphcheck.record.schema import MapError
    from graphcheck.report.audit_table import render_audit
    from graphcheck.report.summary import one_line

    if args.examples < 2:
        print("graphcheck audit: error: --examples must be at least 2", file=sys.stderr)
        return EXIT_USAGE
    problem = output_problem(args.output, args.targets)
    if any(not t for t in args.targets):
        problem = "an empty target was given"
    if problem:
        print(f"graphcheck audit: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    from graphcheck.targets import add_cwd_to_path

    add_cwd_to_path()  # `graphcheck audit my_pkg.ops` finds my_pkg in the working directory, as `python -m` would
    from graphcheck.cli.progress import AuditProgress, wanted

    progress = AuditProgress(wanted(args.format))
    try:
        config = config_mod.load_file(args.config) if args.config else None
        cmap = None
        if args.capture_map:
            from graphcheck.record.capture_map import CaptureMap

            cmap = CaptureMap.load(args.capture_map)
        result = audit(args.targets, gpu=args.gpu, examples=args.examples, config=config, timeout=args.timeout,
                       lint=not args.no_lint, progress=progress.cases, capture_map=cmap,
                       lint_progress=progress.lint)
    except (TargetError, config_mod.ConfigError, RuntimeError, MapError) as exc:
        print(f"graphcheck audit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        progress.close()

    fail_on = args.fail_on or (config.fail_on if config else None)
    if fail_on is None:
        paths = [p for t in result.targets for p in t.lint_paths]
        try:
            fail_on = config_mod.discover(paths[0] if paths else ".").fail_on
        except config_mod.ConfigError:
            fail_on = "warning"

    to_terminal = args.output is None and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    if args.statistics:
        from graphcheck.report.concise import render_statistics

        report = render_statistics(result.findings)
    else:
        report = render_audit(result, args.format, color=to_terminal and args.format == "text")
    if not emit(report, args.output, "graphcheck audit", f"{one_line(result.findings)}, {len(result.cases)} cases"):
        return EXIT_USAGE
    return EXIT_FINDINGS if result.failed(fail_on) else EXIT_OK
