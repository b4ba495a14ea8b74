"""Launch knobs added after the H200 sweep of run kernels-s3-1 (CPU through the Triton interpreter;
natively with CUDA).

- ``PagedConfig(fill_first=True)``: the -inf fill past a program's last key tile is issued before
  its key loop instead of after it. It changes only when the stores happen: the output must equal
  the default order's bit for bit and the float64 oracle element-wise, for one- and multi-row
  programs, pairs of blocks, garbage block-table entries and both ``clean_logits`` modes.
- ``PagedConfig(num_stages=5)`` (the default key-loop depth now): pipelining is a compile-time
  schedule, so the interpreter checks only that such configs compute the same function.
- ``PagedConfig(head_dot=1 | 2)`` (bf16 / bf16 with W as a hi + lo pair; run kernels-s4-4): the head-weighted sum as a second
  tensor-core dot with relu(S) rounded to bf16: within the GPU tolerance of the float64 oracle (also
  under the interpreter), the same written positions and -inf mask as the shipped reduction, off by
  default, refused where it cannot run.
- ``PagedConfig(tma=1 | 2)`` (key tiles, and with 2 the scales, through TMA host descriptors; run kernels-s5-1,
  the next_n = 2 default on sm_90 since run kernels-s5-3): the pointer launch's bits, only for blocks of 64 or
  128 keys, a fallback for default launches on caches it cannot cut into boxes, refused for explicit ones.
- ``PagedConfig(join_rows=True)`` (run kern-s12-1, the next_n = 2 default since): both rows of a two-row
  program written by one [keys, 2] store per tile; the per-row stores' bits, positions and -inf mask, refused
  where the program does not hold exactly two rows with one dot each.
- ``PagedConfig(ws=2)`` (run kern-s13-2, the next_n = 2 default on compute capability 9.0 where max_model_len is at
  most two block tables): the persistent warp-specialised Gluon kernel. The interpreter cannot run Gluon, so here:
  which launches choose it, which inputs it takes (``ws_fits``), the fallback of default launches that it cannot
  take (computed by the split launch, checked against the oracle), the refusal of explicit ones. The kernel itself
  is checked on the GPU (``test_mqa_logits_gpu.py``).
- merge_attn_states with ``num_heads`` compiled in (``HEADS``, token-major launches): the same
  bits as the runtime divide for head counts that are and are not powers of two; head-major
  launches and ``const_heads=False`` keep the runtime value.
"""

from __future__ import annotations

import dataclasses
import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import mqa_check  # noqa: E402
from merge_attn_states_util import check_against_reference  # noqa: E402
from merge_attn_states_util import make_inputs as merge_inputs  # noqa: E402

import graphcheck.kernels.merge_attn as mas  # noqa: E402
from graphcheck.kernels import fp8_paged_mqa_logits, paged_mqa_logits  # noqa: E402
from graphcheck.kernels.paged_mqa_logits import PagedConfig  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

# (name, batch, next_n, heads, block, mml, lengths, rows, split_rows, pair, splits, stages)
PAGED = [
    ("n1_rows1_s5", 2, 1, 16, 16, 120, [120, 9], 1, False, False, 3, 5),
    ("n2_rows2_split_s5", 3, 2, 16, 16, 100, [1, 47, 100], 2, True, False, 2, 5),
    ("n3_rows2_pair", 2, 3, 16, 16, 90, [3, 70], 2, True, True, 2, 4),
    ("n2_rows1_one_split", 2, 2, 32, 32, 130, [130, 33], 1, False, False, 1, 5),
]


@pytest.mark.parametrize("clean", [True, False])
@pytest.mark.parametrize("case", PAGED, ids=[c[0] for c in PAGED])
def test_fill_first_changes_nothing_but_the_store_order(case, clean):
    _, batch, next_n, heads, bs, mml, lengths, rows, split_rows, pair, splits, stages = case
    inputs = paged_mqa_logits.make_inputs(batch, next_n, heads, 64, bs, mml, torch.tensor(lengths), seed=31,
                                          device=DEVICE)
    bt = inputs["block_tables"]
    for b, length in enumerate(lengths):  # entries past each sequence: garbage, never read
        bt[b, -(-length // bs):] = (-1) ** b * (2**30 + b)
    exp = mqa_check.paged_expected(inputs)
    cfg = PagedConfig(rows=rows, splits=splits, num_stages=stages, split_rows=split_rows, pair_blocks=pair,
                      fill_n=16)
    outs = []
    for fill_first in (False, True):
        out = torch.full((batch * next_n, mml), float("nan"), device=DEVICE)
        fp8_paged_mqa_logits(**inputs, clean_logits=clean, out=out,
                             config=dataclasses.replace(cfg, fill_first=fill_first))
        mqa_check.check(out, exp, cleaned=clean)
        if not clean:
            assert torch.isnan(out[~exp.valid.to(out.device)]).all(), "clean_logits=False wrote an invalid position"
        outs.append(out)
    written = ~torch.isnan(outs[0])
    assert torch.equal(written, ~torch.isnan(outs[1]))
    assert torch.equal(outs[0][written].view(torch.int32), outs[1][written].view(torch.int32))


@pytest.mark.parametrize("clean", [True, False])
def test_register_cap_changes_no_bit_of_the_result(clean):
    # PagedConfig.maxnreg (the sweep's register cap); on a GPU the capped launch is a second binary
    batch, next_n, heads, bs, mml, lengths = 2, 2, 16, 16, 90, [90, 37]
    inputs = paged_mqa_logits.make_inputs(batch, next_n, heads, 64, bs, mml, torch.tensor(lengths), seed=7,
                                          device=DEVICE)
    exp = mqa_check.paged_expected(inputs)
    cfg = PagedConfig(rows=2, splits=2, num_stages=5, split_rows=True, fill_n=16)
    outs = []
    for cap in (0, 168):
        out = torch.full((batch * next_n, mml), float("nan"), device=DEVICE)
        fp8_paged_mqa_logits(**inputs, clean_logits=clean, out=out, config=dataclasses.replace(cfg, maxnreg=cap))
        mqa_check.check(out, exp, cleaned=clean)
        outs.append(out)
    written = ~torch.isnan(outs[0])
    assert torch.equal(written, ~torch.isnan(outs[1]))
    assert torch.equal(outs[0][written].view(torch.int32), outs[1][written].view(torch.int32))


def test_default_paged_configs_use_five_stages_and_both_rows_per_program_for_next_n_2():
    cpu = torch.device("cpu")
    one = paged_mqa_logits.default_config(64, 1, 64, 64, 16384, cpu, max_blocks=167)
    assert (one.rows, one.split_rows, one.num_stages, one.fill_first) == (1, False, 5, False)
    two = paged_mqa_logits.default_config(64, 2, 64, 64, 16384, cpu, max_blocks=167)
    assert (two.rows, two.split_rows, two.pair_blocks, two.num_stages, two.rows_first) == (2, True, False, 5, False)
    # no register cap (three programs per SM at 168 were slower in run kernels-s4-1) and no persistent grid
    # (2-6% slower on every next_n = 2 shape in run kernels-s4-3)
    assert (two.maxnreg, one.maxnreg, two.persistent, one.persistent) == (0, 0, 0, 0)
    # H = 128 holds one row per program: the two row programs of a request side by side
    wide = paged_mqa_logits.default_config(64, 2, 128, 64, 16384, cpu, max_blocks=167)
    assert (wide.rows, wide.num_stages, wide.rows_first, wide.maxnreg) == (1, 5, True, 0)
    # next_n 3-4 (not measured in run kernels-s3-1) keep the pair launch with four stages
    four = paged_mqa_logits.default_config(64, 4, 64, 64, 16384, cpu, max_blocks=167)
    assert (four.rows, four.pair_blocks, four.num_stages) == (2, True, 4)


# ----------------------------------------------------------------------------- merge_attn_states


@pytest.mark.parametrize("heads", [3, 5, 32])
@pytest.mark.parametrize("cfg", [(1, 1), (4, 1), (8, 4)], ids=str)
def test_compiled_in_head_count_gives_the_runtime_divides_bits(heads, cfg):
    rows, warps = cfg
    results = []
    for const_heads in (False, True):
        args = merge_inputs(11, heads, 64, torch.bfloat16, "hn", seed=heads, device=DEVICE)
        mas._merge(**args, lse_layout="hn", config=(rows, warps, False, False, const_heads),
                   prefill_tokens_with_context=6)
        check_against_reference(mas, args, "hn", limit=6, label=f"H={heads} {cfg} const={const_heads}")
        results.append((args["output"].clone(), args["output_lse"].clone()))
    assert torch.equal(results[0][0].view(torch.int16), results[1][0].view(torch.int16))
    assert torch.equal(results[0][1].view(torch.int32), results[1][1].view(torch.int32))


def test_only_token_major_launches_compile_the_head_count_in():
    args = merge_inputs(9, 6, 64, torch.float16, "hn", seed=2, device=DEVICE)

    def heads_constexpr(config):
        mas._PLANS.clear()
        plan = mas._make_plan(args["output"], args["prefix_output"], args["prefix_lse"], args["suffix_output"],
                              args["suffix_lse"], args["output_lse"], None, None, "hn", config)
        return plan.constexprs["HEADS"]

    assert heads_constexpr(None) == 6  # the default launch of a small problem is token-major
    assert heads_constexpr((4, 1, False)) == 6
    assert heads_constexpr((4, 1, False, False, False)) == 0  # switched off
    assert heads_constexpr((4, 1, True)) == 0  # head-major divides by num_tokens at run time


# ----------------------------------------------------------------------------- persistent paged grid

# (name, batch, next_n, heads, block, mml, lengths, rows, lens_2d): lengths 0 and 1, a full row, a request
# much longer than the others (one program's stretch crosses several request boundaries), next_n < rows
PERSISTENT = [
    ("n2_rows2", 5, 2, 16, 16, 100, [1, 47, 100, 0, 33], 2, False),
    ("n2_rows2_2d", 3, 2, 16, 16, 100, [0, 47, 99], 2, True),
    ("n1_rows1", 5, 1, 16, 16, 70, [3, 0, 70, 33, 16], 1, False),
    ("n1_rows1_2d", 2, 1, 32, 32, 130, [130, 9], 1, True),
    ("n3_rows4", 2, 3, 16, 16, 90, [3, 70], 4, False),
]


@pytest.mark.parametrize("clean", [True, False])
@pytest.mark.parametrize("fill_first", [False, True])
@pytest.mark.parametrize("case", PERSISTENT, ids=[c[0] for c in PERSISTENT])
def test_persistent_grid_gives_the_split_launchs_bits(case, fill_first, clean):
    # PagedConfig.persistent: programs take even stretches of the flattened (request, key tile) range
    # (2 and 3 programs per "SM", i.e. 16 and 24 under the interpreter: more programs than tiles in
    # some cases, so some have none); the output must equal the split launch's bit for bit, every
    # position written when cleaning and only valid ones otherwise, garbage table entries never read.
    _, batch, next_n, heads, bs, mml, lengths, rows, lens_2d = case
    inputs = paged_mqa_logits.make_inputs(batch, next_n, heads, 64, bs, mml, torch.tensor(lengths), seed=5,
                                          device=DEVICE, lens_2d=lens_2d)
    bt = inputs["block_tables"]
    for b, length in enumerate(lengths):  # entries past each sequence: garbage, never read
        bt[b, -(-length // bs):] = (-1) ** b * (2**30 + b)
    exp = mqa_check.paged_expected(inputs)
    split = PagedConfig(rows=rows, splits=2, num_stages=5, split_rows=True, fill_n=16)
    outs = []
    for cfg in (split, dataclasses.replace(split, persistent=2, fill_first=fill_first),
                dataclasses.replace(split, persistent=3, fill_first=fill_first)):
        out = torch.full((batch * next_n, mml), float("nan"), device=DEVICE)
        fp8_paged_mqa_logits(**inputs, clean_logits=clean, out=out, config=cfg)
        mqa_check.check(out, exp, cleaned=clean)
        if not clean:
            assert torch.isnan(out[~exp.valid.to(out.device)]).all(), "clean_logits=False wrote an invalid position"
        outs.append(out)
    written = ~torch.isnan(outs[0])
    for other in outs[1:]:
        assert torch.equal(written, ~torch.isnan(other))
        assert torch.equal(outs[0][written].view(torch.int32), other[written].view(torch.int32))


def test_persistent_grid_refuses_what_it_cannot_hold():
    inputs = paged_mqa_logits.make_inputs(2, 3, 16, 64, 16, 64, torch.tensor([10, 64]), seed=1, device=DEVICE)
    for cfg in (PagedConfig(rows=2, splits=1, split_rows=True, persistent=2),  # next_n 3 > 2 rows
                PagedConfig(rows=4, splits=1, split_rows=False, persistent=2),
                PagedConfig(rows=4, splits=1, split_rows=True, pair_blocks=True, persistent=2)):
        with pytest.raises(ValueError, match="persistent"):
            fp8_paged_mqa_logits(**inputs, config=cfg)


# ----------------------------------------------------------------------------- paged MQA: head sum as a dot

# PagedConfig.head_dot: Σ_h w[r, h]·relu(S[t, h]) as a second tensor-core dot, relu(S) rounded to bf16 (and W
# to bf16, or as a bf16 hi + lo pair for HEAD_DOT_BF16_W2). Its rounding is the variant's own error, bounded by
# 2^-8·B (2^-9·B with the split W) on top of the arithmetic's, so it is held to the GPU tolerance
# (mqa_check.EPS_CUDA) also under the interpreter, where the fp32 arithmetic alone would meet 2^-14.
# (name, batch, next_n, heads, block, mml, lengths, rows, split_rows, pair, splits)
HEAD_DOT = [
    ("n2_rows2_split", 3, 2, 16, 16, 100, [1, 47, 100], 2, True, False, 2),
    ("n2_rows2_one_dot", 3, 2, 16, 16, 100, [1, 47, 100], 2, False, False, 2),
    ("n1_rows1", 2, 1, 32, 32, 130, [130, 33], 1, False, False, 3),
    ("n1_rows1_split", 2, 1, 32, 32, 130, [130, 33], 1, True, False, 3),
    ("n3_rows4_split_pair", 2, 3, 16, 16, 90, [3, 70], 4, True, True, 2),
    ("n5_rows4_one_dot_pair", 2, 5, 16, 16, 90, [5, 90], 4, False, True, 1),
]


@pytest.mark.parametrize("mode", [paged_mqa_logits.HEAD_DOT_BF16, paged_mqa_logits.HEAD_DOT_BF16_W2])
@pytest.mark.parametrize("clean", [True, False])
@pytest.mark.parametrize("case", HEAD_DOT, ids=[c[0] for c in HEAD_DOT])
def test_head_dot_matches_the_float64_oracle(case, clean, mode):
    _, batch, next_n, heads, bs, mml, lengths, rows, split_rows, pair, splits = case
    inputs = paged_mqa_logits.make_inputs(batch, next_n, heads, 64, bs, mml, torch.tensor(lengths), seed=11,
                                          device=DEVICE)
    bt = inputs["block_tables"]
    for b, length in enumerate(lengths):  # entries past each sequence: garbage, never read
        bt[b, -(-length // bs):] = (-1) ** b * (2**30 + b)
    exp = mqa_check.paged_expected(inputs)
    cfg = PagedConfig(rows=rows, splits=splits, num_stages=5, split_rows=split_rows, pair_blocks=pair, fill_n=16)
    outs = {}
    for head_dot in (0, mode):
        out = torch.full((batch * next_n, mml), float("nan"), device=DEVICE)
        fp8_paged_mqa_logits(**inputs, clean_logits=clean, out=out, config=dataclasses.replace(cfg, head_dot=head_dot))
        mqa_check.check(out, exp, cleaned=clean, eps=mqa_check.EPS_CUDA if head_dot else None)
        if not clean:
            assert torch.isnan(out[~exp.valid.to(out.device)]).all(), "clean_logits=False wrote an invalid position"
        outs[head_dot] = out
    # the same positions written and the same -inf mask; the values differ by the bf16 rounding only
    assert torch.equal(torch.isnan(outs[0]), torch.isnan(outs[mode]))
    assert torch.equal(torch.isneginf(outs[0]), torch.isneginf(outs[mode]))
    valid = exp.valid.to(DEVICE)
    assert not torch.equal(outs[0][valid], outs[mode][valid]), "head_dot changed nothing: is it launched?"


def test_head_dot_with_a_row_past_next_n_in_the_tile_writes_nothing_there():
    # three rows in a four-row program: the fourth column of the dot tile has zero weights and no output row
    inputs = paged_mqa_logits.make_inputs(2, 3, 16, 64, 16, 48, torch.tensor([48, 20]), seed=3, device=DEVICE)
    exp = mqa_check.paged_expected(inputs)
    out = torch.full((2 * 3 + 1, 48), float("nan"), device=DEVICE)  # one extra row after the output
    fp8_paged_mqa_logits(**inputs, out=out[:6], config=PagedConfig(rows=4, splits=2, split_rows=True, fill_n=16,
                                                                  head_dot=paged_mqa_logits.HEAD_DOT_BF16))
    mqa_check.check(out[:6], exp, eps=mqa_check.EPS_CUDA)
    assert torch.isnan(out[6]).all()


def test_head_dot_is_off_by_default_and_refuses_what_it_cannot_hold():
    cpu = torch.device("cpu")
    for next_n in (1, 2, 4):
        assert paged_mqa_logits.default_config(64, next_n, 64, 64, 16384, cpu, max_blocks=167).head_dot == 0
    inputs = paged_mqa_logits.make_inputs(2, 2, 16, 64, 16, 64, torch.tensor([10, 64]), seed=1, device=DEVICE)
    for cfg in (PagedConfig(rows=2, splits=1, split_rows=True, head_dot=3),
                PagedConfig(rows=2, splits=1, head_dot=-1),
                PagedConfig(rows=2, splits=1, reduce_dot=True, head_dot=1),
                PagedConfig(rows=2, splits=1, split_rows=True, persistent=2, head_dot=1)):
        with pytest.raises(ValueError, match="head_dot"):
            fp8_paged_mqa_logits(**inputs, config=cfg)
    # 0 is the shipped reduction: no error
    fp8_paged_mqa_logits(**inputs, config=PagedConfig(rows=2, splits=1, split_rows=True, head_dot=0))


# ----------------------------------------------------------------------------- paged MQA: TMA key tiles

# PagedConfig.tma (run kernels-s5-1): the key tile (and with TMA_KEYS_SCALES the scales) of each block comes
# through a host tensor descriptor instead of per-thread pointers. Same bytes into the same dot: the output
# must equal the pointer launch's bit for bit, garbage table entries read as block 0 and scored -inf.
# The copy engine feeds a 64-row wgmma, so the cases have blocks of 64 keys (tma_fits refuses fewer: run s5-2).
# (name, batch, next_n, heads, dim, block, mml, lengths, rows, split_rows, splits, lens_2d, block_stride)
TMA = [
    ("n2_rows2_split", 3, 2, 16, 64, 64, 200, [1, 100, 200], 2, True, 2, False, None),
    ("n2_rows2_split_d128_2d_strided", 3, 2, 64, 128, 64, 200, [0, 130, 199], 2, True, 2, True, 64 * 132 + 128),
    ("n1_rows1", 4, 1, 16, 64, 64, 150, [3, 0, 150, 70], 1, False, 2, False, None),
    ("n3_rows4_one_dot", 2, 3, 16, 64, 64, 150, [3, 140], 4, False, 1, False, None),
]


@pytest.mark.parametrize("clean", [True, False])
@pytest.mark.parametrize("case", TMA, ids=[c[0] for c in TMA])
def test_tma_key_tiles_give_the_pointer_launchs_bits(case, clean):
    _, batch, next_n, heads, dim, bs, mml, lengths, rows, split_rows, splits, lens_2d, stride = case
    inputs = paged_mqa_logits.make_inputs(batch, next_n, heads, dim, bs, mml, torch.tensor(lengths), seed=13,
                                          device=DEVICE, lens_2d=lens_2d, block_stride=stride)
    bt = inputs["block_tables"]
    for b, length in enumerate(lengths):  # entries past each sequence: garbage, never read
        bt[b, -(-length // bs):] = (-1) ** b * (2**30 + b)
    if batch > 2 and clean:
        bt[2, 0] = -5  # a bad id inside a sequence: its keys score -inf (the oracle counts them as unwritten
        # positions, so only with cleaning, where every position is written)
    exp = mqa_check.paged_expected(inputs)
    cfg = PagedConfig(rows=rows, splits=splits, num_stages=5, split_rows=split_rows, fill_n=16)
    outs = []
    for tma in (paged_mqa_logits.TMA_OFF, paged_mqa_logits.TMA_KEYS, paged_mqa_logits.TMA_KEYS_SCALES):
        out = torch.full((batch * next_n, mml), float("nan"), device=DEVICE)
        fp8_paged_mqa_logits(**inputs, clean_logits=clean, out=out, config=dataclasses.replace(cfg, tma=tma))
        mqa_check.check(out, exp, cleaned=clean)
        if not clean:
            assert torch.isnan(out[~exp.valid.to(out.device)]).all(), "clean_logits=False wrote an invalid position"
        outs.append(out)
    written = ~torch.isnan(outs[0])
    for other in outs[1:]:
        assert torch.equal(written, ~torch.isnan(other))
        assert torch.equal(outs[0][written].view(torch.int32), other[written].view(torch.int32))


def test_tma_with_the_head_dot_matches_the_oracle():
    inputs = paged_mqa_logits.make_inputs(3, 2, 16, 64, 64, 200, torch.tensor([1, 100, 200]), seed=17, device=DEVICE)
    exp = mqa_check.paged_expected(inputs)
    out = torch.full((6, 200), float("nan"), device=DEVICE)
    fp8_paged_mqa_logits(**inputs, out=out, config=PagedConfig(rows=2, splits=2, split_rows=True, fill_n=16,
                                                              head_dot=paged_mqa_logits.HEAD_DOT_BF16,
                                                              tma=paged_mqa_logits.TMA_KEYS_SCALES))
    mqa_check.check(out, exp, eps=mqa_check.EPS_CUDA)


def test_tma_is_the_next_n_2_default_on_sm90_only(monkeypatch):
    cpu = torch.device("cpu")
    for next_n in (1, 2, 4):  # the interpreter: never by default
        assert paged_mqa_logits.default_config(64, next_n, 64, 64, 16384, cpu, max_blocks=167).tma == 0
    monkeypatch.setattr(paged_mqa_logits, "_tma_default", lambda device: True)  # as on compute capability 9.0
    tma = {n: paged_mqa_logits.default_config(64, n, 64, 64, 16384, cpu, max_blocks=167).tma for n in (1, 2, 4)}
    assert tma == {1: 0, 2: paged_mqa_logits.TMA_KEYS, 4: 0}  # next_n 4: pairs of blocks, no TMA


def test_a_default_tma_launch_falls_back_where_the_cache_does_not_fit(monkeypatch):
    monkeypatch.setattr(paged_mqa_logits, "_tma_default", lambda device: True)
    # fits; a block stride that is not a multiple of D = 64; blocks of 16 keys
    for bs, stride in ((64, None), (64, 64 * 68 + 4), (16, None)):
        inputs = paged_mqa_logits.make_inputs(2, 2, 16, 64, bs, 128, torch.tensor([10, 128]), seed=1, device=DEVICE,
                                              block_stride=stride)
        assert paged_mqa_logits.tma_fits(inputs["kv_cache"], 64) == (bs == 64 and stride is None)
        mqa_check.check(fp8_paged_mqa_logits(**inputs), mqa_check.paged_expected(inputs))


def test_tma_refuses_what_it_cannot_hold():
    inputs = paged_mqa_logits.make_inputs(2, 2, 16, 64, 64, 128, torch.tensor([10, 128]), seed=1, device=DEVICE)
    for cfg in (PagedConfig(rows=2, splits=1, split_rows=True, tma=3),
                PagedConfig(rows=2, splits=1, split_rows=True, pair_blocks=True, tma=1),
                PagedConfig(rows=2, splits=1, split_rows=True, persistent=2, tma=1)):
        with pytest.raises(ValueError, match="tma"):
            fp8_paged_mqa_logits(**inputs, config=cfg)
    # a block stride that is not a multiple of D (64·68 + 4 bytes) cannot be cut into rows of D bytes; blocks of
    # 16 keys would feed an mma.sync from the copy engine's buffer (faulted on the H200, run s5-2)
    for bs, stride in ((64, 64 * 68 + 4), (16, None)):
        odd = paged_mqa_logits.make_inputs(2, 2, 16, 64, bs, 64, torch.tensor([10, 64]), seed=1, device=DEVICE,
                                           block_stride=stride)
        with pytest.raises(ValueError, match="tma needs"):
            fp8_paged_mqa_logits(**odd, config=PagedConfig(rows=2, splits=1, split_rows=True, tma=1))


# ----------------------------------------------------------------------------- paged MQA: both rows in one store

# PagedConfig.join_rows (run kern-s12-1): a two-row program (split_rows) writes a key tile's scores of both rows with
# one [keys, 2] store instead of one store per row. Same scores, same positions: the output must equal the per-row
# stores' bit for bit (with and without TMA key tiles, 1-D and 2-D lengths, garbage table entries past each
# sequence, a bad id inside one, a row tile whose second row is past next_n, both clean_logits modes).
# (name, batch, next_n, heads, dim, block, mml, lengths, splits, lens_2d, tma)
JOIN = [
    ("n2_block16", 3, 2, 16, 64, 16, 100, [1, 47, 100], 2, False, 0),
    ("n2_block64_tma_2d", 3, 2, 16, 64, 64, 200, [0, 130, 200], 2, True, 1),
    ("n3_second_tile_half_empty", 2, 3, 16, 64, 16, 90, [3, 90], 3, False, 0),
    ("n2_d128_one_split", 2, 2, 64, 128, 64, 150, [150, 65], 1, False, 1),
]


@pytest.mark.parametrize("clean", [True, False])
@pytest.mark.parametrize("case", JOIN, ids=[c[0] for c in JOIN])
def test_join_rows_gives_the_per_row_stores_bits(case, clean):
    _, batch, next_n, heads, dim, bs, mml, lengths, splits, lens_2d, tma = case
    inputs = paged_mqa_logits.make_inputs(batch, next_n, heads, dim, bs, mml, torch.tensor(lengths), seed=29,
                                          device=DEVICE, lens_2d=lens_2d)
    bt = inputs["block_tables"]
    for b, length in enumerate(lengths):  # entries past each sequence: garbage, never read
        bt[b, -(-length // bs):] = (-1) ** b * (2**30 + b)
    if batch > 2 and clean:
        bt[2, 0] = -5  # a bad id inside a sequence: its keys score -inf
    exp = mqa_check.paged_expected(inputs)
    cfg = PagedConfig(rows=2, splits=splits, num_stages=5, split_rows=True, fill_n=16, tma=tma)
    outs = []
    for join in (False, True):
        out = torch.full((batch * next_n, mml), float("nan"), device=DEVICE)
        fp8_paged_mqa_logits(**inputs, clean_logits=clean, out=out, config=dataclasses.replace(cfg, join_rows=join))
        mqa_check.check(out, exp, cleaned=clean)
        if not clean:
            assert torch.isnan(out[~exp.valid.to(out.device)]).all(), "clean_logits=False wrote an invalid position"
        outs.append(out)
    written = ~torch.isnan(outs[0])
    assert torch.equal(written, ~torch.isnan(outs[1]))
    assert torch.equal(outs[0][written].view(torch.int32), outs[1][written].view(torch.int32))


def test_join_rows_is_the_next_n_2_default_only():
    cpu = torch.device("cpu")
    join = {n: paged_mqa_logits.default_config(64, n, 64, 64, 16384, cpu, max_blocks=167).join_rows for n in (1, 2, 4)}
    assert join == {1: False, 2: True, 4: False}  # next_n 4: two rows per program over pairs of blocks, as before
    # H = 128: one row per program, nothing to join
    assert not paged_mqa_logits.default_config(64, 2, 128, 64, 16384, cpu, max_blocks=167).join_rows


def test_ws_is_the_short_next_n_2_default_on_sm90_only(monkeypatch):
    cpu = torch.device("cpu")
    for next_n in (1, 2, 4):  # the interpreter: never
        assert paged_mqa_logits.default_config(64, next_n, 64, 64, 16384, cpu, max_blocks=167).ws == 0
    monkeypatch.setattr(paged_mqa_logits, "_ws_default", lambda device: True)  # as on compute capability 9.0
    ws = {n: paged_mqa_logits.default_config(64, n, 64, 64, 16384, cpu, max_blocks=167).ws for n in (1, 2, 4)}
    assert ws == {1: 0, 2: paged_mqa_logits.WS_PROGRAMS_PER_SM, 4: 0}
    two = paged_mqa_logits.default_config(64, 2, 64, 64, 16384, cpu, max_blocks=167)
    assert two.ws_stages == paged_mqa_logits.WS_STAGES and two.tma == 0  # (TMA's own default is off here)
    # at most WS_MAX_SPAN block tables of max_model_len: 2 x 167 x 64 = 21376 keys
    assert paged_mqa_logits.default_config(64, 2, 64, 64, 21376, cpu, max_blocks=167).ws
    assert not paged_mqa_logits.default_config(64, 2, 64, 64, 21377, cpu, max_blocks=167).ws
    assert not paged_mqa_logits.default_config(64, 2, 64, 64, 111000, cpu, max_blocks=167).ws
    # other head counts and block sizes: the split launch
    assert not paged_mqa_logits.default_config(64, 2, 32, 64, 16384, cpu, max_blocks=167).ws
    assert not paged_mqa_logits.default_config(64, 2, 64, 16, 16384, cpu, max_blocks=668).ws


def test_ws_fits_only_the_shapes_it_was_written_for():
    def fits(batch=2, next_n=2, heads=64, dim=128, bs=64, stride=None):
        inputs = paged_mqa_logits.make_inputs(batch, next_n, heads, dim, bs, 2 * bs, torch.tensor([bs] * batch),
                                              seed=1, block_stride=stride)
        return paged_mqa_logits.ws_fits(inputs["q"], inputs["kv_cache"])

    assert fits()
    assert not fits(next_n=1) and not fits(next_n=3) and not fits(heads=32) and not fits(dim=64)
    assert not fits(bs=16) and not fits(stride=64 * 132 + 4)  # a stride TMA cannot cut into rows of D
    assert fits(stride=64 * 132 + 128)  # padded blocks whose stride is still whole rows of D
    inputs = paged_mqa_logits.make_inputs(2, 2, 64, 128, 64, 128, torch.tensor([64, 64]), seed=1)
    wide = torch.zeros(2, 2, 64, 256, dtype=torch.float8_e4m3fn)
    assert not paged_mqa_logits.ws_fits(wide[..., :128], inputs["kv_cache"])  # q not contiguous
    flat = torch.zeros(2 * 2 * 64 * 128 + 8, dtype=torch.float8_e4m3fn)
    assert not paged_mqa_logits.ws_fits(flat[8:].view(2, 2, 64, 128), inputs["kv_cache"])  # q not 16-byte aligned
    assert paged_mqa_logits.ws_fits(flat[:-8].view(2, 2, 64, 128), inputs["kv_cache"])


def test_a_default_ws_launch_falls_back_where_it_cannot_run(monkeypatch):
    # chosen by default_config (H = 64, blocks of 64, short max_model_len), but D = 64: the split launch computes
    monkeypatch.setattr(paged_mqa_logits, "_ws_default", lambda device: True)
    inputs = paged_mqa_logits.make_inputs(2, 2, 64, 64, 64, 128, torch.tensor([70, 128]), seed=5, device=DEVICE)
    assert paged_mqa_logits.default_config(2, 2, 64, 64, 128, torch.device(DEVICE), max_blocks=2).ws
    mqa_check.check(fp8_paged_mqa_logits(**inputs), mqa_check.paged_expected(inputs))


def test_ws_refuses_what_it_cannot_run():
    # D = 64 (and, under the interpreter, no compute capability 9.0 at all)
    inputs = paged_mqa_logits.make_inputs(2, 2, 64, 64, 64, 128, torch.tensor([70, 128]), seed=5, device=DEVICE)
    with pytest.raises(ValueError, match="ws needs"):
        fp8_paged_mqa_logits(**inputs, config=PagedConfig(rows=2, splits=1, split_rows=True, ws=2))


def test_join_rows_refuses_what_it_cannot_hold():
    inputs = paged_mqa_logits.make_inputs(2, 2, 16, 64, 16, 64, torch.tensor([10, 64]), seed=3, device=DEVICE)
    for cfg in (PagedConfig(rows=2, splits=1, join_rows=True),  # one dot over both rows
                PagedConfig(rows=4, splits=1, split_rows=True, join_rows=True),
                PagedConfig(rows=2, splits=1, split_rows=True, head_dot=paged_mqa_logits.HEAD_DOT_BF16,
                            join_rows=True),
                PagedConfig(rows=2, splits=1, split_rows=True, persistent=2, join_rows=True)):
        with pytest.raises(ValueError, match="join_rows"):
            fp8_paged_mqa_logits(**inputs, config=cfg)
    # the per-row stores stay available
    fp8_paged_mqa_logits(**inputs, config=PagedConfig(rows=2, splits=1, split_rows=True, join_rows=False))
