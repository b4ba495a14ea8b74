"""The custom ops on the GPU: ``torch.library.opcheck``, and
``torch.compile(fullgraph=True, mode="reduce-overhead")`` of functions that call
each op and each plain wrapper: no graph break, the graph is captured (no
cudagraph skip), and every replay on fresh values matches eager.
"""

from __future__ import annotations

import pytest
import torch
from merge_attn_states_util import make_inputs

import graphcheck.kernels.merge_attn as mas
from graphcheck.kernels import (
    fp8_mqa_logits,
    fp8_paged_mqa_logits,
    merge_attn_states,
    mqa_logits,
    paged_mqa_logits,
)

pytestmark = pytest.mark.gpu

G = torch.ops.graphcheck
# opcheck's test_schema compares tensors with arithmetic float8 has no kernels for (see test_kernel_ops.py)
NO_SCHEMA = ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def _paged(seed, next_n=2):
    return paged_mqa_logits.make_inputs(8, next_n, 64, 128, 64, 4096, seed=seed, device="cuda", avg_len=2048,
                                        max_blocks=48)


def _mqa(seed):
    return mqa_logits.make_inputs(256, 1024, 64, 128, seed=seed, device="cuda")


def _merge(seed):
    return make_inputs(613, 12, 96, torch.bfloat16, "hn", seed=seed, device="cuda")


def _same_logits(got, want):
    assert torch.equal(torch.isneginf(got), torch.isneginf(want))
    finite = torch.isfinite(want)
    assert finite.any()
    torch.testing.assert_close(got[finite], want[finite], rtol=0, atol=0)


def test_opcheck_on_cuda():
    m = _merge(1)
    args = (m["output"], m["prefix_output"], m["prefix_lse"], m["suffix_output"], m["suffix_lse"], m["output_lse"])
    torch.library.opcheck(G.merge_attn_states.default, args, {"prefill_tokens_with_context": 300})
    torch.library.opcheck(G.merge_attn_states.default, args,
                          {"prefill_tokens_with_context_tensor": torch.tensor([7], device="cuda")})
    p = _paged(2)
    pargs = (p["q"], p["kv_cache"], p["weights"], p["context_lens"], p["block_tables"], p["max_model_len"])
    torch.library.opcheck(G.fp8_paged_mqa_logits.default, pargs, test_utils=NO_SCHEMA)
    out = torch.empty(16, 4096, device="cuda")
    torch.library.opcheck(G.fp8_paged_mqa_logits_out.default, pargs + (out,), test_utils=NO_SCHEMA[:2])
    q = _mqa(3)
    qargs = (q["q"], *q["kv"], q["weights"], q["cu_seqlen_ks"], q["cu_seqlen_ke"])
    torch.library.opcheck(G.fp8_mqa_logits.default, qargs, test_utils=NO_SCHEMA)
    out = torch.empty(256, 1024, device="cuda")
    torch.library.opcheck(G.fp8_mqa_logits_out.default, qargs + (out,), test_utils=NO_SCHEMA[:2])


def _compile_and_replay(fn, make_args, check):
    """Compile ``fn`` (fullgraph, reduce-overhead), call it on four fresh input sets, compare each with eager."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(fn, fullgraph=True, mode="reduce-overhead", dynamic=False)
    for seed in range(4):
        args = make_args(seed)
        want = fn(*args)
        got = compiled(*args)
        torch.cuda.synchronize()
        check(got, want)
    skips = dict(counters["inductor"]).get("cudagraph_skips", 0)
    assert skips == 0, f"cudagraphs skipped: {dict(counters['inductor'])}"
    assert counters["stats"]["unique_graphs"] == 1, dict(counters["stats"])


def test_compiled_paged_op_and_wrapper_capture_and_match_eager():
    def fn(q, kv, w, lens, bt):
        a = G.fp8_paged_mqa_logits(q, kv, w, lens, bt, 4096, True)
        b = fp8_paged_mqa_logits(q, kv, w, lens, bt, 4096, clean_logits=True)
        return a, b.clamp_min(-1e30)

    def args(seed):
        p = _paged(10 + seed)
        return p["q"], p["kv_cache"], p["weights"], p["context_lens"], p["block_tables"]

    def check(got, want):
        _same_logits(got[0], want[0])
        torch.testing.assert_close(got[1], want[1], rtol=0, atol=0)

    _compile_and_replay(fn, args, check)


def test_compiled_mqa_op_and_wrapper_capture_and_match_eager():
    def fn(q, k, ks, w, lo, hi):
        a = G.fp8_mqa_logits(q, k, ks, w, lo, hi, True)
        b = fp8_mqa_logits(q, (k, ks), w, lo, hi, clean_logits=True)
        return a, b.clamp_min(-1e30)

    def args(seed):
        m = _mqa(20 + seed)
        return m["q"], *m["kv"], m["weights"], m["cu_seqlen_ks"], m["cu_seqlen_ke"]

    def check(got, want):
        _same_logits(got[0], want[0])
        torch.testing.assert_close(got[1], want[1], rtol=0, atol=0)

    _compile_and_replay(fn, args, check)


def test_compiled_merge_op_and_wrapper_capture_and_match_eager():
    def fn(pre, plse, suf, slse, limit):
        out_a, lse_a = torch.empty_like(pre), torch.empty_like(plse)
        G.merge_attn_states(out_a, pre, plse, suf, slse, lse_a, None, limit)
        out_b, lse_b = torch.empty_like(pre), torch.empty_like(plse)
        merge_attn_states(out_b, pre, plse, suf, slse, lse_b, limit)
        return out_a, lse_a, out_b * 1.0, lse_b

    def args(seed):
        m = _merge(30 + seed)
        limit = torch.tensor([100 * seed + 5], dtype=torch.int32, device="cuda")
        return m["prefix_output"], m["prefix_lse"], m["suffix_output"], m["suffix_lse"], limit

    def check(got, want):
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=0, atol=0)

    _compile_and_replay(fn, args, check)
    # and eager against the float64 reference on one set
    m = _merge(99)
    limit = torch.tensor([400], dtype=torch.int32, device="cuda")
    out, lse = fn(m["prefix_output"], m["prefix_lse"], m["suffix_output"], m["suffix_lse"], limit)[:2]
    ref_out, ref_lse = mas.merge_attn_states_reference(m["prefix_output"], m["prefix_lse"], m["suffix_output"],
                                                       m["suffix_lse"], limit, compute_dtype=torch.float64,
                                                       output_dtype=torch.float64)
    torch.testing.assert_close(out.double(), ref_out, atol=1e-3, rtol=1e-2)
    torch.testing.assert_close(lse, ref_lse, atol=1e-3, rtol=1e-3, equal_nan=False)
