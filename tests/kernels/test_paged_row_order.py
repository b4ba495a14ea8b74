"""Paged MQA logits with the row tiles on the grid's fastest axis (``PagedConfig(rows_first=True)``).

Odd shapes for that launch order: one to four query rows per program, row tiles
past next_n, many and single splits, block sizes 16 and 32, pairs of blocks, both
dot paths, garbage block-table entries past each sequence (never read), 1-D and 2-D
lengths, clean_logits True/False into poisoned, padded output views. Each output is
checked element-wise against the float64 oracle of ``mqa_check`` and must equal
the default grid order's output bit for bit (the order changes only which program
runs where).
"""

from __future__ import annotations

import dataclasses
import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import mqa_check  # noqa: E402

from graphcheck.kernels import (
    fp8_paged_mqa_logits,  # noqa: E402 - the interpreter flag must be set first
    paged_mqa_logits,  # noqa: E402
)
from graphcheck.kernels.paged_mqa_logits import PagedConfig  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

# (name, batch, next_n, heads, block, mml, lengths, lens_2d, rows, split_rows, pair, splits, fp8 dot)
CASES = [
    ("n2_rows1_many_splits", 3, 2, 16, 16, 70, [1, 33, 70], False, 1, False, False, 5, True),
    ("n3_rows1_2d_one_split", 2, 3, 32, 16, 90, [17, 90], True, 1, False, False, 1, True),
    ("n3_rows2_split_pair_past_next_n", 2, 3, 16, 16, 64, [2, 61], False, 2, True, True, 2, True),
    ("n2_rows1_decoded", 3, 2, 16, 32, 100, [5, 100, 49], True, 1, False, False, 3, False),
    ("n4_rows4_split_rows", 2, 4, 16, 16, 96, [96, 7], False, 4, True, False, 4, True),
    ("n1_rows1", 2, 1, 16, 16, 80, [80, 31], False, 1, False, False, 2, True),
]


@pytest.mark.parametrize("clean", [True, False])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_rows_first_matches_the_float64_oracle(case, clean):
    _, batch, next_n, heads, bs, mml, lengths, lens_2d, rows, split_rows, pair, splits, fp8 = case
    inputs = paged_mqa_logits.make_inputs(batch, next_n, heads, 64, bs, mml, torch.tensor(lengths), seed=21,
                                          device=DEVICE, lens_2d=lens_2d, block_stride=bs * 68 + 16)
    bt = inputs["block_tables"]
    for b, length in enumerate(lengths):  # entries past each sequence's blocks: garbage, never read
        bt[b, -(-length // bs):] = (-1) ** b * (2**30 + b)
    exp = mqa_check.paged_expected(inputs)
    cfg = PagedConfig(rows=rows, splits=splits, split_rows=split_rows, pair_blocks=pair, fill_n=16,
                      rows_first=True)
    big = torch.full((batch * next_n + 2, mml + 5), float("nan"), device=DEVICE)
    view = big[1:-1, 2:-3]
    fp8_paged_mqa_logits(**inputs, clean_logits=clean, out=view, config=cfg, fp8_dot=fp8)
    mqa_check.check(view, exp, cleaned=clean)
    if not clean:
        assert torch.isnan(view[~exp.valid.to(view.device)]).all(), "clean_logits=False wrote an invalid position"
    outside = torch.ones_like(big, dtype=torch.bool)
    outside[1:-1, 2:-3] = False
    assert torch.isnan(big[outside]).all(), "wrote outside the output"
    other = torch.full_like(view, float("nan"))
    fp8_paged_mqa_logits(**inputs, clean_logits=clean, out=other, config=dataclasses.replace(cfg, rows_first=False),
                         fp8_dot=fp8)
    written = ~torch.isnan(other)
    assert torch.equal(written, ~torch.isnan(view))
    assert torch.equal(view[written].view(torch.int32), other[written].view(torch.int32))


def test_default_config_puts_rows_first_for_one_row_programs_of_next_n_2_only():
    cpu = torch.device("cpu")
    for batch, next_n, heads in [(64, 1, 64), (64, 2, 64), (128, 2, 64), (2, 4, 64), (8, 3, 128), (4, 2, 32),
                                 (8, 2, 128)]:
        cfg = paged_mqa_logits.default_config(batch, next_n, heads, 64, 16384, cpu, max_blocks=167)
        # next_n = 2 runs both rows in one program where H <= 64 (run kernels-s3-1); at H = 128 a
        # program holds one row and the two row programs of a request run side by side
        assert cfg.rows_first is (next_n == 2 and cfg.rows == 1)
        if next_n == 2:
            want = (1, False, False, 5) if heads == 128 else (2, True, False, 5)
            assert (cfg.rows, cfg.split_rows, cfg.pair_blocks, cfg.num_stages) == want
        assert cfg.pdl is False  # no programmatic dependent launch off the GPU
