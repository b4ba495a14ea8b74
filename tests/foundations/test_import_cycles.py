"""The two import cycles the design review found stay broken: no graphcheck module imports one that imports it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "graphcheck"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports() -> dict[str, set[str]]:
    """module -> graphcheck modules it imports anywhere (top level or inside functions)."""
    names = {_module_name(p) for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        me = _module_name(path)
        found = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    found.add(full if full in names else node.module)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        graph[me] = {m for m in found if m in names and m != me}
    return graph


def test_no_two_modules_import_each_other():
    graph = _imports()
    pairs = sorted({tuple(sorted((a, b))) for a, deps in graph.items() for b in deps if a in graph.get(b, ())})
    assert pairs == []


def test_the_reviewed_cycles_are_gone():
    graph = _imports()
    assert "graphcheck.lint.engine" not in graph["graphcheck.expectations"]
    assert "graphcheck.trace.patches" not in graph["graphcheck.trace.launches"]
