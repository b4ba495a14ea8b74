"""Reliability repros (M5): block-table ids outside the cache and an empty cache.

``fp8_paged_mqa_logits`` reads a key block through ``block_tables``; an id
outside ``[0, num_blocks)`` must never be dereferenced (on a GPU that is an
illegal access or a silent read of another tensor; under the interpreter it was
a segfault). Such blocks score -inf, in the kernel and in the reference, with no
host sync. A cache with no blocks is refused up front with ValueError.

Runs on the CPU through the Triton interpreter (and natively where CUDA exists).
"""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from graphcheck.kernels import (  # noqa: E402
    fp8_paged_mqa_logits,
    fp8_paged_mqa_logits_reference,
    paged_mqa_logits,
)
from graphcheck.kernels.paged_mqa_logits import PagedConfig  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BS, MML = 16, 80


def _inputs(next_n: int, seed: int) -> dict:
    # lengths 64 and 50: request 0 uses table entries 0-3, request 1 entries 0-3 (last one partly)
    return paged_mqa_logits.make_inputs(2, next_n, 16, 64, BS, MML, lengths=torch.tensor([64, 50]),
                                        seed=seed, device=DEVICE)


def _num_blocks(inputs: dict) -> int:
    return inputs["kv_cache"].shape[0]


def _expected(inputs: dict, row_b: int, entry: int) -> torch.Tensor:
    """The float64 reference on the table with the bad entry replaced by a valid id, with
    that block's positions of request ``row_b`` set to -inf: independent of how the
    reference itself treats bad ids."""
    fixed = dict(inputs, block_tables=inputs["block_tables"].clone())
    fixed["block_tables"][row_b, entry] = 0
    want = fp8_paged_mqa_logits_reference(**fixed, compute_dtype=torch.float64)
    next_n = inputs["q"].shape[1]
    want[row_b * next_n:(row_b + 1) * next_n, entry * BS:(entry + 1) * BS] = float("-inf")
    return want


def _check(out: torch.Tensor, want: torch.Tensor) -> None:
    finite = torch.isfinite(want)
    assert finite.any()
    assert not torch.isnan(out).any(), "NaN in the logits"
    assert torch.equal(torch.isneginf(out), torch.isneginf(want)), "-inf positions differ"
    torch.testing.assert_close(out[finite].double(), want[finite], rtol=2e-3, atol=2e-2)


BAD_IDS = {"10**6": lambda nb: 10**6, "-3": lambda nb: -3, "num_blocks": lambda nb: nb,
           "int32 min": lambda nb: -(2**31)}
# next_n = 1: one block per tile; next_n = 2: two table entries per tile (pair_blocks), so
# entry 1 exercises the second block of a pair.
LAYOUTS = [(1, 0), (2, 0), (2, 1), (1, 3)]


@pytest.mark.parametrize("next_n,entry", LAYOUTS, ids=[f"next_n{n}-entry{e}" for n, e in LAYOUTS])
@pytest.mark.parametrize("bad", list(BAD_IDS), ids=list(BAD_IDS))
def test_out_of_range_block_id_scores_neg_inf(bad, next_n, entry):
    inputs = _inputs(next_n, seed=11 + entry)
    inputs["block_tables"][0, entry] = BAD_IDS[bad](_num_blocks(inputs))
    out = torch.full((2 * next_n, MML), float("nan"), device=DEVICE)
    result = fp8_paged_mqa_logits(**inputs, out=out)
    assert result is out
    _check(out, _expected(inputs, 0, entry))


@pytest.mark.parametrize("bad", list(BAD_IDS), ids=list(BAD_IDS))
def test_reference_agrees_on_out_of_range_ids(bad):
    inputs = _inputs(2, seed=5)
    inputs["block_tables"][1, 2] = BAD_IDS[bad](_num_blocks(inputs))
    got = fp8_paged_mqa_logits_reference(**inputs, compute_dtype=torch.float64)
    want = _expected(inputs, 1, 2)
    assert torch.equal(torch.isneginf(got), torch.isneginf(want))
    finite = torch.isfinite(want)
    torch.testing.assert_close(got[finite], want[finite])


def test_out_of_range_id_without_cleaning_is_neg_inf_at_valid_positions():
    inputs = _inputs(1, seed=3)
    inputs["block_tables"][0, 1] = 10**6
    out = torch.full((2, MML), 7.0, device=DEVICE)  # a finite poison: unwritten positions keep it
    fp8_paged_mqa_logits(**inputs, clean_logits=False, out=out)
    assert torch.isneginf(out[0, BS:2 * BS]).all()
    want = _expected(inputs, 0, 1)
    finite = torch.isfinite(want)
    torch.testing.assert_close(out[finite].double(), want[finite], rtol=2e-3, atol=2e-2)
    assert (out[0, 64:] == 7.0).all(), "positions past the sequence were written"


@pytest.mark.parametrize("cfg", [PagedConfig(rows=1, splits=3), PagedConfig(rows=2, splits=2),
                                 PagedConfig(rows=2, splits=2, split_rows=True, pair_blocks=True)],
                         ids=["row_tile", "row_tile2", "split_rows+pair"])
def test_every_variant_masks_out_of_range_ids(cfg):
    inputs = _inputs(2, seed=21)
    inputs["block_tables"][0, 0] = -3
    inputs["block_tables"][1, 3] = _num_blocks(inputs)
    out = fp8_paged_mqa_logits(**inputs, config=cfg)
    want = _expected(inputs, 0, 0)
    want[2:4, 3 * BS:4 * BS] = float("-inf")
    _check(out, want)


def test_empty_kv_cache_is_a_value_error():
    inputs = _inputs(1, seed=1)
    inputs["kv_cache"] = inputs["kv_cache"][:0]
    with pytest.raises(ValueError, match="no blocks"):
        fp8_paged_mqa_logits(**inputs)
