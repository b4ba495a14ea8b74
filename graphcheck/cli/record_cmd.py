"""``graphcheck record [--out MAP] -- COMMAND...``: record what a program captures."""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

from graphcheck.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE

DESCRIPTION = """\
Run COMMAND (usually `python my_engine.py ...`) and record every CUDA-graph
capture it makes: the Python functions and lines that run under capture, every
Triton launch (grid, scalars, constexprs, stream), each graph's nodes, and each
capture failure with the op and line behind it. Captures of the same graph at
different sizes are compared for launch arguments baked from host values
(GC401-GC403). The capture map is written to --out; `graphcheck coverage`,
`graphcheck lint --capture-map`, `audit --capture-map` and `ci --capture-map`
read it. The program is not changed: a failed capture is recorded and the
program sees the same exception as without graphcheck.
"""

EPILOG = """\
exit codes:
  the program's exit code when it is not 0; otherwise
  0  no finding at or above --fail-on
  1  findings at or above --fail-on
  2  usage error, or no capture map could be written

examples:
  graphcheck record -- python examples/engine/run.py
  graphcheck record --out map.json -- python -m my_engine.serve --batch-sizes 1 2 4
"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("record", help="record what a program captures in CUDA graphs (a capture map)",
                              description=DESCRIPTION, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", "-o", default="capture-map.json", metavar="FILE",
                   help="where to write the capture map (default: capture-map.json)")
    p.add_argument("--root", metavar="DIR", default=None,
                   help="paths in the map are relative to DIR (default: the current directory)")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="how to print the findings after the run (text, or the JSON findings array)")
    p.add_argument("--fail-on", choices=("error", "warning", "info", "never"), default="warning",
                   help="lowest severity that makes the exit code 1 (default: warning)")
    p.add_argument("program", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                   help="the program to run, after --")
    p.set_defaults(run=run)


def _bootstrap_dir() -> str:
    from graphcheck.record.child import SITECUSTOMIZE

    folder = tempfile.mkdtemp(prefix="graphcheck-record-")
    with open(os.path.join(folder, "sitecustomize.py"), "w", encoding="utf-8") as fh:
        fh.write(SITECUSTOMIZE)
    return folder


def run(args: argparse.Namespace) -> int:
    from graphcheck.findings import Finding, at_or_above
    from graphcheck.record import capture_map
    from graphcheck.record.child import ENV_DIR, ENV_ROOT
    from graphcheck.record.coverage import summary_line
    from graphcheck.report import render

    command = list(args.program)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("graphcheck record: error: give the program to run after --, e.g. "
              "graphcheck record -- python my_engine.py", file=sys.stderr)
        return EXIT_USAGE
    boot = _bootstrap_dir()
    parts = tempfile.mkdtemp(prefix="graphcheck-record-parts-")
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (boot, package_parent, env.get("PYTHONPATH", "")) if p)
    env[ENV_DIR] = parts
    env[ENV_ROOT] = os.path.abspath(args.root or os.getcwd())
    try:
        try:
            code = subprocess.call(command, env=env)
        except OSError as exc:
            print(f"graphcheck record: error: cannot run {command[0]}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_USAGE
        maps = []
        for part in sorted(glob.glob(os.path.join(parts, "part-*.json"))):
            try:
                with open(part, encoding="utf-8") as fh:
                    maps.append(json.load(fh))
            except (OSError, json.JSONDecodeError) as exc:
                print(f"graphcheck record: skipped an unreadable part {part}: {exc}", file=sys.stderr)
        if not maps:
            from graphcheck.record.session import Session

            empty = Session(root=env[ENV_ROOT], command=command)
            maps = [capture_map.build(empty)]
            print("graphcheck record: the program made no CUDA-graph capture", file=sys.stderr)
        data = capture_map.merge(maps, command=command)
        try:
            capture_map.write(data, args.out)
        except OSError as exc:
            print(f"graphcheck record: error: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_USAGE
    finally:
        shutil.rmtree(boot, ignore_errors=True)
        shutil.rmtree(parts, ignore_errors=True)
    findings = [Finding.from_dict(d) for d in data["findings"]]
    if args.format == "json":
        sys.stdout.write(render(findings, "json"))
    elif findings:
        sys.stdout.write(render(findings, "text"))
    print(f"graphcheck record: {summary_line(data)}; capture map written to {args.out}", file=sys.stderr)
    if code != 0:
        print(f"graphcheck record: the program exited with code {code}", file=sys.stderr)
        return code
    if args.fail_on != "never" and at_or_above(findings, args.fail_on):
        return EXIT_FINDINGS
    return EXIT_OK
