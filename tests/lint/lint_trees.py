"""Helpers for lint tests that build a small tree on disk and lint it as a project."""

from __future__ import annotations

import textwrap
from pathlib import Path

from graphcheck.config import Config
from graphcheck.findings import Finding
from graphcheck.lint.engine import lint_paths


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
