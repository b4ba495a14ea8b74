"""Helpers for lint tests: build a small tree on disk and lint it as a project, or lint one module that
starts with a Triton kernel."""

from __future__ import annotations

import textwrap
from pathlib import Path

from graphcheck.config import Config
from graphcheck.findings import Finding
from graphcheck.lint.engine import lint_paths
from graphcheck.lint.python_rules import lint_python


def make(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (relative path -> dedented text) under ``root``; returns ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def tree_findings(root: Path) -> list[Finding]:
    """``graphcheck lint root`` as a project (no cache, one job)."""
    return lint_paths([str(root)], Config(root=root), use_cache=False, jobs=1).findings


# what a one-module test starts with: the imports its bodies use and a Triton kernel `kern` to launch
KERNEL = textwrap.dedent('''
    import functools
    from typing import Optional

    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kern(x_ptr, n, BLOCK: tl.constexpr):
        pass
''')


def lint_module(body: str) -> list[tuple[str, str, str, str]]:
    """Lint ``KERNEL`` + ``body`` as one module: sorted (code, severity, the line's text, message)."""
    src = KERNEL + textwrap.dedent(body)
    return sorted((f.code, f.severity.value, src.splitlines()[f.line - 1].strip(), f.message)
                  for f in lint_python(src, "m.py"))
