"""The element-wise FP8 MQA checker (``mqa_check``) on the CPU: it passes the real kernels and
fails each single-block corruption (zeroed, sign-flipped, read from the neighbouring page).

Small shapes under Triton's interpreter (the GPU file repeats this at DeepGEMM's shapes).
"""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import mqa_check  # noqa: E402

from graphcheck.kernels import _fp8, fp8_mqa_logits, fp8_paged_mqa_logits, mqa_logits, paged_mqa_logits  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.fixture(scope="module")
def paged():
    # two requests of 2 speculative rows; 64-key pages; request 0 spans 5 pages (last one partial)
    inputs = paged_mqa_logits.make_inputs(2, 2, 16, 64, 64, 300, torch.tensor([300, 150]), seed=21,
                                          device=DEVICE)
    exp = mqa_check.paged_expected(inputs)
    out = fp8_paged_mqa_logits(**inputs)
    return inputs, exp, out


@pytest.fixture(scope="module")
def dense():
    inputs = mqa_logits.make_inputs(6, 200, 16, 64, seed=22, device=DEVICE, causal=False)
    exp = mqa_check.mqa_expected(inputs, chunk=4)
    return inputs, exp, fp8_mqa_logits(**inputs)


def test_error_scale_matches_a_naive_float64_loop(paged):
    inputs, exp, _ = paged
    keys, scales = _fp8.unpack_paged_kv_cache(inputs["kv_cache"].cpu())
    q, w, bt = inputs["q"].cpu().double(), inputs["weights"].cpu().double(), inputs["block_tables"].cpu()
    for row, p in ((0, 0), (1, 298), (2, 63), (3, 149)):
        blk = int(bt[row // 2, p // 64])
        k = keys[blk, p % 64].double()
        naive = float(scales[blk, p % 64]) * float((w[row].abs() * (q[row // 2, row % 2].abs() @ k.abs())).sum())
        assert float(exp.bound[row, p]) == pytest.approx(naive, rel=1e-12)
        assert abs(float(exp.ref[row, p])) <= naive
    # 1-D lengths: row j of a request of length L sees keys [0, L - next_n + 1 + j)
    assert not exp.valid[0, 299] and exp.valid[1, 299] and not exp.valid[2, 149] and exp.valid[3, 149]
    assert not exp.valid[3, 150]
    assert (exp.bound[~exp.valid] == 0).all()


def test_real_paged_kernel_passes_with_headroom(paged):
    inputs, exp, out = paged
    stats = mqa_check.check(out, exp)
    assert stats["worst_ratio"] < 0.5 and stats["diff"] < 1e-6
    raw = torch.full_like(out, float("nan"))
    fp8_paged_mqa_logits(**inputs, clean_logits=False, out=raw)
    mqa_check.check(raw, exp, cleaned=False)
    with pytest.raises(AssertionError, match="-inf mask"):
        mqa_check.check(raw, exp)  # NaN where -inf belongs


def test_real_dense_kernel_passes(dense):
    inputs, exp, out = dense
    stats = mqa_check.check(out, exp)
    assert stats["worst_ratio"] < 0.5


# (row, 64-key block): an interior full block, the first block, a partial last block
BLOCKS = [(0, 2), (3, 0), (1, 4)]


@pytest.mark.parametrize("how", mqa_check.CORRUPTIONS)
@pytest.mark.parametrize("row,block", BLOCKS)
def test_one_broken_block_fails_the_check(paged, how, row, block):
    inputs, exp, out = paged
    neighbour = None
    if how == "neighbour_page":
        neighbour = fp8_paged_mqa_logits(**mqa_check.neighbour_page_inputs(inputs, row // 2, block))
    bad = mqa_check.corrupt_block(out, exp, row, block, how, neighbour)
    with pytest.raises(AssertionError, match="valid positions differ from the float64 reference"):
        mqa_check.check(bad, exp)


@pytest.mark.parametrize("how", ["zero", "sign"])
def test_one_broken_block_fails_the_dense_check(dense, how):
    _, exp, out = dense
    row = int(exp.valid.sum(1).argmax())
    block = int(exp.valid[row].nonzero()[0]) // mqa_check.BLOCK
    with pytest.raises(AssertionError, match="valid positions differ"):
        mqa_check.check(mqa_check.corrupt_block(out, exp, row, block, how), exp)


def test_single_wrong_values_fail_but_rounding_sized_ones_pass(paged):
    _, exp, out = paged
    eps = mqa_check.default_eps(out)
    row, p = 2, 70
    nudged = out.clone()
    nudged[row, p] += 0.5 * eps * float(exp.bound[row, p])
    mqa_check.check(nudged, exp)
    nudged[row, p] += 2 * eps * float(exp.bound[row, p])
    with pytest.raises(AssertionError, match=r"1 of \d+ valid positions.*row 2, pos 70"):
        mqa_check.check(nudged, exp)
    shifted = out.clone()
    shifted[row, 64:128] = out[row, 65:129]  # keys read one position off
    with pytest.raises(AssertionError):
        mqa_check.check(shifted, exp)
    nan = out.clone()
    nan[row, p] = float("nan")
    with pytest.raises(AssertionError, match="not finite"):
        mqa_check.check(nan, exp)


def test_on_the_gpu_the_bound_still_catches_a_zeroed_block(paged):
    """The looser GPU bound (2^-8·B) is still far below a typical logit at these shapes."""
    _, exp, out = paged
    bad = mqa_check.corrupt_block(out, exp, 0, 2, "zero")
    with pytest.raises(AssertionError, match="valid positions differ"):
        mqa_check.check(bad, exp, eps=mqa_check.EPS_CUDA)
    mqa_check.check(out, exp, eps=mqa_check.EPS_CUDA)
