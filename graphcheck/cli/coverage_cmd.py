"""``graphcheck coverage MAP``: which files and functions run under capture."""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from graphcheck.cli import EXIT_OK, EXIT_USAGE, emit


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "coverage", help="show which files, functions and kernels a recorded run captured",
        description="Read a capture map written by `graphcheck record` and show the files and functions that "
                    "ran under CUDA-graph capture (with the lines hit), the kernels launched, and each capture.")
    p.add_argument("map", metavar="MAP", help="a capture map (JSON) from `graphcheck record`")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text (rich on a terminal, plain otherwise) or json")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from graphcheck.record.capture_map import CaptureMap
    from graphcheck.record.coverage import render, summary_line
    from graphcheck.record.schema import MapError

    try:
        cmap = CaptureMap.load(args.map)
    except MapError as exc:
        print(f"graphcheck coverage: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    to_terminal = args.output is None and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    width = shutil.get_terminal_size().columns if to_terminal else None
    text = render(cmap.data, args.format, color=to_terminal and args.format == "text", width=width)
    if not emit(text, args.output, "graphcheck coverage", summary_line(cmap.data)):
        return EXIT_USAGE
    return EXIT_OK
