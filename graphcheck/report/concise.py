"""One line per finding (``--format concise``, like ruff's), and ``--statistics`` (a count per rule).

``path:line:col: CODE [severity] message``, with ``[expected]`` for a finding an
``expect`` marker names and the layers for a dynamic one, then the one-line
summary. Editors' problem matchers read the same shape as flake8's output.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from graphcheck.findings import Finding
from graphcheck.report.escape import printable
from graphcheck.report.summary import Summary, one_line


def layers_of(f: Finding) -> list[str]:
    """The layers that reported a finding: its own, or those an audit merged into it."""
    merged = f.evidence.get("layers") if isinstance(f.evidence, dict) or hasattr(f.evidence, "get") else None
    return list(merged) if isinstance(merged, list) and merged else [f.layer]


def render_concise(findings: Sequence[Finding], summary: Summary | None = None) -> str:
    lines = []
    for f in sorted(findings, key=Finding.sort_key):
        label = " [expected]" if f.expected else ""
        layers = layers_of(f)
        tail = f" ({'+'.join(layers)})" if layers != ["static"] else ""
        lines.append(f"{printable(f.path)}:{f.line}:{f.col + 1}: {f.code} [{f.severity.value}]{label} "
                     f"{printable(f.message)}{tail}")
    lines.append(one_line(findings, summary))
    return "\n".join(lines) + "\n"


def render_statistics(findings: Sequence[Finding]) -> str:
    """``count  code  name  severity`` per rule, most frequent first; expected findings counted apart."""
    from graphcheck import rules

    counted = Counter(f.code for f in findings if not f.expected)
    expected = Counter(f.code for f in findings if f.expected)
    codes = sorted(set(counted) | set(expected), key=lambda c: (-counted.get(c, 0), -expected.get(c, 0), c))
    if not codes:
        return "No findings.\n"
    rows = []
    for code in codes:
        rule = rules.RULES.get(code)
        extra = f" ({expected[code]} expected)" if expected.get(code) else ""
        rows.append((str(counted.get(code, 0)), code, rule.name if rule else "",
                     f"[{rule.severity.value}]" if rule else "", extra))
    width = max(len(r[0]) for r in rows)
    name_width = max(len(r[2]) for r in rows)
    return "".join(f"{n.rjust(width)}  {code}  {name.ljust(name_width)}  {sev}{extra}\n"
                   for n, code, name, sev, extra in rows)
