"""``project.count_def_lines`` counts what the line-anchored ``_DEF_LINE`` pattern finds, without trying that
pattern at every position of the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphcheck.lint.project import _DEF_LINE, count_def_lines

ROOT = Path(__file__).resolve().parents[2]
EDGES = [b"", b"def x", b"  async  def\tf", b"asyncdef x", b"def def def ", b"\ndef \ndef x", b"x = 1 # def y",
         b"\tdef\t", b"def\n", b"  undef x", b"async def", b"\r\ndef x", b"\rdef x", b"async\tdef ",
         b"  async def def ", b"s = '''\ndef inner(): pass\n'''", b"class A:\n    def f(self): pass\n    async def g(): pass"]


@pytest.mark.parametrize("data", EDGES)
def test_edge_cases_count_as_the_pattern(data: bytes) -> None:
    assert count_def_lines(data) == len(_DEF_LINE.findall(data))


def test_the_project_sources_count_as_the_pattern() -> None:
    files = sorted(ROOT.glob("graphcheck/**/*.py")) + sorted(ROOT.glob("tests/**/*.py"))
    counts = [(count_def_lines(p.read_bytes()), len(_DEF_LINE.findall(p.read_bytes()))) for p in files]
    assert all(a == b for a, b in counts) and sum(a for a, _ in counts) > 1000
