"""``graphcheck coverage``: which files, functions and kernels run under capture.

Built from a capture map: per file, the recorded functions with the lines that
ran; the Triton kernels launched under capture; and one row per capture
(status, where it began, launches, graph nodes). Rendered as rich tables on a
terminal, plain text otherwise, or JSON.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any


def summary_line(data: dict[str, Any]) -> str:
    caps = data["captures"]
    failed = sum(1 for c in caps if c["status"] == "failed")
    files = {f["path"] for f in data["functions"]}
    return (f"{len(caps)} capture(s) ({len(caps) - failed} ok, {failed} failed), {len(data['functions'])} "
            f"function(s) in {len(files)} file(s), {len(data['kernels'])} kernel(s), "
            f"{len(data['findings'])} finding(s)")


def report(data: dict[str, Any]) -> dict[str, Any]:
    """The coverage report as plain data (the JSON format)."""
    by_file: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for fn in data["functions"]:
        by_file[fn["path"]].append({"qualname": fn["qualname"], "first_line": fn["first_line"],
                                    "lines_hit": len(fn["lines"]), "lines": fn["lines"],
                                    "captures": len(fn["captures"]), "capture_site": bool(fn.get("site"))})
    files = [{"path": path, "functions": sorted(fns, key=lambda f: f["first_line"]),
              "lines_hit": sum(f["lines_hit"] for f in fns)} for path, fns in sorted(by_file.items())]
    captures = []
    for cap in data["captures"]:
        site = cap.get("site") or {}
        graph = cap.get("graph") or {}
        captures.append({"id": cap["id"], "status": cap["status"],
                         "site": f"{site.get('path')}:{site.get('line')}" if site else None,
                         "functions": len(cap["functions"]), "launches": len(cap["launches"]),
                         "graph_nodes": graph.get("node_count"), "graph_kernels": len(graph.get("kernels") or []),
                         "failure": (cap.get("failure") or {}).get("code")})
    return {"summary": summary_line(data), "files": files, "kernels": data["kernels"], "captures": captures}


def _ranges(lines: list[int]) -> str:
    out: list[str] = []
    start = prev = None
    for n in lines:
        if start is None:
            start = prev = n
        elif n == prev + 1:  # type: ignore[operator]
            prev = n
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = n
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    text = ",".join(out)
    return text if len(text) <= 48 else text[:45] + "..."


def _tables(rep: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    fn_rows = []
    for f in rep["files"]:
        for fn in f["functions"]:
            fn_rows.append([f["path"], fn["qualname"] + (" (capture site)" if fn["capture_site"] else ""),
                            str(fn["first_line"]), str(fn["lines_hit"]), _ranges(fn["lines"]), str(fn["captures"])])
    kernel_rows = [[k["name"], str(k["launches"]), str(len(k["captures"])), ", ".join(k.get("call_sites", [])[:3])]
                   for k in rep["kernels"]]
    cap_rows = [[str(c["id"]), c["status"] + (f" ({c['failure']})" if c["failure"] else ""), c["site"] or "-",
                 str(c["functions"]), str(c["launches"]),
                 "-" if c["graph_nodes"] is None else str(c["graph_nodes"])] for c in rep["captures"]]
    return [
        ("Functions run under capture", ["file", "function", "line", "lines hit", "lines", "captures"], fn_rows),
        ("Kernels launched under capture", ["kernel", "launches", "captures", "launched at"], kernel_rows),
        ("Captures", ["#", "status", "capture site", "functions", "launches", "graph nodes"], cap_rows),
    ]


def render(data: dict[str, Any], fmt: str = "text", *, color: bool = False, width: int | None = None) -> str:
    rep = report(data)
    if fmt == "json":
        return json.dumps(rep, indent=1) + "\n"
    tables = _tables(rep)
    if color:
        from rich.console import Console
        from rich.table import Table

        console = Console(record=True, width=width or 120, force_terminal=True)
        for title, head, rows in tables:
            table = Table(title=title, title_justify="left")
            for h in head:
                table.add_column(h, overflow="fold")
            for row in rows:
                table.add_row(*row)
            console.print(table)
        console.print(f"[bold]{rep['summary']}[/bold]")
        return console.export_text(styles=True)
    out: list[str] = []
    for title, head, rows in tables:
        out.append(title)
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
        out.append("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
        for row in rows:
            out.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if not rows:
            out.append("(none)")
        out.append("")
    out.append(rep["summary"])
    return "\n".join(out) + "\n"
