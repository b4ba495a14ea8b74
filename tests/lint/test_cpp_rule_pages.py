"""The C++ examples on the rule pages: each ```cpp block reports exactly the static C++ codes its comments
name, on those lines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphcheck import rules
from graphcheck.lint.engine import lint_source

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules"
_BLOCK = re.compile(r"```cpp\n(.*?)```", re.DOTALL)
BLOCKS = [(page.stem, i, block) for page in sorted(DOCS.glob("GC*.md"))
          for i, block in enumerate(_BLOCK.findall(page.read_text()))]


@pytest.mark.parametrize(("code", "index", "block"), BLOCKS, ids=[f"{c}-{i}" for c, i, _ in BLOCKS])
def test_cpp_example_reports_what_it_says(code, index, block):
    static = rules.static_codes("cpp")  # a capture-layer page may name codes only a GPU run reports
    want = sorted((n, m) for n, line in enumerate(block.splitlines(), 1)
                  for m in re.findall(r"(GC\d{3})", line.partition("//")[2]) if m in static)
    got = sorted((f.line, f.code) for f in lint_source(block, "example.cu", "cpp"))
    assert got == want
