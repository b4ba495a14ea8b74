"""The ``graphcheck`` command: one subcommand module per verb."""

from __future__ import annotations

import argparse
import errno
import importlib
import io
import os
import sys
from typing import NoReturn

# Each module defines ``add_parser(subparsers)`` and ``run(args) -> int``.
_COMMANDS = ("lint", "rules", "audit", "ci", "record", "coverage")

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse exits 2 too; keep the message short
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def emit(report: str, output: str | None, prog: str, written_note: str) -> bool:
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


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds above zero (``-1``, ``0``, ``nan``, ``inf`` are errors)."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds above 0, got {text!r}")
    return value


def output_problem(output: str | None, inputs: list[str]) -> str | None:
    """Why the report must not be written to ``output``: it would overwrite a source file (one of the
    inputs, or any existing Python/C++ file). None when it is fine."""
    if output is None:
        return None
    if not output:
        return "--output: an empty file name"
    from graphcheck.lint.files import language_of

    target = os.path.realpath(output)
    if os.path.exists(target) and language_of(target) is not None:
        return f"--output {output} is a source file; refusing to overwrite it with the report"
    for given in inputs:
        if given and os.path.realpath(given) == target:
            return f"--output {output} is one of the inputs; refusing to overwrite it with the report"
    return None


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


class _ClosedStream(io.TextIOBase):
    """Stands in for a standard stream the caller closed (``>&-``): writing to it is an error."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not text:
            return 0
        raise OSError(errno.EBADF, "standard output is closed")

    def isatty(self) -> bool:
        return False


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null so that the interpreter's final flush cannot fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        sys.stdout = open(os.devnull, "w")


def main(argv: list[str] | None = None) -> int:
    if sys.stdout is None:
        sys.stdout = _ClosedStream()
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        code = int(args.run(args))
        sys.stdout.flush()  # a full disk shows here, not in the interpreter's exit
        return code
    except KeyboardInterrupt:
        print("graphcheck: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `graphcheck rules | head`: the reader left; not an error of ours
        _silence_stdout()
        return EXIT_OK
    except OSError as exc:
        if exc.errno not in _OUTPUT_ERRNOS:
            raise
        print(f"graphcheck: error: cannot write the report: {exc.strerror or exc}", file=sys.stderr)
        _silence_stdout()
        return EXIT_USAGE


# a write to stdout that failed: disk full, quota, closed or bad descriptor, I/O error
_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EBADF, errno.EIO, errno.EFBIG, errno.EINVAL})


if __name__ == "__main__":
    sys.exit(main())
