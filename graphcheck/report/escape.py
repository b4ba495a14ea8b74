"""Untrusted text made safe to print: source lines, messages, paths and case names.

A linted file, its name or a case name can hold terminal escape sequences
(``\\x1b]0;title\\x07``, ``\\x1b[1A`` to rewrite the previous report line), a
carriage return that overwrites a line, or bidirectional overrides that reorder
what a reader sees. :func:`printable` shows each such character as a visible
``\\xNN``/``\\uNNNN`` escape. :func:`log_line` also defuses a line that a CI
log would read as a command (GitHub's ``::error ...::`` and ``##[...]``), and
:func:`markup` escapes rich's ``[tag]`` markup for text that goes through it.
"""

from __future__ import annotations

import re

# C0 controls but tab, DEL, C1 controls, and the Unicode bidi embedding/override/isolate characters
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_COMMAND = re.compile(r"^(\s*)(::|##\[)")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control or bidi character shown as an escape (one line, safe for a terminal)."""
    return _UNSAFE.sub(_visible, text)


def log_line(line: str) -> str:
    """A report line for a terminal or CI log: printable, and never read as a workflow command."""
    line = printable(line)
    return _COMMAND.sub(lambda m: m.group(1) + "\\" + m.group(2), line)


def log_text(text: str) -> str:
    """Every line of a multi-line report through :func:`log_line` (the line breaks themselves kept)."""
    return "\n".join(log_line(line) for line in text.split("\n"))


def markup(text: str) -> str:
    """Printable text with rich markup escaped, for a place that parses markup (a progress description)."""
    from rich.markup import escape

    return escape(printable(text))
