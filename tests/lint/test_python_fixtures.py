"""Golden tests: each fixture marks the lines that must fire with `# expect: CODE`;
every other line must stay quiet."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphcheck import rules
from graphcheck.lint.python_rules import lint_python

FIXTURES = Path(__file__).parent / "fixtures" / "python"
_EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)")


def _expected(source: str) -> set[tuple[int, str]]:
    out = set()
    for lineno, line in enumerate(source.splitlines(), 1):
        match = _EXPECT.search(line)
        if match:
            out.update((lineno, code.strip()) for code in match.group(1).split(",") if code.strip())
    return out


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.py")))
def test_fixture_findings_match_expect_markers(name):
    source = (FIXTURES / name).read_text()
    findings = lint_python(source, name)
    got = {(f.line, f.code) for f in findings}
    assert got == _expected(source), [f"{f.line}:{f.code} {f.message}" for f in findings]


def test_fixtures_cover_every_static_python_rule():
    covered = set()
    for path in FIXTURES.glob("*.py"):
        covered |= {code for _, code in _expected(path.read_text())}
    # every code the registry says the static layer reports for Python, except the tool's own GC0xx
    wanted = {code for code in rules.static_codes("python") if not code.startswith("GC0")}
    assert wanted <= covered, sorted(wanted - covered)
