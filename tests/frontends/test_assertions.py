"""``graphcheck.assert_graph_safe`` outside pytest's plugin machinery."""

from __future__ import annotations

import pytest
import torch

import graphcheck
from graphcheck.assertions import GraphSafetyError


def make_inputs(seed, device):
    return {"x": torch.arange(1.0, 5.0, device=device) * (seed + 1)}


def unsafe(x):
    return x * x.max().item()


def safe(x):
    return x * x.max()


def test_safe_function_returns_the_report():
    report = graphcheck.assert_graph_safe(safe, make_inputs, gpu="off")
    assert report.layers["trace"] == "pass" and report.findings == []


def test_unsafe_function_fails_with_rule_line_and_hint():
    with pytest.raises(AssertionError) as info:
        graphcheck.assert_graph_safe(unsafe, make_inputs, gpu="off")
    text = str(info.value)
    line = unsafe.__code__.co_firstlineno + 1
    assert f"test_assertions.py:{line}:" in text
    assert "GC101" in text and "hint:" in text and "x.max().item()" in text
    assert isinstance(info.value, GraphSafetyError)
    assert [f.code for f in info.value.report.findings] == ["GC101"]


def test_a_case_is_accepted_and_bad_arguments_are_type_errors():
    case = graphcheck.Case("unsafe", unsafe, make_inputs)
    with pytest.raises(AssertionError, match="case 'unsafe'"):
        graphcheck.assert_graph_safe(case, gpu="off")
    with pytest.raises(TypeError):
        graphcheck.assert_graph_safe(case, make_inputs)
    with pytest.raises(TypeError, match="make_inputs"):
        graphcheck.assert_graph_safe(unsafe)
