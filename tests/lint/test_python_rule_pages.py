"""The rule pages of the Python static rules: every example marked `# GCxxx` is
really flagged by the linter at that line, so the docs cannot drift from the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphcheck import rules
from graphcheck.lint.python_rules import lint_python

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules"
PYTHON_STATIC = sorted(
    code for code, rule in rules.RULES.items()
    if "static" in rule.layers and (code[:3] in ("GC1", "GC3", "GC4", "GC5") or code in ("GC202", "GC205", "GC206"))
    and code != "GC303"  # a CUDA C++ rule
)
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)
_MARK = re.compile(r"#\s*(GC\d{3})\b")


def _marked(code_text: str) -> set[tuple[int, str]]:
    return {(n, m.group(1)) for n, line in enumerate(code_text.splitlines(), 1) for m in _MARK.finditer(line)}


@pytest.mark.parametrize("code", PYTHON_STATIC)
def test_page_example_fires_where_marked(code):
    page = (DOCS / f"{code}.md").read_text()
    example = page.split("## Example", 1)[1].split("## Fix", 1)[0]
    blocks = _BLOCK.findall(example)
    assert blocks, f"{code}.md has no python example"
    source = "import torch\nimport triton\nimport triton.language as tl\nimport time\nimport logging\n" + blocks[0]
    marked = {(line + 5, c) for line, c in _marked(blocks[0])}
    assert any(c == code for _, c in marked), f"{code}.md example does not mark {code}"
    got = {(f.line, f.code) for f in lint_python(source, f"{code}.py", all_functions=True)}
    assert marked <= got, (sorted(marked), sorted(got))


@pytest.mark.parametrize("code", PYTHON_STATIC)
def test_page_fix_is_quiet_for_its_rule(code):
    page = (DOCS / f"{code}.md").read_text()
    fixes = _BLOCK.findall(page.split("## Fix", 1)[1])
    assert fixes, f"{code}.md has no python block under ## Fix"
    for block in fixes:
        source = "import torch\nimport triton\nimport triton.language as tl\n" + block
        # Setup code (`__init__`) is allowed to do what the capture path must not.
        got = [f for f in lint_python(source, f"{code}_fix.py", all_functions=True)
               if f.code == code and not (f.function or "").endswith("__init__")]
        assert got == [], [f.message for f in got]
