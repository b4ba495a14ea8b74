"""The prefetching paged MQA-logits kernel (``PagedConfig(prefetch=True)``) and register caps.

Odd shapes for the new code path: programs whose first or second tile lies past
their request's blocks (the prologue loads must read nothing), one to four query
rows per program, rows past next_n, 1- and 4-block key tiles, out-of-range and
garbage block-table entries past each sequence, 2-D lengths, both dot paths, and
clean_logits True/False into poisoned, padded output views. Each output is
checked element-wise against the float64 oracle of ``mqa_check``.
"""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from graphcheck.kernels import fp8_paged_mqa_logits  # noqa: E402 - the interpreter flag must be set first
from graphcheck.kernels import paged_mqa_logits  # noqa: E402
from graphcheck.kernels.paged_mqa_logits import PagedConfig  # noqa: E402

import mqa_check  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

# (name, batch, next_n, heads, block, mml, lengths, lens_2d, rows, tile_blocks, splits, fp8 dot, warps, maxnreg)
CASES = [
    ("n2_pair_many_splits", 3, 2, 16, 16, 70, [1, 33, 70], False, 2, 2, 5, True, 4, 0),
    ("n1_single_block_tiles", 2, 1, 32, 16, 90, [17, 90], True, 1, 1, 3, True, 4, 0),
    ("n3_rows4_past_next_n", 2, 3, 16, 16, 64, [2, 61], False, 4, 2, 2, True, 4, 0),
    ("n2_quad_tiles_decoded", 3, 2, 16, 16, 100, [5, 100, 49], True, 2, 4, 2, False, 4, 0),
    ("n4_rows2_over_programs", 2, 4, 16, 32, 96, [96, 7], False, 2, 1, 4, True, 8, 128),
    ("n2_one_split", 2, 2, 16, 16, 80, [80, 31], False, 2, 2, 1, True, 4, 168),
]


@pytest.mark.parametrize("clean", [True, False])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_prefetch_kernel_matches_the_float64_oracle(case, clean):
    _, batch, next_n, heads, bs, mml, lengths, lens_2d, rows, tile_blocks, splits, fp8, warps, maxnreg = case
    inputs = paged_mqa_logits.make_inputs(batch, next_n, heads, 64, bs, mml, torch.tensor(lengths), seed=21,
                                          device=DEVICE, lens_2d=lens_2d, block_stride=bs * 68 + 16)
    # entries past each sequence's blocks hold garbage ids; the kernel must never read them
    bt = inputs["block_tables"]
    for b, length in enumerate(lengths):
        used = -(-length // bs)
        bt[b, used:] = (-1) ** b * (2**30 + b)
    exp = mqa_check.paged_expected(inputs)
    cfg = PagedConfig(rows=rows, splits=splits, prefetch=True, tile_blocks=tile_blocks, num_warps=warps,
                      maxnreg=maxnreg, fill_n=16)
    rows_total = batch * next_n
    big = torch.full((rows_total + 2, mml + 5), float("nan"), device=DEVICE)
    view = big[1:-1, 2:-3]
    fp8_paged_mqa_logits(**inputs, clean_logits=clean, out=view, config=cfg, fp8_dot=fp8)
    mqa_check.check(view, exp, cleaned=clean)
    if not clean:
        assert torch.isnan(view[~exp.valid.to(view.device)]).all(), "clean_logits=False wrote an invalid position"
    outside = torch.ones_like(big, dtype=torch.bool)
    outside[1:-1, 2:-3] = False
    assert torch.isnan(big[outside]).all(), "wrote outside the output"


def test_prefetch_marks_out_of_range_block_ids_inside_a_sequence():
    # a bad id inside the valid range scores -inf for its block, as the reference says
    inputs = paged_mqa_logits.make_inputs(2, 2, 16, 64, 16, 64, torch.tensor([64, 40]), seed=3, device=DEVICE)
    inputs["block_tables"][0, 1] = -5
    inputs["block_tables"][1, 2] = inputs["kv_cache"].shape[0]
    exp = mqa_check.paged_expected(inputs)
    assert torch.isneginf(exp.ref[0, 16:32]).all()
    out = fp8_paged_mqa_logits(**inputs, config=PagedConfig(rows=2, splits=2, prefetch=True, tile_blocks=2))
    mqa_check.check(out, exp)


def test_prefetch_config_is_checked():
    inputs = paged_mqa_logits.make_inputs(1, 2, 16, 64, 16, 32, seed=1, device=DEVICE)
    for cfg in (PagedConfig(rows=8, splits=1, prefetch=True), PagedConfig(rows=2, splits=1, prefetch=True,
                                                                          tile_blocks=3)):
        with pytest.raises(ValueError, match="prefetch"):
            fp8_paged_mqa_logits(**inputs, config=cfg)
