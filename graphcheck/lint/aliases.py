"""Import alias resolution for the Python rules.

Maps every name an ``import`` binds to the dotted name it stands for, so that
``t.nonzero`` after ``import torch as t``, ``nonzero`` after
``from torch import nonzero`` and ``tl.constexpr`` after
``import triton.language as tl`` all resolve to their canonical dotted names.
Imports anywhere in the module (also inside functions) are collected into one
table: a name imported in one function and used with another meaning elsewhere
is rare enough to ignore.
"""

from __future__ import annotations

import ast

# Roots that resolve to themselves even when the import is missing (snippets,
# star imports): code that uses ``torch.x`` means torch.
_WELL_KNOWN = {"torch": "torch", "triton": "triton"}


class Aliases:
    """Local name -> canonical dotted name, built from import statements."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        # module-level definitions and assignments: a `def any(inp)` of the module hides the builtin
        self.shadowed: set[str] = set()

    def add(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.names[alias.asname] = alias.name
                else:
                    root = alias.name.split(".", 1)[0]
                    self.names[root] = root
            return
        module = "." * (node.level or 0) + (node.module or "")
        for alias in node.names:
            if alias.name == "*":
                continue
            local = alias.asname or alias.name
            self.names[local] = f"{module}.{alias.name}" if module and not module.endswith(".") else module + alias.name

    def is_imported(self, name: str) -> bool:
        return name in self.names

    def is_bound(self, name: str) -> bool:
        """Does the module bind ``name`` itself (an import, a module-level ``def``, ``class`` or
        assignment), so that it is not Python's builtin of that name?"""
        return name in self.names or name in self.shadowed

    def resolve(self, node: ast.AST) -> str | None:
        """The dotted name a ``Name``/``Attribute`` chain refers to, or None."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.names.get(node.id) or _WELL_KNOWN.get(node.id)
        if base is None:
            return None
        if parts:
            parts.reverse()
            return base + "." + ".".join(parts)
        return base
