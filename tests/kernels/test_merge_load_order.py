"""merge_attn_states' two load orders (CPU through the Triton interpreter; natively with CUDA).

Programs with at most 2 KiB of each input load both parts before the LSE math and
drop an empty part with a select; larger programs do not read an empty part. Both
must give the float64 reference and keep NaN / inf in an empty part out of the result.
"""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from merge_attn_states_util import check_against_reference, make_inputs  # noqa: E402

import graphcheck.kernels.merge_attn as mas  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

# (rows, num_warps, head_major) at D = 64 fp16: 128-byte rows, so 16 rows = 2 KiB (load first), 32 = 4 KiB
CONFIGS = [(1, 1, True), (16, 4, False), (32, 4, True), (64, 8, False)]


def _load_first(cfg, d, dtype):
    return cfg[0] * mas._launch.next_pow2(d) * dtype.itemsize <= mas._LOAD_FIRST_BYTES


@pytest.mark.parametrize("cfg", CONFIGS, ids=str)
def test_both_load_orders_match_the_reference(cfg):
    args = make_inputs(37, 3, 64, torch.float16, "hn", seed=cfg[0], device=DEVICE)
    mas._merge(**args, lse_layout="hn", config=cfg, prefill_tokens_with_context=20)
    check_against_reference(mas, args, "hn", limit=20, label=str(cfg))


@pytest.mark.parametrize("cfg", CONFIGS, ids=str)
def test_garbage_in_an_empty_part_never_leaks(cfg):
    args = make_inputs(40, 2, 64, torch.float16, "nh", seed=7, device=DEVICE, inf_frac=0)
    args["prefix_lse"][::2] = float("inf")     # empty prefix on even tokens
    args["suffix_lse"][1::2] = float("-inf")   # empty suffix on odd tokens
    args["prefix_output"][::2] = float("nan")
    args["suffix_output"][1::2] = float("inf")
    mas._merge(**args, lse_layout="nh", config=cfg)
    assert torch.isfinite(args["output"]).all()
    torch.testing.assert_close(args["output"][::2], args["suffix_output"][::2], atol=0, rtol=0)
    torch.testing.assert_close(args["output"][1::2], args["prefix_output"][1::2], atol=0, rtol=0)


def test_the_configs_cover_both_orders_and_defaults_pick_by_size():
    orders = {_load_first(c, 64, torch.float16) for c in CONFIGS}
    assert orders == {True, False}
    # H200 sweeps (2026-12-01, merge-s15-2): below the large problems, ~2 KiB programs at four warps,
    # token-major, down to the smallest grids
    assert mas.default_config(4096, 32, 128, torch.bfloat16, "hn") == (8, 4, False)
    assert mas.default_config(256, 32, 128, torch.bfloat16, "hn") == (8, 4, False)
    assert mas.default_config(512, 32, 128, torch.bfloat16, "nh") == (8, 4, False)
    assert mas.default_config(613, 32, 128, torch.bfloat16, "hn") == (8, 4, False)
    assert mas.default_config(256, 32, 128, torch.float32, "hn") == (4, 4, False)
    assert mas.default_config(40, 8, 128, torch.bfloat16, "hn") == (8, 4, False)
    assert mas.default_config(256, 16, 256, torch.bfloat16, "hn") == (4, 4, False)
    assert mas.default_config(3, 2, 64, torch.float16, "hn") == (16, 4, False)
    assert mas.default_config(65536, 32, 128, torch.bfloat16, "nh") == (32, 4, False)
    assert mas.default_config(65536, 32, 128, torch.float32, "hn") == (16, 4, True)
