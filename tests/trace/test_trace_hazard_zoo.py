"""Every hazard in examples/hazards: the bad case gets its codes on the marked lines, the fixed case is clean."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphcheck.api import check
from graphcheck.discovery import load_cases

HAZARDS = Path(__file__).resolve().parents[2] / "examples" / "hazards"
_MARK = re.compile(r"#\s*(GC\d{3})\s*$")


def _expected(path: Path) -> set[tuple[str, int]]:
    """(code, line) pairs marked with a trailing `# GCxxx` comment in the example."""
    return {(m.group(1), i) for i, line in enumerate(path.read_text().splitlines(), 1) if (m := _MARK.search(line))}


# The Python/Triton hazards whose every marked finding the trace layer sees on the CPU.
TRACE_HAZARDS = ("item_in_wrapper", "grid_from_max", "constexpr_per_call", "bool_mask_index", "tensor_from_list",
                 "scalar_from_tensor")
FILES = [HAZARDS / f"{name}.py" for name in TRACE_HAZARDS]


def test_zoo_has_every_required_hazard():
    assert all(p.is_file() for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_bad_is_flagged_on_the_marked_lines_and_fixed_is_clean(path):
    cases = dict((case.name, case) for _, case in load_cases(path))
    bad = [c for n, c in cases.items() if n.endswith("_bad")]
    fixed = [c for n, c in cases.items() if n.endswith("_fixed")]
    assert len(bad) == 1 and len(fixed) == 1

    report = check(bad[0], gpu="off", examples=3)
    got = {(f.code, f.line) for f in report.findings if Path(f.path).resolve() == path.resolve()}
    want = _expected(path)
    assert want, "each bad example marks its expected findings"
    assert got == want, report.findings
    assert not report.ok
    assert all(f.layer == "trace" and f.case == bad[0].name for f in report.findings)

    clean = check(fixed[0], gpu="off", examples=3)
    assert clean.findings == [], clean.findings
    assert clean.ok and clean.layers["trace"] == "pass"
