"""The kernels as torch custom ops (``torch.ops.graphcheck.*``): schemas, fake
implementations, ``torch.library.opcheck``, the wrappers' dispatch through the
ops, and ``torch.compile(fullgraph=True)`` of callers.

Runs on the CPU through the Triton interpreter (natively where CUDA exists);
the compiled, captured GPU path is in ``test_kernel_ops_gpu.py``.
"""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from merge_attn_states_util import check_against_reference, make_inputs  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import graphcheck.kernels.merge_attn as mas  # noqa: E402
from graphcheck.kernels import (  # noqa: E402
    fp8_mqa_logits,
    fp8_mqa_logits_reference,
    fp8_paged_mqa_logits,
    fp8_paged_mqa_logits_reference,
    merge_attn_states,
    mqa_logits,
    ops,
    paged_mqa_logits,
)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
G = torch.ops.graphcheck


def _paged_inputs(seed=0, next_n=2, lens_2d=False):
    return paged_mqa_logits.make_inputs(2, next_n, 16, 64, 16, 80, seed=seed, device=DEVICE, lens_2d=lens_2d)


def _mqa_inputs(seed=0):
    return mqa_logits.make_inputs(12, 40, 16, 64, seed=seed, device=DEVICE)


def _merge_inputs(seed=0, n=7, h=3, d=48, dtype=torch.bfloat16):
    return make_inputs(n, h, d, dtype, "hn", seed=seed, device=DEVICE)


def _check_logits(out, ref):
    valid = torch.isfinite(ref)
    assert valid.any()
    assert torch.equal(torch.isneginf(out), ~valid)
    torch.testing.assert_close(out[valid], ref[valid].float(), rtol=2e-3, atol=2e-2)


# --------------------------------------------------------------------------- schemas


SCHEMAS = {
    "merge_attn_states": (
        "graphcheck::merge_attn_states(Tensor(a0!) output, Tensor prefix_output, Tensor prefix_lse, "
        "Tensor suffix_output, Tensor suffix_lse, Tensor(a5!)? output_lse=None, "
        "SymInt? prefill_tokens_with_context=None, Tensor? prefill_tokens_with_context_tensor=None, "
        "Tensor? output_scale=None, str lse_layout=\"auto\") -> ()"),
    "fp8_paged_mqa_logits": (
        "graphcheck::fp8_paged_mqa_logits(Tensor q, Tensor kv_cache, Tensor weights, Tensor context_lens, "
        "Tensor block_tables, SymInt max_model_len, bool clean_logits=True) -> Tensor"),
    "fp8_paged_mqa_logits_out": (
        "graphcheck::fp8_paged_mqa_logits_out(Tensor q, Tensor kv_cache, Tensor weights, Tensor context_lens, "
        "Tensor block_tables, SymInt max_model_len, Tensor(a6!) out, bool clean_logits=True) -> ()"),
    "fp8_mqa_logits": (
        "graphcheck::fp8_mqa_logits(Tensor q, Tensor k, Tensor k_scale, Tensor weights, Tensor cu_seqlen_ks, "
        "Tensor cu_seqlen_ke, bool clean_logits=True) -> Tensor"),
    "fp8_mqa_logits_out": (
        "graphcheck::fp8_mqa_logits_out(Tensor q, Tensor k, Tensor k_scale, Tensor weights, Tensor cu_seqlen_ks, "
        "Tensor cu_seqlen_ke, Tensor(a6!) out, bool clean_logits=True) -> ()"),
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schema(name):
    assert str(getattr(G, name).default._schema) == SCHEMAS[name]
    assert name in ops.__all__


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_only_outputs_are_mutable(name):
    schema = getattr(G, name).default._schema
    mutable = {a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write}
    assert mutable == {"merge_attn_states": {"output", "output_lse"}, "fp8_paged_mqa_logits_out": {"out"},
                       "fp8_mqa_logits_out": {"out"}}.get(name, set())


# --------------------------------------------------------------------------- fake implementations


def _to(device, inputs):
    return {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}


def test_fake_paged_logits_shape_on_meta():
    inputs = _to("meta", _paged_inputs(next_n=3))
    out = G.fp8_paged_mqa_logits(inputs["q"], inputs["kv_cache"], inputs["weights"], inputs["context_lens"],
                                 inputs["block_tables"], 80, True)
    assert out.device.type == "meta" and out.dtype == torch.float32 and tuple(out.shape) == (2 * 3, 80)


def test_fake_mqa_logits_shape_on_meta():
    inputs = _to("meta", _mqa_inputs())
    k, k_scale = (t.to("meta") for t in inputs["kv"])
    out = G.fp8_mqa_logits(inputs["q"], k, k_scale, inputs["weights"], inputs["cu_seqlen_ks"],
                           inputs["cu_seqlen_ke"], False)
    assert out.device.type == "meta" and out.dtype == torch.float32 and tuple(out.shape) == (12, 40)


def test_fake_ops_under_fake_tensor_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode

    paged, mqa, merge = _paged_inputs(), _mqa_inputs(), _merge_inputs()
    with FakeTensorMode(allow_non_fake_inputs=False) as mode:
        p = {k: (mode.from_tensor(v) if isinstance(v, torch.Tensor) else v) for k, v in paged.items()}
        m = {k: (mode.from_tensor(v) if isinstance(v, torch.Tensor) else v) for k, v in merge.items()}
        q = mode.from_tensor(mqa["q"])
        k, k_scale = (mode.from_tensor(t) for t in mqa["kv"])
        w, ks, ke = (mode.from_tensor(mqa[n]) for n in ("weights", "cu_seqlen_ks", "cu_seqlen_ke"))
        logits = G.fp8_paged_mqa_logits(p["q"], p["kv_cache"], p["weights"], p["context_lens"], p["block_tables"],
                                        80)
        assert tuple(logits.shape) == (4, 80) and logits.dtype == torch.float32
        assert G.fp8_paged_mqa_logits_out(p["q"], p["kv_cache"], p["weights"], p["context_lens"],
                                          p["block_tables"], 80, logits) is None
        scores = G.fp8_mqa_logits(q, k, k_scale, w, ks, ke)
        assert tuple(scores.shape) == (12, 40) and scores.dtype == torch.float32
        assert G.merge_attn_states(m["output"], m["prefix_output"], m["prefix_lse"], m["suffix_output"],
                                   m["suffix_lse"], m["output_lse"]) is None


def test_fake_merge_rejects_mismatched_shapes():
    m = _to("meta", _merge_inputs())
    with pytest.raises(ValueError, match="same shape"):
        G.merge_attn_states(m["output"][:3], m["prefix_output"], m["prefix_lse"], m["suffix_output"],
                            m["suffix_lse"])


# --------------------------------------------------------------------------- opcheck

# test_aot_dispatch_dynamic compiles with symbolic shapes (aot_eager): slow on the interpreter, so one op
# each runs the full set and the out variants run the cheaper checks.
FAST_CHECKS = ("test_schema", "test_autograd_registration", "test_faketensor")


def test_opcheck_merge_attn_states():
    m = _merge_inputs(seed=3)
    limit = torch.tensor([4], dtype=torch.int32, device=DEVICE)
    args = (m["output"], m["prefix_output"], m["prefix_lse"], m["suffix_output"], m["suffix_lse"], m["output_lse"])
    torch.library.opcheck(G.merge_attn_states.default, args, {"prefill_tokens_with_context": 5})
    torch.library.opcheck(G.merge_attn_states.default, args, {"prefill_tokens_with_context_tensor": limit},
                          test_utils=FAST_CHECKS)


def test_opcheck_merge_attn_states_fp8_output():
    m = make_inputs(5, 2, 32, torch.float16, "nh", seed=4, device=DEVICE, out_dtype=torch.float8_e4m3fn,
                    with_lse=False)
    scale = torch.tensor([0.3], device=DEVICE)
    args = (m["output"], m["prefix_output"], m["prefix_lse"], m["suffix_output"], m["suffix_lse"])
    # test_schema compares outputs with arithmetic that has no float8 kernels; the bf16 case above runs it
    torch.library.opcheck(G.merge_attn_states.default, args, {"output_scale": scale, "lse_layout": "nh"},
                          test_utils=("test_autograd_registration", "test_faketensor"))


# opcheck's test_schema compares inputs before and after with arithmetic that float8 tensors do not
# support on the CPU, so the MQA ops (float8 q and keys) run the other checks here, and
# test_inputs_other_than_outputs_are_not_written checks the mutation part of the schema byte for byte.
NO_SCHEMA = ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def test_opcheck_paged():
    p = _paged_inputs(seed=5)
    args = (p["q"], p["kv_cache"], p["weights"], p["context_lens"], p["block_tables"], p["max_model_len"])
    torch.library.opcheck(G.fp8_paged_mqa_logits.default, args, test_utils=NO_SCHEMA)
    out = torch.full((4, 80), float("nan"), device=DEVICE)
    torch.library.opcheck(G.fp8_paged_mqa_logits_out.default, args + (out, False), test_utils=NO_SCHEMA[:2])


def test_opcheck_mqa():
    m = _mqa_inputs(seed=6)
    args = (m["q"], *m["kv"], m["weights"], m["cu_seqlen_ks"], m["cu_seqlen_ke"])
    torch.library.opcheck(G.fp8_mqa_logits.default, args, test_utils=NO_SCHEMA)
    out = torch.full((12, 40), float("nan"), device=DEVICE)
    torch.library.opcheck(G.fp8_mqa_logits_out.default, args + (out,), test_utils=NO_SCHEMA[:2])


def test_inputs_other_than_outputs_are_not_written():
    p = _paged_inputs(seed=15)
    args = [p["q"], p["kv_cache"], p["weights"], p["context_lens"], p["block_tables"]]
    before = [a.detach().clone() for a in args]
    out = torch.full((4, 80), float("nan"), device=DEVICE)
    G.fp8_paged_mqa_logits_out(*args, 80, out)
    G.fp8_paged_mqa_logits(*args, 80, False)
    for a, b in zip(args, before):
        assert torch.equal(a.view(torch.uint8) if a.dtype == torch.float8_e4m3fn else a,
                           b.view(torch.uint8) if b.dtype == torch.float8_e4m3fn else b)
    assert not torch.isnan(out).any()
    m = _mqa_inputs(seed=16)
    args = [m["q"], *m["kv"], m["weights"], m["cu_seqlen_ks"], m["cu_seqlen_ke"]]
    before = [a.detach().clone() for a in args]
    out = torch.full((12, 40), float("nan"), device=DEVICE)
    G.fp8_mqa_logits_out(*args, out)
    G.fp8_mqa_logits(*args)
    for a, b in zip(args, before):
        assert torch.equal(a.view(torch.uint8) if a.dtype == torch.float8_e4m3fn else a,
                           b.view(torch.uint8) if b.dtype == torch.float8_e4m3fn else b)
    assert not torch.isnan(out).any()


# --------------------------------------------------------------------------- the ops compute the kernels


def test_ops_match_the_references():
    p = _paged_inputs(seed=7, lens_2d=True)
    out = G.fp8_paged_mqa_logits(p["q"], p["kv_cache"], p["weights"], p["context_lens"], p["block_tables"], 80)
    _check_logits(out, fp8_paged_mqa_logits_reference(**p, compute_dtype=torch.float64))
    m = _mqa_inputs(seed=8)
    out = torch.full((12, 40), float("nan"), device=DEVICE)
    assert G.fp8_mqa_logits_out(m["q"], *m["kv"], m["weights"], m["cu_seqlen_ks"], m["cu_seqlen_ke"], out) is None
    _check_logits(out, fp8_mqa_logits_reference(**m, compute_dtype=torch.float64))
    a = _merge_inputs(seed=9, n=6, h=4, d=96, dtype=torch.float32)
    G.merge_attn_states(a["output"], a["prefix_output"], a["prefix_lse"], a["suffix_output"], a["suffix_lse"],
                        a["output_lse"], 4)
    check_against_reference(mas, a, limit=4)


def test_op_errors_are_the_wrappers_errors():
    m = _merge_inputs()
    with pytest.raises(ValueError, match="not both"):
        G.merge_attn_states(m["output"], m["prefix_output"], m["prefix_lse"], m["suffix_output"], m["suffix_lse"],
                            None, 2, torch.tensor([2], device=DEVICE))
    with pytest.raises(TypeError, match="float32"):
        G.merge_attn_states(m["output"], m["prefix_output"], m["prefix_lse"].double(), m["suffix_output"],
                            m["suffix_lse"])
    p = _paged_inputs()
    with pytest.raises(ValueError, match="no blocks"):
        G.fp8_paged_mqa_logits(p["q"], p["kv_cache"][:0], p["weights"], p["context_lens"], p["block_tables"], 80)


# --------------------------------------------------------------------------- the wrappers call the ops


class _OpNames(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(str(func))
        return func(*args, **(kwargs or {}))


def test_wrappers_dispatch_through_the_ops():
    p, q, m = _paged_inputs(seed=1), _mqa_inputs(seed=1), _merge_inputs(seed=1)
    out = torch.empty(4, 80, device=DEVICE)
    limit = torch.tensor([3], device=DEVICE)
    with _OpNames() as seen:
        fp8_paged_mqa_logits(**p)
        fp8_paged_mqa_logits(**p, out=out)
        fp8_mqa_logits(**q)
        merge_attn_states(**m, prefill_tokens_with_context=3)
        merge_attn_states(**m, prefill_tokens_with_context=limit)
    assert seen.names == ["graphcheck.fp8_paged_mqa_logits.default", "graphcheck.fp8_paged_mqa_logits_out.default",
                          "graphcheck.fp8_mqa_logits.default", "graphcheck.merge_attn_states.default",
                          "graphcheck.merge_attn_states.default"]


def test_wrapper_errors_for_non_tensors_are_unchanged():
    m = _merge_inputs()
    with pytest.raises(TypeError, match="output must be a torch.Tensor"):
        merge_attn_states(**dict(m, output=[1.0]))
    with pytest.raises(TypeError, match="prefill_tokens_with_context"):
        merge_attn_states(**m, prefill_tokens_with_context=True)
    p = _paged_inputs()
    with pytest.raises(TypeError, match="block_tables must be a torch.Tensor"):
        fp8_paged_mqa_logits(**dict(p, block_tables=[[0]]))
    q = _mqa_inputs()
    with pytest.raises(TypeError, match="kv must be a pair"):
        fp8_mqa_logits(**dict(q, kv=q["kv"][0]))


# --------------------------------------------------------------------------- torch.compile (CPU: aot_eager)


def _compiled_equal(fn, *args):
    torch._dynamo.reset()
    want = fn(*args)
    got = torch.compile(fn, fullgraph=True, backend="aot_eager")(*args)
    return want, got


def test_compile_fullgraph_paged_op_and_wrapper():
    p = _paged_inputs(seed=12)

    def via_op(q, kv, w, lens, bt):
        return G.fp8_paged_mqa_logits(q, kv, w, lens, bt, 80, True) * 2.0

    def via_wrapper(q, kv, w, lens, bt):
        return fp8_paged_mqa_logits(q, kv, w, lens, bt, 80) * 2.0

    args = (p["q"], p["kv_cache"], p["weights"], p["context_lens"], p["block_tables"])
    for fn in (via_op, via_wrapper):
        want, got = _compiled_equal(fn, *args)
        assert torch.equal(torch.isneginf(want), torch.isneginf(got))
        torch.testing.assert_close(got, want)


def test_compile_fullgraph_mqa_wrapper():
    m = _mqa_inputs(seed=13)

    def via_wrapper(q, k, k_scale, w, ks, ke):
        return fp8_mqa_logits(q, (k, k_scale), w, ks, ke).clamp_min(-1e30)

    want, got = _compiled_equal(via_wrapper, m["q"], *m["kv"], m["weights"], m["cu_seqlen_ks"], m["cu_seqlen_ke"])
    torch.testing.assert_close(got, want)


def test_compile_fullgraph_merge_wrapper_allocating_outputs():
    a = _merge_inputs(seed=14, n=9, h=4, d=64, dtype=torch.float16)

    def merged(pre, plse, suf, slse, limit):
        out = torch.empty_like(pre)
        lse = torch.empty_like(plse)
        merge_attn_states(out, pre, plse, suf, slse, lse, limit)
        return out * 1.0, lse

    limit = torch.tensor([5], dtype=torch.int32, device=DEVICE)
    args = (a["prefix_output"], a["prefix_lse"], a["suffix_output"], a["suffix_lse"], limit)
    (want, want_lse), (got, got_lse) = _compiled_equal(merged, *args)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got_lse, want_lse)


def test_launchable_together_sends_meta_and_device_mixes_to_validation():
    from graphcheck.kernels import _launch

    cpu, meta = torch.ones(1), torch.ones(1, device="meta")
    assert _launch.launchable_together(cpu, None, cpu)
    assert not _launch.launchable_together(meta, meta)
    assert not _launch.launchable_together(cpu, meta)
    m = _to("meta", _merge_inputs())
    with pytest.raises(ValueError, match="CUDA device|one device"):
        merge_attn_states(**m)
