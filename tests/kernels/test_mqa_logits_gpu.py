"""FP8 (paged) MQA logits on the GPU: DeepGEMM's decode and prefill shapes, vLLM's small cases,
the extra edge cases, both dot paths, every launch variant the benchmark sweeps, and CUDA graph
capture with replay on new values.
"""

from __future__ import annotations

import dataclasses

import mqa_check
import pytest
import torch
from mqa_check import mqa_expected, paged_expected

from graphcheck.kernels import (
    fp8_mqa_logits,
    fp8_mqa_logits_reference,
    fp8_paged_mqa_logits,
    fp8_paged_mqa_logits_reference,
    mqa_logits,
    paged_mqa_logits,
)
from graphcheck.kernels.mqa_logits import MqaConfig
from graphcheck.kernels.paged_mqa_logits import PagedConfig

pytestmark = pytest.mark.gpu

MAX_MODEL_LEN = 111000


def check_against(out: torch.Tensor, exp: mqa_check.Expected, cleaned: bool = True, bar: float = 1e-3) -> dict:
    """Element-wise within the FP8 accumulation bound of the float64 answer, DeepGEMM's aggregate
    below ``bar``, and (cleaned) the -inf mask; see ``mqa_check``. Prints the margins for the log."""
    stats = mqa_check.check(out, exp, cleaned=cleaned, bar=bar)
    print(f"worst error/tolerance {stats['worst_ratio']:.3g}  diff {stats['diff']:.3g}")
    return stats


def deepgemm_inputs(batch: int, next_n: int, avg: int, lens_2d: bool, seed: int = 0) -> dict:
    max_blocks = -(-int(1.3 * avg) // 64)
    return paged_mqa_logits.make_inputs(batch, next_n, 64, 128, 64, MAX_MODEL_LEN, seed=seed, device="cuda",
                                        avg_len=avg, lens_2d=lens_2d, max_blocks=max_blocks)


DEEPGEMM = [(b, n, avg, l2) for (b, n) in ((64, 1), (64, 2), (128, 1)) for avg in (8192, 32768) for l2 in (False, True)]


@pytest.mark.parametrize("batch,next_n,avg,lens_2d", DEEPGEMM)
def test_deepgemm_decode_shapes(batch, next_n, avg, lens_2d):
    inputs = deepgemm_inputs(batch, next_n, avg, lens_2d)
    exp = paged_expected(inputs)
    out = torch.full((batch * next_n, MAX_MODEL_LEN), float("nan"), device="cuda")
    fp8_paged_mqa_logits(**inputs, out=out)
    check_against(out, exp)
    bits = out.view(torch.int32).clone()
    for _ in range(20):
        again = torch.full_like(out, float("nan"))
        fp8_paged_mqa_logits(**inputs, out=again)
        assert torch.equal(again.view(torch.int32), bits), "reruns are not bitwise identical"
    # clean_logits=False: valid positions the same, nothing else written
    raw = torch.full_like(out, float("nan"))
    fp8_paged_mqa_logits(**inputs, clean_logits=False, out=raw)
    valid = exp.valid
    check_against(raw, exp, cleaned=False)
    assert torch.equal(raw[valid].view(torch.int32), out[valid].view(torch.int32))
    assert torch.isnan(raw[~valid]).all()


def test_deepgemm_decode_decoded_bytes_path():
    inputs = deepgemm_inputs(64, 2, 8192, False, seed=3)
    exp = paged_expected(inputs)
    check_against(fp8_paged_mqa_logits(**inputs, fp8_dot=False), exp)
    raw = torch.full((128, MAX_MODEL_LEN), float("nan"), device="cuda")
    fp8_paged_mqa_logits(**inputs, fp8_dot=False, clean_logits=False, out=raw)
    check_against(raw, exp, cleaned=False)


# An eighth of the full product of five two-valued knobs (d = a^b, e = a^c): every value of
# every knob appears four times. Each config compiles, so the full product would be slow.
_HALF = [(a, b, c, a ^ b, a ^ c) for a in (0, 1) for b in (0, 1) for c in (0, 1)]
SWEEP_PAGED = [PagedConfig(rows=(1, 2)[a], splits=(4, 16)[b], num_warps=(4, 8)[c], num_stages=(2, 4)[d],
                           reduce_dot=bool(e)) for a, b, c, d, e in _HALF]


@pytest.mark.parametrize("cfg", SWEEP_PAGED, ids=str)
def test_paged_launch_variants(cfg):
    inputs = deepgemm_inputs(8, 2, 2048, False, seed=4)
    exp = paged_expected(inputs)
    check_against(fp8_paged_mqa_logits(**inputs, config=cfg), exp)
    raw = torch.full((16, MAX_MODEL_LEN), float("nan"), device="cuda")
    fp8_paged_mqa_logits(**inputs, config=cfg, clean_logits=False, out=raw)
    check_against(raw, exp, cleaned=False)
    assert torch.isnan(raw[~exp.valid]).all()


# The row-scoring and key-tile variants: each of split_rows and pair_blocks is on in four of
# eight configs, and every (split_rows, pair_blocks) pair appears twice (e = a^c, f = b^c).
SWEEP_VARIANTS = [PagedConfig(rows=(2, 4)[a], splits=(4, 16)[b], num_warps=(4, 8)[c], num_stages=(3, 4)[a ^ b],
                              split_rows=bool(a ^ c), pair_blocks=bool(b ^ c))
                  for a in (0, 1) for b in (0, 1) for c in (0, 1)]


@pytest.mark.parametrize("cfg", SWEEP_VARIANTS, ids=str)
def test_paged_row_and_tile_variants(cfg):
    # next_n 3: with rows 2 the second row tile has a row past next_n; with rows 4 one program holds all.
    inputs = deepgemm_inputs(8, 3, 2048, True, seed=10)
    exp = paged_expected(inputs)
    check_against(fp8_paged_mqa_logits(**inputs, config=cfg), exp)
    raw = torch.full((8 * 3, MAX_MODEL_LEN), float("nan"), device="cuda")
    fp8_paged_mqa_logits(**inputs, config=cfg, clean_logits=False, out=raw)
    check_against(raw, exp, cleaned=False)
    assert torch.isnan(raw[~exp.valid]).all()


@pytest.mark.parametrize("avg,lens_2d", [(8192, False), (32768, True)])
def test_deepgemm_next_n2_variants(avg, lens_2d):
    """The next_n = 2 decode shapes with each variant the benchmark sweeps, at its launch sizes."""
    inputs = deepgemm_inputs(64, 2, avg, lens_2d, seed=11)
    exp = paged_expected(inputs)
    out = torch.empty(128, MAX_MODEL_LEN, device="cuda")
    for split_rows in (False, True):
        for pair in (False, True):
            cfg = PagedConfig(rows=2, splits=66, num_warps=4, num_stages=4, split_rows=split_rows, pair_blocks=pair)
            out.fill_(float("nan"))
            fp8_paged_mqa_logits(**inputs, config=cfg, out=out)
            check_against(out, exp)


@pytest.mark.parametrize("heads", [16, 32])
@pytest.mark.parametrize("batch,next_n,ctx", [(1, 1, 128), (1, 1, 512), (2, 1, 256), (1, 4, 512)])
def test_vllm_small_paged(batch, next_n, ctx, heads):
    inputs = paged_mqa_logits.make_inputs(batch, next_n, heads, 128, 64, ctx, seed=5, device="cuda")
    check_against(fp8_paged_mqa_logits(**inputs), paged_expected(inputs), bar=1e-4)


# (B, next_n, H, D, block, max_model_len, lengths, 2-D, block stride)
EDGES = [
    (3, 1, 64, 128, 64, 4096, [1, 64, 4096], False, None),
    (3, 3, 32, 128, 16, 1000, [1000, 17, 999], True, None),
    (2, 4, 16, 64, 32, 777, [777, 4], False, 32 * 68 + 256),
    (4, 2, 128, 128, 128, 3000, [129, 2999, 3000, 1], False, 128 * 132 + 128),
    (2, 4, 64, 128, 64, 2048, [2048, 300], True, 64 * 132 + 4),
]


@pytest.mark.parametrize("edge", EDGES, ids=range(len(EDGES)))
def test_paged_edge_cases(edge):
    batch, next_n, heads, dim, bs, mml, lengths, lens_2d, stride = edge
    inputs = paged_mqa_logits.make_inputs(batch, next_n, heads, dim, bs, mml, torch.tensor(lengths), seed=6,
                                          device="cuda", lens_2d=lens_2d, block_stride=stride)
    exp = paged_expected(inputs)
    check_against(fp8_paged_mqa_logits(**inputs), exp, bar=1e-4)
    check_against(fp8_paged_mqa_logits(**inputs, fp8_dot=False), exp, bar=1e-4)


@pytest.mark.parametrize("heads", [16, 32])
@pytest.mark.parametrize("m,n", [(64, 64), (128, 256), (256, 512)])
def test_vllm_small_mqa(m, n, heads):
    inputs = mqa_logits.make_inputs(m, n, heads, 128, seed=7, device="cuda", causal=False)
    exp = mqa_expected(inputs)
    check_against(fp8_mqa_logits(**inputs), exp, bar=1e-4)
    check_against(fp8_mqa_logits(**inputs, fp8_dot=False), exp, bar=1e-4)


@pytest.mark.parametrize("skv", [8192, 32768])
def test_deepgemm_prefill_shape(skv):
    inputs = mqa_logits.make_inputs(2048, skv, 64, 128, seed=8, device="cuda", start_frac=0.0)
    exp = mqa_expected(inputs)
    out = torch.full((2048, skv), float("nan"), device="cuda")
    fp8_mqa_logits(**inputs, out=out)
    check_against(out, exp)
    del exp
    bits = out.view(torch.int32).clone()
    for _ in range(20):
        fp8_mqa_logits(**inputs, out=out)
        assert torch.equal(out.view(torch.int32), bits)


SWEEP_MQA = [MqaConfig(block_m=(2, 4)[a], block_n=(64, 128)[b], splits=1 + b, num_warps=(4, 8)[c],
                       num_stages=(2, 3)[d], reduce_dot=bool(e)) for a, b, c, d, e in _HALF]


@pytest.mark.parametrize("cfg", SWEEP_MQA, ids=str)
def test_mqa_launch_variants(cfg):
    inputs = mqa_logits.make_inputs(200, 1000, 64, 128, seed=9, device="cuda", causal=False)
    exp = mqa_expected(inputs)
    check_against(fp8_mqa_logits(**inputs, config=cfg), exp)
    raw = torch.full((200, 1000), float("nan"), device="cuda")
    fp8_mqa_logits(**inputs, config=cfg, clean_logits=False, out=raw)
    check_against(raw, exp, cleaned=False)
    assert torch.isnan(raw[~exp.valid]).all()


def _capture_and_replay(fn, make, outputs_of, bitwise=True):
    """Capture ``fn(**inputs_a)``, copy inputs_b's values in, replay, and compare with eager on inputs_b."""
    a, b = make(0), make(1)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn(**a)  # compile outside the capture
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = fn(**a)
    for key, value in b.items():
        if isinstance(value, torch.Tensor):
            a[key].copy_(value)
        elif isinstance(value, tuple):
            for dst, src in zip(a[key], value):
                dst.copy_(src)
    static_out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    eager = fn(**b)
    if bitwise:
        assert torch.equal(static_out.view(torch.int32), eager.view(torch.int32))
    check_against(static_out, outputs_of(b))


# The persistent warp-specialised kernel (PagedConfig.ws, the next_n = 2 default on compute capability 9.0 where
# max_model_len is at most two block tables; the capture test below takes it too): DeepGEMM's decode shape at
# max_model_len 16k and small odd ones, 1-D and 2-D lengths, both clean_logits modes, block ids outside the cache
# inside two sequences and garbage past every sequence. Checked against the float64 oracle and the split launch.
# B = 150 and 300: the set-up's sums with 8 values per lane in each warp, and across warps (B > 256); there and at
# B = 40 each program's stretch of the -inf fill crosses requests.
# (batch, average context, max_model_len, 2-D lengths, clean_logits)
WS_SHAPES = [(64, 8192, 16384, False, True), (64, 8192, 16384, True, False), (7, 2000, 2500, True, True),
             (3, 300, 700, False, False), (1, 5000, 9000, False, True), (40, 500, 1000, False, True),
             (150, 300, 700, True, True), (300, 200, 500, False, True)]


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0),
                    reason="the warp-specialised kernel is Hopper's (compute capability 9.0)")
@pytest.mark.parametrize("batch,avg,mml,lens_2d,clean", WS_SHAPES)
def test_ws_kernel_matches_the_oracle_and_the_split_launch(batch, avg, mml, lens_2d, clean):
    inputs = paged_mqa_logits.make_inputs(batch, 2, 64, 128, 64, mml, seed=31, device="cuda", avg_len=avg,
                                          lens_2d=lens_2d, max_blocks=-(-int(1.3 * avg) // 64))
    bt, lens = inputs["block_tables"], inputs["context_lens"]
    ends = (lens if lens.dim() == 1 else lens.amax(dim=1)).long().tolist()
    for b, end in enumerate(ends):  # entries past each sequence: garbage, never read
        bt[b, -(-end // 64):] = (-1) ** b * (2**30 + b)
    bt[0, 0] = -1  # ids outside the cache inside a sequence: those keys score -inf
    if batch > 1:
        bt[1, 2] = inputs["kv_cache"].shape[0] + 7
    cfg = paged_mqa_logits.default_config(batch, 2, 64, 64, mml, torch.device("cuda"), max_blocks=bt.shape[1])
    assert cfg.ws == paged_mqa_logits.WS_PROGRAMS_PER_SM
    exp = paged_expected(inputs)
    outs = []
    for ws in (cfg.ws, 0):
        out = torch.full((batch * 2, mml), float("nan"), device="cuda")
        fp8_paged_mqa_logits(**inputs, clean_logits=clean, out=out, config=dataclasses.replace(cfg, ws=ws))
        check_against(out, exp, cleaned=clean)
        if not clean:  # past a row's end nothing is written; inside it an id outside the cache scores -inf
            rest = out[~exp.valid.to(out.device)]
            assert (torch.isnan(rest) | torch.isneginf(rest)).all(), "clean_logits=False wrote a finite invalid score"
        outs.append(out)
    assert torch.equal(torch.isnan(outs[0]), torch.isnan(outs[1]))  # the same positions written
    assert torch.equal(torch.isneginf(outs[0]), torch.isneginf(outs[1]))
    # the default launch is the warp-specialised one
    default = fp8_paged_mqa_logits(**inputs, clean_logits=clean)
    fin = torch.isfinite(outs[0])
    assert torch.equal(default[fin].view(torch.int32), outs[0][fin].view(torch.int32))


@pytest.mark.parametrize("lens_2d", [False, True])
def test_paged_capture_replays_new_lengths_and_blocks(lens_2d):
    make = lambda seed: paged_mqa_logits.make_inputs(4, 2, 64, 128, 64, 5000, seed=seed, device="cuda",  # noqa: E731
                                                     lens_2d=lens_2d)
    _capture_and_replay(fp8_paged_mqa_logits, make, paged_expected)


def test_mqa_capture_replays_new_ranges():
    make = lambda seed: mqa_logits.make_inputs(96, 700, 64, 128, seed=seed, device="cuda", causal=False)  # noqa: E731
    _capture_and_replay(fp8_mqa_logits, make, mqa_expected)


def test_references_capture():
    make = lambda seed: paged_mqa_logits.make_inputs(3, 2, 16, 64, 16, 300, seed=seed, device="cuda")  # noqa: E731
    _capture_and_replay(fp8_paged_mqa_logits_reference, make, paged_expected, bitwise=False)
    make = lambda seed: mqa_logits.make_inputs(40, 90, 16, 64, seed=seed, device="cuda", causal=False)  # noqa: E731
    _capture_and_replay(fp8_mqa_logits_reference, make, mqa_expected, bitwise=False)


@pytest.mark.parametrize("how", mqa_check.CORRUPTIONS)
def test_check_fails_a_kernel_output_with_one_broken_block(how):
    """The deliberately broken kernel: at DeepGEMM's decode shape (where the aggregate metric alone
    let one wrong 64-key block through), one block of one row is zeroed, sign-flipped, or read from
    the neighbouring page (the kernel rerun on a block table pointing that block one page on).
    The element-wise check must raise; the real output must pass."""
    inputs = deepgemm_inputs(64, 1, 8192, False)
    exp = paged_expected(inputs)
    out = fp8_paged_mqa_logits(**inputs)
    check_against(out, exp)
    row = int(exp.valid.sum(1).argmax())
    block = int(exp.valid[row].sum()) // mqa_check.BLOCK // 2
    neighbour = None
    if how == "neighbour_page":
        neighbour = fp8_paged_mqa_logits(**mqa_check.neighbour_page_inputs(inputs, row, block))
    bad = mqa_check.corrupt_block(out, exp, row, block, how, neighbour)
    # for the record: what the aggregate-only check of before would have seen
    print(f"{how}: row {row} block {block}: aggregate diff {mqa_check.aggregate_diff(bad, exp.ref, exp.valid):.3g}")
    with pytest.raises(AssertionError, match="valid positions differ from the float64 reference") as caught:
        mqa_check.check(bad, exp)
    print(f"{how}: check raised: {caught.value}")
