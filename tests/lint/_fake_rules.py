"""A stand-in for the Python rules, so engine tests do not depend on them.

Flags every line containing ``.item()`` as GC101 and reports syntax errors as
GC001, like the real rules do; installed with ``install(monkeypatch)``.
"""

from __future__ import annotations

import ast
import sys
import types

from graphcheck import rules
from graphcheck.findings import Finding


def lint_python(source, path, *, all_functions=False, entry_points=(), context=None, tree=None):
    try:
        ast.parse(source)
    except SyntaxError as exc:
        r = rules.get("GC001")
        return [Finding("GC001", r.severity, f"syntax error: {exc.msg}", path, exc.lineno or 1, 0, hint=r.hint)]
    out = []
    for n, line in enumerate(source.splitlines(), 1):
        col = line.find(".item()")
        if col >= 0:
            r = rules.get("GC101")
            out.append(Finding("GC101", r.severity, "`.item()` syncs", path, n, col, "f", r.hint))
        if "GC503-HERE" in line and all_functions:
            r = rules.get("GC503")
            out.append(Finding("GC503", r.severity, "side effect", path, n, 0, "f", r.hint))
    return out


def install(monkeypatch) -> None:
    module = types.ModuleType("graphcheck.lint.python_rules")
    module.lint_python = lint_python
    monkeypatch.setitem(sys.modules, "graphcheck.lint.python_rules", module)
