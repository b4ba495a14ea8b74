"""Text report: each finding with its source line, a caret and the fix; then a summary.

With ``color`` the report is rich markup for a terminal (colours, a boxed summary
table); without it, plain text with no escape codes or box drawing, for logs and
files. An expected finding (``# graphcheck: expect[...]`` on its line) is labelled
``[expected]`` after its severity (and dimmed in colour) and not counted in the
last line.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Sequence

from graphcheck.findings import Finding
from graphcheck.report import source
from graphcheck.report.escape import log_text, printable
from graphcheck.report.summary import Summary, Table, counts_by_code, one_line

_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold cyan"}


def _header(f: Finding) -> str:
    where = f"{printable(f.path)}:{f.line}:{f.col + 1}"
    extra = []
    if f.function:
        extra.append(f"in {printable(f.function)}")
    if f.case:
        extra.append(f"case {printable(f.case)}")
    merged = f.evidence.get("layers") if hasattr(f.evidence, "get") else None
    if isinstance(merged, list) and len(merged) > 1:
        extra.append(f"{' and '.join(merged)} layers")
    elif f.layer != "static":
        extra.append(f"{f.layer} layer")
    tail = f" ({', '.join(extra)})" if extra else ""
    label = " [expected]" if f.expected else ""
    return f"{where} {f.code} [{f.severity.value}]{label} {printable(f.message)}{tail}"


def _snippet(f: Finding) -> list[tuple[str, bool]]:
    """Source lines with a gutter, and a caret line; (text, is_the_flagged_line)."""
    # a file that could not be read or parsed as source (GC002) has no line worth showing
    rows = source.context(f.path, f.line) if f.line > 0 and f.code != "GC002" else []
    if not rows:
        return []
    width = len(str(rows[-1][0]))
    out = []
    for n, text in rows:
        out.append((f"  {str(n).rjust(width)} | {printable(text)}", n == f.line))
        if n == f.line:
            shown = printable(text[: source.display_col(f.path, n, f.col)])
            out.append((f"  {' ' * width} | {' ' * len(shown)}^", False))
    return out


def plain_table(table: Table) -> list[str]:
    """A table as aligned plain-text lines (title, header, rows); cells made printable."""
    table = _cells(table)
    widths = [len(c) for c in table.columns]
    for row in table.rows:
        widths = [max(w, len(str(cell))) for w, cell in zip(widths, row)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [table.title, fmt.format(*table.columns).rstrip()]
    lines += [fmt.format(*[str(c) for c in row]).rstrip() for row in table.rows]
    return lines


def _cells(table: Table) -> Table:
    """The table with every cell printable (case names and paths come from the user)."""
    return Table(table.title, table.columns, [[printable(str(c)) for c in row] for row in table.rows])


def _tables(findings: Sequence[Finding], summary: Summary | None) -> list[Table]:
    tables = []
    if findings and any(f.expected for f in findings):
        expected = Counter(f.code for f in findings if f.expected)
        tables.append(Table("Findings by rule", ("code", "name", "severity", "count", "expected"),
                            [(c, n, s, str(k), str(expected.get(c, 0))) for c, n, s, k in counts_by_code(findings)]))
    elif findings:
        tables.append(Table("Findings by rule", ("code", "name", "severity", "count"),
                            [(c, n, s, str(k)) for c, n, s, k in counts_by_code(findings)]))
    if summary is not None:
        tables.extend(summary.tables)
    return tables


def _stats(summary: Summary | None) -> list[str]:
    if summary is None:
        return []
    parts = []
    if summary.files_checked is not None:
        parts.append(f"files checked: {summary.files_checked}")
    if summary.lines is not None:
        parts.append(f"lines: {summary.lines}")
    if summary.from_cache:
        parts.append(f"from cache: {summary.from_cache}")
    if summary.seconds is not None:
        parts.append(f"time: {summary.seconds:.2f}s")
    return ["  ".join(parts)] if parts else []


def render_text(findings: Sequence[Finding], *, summary: Summary | None = None, color: bool = False,
                width: int | None = None) -> str:
    if not color:
        return _render_plain(findings, summary)
    return _render_rich(findings, summary, width)


def _render_plain(findings: Sequence[Finding], summary: Summary | None) -> str:
    lines: list[str] = []
    for f in findings:
        lines.append(_header(f))
        lines.extend(text for text, _ in _snippet(f))
        if f.hint:
            lines.append(f"  hint: {f.hint}")
        lines.append("")
    for table in _tables(findings, summary):
        lines.extend(plain_table(table))
        lines.append("")
    lines.extend(_stats(summary))
    if summary is not None:
        lines.extend(summary.notes)
    lines.append(one_line(findings, summary) if findings else "No findings.")
    return log_text("\n".join(lines)) + "\n"


def _render_rich(findings: Sequence[Finding], summary: Summary | None, width: int | None) -> str:
    from rich.console import Console
    from rich.table import Table as RichTable
    from rich.text import Text

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=width or 100, highlight=False, soft_wrap=True)
    for f in findings:
        head = Text()
        if f.expected:  # shown dimmed: reported, but meant to be there
            head.append(_header(f), style="dim")
            console.print(head)
            for text, _ in _snippet(f):
                console.print(Text(text, style="dim"))
            if f.hint:
                console.print(Text(f"  hint: {f.hint}", style="dim"))
            console.print()
            continue
        head.append(f"{printable(f.path)}:{f.line}:{f.col + 1} ", style="bold")
        head.append(f.code, style=_STYLE[f.severity.value])
        head.append(f" [{f.severity.value}] ", style=_STYLE[f.severity.value])
        rest = _header(f).split(f"[{f.severity.value}] ", 1)[1]
        head.append(rest)
        console.print(head)
        for text, flagged in _snippet(f):
            console.print(Text(text, style="bold" if flagged else "dim"))
        if f.hint:
            console.print(Text.assemble(("  hint: ", "green bold"), (f.hint, "green")))
        console.print()
    for table in _tables(findings, summary):
        rt = RichTable(title=table.title, title_justify="left")
        for col in table.columns:
            rt.add_column(col)
        for row in table.rows:
            rt.add_row(*[Text(printable(str(c))) for c in row])  # Text: never parsed as markup
        console.print(rt)
    for line in _stats(summary) + (summary.notes if summary else []):
        console.print(Text(log_text(line), style="dim"))
    counted = [f for f in findings if not f.expected]
    if counted:
        console.print(Text(one_line(findings, summary), style="bold red" if any(
            f.severity.value == "error" for f in counted) else "bold yellow"))
    elif findings:
        console.print(Text(one_line(findings, summary), style="bold green"))
    else:
        console.print(Text("No findings.", style="bold green"))
    return buf.getvalue()
