"""Mutated-replay comparison logic on CPU tensors."""

import math

import pytest
import torch

from graphcheck.capture.replay import compare, copy_inputs, input_problems, output_tensors, poison_


def test_equal_within_tolerance_is_none():
    want = torch.randn(100, generator=torch.Generator().manual_seed(1))
    assert compare("out", want + 1e-7, want, atol=1e-5, rtol=1e-5) is None


def test_mismatch_counts_and_max_error():
    want = torch.randn(100, generator=torch.Generator().manual_seed(2))
    got = want.clone()
    got[3] += 0.5
    got[70] -= 2.0
    m = compare("out", got, want, atol=1e-5, rtol=1e-5)
    assert (m.output, m.count, m.total) == ("out", 2, 100)
    assert m.max_abs_error == pytest.approx(2.0, rel=1e-6)
    assert not m.poison_only


def test_nan_equal_only_where_both_nan():
    want = torch.tensor([1.0, float("nan"), 3.0])
    assert compare("o", want.clone(), want, 0, 0) is None
    got = torch.tensor([1.0, float("nan"), float("nan")])
    m = compare("o", got, want, 1e-3, 1e-3)
    assert m.count == 1 and m.poison_only and math.isinf(m.max_abs_error)


def test_infinities_must_match():
    want = torch.tensor([float("inf"), -float("inf")])
    assert compare("o", want.clone(), want, 0, 0) is None
    assert compare("o", torch.tensor([float("inf"), 0.0]), want, 1, 1).count == 1


def test_poison_int_sentinel_detected():
    want = torch.arange(6, dtype=torch.int32)
    got = want.clone()
    poison_(got[4:])
    assert got[5].item() == torch.iinfo(torch.int32).min
    m = compare("idx", got, want, 0, 0)
    assert m.count == 2 and m.poison_only


def test_partly_poison_is_not_poison_only():
    want = torch.ones(4)
    got = torch.tensor([1.0, float("nan"), 5.0, 1.0])
    m = compare("o", got, want, 1e-6, 1e-6)
    assert m.count == 2 and not m.poison_only and m.max_abs_error == pytest.approx(4.0)


def test_shape_or_dtype_change_is_a_mismatch():
    m = compare("o", torch.zeros(3), torch.zeros(4), 0, 0)
    assert m is not None and "(3,)" in m.detail and "(4,)" in m.detail
    m = compare("o", torch.zeros(3, dtype=torch.float64), torch.zeros(3), 0, 0)
    assert m is not None and m.detail == "replay gave (3,) torch.float64, eager gave (3,) torch.float32"


def test_poison_float_and_bool():
    t = torch.zeros(3)
    poison_(t)
    assert torch.isnan(t).all()
    b = torch.zeros(3, dtype=torch.bool)
    poison_(b)  # nothing distinguishable: left alone
    assert not b.any()


def test_output_naming():
    a, b = torch.zeros(1), torch.ones(1)
    assert list(output_tensors(a, None, {})) == ["return"]
    assert list(output_tensors((a, 3, b), None, {})) == ["return[0]", "return[2]"]
    assert list(output_tensors({"k": a}, None, {})) == ["return['k']"]
    named = output_tensors(None, ("out",), {"out": b, "x": a})
    assert named == {"out": b}


def test_input_problems():
    cap = {"x": torch.zeros(4), "n": 3}
    assert input_problems(cap, {"x": torch.ones(4), "n": 3}) == []
    (msg,) = input_problems(cap, {"x": torch.ones(4), "n": 5})
    assert "non-tensor argument 'n'" in msg and "3" in msg and "5" in msg
    (msg,) = input_problems(cap, {"x": torch.ones(5), "n": 3})
    assert "'x' changed" in msg
    assert "argument names differ" in input_problems(cap, {"x": torch.ones(4)})[0]


def test_tensors_inside_containers_are_checked_and_copied_leaf_by_leaf():
    # e.g. fp8_mqa_logits takes kv=(k, k_scale): new values go into the captured tensors
    cap = {"kv": (torch.zeros(3), torch.zeros(2)), "opts": {"w": torch.zeros(1), "n": 4}}
    fresh = {"kv": (torch.ones(3), torch.full((2,), 2.0)), "opts": {"w": torch.full((1,), 3.0), "n": 4}}
    assert input_problems(cap, fresh) == []
    k, k_scale = cap["kv"]
    copy_inputs(cap, fresh)
    assert cap["kv"][0] is k and cap["kv"][1] is k_scale  # same buffers, new values
    assert k.tolist() == [1.0, 1.0, 1.0] and k_scale.tolist() == [2.0, 2.0] and cap["opts"]["w"].item() == 3.0

    (msg,) = input_problems(cap, {"kv": (torch.ones(4), torch.ones(2)), "opts": fresh["opts"]})
    assert "'kv'[0] changed" in msg
    (msg,) = input_problems(cap, {"kv": (torch.ones(3),), "opts": fresh["opts"]})
    assert "'kv' changes structure" in msg
    (msg,) = input_problems(cap, {"kv": fresh["kv"], "opts": {"w": torch.ones(1), "n": 5}})
    assert "non-tensor argument 'opts'[1]" in msg and "4" in msg and "5" in msg


def test_an_output_argument_holding_several_tensors_is_named_per_tensor():
    out, lse = torch.zeros(2), torch.zeros(3)
    named = output_tensors(None, ("outs", "x"), {"outs": (out, lse), "x": torch.ones(1)})
    assert list(named) == ["outs[0]", "outs[1]", "x"]
    assert named["outs[0]"] is out and named["outs[1]"] is lse
