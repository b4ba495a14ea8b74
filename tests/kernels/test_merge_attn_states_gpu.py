"""merge_attn_states on a CUDA device: the full public sweep, the edge cases at real
sizes, CUDA-graph capture with mutated replay, and the no-sync / no-allocation rules."""

from __future__ import annotations

import itertools

import pytest
import torch
from graph_util import capture
from merge_attn_states_util import check_against_reference, make_inputs, padding_untouched

pytestmark = pytest.mark.gpu

TOKENS = [256, 512, 613, 1024, 1536, 4096]
HEADS = [4, 8, 16, 32, 48, 64]
HEAD_SIZES = [32, 48, 64, 96, 128, 256]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


@pytest.fixture(scope="module")
def mas():
    import graphcheck.kernels.merge_attn as module

    return module


@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp16", "bf16"])
def test_public_sweep(mas, dtype):
    """tokens x heads x head sizes (216 shapes per dtype), ~10% +inf in each LSE, float64 reference.

    One test item per dtype (a loop, not 648 items): keeps collection and the
    number of compiled kernel variants small."""
    for i, (n, h, d) in enumerate(itertools.product(TOKENS, HEADS, HEAD_SIZES)):
        layout = "nh" if d in (48, 128) and i % 2 else "hn"  # some shapes in the [N, H] layout
        args = make_inputs(n, h, d, dtype, layout, seed=i, device="cuda")
        mas.merge_attn_states(**args, lse_layout=layout)
        check_against_reference(mas, args, layout, label=f"{dtype} N={n} H={h} D={d} {layout}")


@pytest.mark.parametrize("d", [192, 576, 40, 80])
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp16", "bf16"])
def test_large_and_odd_head_sizes(mas, dtype, d):
    for n, h in ((613, 16), (1, 3), (3, 7)):
        args = make_inputs(n, h, d, dtype, "hn", seed=n + d, device="cuda")
        mas.merge_attn_states(**args)
        check_against_reference(mas, args, "hn", label=f"D={d} N={n} H={h}")


@pytest.mark.parametrize("layout", ["hn", "nh"])
def test_padded_strides(mas, layout):
    for dtype, (hp, tp) in itertools.product(DTYPES, ((64, 0), (16, 128), (0, 8))):
        args = make_inputs(613, 12, 96, dtype, layout, seed=hp + tp, device="cuda", head_pad=hp, token_pad=tp)
        mas.merge_attn_states(**args)
        check_against_reference(mas, args, layout, label=f"pad {hp}/{tp} {dtype}")
        assert padding_untouched(args["output"])


def test_both_empty_and_inf_in_both(mas):
    for dtype in DTYPES:
        args = make_inputs(1536, 32, 128, dtype, "hn", seed=1, device="cuda")
        g = torch.Generator(device="cuda").manual_seed(0)
        pick = torch.rand(args["prefix_lse"].shape, generator=g, device="cuda")
        args["prefix_lse"][pick < 0.05] = float("-inf")
        args["suffix_lse"][pick < 0.05] = float("-inf")
        args["prefix_lse"][pick > 0.95] = float("inf")
        args["suffix_lse"][pick > 0.95] = float("inf")
        mas.merge_attn_states(**args)
        check_against_reference(mas, args, "hn", label=f"empty {dtype}")
        empty = (pick < 0.05) | (pick > 0.95)
        assert (args["output_lse"][empty] == float("-inf")).all()
        assert (args["output"].float().permute(1, 0, 2)[empty] == 0).all()


@pytest.mark.parametrize("kind", ["int", "tensor32", "tensor64"])
def test_prefill_tokens_with_context(mas, kind):
    n = 1536
    for limit in (0, n // 2, 613, n):
        args = make_inputs(n, 16, 128, torch.bfloat16, "hn", seed=limit, device="cuda")
        arg = limit if kind == "int" else torch.tensor(
            [limit], dtype=torch.int32 if kind == "tensor32" else torch.int64, device="cuda")
        mas.merge_attn_states(**args, prefill_tokens_with_context=arg)
        check_against_reference(mas, args, "hn", limit=limit, label=f"limit {limit} {kind}")


@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp16", "bf16"])
def test_fp8_output(mas, dtype):
    for n, h, d in ((613, 8, 128), (256, 32, 96)):
        args = make_inputs(n, h, d, dtype, "hn", seed=n, device="cuda", out_dtype=torch.float8_e4m3fn)
        scale = torch.tensor([0.015], device="cuda")
        mas.merge_attn_states(**args, output_scale=scale)
        check_against_reference(mas, args, "hn", scale=scale, label=f"fp8 {dtype}")
        ref, _ = mas.merge_attn_states_reference(args["prefix_output"], args["prefix_lse"],
                                                 args["suffix_output"], args["suffix_lse"], None, scale,
                                                 compute_dtype=torch.float64, output_dtype=torch.float32)
        same = (args["output"].view(torch.uint8) == ref.to(torch.float8_e4m3fn).view(torch.uint8)).float().mean()
        assert same > 0.999, f"only {same:.4%} of fp8 values round like torch"


def test_no_host_sync_and_no_allocation(mas):
    args = make_inputs(4096, 32, 128, torch.bfloat16, "hn", seed=3, device="cuda")
    limit = torch.tensor([1000], dtype=torch.int32, device="cuda")
    mas.merge_attn_states(**args, prefill_tokens_with_context=limit)  # plan + compile
    torch.cuda.synchronize()
    before = torch.cuda.memory_stats()["allocation.all.allocated"]
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            mas.merge_attn_states(**args, prefill_tokens_with_context=limit)
            mas.merge_attn_states(**args, prefill_tokens_with_context=1000)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()
    assert torch.cuda.memory_stats()["allocation.all.allocated"] == before
    check_against_reference(mas, args, "hn", limit=1000, label="steady state")


@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp16", "bf16"])
def test_cuda_graph_capture_and_mutated_replay(mas, dtype):
    n, h, d = 613, 16, 96
    layout = "nh" if dtype == torch.float16 else "hn"
    args = make_inputs(n, h, d, dtype, layout, seed=100, device="cuda", head_pad=32)
    limit = torch.tensor([n // 2], dtype=torch.int32, device="cuda")

    def call():
        mas.merge_attn_states(**args, prefill_tokens_with_context=limit, lse_layout=layout)

    graph = capture(call)  # planned and compiled outside the capture

    for seed, new_limit in ((101, 0), (102, 300), (103, n)):
        fresh = make_inputs(n, h, d, dtype, layout, seed=seed, device="cuda")
        for k in ("prefix_output", "prefix_lse", "suffix_output", "suffix_lse"):
            args[k].copy_(fresh[k])
        args["output"].fill_(float("nan"))
        args["output_lse"].fill_(float("nan"))
        limit.fill_(new_limit)
        graph.replay()
        torch.cuda.synchronize()
        check_against_reference(mas, args, layout, limit=new_limit, label=f"replay seed={seed} limit={new_limit}")
        # and replay equals a fresh eager run on the same inputs
        replayed = (args["output"].clone(), args["output_lse"].clone())
        call()
        assert torch.equal(replayed[0], args["output"]) and torch.equal(replayed[1], args["output_lse"])
