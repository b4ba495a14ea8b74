"""The real-bug corpus (tests/corpus/): capture bugs fixed upstream, each reproduced here as a buggy and a
fixed side, linted in the default scope (no --all-functions).

Each case directory holds ``buggy.*`` (every hazard line carries ``graphcheck: expect[CODE]``), ``fixed.*``
and sometimes a helper module it imports; the header comment of each buggy file cites the upstream fix.
A buggy side is found when every marked line gets a finding with its code; a fixed side is quiet when
it gets no error or warning. The issue's bar is 90% of the buggy sides found.

``KNOWN_GAPS`` lists the cases the default scope does not get right yet, with the reason; they are
strict xfails, so a case that starts passing fails here until it is taken off the list.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphcheck.config import Config
from graphcheck.findings import Severity
from graphcheck.lint.engine import lint_paths

CORPUS = Path(__file__).parent / "corpus"
CASES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir() and any(p.glob("buggy.*")))
_MARK = re.compile(r"graphcheck:\s*expect\[([A-Za-z0-9, ]+)\]")
BAR = 0.90

# case -> (side, reason) for what the default scope misses today
KNOWN_GAPS: dict[str, tuple[str, str]] = {}


def _side(case: str, side: str) -> Path:
    (path,) = [p for p in (CORPUS / case).glob(f"{side}.*") if p.suffix in (".py", ".cu", ".cuh", ".cpp")]
    return path


def _lint(case: str, side: str):
    path = _side(case, side)
    found = lint_paths([path], Config(root=CORPUS / case), jobs=1, use_cache=False).findings
    return path, [f for f in found if f.code != "GC008"]


def _markers(path: Path) -> set[tuple[int, str]]:
    out = set()
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        for m in _MARK.finditer(line):
            out |= {(lineno, c.strip().upper()) for c in m.group(1).split(",") if c.strip()}
    return out


def buggy_found(case: str) -> bool:
    path, found = _lint(case, "buggy")
    return _markers(path) <= {(f.line, f.code) for f in found}


def fixed_quiet(case: str) -> bool:
    _, found = _lint(case, "fixed")
    return not [f for f in found if f.severity in (Severity.ERROR, Severity.WARNING)]


def _gap(case: str, side: str):
    gap = KNOWN_GAPS.get(case)
    if gap and gap[0] == side:
        return pytest.mark.xfail(strict=True, reason=gap[1])
    return ()


def test_corpus_is_large_enough_and_cited():
    assert len(CASES) >= 15
    for case in CASES:
        path = _side(case, "buggy")
        head = path.read_text()[:1200]
        assert re.search(r"#\d+|commit [0-9a-f]{7,}", head), f"{case}: no upstream PR or commit cited"
        assert _markers(path), f"{case}: no expect marker"
        assert not _markers(_side(case, "fixed")), f"{case}: the fixed side carries an expect marker"
    assert set(KNOWN_GAPS) <= set(CASES)


@pytest.mark.parametrize("case", [pytest.param(c, marks=_gap(c, "buggy")) for c in CASES])
def test_buggy_side_is_found_at_the_marked_lines(case):
    path, found = _lint(case, "buggy")
    missing = _markers(path) - {(f.line, f.code) for f in found}
    assert not missing, f"{case}: not reported at {sorted(missing)}"


@pytest.mark.parametrize("case", [pytest.param(c, marks=_gap(c, "fixed")) for c in CASES])
def test_fixed_side_is_quiet(case):
    _, found = _lint(case, "fixed")
    loud = [(f.line, f.code) for f in found if f.severity in (Severity.ERROR, Severity.WARNING)]
    assert not loud, f"{case}: the fixed side still reports {loud}"


def test_found_rate_meets_the_bar():
    found = [c for c in CASES if buggy_found(c)]
    rate = len(found) / len(CASES)
    if rate < BAR:
        pytest.xfail(f"default scope finds {len(found)}/{len(CASES)} buggy sides ({rate:.0%}); the bar is {BAR:.0%}")
    assert rate >= BAR
