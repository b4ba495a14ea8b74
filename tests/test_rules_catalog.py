"""The rule catalog: codes well-formed and unique, and every rule has its page."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from graphcheck import rules

DOCS = Path(__file__).resolve().parent.parent / "docs" / "rules"
SECTIONS = ["## What it does", "## Why it is bad", "## Example", "## Fix"]


def test_codes_unique_and_well_formed():
    codes = [r.code for r in rules._RULES]
    assert [c for c, n in Counter(codes).items() if n > 1] == []
    names = [r.name for r in rules._RULES]
    assert [n for n, k in Counter(names).items() if k > 1] == []
    for r in rules._RULES:
        assert re.fullmatch(r"GC[0-5]\d\d", r.code), r.code
        assert r.code[:3] in rules.FAMILIES
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", r.name), r.name
        assert r.layers and set(r.layers) <= {"static", "trace", "capture"}
        assert r.summary.endswith(".") and r.hint.endswith(".")


@pytest.mark.parametrize("code", sorted(rules.RULES))
def test_every_rule_has_a_page_with_the_four_sections(code):
    rule = rules.RULES[code]
    page_file = DOCS / f"{code}.md"
    assert page_file.is_file(), f"docs/rules/{code}.md is missing"
    page = page_file.read_text()
    assert page.splitlines()[0] == f"# {code} {rule.name}"
    assert f"**Severity:** {rule.severity.value}" in page
    positions = [page.find(s) for s in SECTIONS]
    assert all(p > 0 for p in positions) and positions == sorted(positions), code
    assert rule.doc() == page  # installed as graphcheck.ruledocs


def test_no_page_without_a_rule():
    pages = {p.stem for p in DOCS.glob("GC*.md")}
    assert pages <= set(rules.RULES)
