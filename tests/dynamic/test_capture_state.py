"""The trace layer runs a case as capture will: capture-state queries answer True (CPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import graphcheck
from graphcheck.trace.capture_state import as_captured

sys.path.insert(0, str(Path(__file__).parent))
import guard_cases  # noqa: E402


def _codes(case):
    return [f.code for f in graphcheck.check(case, gpu="off", examples=2, layers="trace").findings]


@pytest.mark.parametrize("name", ["guarded", "guarded_private"])
def test_guarded_debug_check_takes_the_capture_path(name):
    (case,) = [c for c in guard_cases.GRAPHCHECK_CASES if c.name == name]
    assert _codes(case) == []


def test_unguarded_debug_check_still_fails():
    (case,) = [c for c in guard_cases.GRAPHCHECK_CASES if c.name == "unguarded"]
    assert _codes(case) == ["GC102"]


def test_a_case_can_opt_out_and_trace_the_eager_path():
    (case,) = [c for c in guard_cases.GRAPHCHECK_CASES if c.name == "guarded_eager"]
    assert _codes(case) == ["GC102"]


def test_every_spelling_answers_and_is_restored():
    from torch.cuda import is_current_stream_capturing as imported_early

    before = torch.cuda.graphs.is_current_stream_capturing.__code__
    with as_captured():
        assert torch.cuda.is_current_stream_capturing() is True
        assert torch.cuda.graphs.is_current_stream_capturing() is True
        assert imported_early() is True
        assert torch._C._cuda_isCurrentStreamCapturing() is True
        with as_captured(False):
            assert torch.cuda.is_current_stream_capturing() is False
        assert torch.cuda.is_current_stream_capturing() is True
    assert torch.cuda.graphs.is_current_stream_capturing.__code__ is before
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError):  # the CPU build's own answer comes back
            torch.cuda.is_current_stream_capturing()


def test_make_inputs_is_not_run_as_captured():
    seen = []

    def mk(seed, device):
        seen.append(bool(graphcheck.trace.capture_state.answer()))
        return guard_cases.make_inputs(seed, device)

    import graphcheck.trace.capture_state  # noqa: F401

    assert _codes(graphcheck.Case("g", guard_cases.guarded, mk)) == []
    assert seen and not any(seen)


def test_audit_reports_the_guarded_case_clean(tmp_path, monkeypatch):
    from graphcheck.audit import run_cases

    monkeypatch.chdir(Path(__file__).parent)
    results, problems = run_cases(["guard_cases.py"], gpu="off", examples=2)
    verdicts = {r.name: r.report.layers["trace"] for r in results}
    assert problems == []
    assert verdicts == {"guarded": "pass", "guarded_private": "pass", "unguarded": "fail", "guarded_eager": "fail"}
