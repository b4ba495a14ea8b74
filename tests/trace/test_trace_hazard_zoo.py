"""Every hazard in examples/hazards: the bad case gets its codes on the lines its expect markers name, the fixed
case is clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphcheck.api import check
from graphcheck.discovery import load_cases
from graphcheck.expectations import owed_by
from graphcheck.lint.suppress import expect_markers

HAZARDS = Path(__file__).resolve().parents[2] / "examples" / "hazards"


def _expected(path: Path) -> set[tuple[str, int]]:
    """(code, line) pairs that the example's `# graphcheck: expect[...]` markers say the trace layer reports."""
    markers = expect_markers(path.read_text(), "python")
    return {(e.code, line) for line, found in markers.items() for e in found if owed_by(e, "trace", "python")}


# The Python/Triton hazards whose every marked finding the trace layer sees on the CPU.
TRACE_HAZARDS = ("item_in_wrapper", "grid_from_max", "constexpr_per_call", "bool_mask_index", "tensor_from_list",
                 "scalar_from_tensor")
FILES = [HAZARDS / f"{name}.py" for name in TRACE_HAZARDS]


def test_zoo_has_every_required_hazard():
    assert all(p.is_file() for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_bad_is_flagged_on_the_marked_lines_and_fixed_is_clean(path):
    cases = {case.name: case for _, case in load_cases(path)}
    bad = [c for n, c in cases.items() if n.endswith("_bad")]
    fixed = [c for n, c in cases.items() if n.endswith("_fixed")]
    assert len(bad) == 1 and len(fixed) == 1

    report = check(bad[0], gpu="off", examples=3)
    got = {(f.code, f.line) for f in report.findings if Path(f.path).resolve() == path.resolve()}
    want = _expected(path)
    assert want, "each bad example marks its expected findings"
    assert got == want, report.findings
    # every finding is on a marked line: expected, so the report passes while showing them
    assert all(f.expected for f in report.findings), report.findings
    assert report.ok and report.layers["trace"] == "expected"
    assert all(f.layer == "trace" and f.case == bad[0].name for f in report.findings)

    clean = check(fixed[0], gpu="off", examples=3)
    assert clean.findings == [], clean.findings
    assert clean.ok and clean.layers["trace"] == "pass"
