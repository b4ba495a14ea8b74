"""The ``graphcheck`` command: one subcommand module per verb."""

from __future__ import annotations

import argparse
import importlib
import sys

# Each module defines ``add_parser(subparsers)`` and ``run(args) -> int``.
_COMMANDS = ("lint", "rules", "audit", "ci")

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 too; keep the message short
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def emit(report: str, output: "str | None", prog: str, written_note: str) -> bool:
    """Write ``report`` to ``output`` (then ``written_note`` to stderr) or to stdout.

    Returns False, after printing why, when the file cannot be written.
    """
    if output is None:
        sys.stdout.write(report)
        sys.stdout.flush()
        return True
    try:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(report)
    except OSError as exc:
        print(f"{prog}: error: cannot write {output}: {exc.strerror or exc}", file=sys.stderr)
        return False
    print(f"graphcheck: {written_note}; report written to {output}", file=sys.stderr)
    return True


def build_parser() -> argparse.ArgumentParser:
    from graphcheck import __version__

    parser = _Parser(
        prog="graphcheck",
        description="CUDA-graph safety checks for GPU kernel wrappers: static lint, "
        "GPU-free tracing, and capture checks on a GPU.",
    )
    parser.add_argument("--version", action="version", version=f"graphcheck {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in _COMMANDS:
        try:
            module = importlib.import_module(f"graphcheck.cli.{name}_cmd")
        except ModuleNotFoundError as exc:  # a command not built yet
            if exc.name == f"graphcheck.cli.{name}_cmd":
                continue
            raise
        module.add_parser(sub)
    return parser


def main(argv: "list[str] | None" = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        print("graphcheck: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `graphcheck rules | head`: the reader left; not an error of ours
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
