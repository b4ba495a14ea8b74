"""The dynamic layers on a GPU: guards in capture, escaped-launch attribution, the search in mutated replay."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest

import graphcheck

pytestmark = pytest.mark.gpu

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
ZOO = HERE.parents[1] / "examples" / "hazards"


def _case(module, name):
    (case,) = [c for c in module.GRAPHCHECK_CASES if c.name == name]
    return case


def _line(fn, marker):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, text in enumerate(lines) if marker in text)


def test_guarded_debug_check_passes_both_layers_and_unguarded_fails():
    import guard_cases

    for name in ("guarded", "guarded_private"):
        report = graphcheck.check(_case(guard_cases, name), gpu="required", examples=2, isolate=False)
        assert report.layers == {"trace": "pass", "capture": "pass"}, report.findings
    report = graphcheck.check(_case(guard_cases, "unguarded"), gpu="required", examples=2, isolate=False)
    assert report.layers == {"trace": "fail", "capture": "fail"}
    assert {f.code for f in report.findings} == {"GC102"}


def test_default_stream_launch_is_named_on_its_line():
    import gpu_dynamic_cases as m

    report = graphcheck.check(_case(m, "default_stream"), gpu="required", examples=2, layers="capture", isolate=False)
    (f,) = [f for f in report.findings if f.code in ("GC203", "GC204")]
    assert f.line == _line(m.twice_on_default_stream, "LAUNCH: default stream"), f
    assert "_twice" in f.message and "legacy default stream" in f.message, f.message
    assert f.evidence["stream"] == 0 and f.evidence["seen_by"] == "triton"
    clean = graphcheck.check(_case(m, "current_stream"), gpu="required", examples=2, isolate=False)
    assert clean.ok, clean.findings  # (GC408 infos: the kernel compiles on its first call)


def test_legacy_stream_cupy_launch_is_named_on_its_line():
    pytest.importorskip("cupy")
    from graphcheck.discovery import load_cases

    cases = {c.name: c for _, c in load_cases(str(ZOO / "legacy_stream.py"))}
    report = graphcheck.check(cases["legacy_stream_bad"], gpu="required", examples=2, layers="capture", isolate=False)
    (f,) = [f for f in report.findings if f.code == "GC204"]
    fn = cases["legacy_stream_bad"].fn
    assert f.line == _line(fn, "stream=cupy.cuda.Stream.null"), f
    assert "add_seven" in f.message and "legacy default stream" in f.message, f.message
    assert f.evidence["seen_by"] == "cupy"


def test_value_search_finds_a_stale_grid_in_mutated_replay():
    import gpu_dynamic_cases as m

    seeds = graphcheck.check(_case(m, "stale_seeds_only"), gpu="required", examples=8, layers="capture", isolate=False)
    assert seeds.ok, seeds.findings  # lengths 1..60: one block, the stale grid is right for all
    report = graphcheck.check(_case(m, "stale_searched"), gpu="required", examples=4, layers="capture", isolate=False)
    (f,) = [f for f in report.findings if f.code in ("GC401", "GC406")]
    found = f.evidence["search"]
    lens = found["minimal_input"]["lens"]
    assert max(lens) > m.BLOCK and sorted(lens)[:-1] == [0, 0, 0], lens
    assert found["hypothesis_seed"] == 0 and "minimal input lens=" in f.message
