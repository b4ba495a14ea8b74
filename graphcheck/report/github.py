"""GitHub Actions workflow commands: one ``::error``/``::warning``/``::notice`` per finding.

Escaping follows the workflow-command rules: in the message ``%``, ``\\r`` and
``\\n`` are percent-encoded; in properties ``:`` and ``,`` are too. Expected
findings (a ``# graphcheck: expect[...]`` marker on their line) get no
annotation: they are meant to be there, and the text, JSON and SARIF reports
still list them.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphcheck import rules
from graphcheck.findings import Finding
from graphcheck.report.escape import printable

_COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    """Percent-encode ``%``, CR and LF (the workflow-command rules), then show any other control or bidi
    character as a visible escape: an annotation is untrusted text in a CI log."""
    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_line(f: Finding) -> str:
    name = rules.RULES[f.code].name if f.code in rules.RULES else ""
    title = f"{f.code} {name}".strip()
    props = [f"file={escape_property(f.path)}", f"line={max(1, f.line)}", f"col={f.col + 1}",
             f"title={escape_property(title)}"]
    message = f.message
    if f.case:
        message = f"[{f.case}] {message}"
    if f.hint:
        message = f"{message}. {f.hint}" if not message.endswith(".") else f"{message} {f.hint}"
    return f"::{_COMMAND[f.severity.value]} {','.join(props)}::{escape_data(message)}"


def render_github(findings: Sequence[Finding]) -> str:
    return "".join(github_line(f) + "\n" for f in findings if not f.expected)
