"""merge_attn_states against an independent float64 oracle on generic random inputs with the ±inf rules.

The shipped reference (``merge_attn_states_reference``) lives in the module under
test and follows the kernel step by step, so a misreading of the spec shared by
both would pass every other test. :func:`oracle` is written from the documented
behaviour alone, as log-sum-exp with ``torch.logaddexp``:

- an LSE of +inf or -inf marks an empty part; tokens at or past
  ``prefill_tokens_with_context`` have an empty prefix;
- ``lse = log(e^P + e^S)``; ``out = e^(P-lse)·prefix + e^(S-lse)·suffix`` over the
  non-empty parts; both empty: ``out = 0`` and ``lse = -inf``;
- FP8 output: ``clamp(out / scale, -448, 448)`` rounded to e4m3.

Small shapes on the CPU (Triton's interpreter); larger ones on the GPU.
"""

from __future__ import annotations

import importlib
import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from merge_attn_states_util import make_inputs, reference  # noqa: E402

import graphcheck.kernels.merge_attn as mas  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

if DEVICE == "cpu":
    from triton.runtime.interpreter import InterpretedFunction

    if not isinstance(mas._merge_attn_states_kernel, InterpretedFunction):
        mas = importlib.reload(mas)

#: one ulp (relative) of each output dtype: the kernel computes in fp32 and converts once, to
#: nearest on the GPU; Triton's interpreter truncates fp32 -> bf16, which can cost a whole ulp
UNIT = {torch.float32: 2.0 ** -23, torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}
#: below the normal range the output's rounding step is absolute: fp16's subnormal step is 2^-24
#: (fp32's and bf16's are far below any value these inputs produce)
SUBNORMAL_STEP = {torch.float32: 0.0, torch.float16: 2.0 ** -24, torch.bfloat16: 0.0}
#: fp32 arithmetic inside the kernel (exp, division, the two products and their sum); on the GPU
#: exp and log are the fast hardware approximations, whose error grows with |p - m|: 2^-16 covers it
FP32_WORK = 2.0 ** -19 if DEVICE == "cpu" else 2.0 ** -16


def oracle(args: dict, layout: str, limit=None, scale=None):
    """(output, lse, magnitude) in float64, [N, H, D] / [N, H] / [N, H, D]; ``magnitude`` =
    Σ over non-empty parts of weight·|value|, the scale of the kernel's rounding error."""
    x = args["prefix_output"].double()
    y = args["suffix_output"].double()
    p = args["prefix_lse"].double()
    s = args["suffix_lse"].double()
    if layout == "hn":
        p, s = p.t(), s.t()
    n = x.shape[0]
    p_empty = p.isinf()
    s_empty = s.isinf()
    if limit is not None:
        p_empty = p_empty | (torch.arange(n, device=p.device) >= limit)[:, None]
    neg = torch.tensor(float("-inf"), dtype=torch.float64, device=p.device)
    p = torch.where(p_empty, neg, p)
    s = torch.where(s_empty, neg, s)
    lse = torch.logaddexp(p, s)
    both = p_empty & s_empty
    safe = torch.where(both, 0.0, lse)
    wp = torch.where(p_empty, 0.0, torch.exp(p - safe))[..., None]
    ws = torch.where(s_empty, 0.0, torch.exp(s - safe))[..., None]
    # an empty part's values never take part, even when they are NaN or inf
    xp = torch.where(p_empty[..., None], 0.0, x)
    ys = torch.where(s_empty[..., None], 0.0, y)
    out = wp * xp + ws * ys
    mag = wp * xp.abs() + ws * ys.abs()
    if scale is not None:
        sc = float(scale.reshape(()))
        out = (out / sc).clamp(-448.0, 448.0)
        mag = mag / sc
    return out, lse, mag


def run(args, layout, **kw):
    mas.merge_attn_states(**args, lse_layout=layout, **kw)


def lse_of(args, layout):
    lse = args["output_lse"]
    return lse.t() if layout == "hn" else lse


def check_kernel(args, layout, limit=None):
    out, lse, mag = oracle(args, layout, limit)
    dtype = args["prefix_output"].dtype
    got = args["output"].double()
    tol = (UNIT[dtype] + FP32_WORK) * mag + SUBNORMAL_STEP[dtype]
    err = (got - out).abs()
    assert torch.isfinite(got).all()
    worst = float((err - tol).max())
    assert (err <= tol).all(), f"output off the oracle by up to {float(err.max()):.3g} (worst excess {worst:.3g})"
    got_lse = lse_of(args, layout).double()
    empty = torch.isneginf(lse)
    assert torch.equal(torch.isneginf(got_lse), empty), "empty positions differ"
    fin = ~empty
    assert torch.allclose(got_lse[fin], lse[fin], rtol=FP32_WORK, atol=FP32_WORK)


# ----------------------------------------------------------------------------- oracle vs shipped reference


def _with_empties(args, layout, g_seed):
    """Add -inf LSEs and both-empty positions to make_inputs' +inf ones."""
    g = torch.Generator().manual_seed(g_seed)
    p, s = args["prefix_lse"], args["suffix_lse"]
    pick = torch.rand(p.shape, generator=g).to(p.device)
    p[pick < 0.05] = float("-inf")
    s[(pick > 0.05) & (pick < 0.1)] = float("-inf")
    both = (pick > 0.1) & (pick < 0.13)
    p[both] = float("inf")
    s[both] = float("-inf")
    return args


@pytest.mark.parametrize("layout", ["hn", "nh"])
@pytest.mark.parametrize("limit", [None, 0, 7, 40])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_shipped_reference_agrees_with_the_independent_oracle(layout, limit, dtype):
    args = _with_empties(make_inputs(23, 5, 64, dtype, layout, seed=71, head_pad=8), layout, 1)
    ref_out, ref_lse = reference(mas, args, layout, limit)
    out, lse, _ = oracle(args, layout, limit)
    torch.testing.assert_close(ref_out, out, rtol=1e-12, atol=1e-12)
    ref_lse = ref_lse.t() if layout == "hn" else ref_lse
    # the shipped reference returns a float32 LSE
    assert torch.equal(torch.isneginf(ref_lse), torch.isneginf(lse))
    fin = torch.isfinite(lse)
    torch.testing.assert_close(ref_lse[fin].double(), lse[fin], rtol=2.0 ** -23, atol=2.0 ** -23)


def test_shipped_reference_agrees_under_an_fp8_scale():
    args = make_inputs(9, 3, 64, torch.float16, "hn", seed=72, out_dtype=torch.float8_e4m3fn)
    scale = torch.tensor([0.01])
    ref_out, _ = mas.merge_attn_states_reference(
        args["prefix_output"], args["prefix_lse"], args["suffix_output"], args["suffix_lse"], None, scale,
        lse_layout="hn", compute_dtype=torch.float64, output_dtype=torch.float64)
    out, _, _ = oracle(args, "hn", scale=scale)
    torch.testing.assert_close(ref_out, out, rtol=1e-12, atol=1e-12)


def test_oracle_is_not_a_copy_of_a_wrong_rule():
    """The oracle itself on hand-worked positions, so that it cannot agree with a wrong reference by accident."""
    args = make_inputs(3, 1, 1, torch.float32, "nh", seed=0, inf_frac=0)
    args["prefix_output"][:, 0, 0] = torch.tensor([1.0, 5.0, float("nan")])
    args["suffix_output"][:, 0, 0] = torch.tensor([3.0, 7.0, 2.0])
    args["prefix_lse"][:, 0] = torch.tensor([0.0, float("inf"), float("-inf")])
    args["suffix_lse"][:, 0] = torch.tensor([0.0, float("inf"), 1.25])
    out, lse, _ = oracle(args, "nh")
    assert out[:, 0, 0].tolist() == [2.0, 0.0, 2.0]  # equal weights; both empty; NaN prefix ignored
    assert lse[0, 0].item() == pytest.approx(torch.log(torch.tensor(2.0)).item())
    assert lse[1, 0].item() == float("-inf") and lse[2, 0].item() == 1.25


# ----------------------------------------------------------------------------- kernel vs oracle


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("layout,limit", [("hn", None), ("nh", 5), ("hn", 0)])
def test_kernel_matches_the_oracle(dtype, layout, limit):
    args = _with_empties(make_inputs(11, 3, 48, dtype, layout, seed=73, device=DEVICE, head_pad=16), layout, 2)
    run(args, layout, prefill_tokens_with_context=limit)
    check_kernel(args, layout, limit)


def test_kernel_fp8_output_is_the_oracle_rounded_once():
    """The FP8 output is bit-exact with the oracle rounded to e4m3, except where the float64 value sits
    so close to a rounding midpoint that the kernel's fp32 arithmetic may fall on either side."""
    args = make_inputs(13, 4, 64, torch.float32, "hn", seed=74, device=DEVICE, out_dtype=torch.float8_e4m3fn)
    scale = torch.tensor([0.01], device=DEVICE)
    run(args, "hn", output_scale=scale)
    out, _, mag = oracle(args, "hn", scale=scale)
    got = args["output"].view(torch.uint8)
    near = (out - FP32_WORK * mag).to(torch.float8_e4m3fn).view(torch.uint8)
    far = (out + FP32_WORK * mag).to(torch.float8_e4m3fn).view(torch.uint8)
    exact = out.to(torch.float8_e4m3fn).view(torch.uint8)
    assert ((got == near) | (got == far)).all()
    # nearly every value is bit-exact
    assert (got == exact).double().mean() > 0.999


def test_wrong_inf_rule_is_caught_by_the_oracle_check():
    """The kernel check is not vacuous: an output that treats +inf as a weight-one part fails it."""
    args = make_inputs(6, 2, 64, torch.float32, "nh", seed=75, device=DEVICE, inf_frac=0.3)
    run(args, "nh")
    check_kernel(args, "nh")
    p_inf = torch.isposinf(args["prefix_lse"]) & torch.isfinite(args["suffix_lse"])
    assert p_inf.any()
    args["output"][p_inf] = 0.5 * (args["prefix_output"][p_inf] + args["suffix_output"][p_inf])
    with pytest.raises(AssertionError, match="off the oracle"):
        check_kernel(args, "nh")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("layout,limit", [("hn", None), ("nh", 3000)])
def test_kernel_matches_the_oracle_at_serving_shapes(dtype, layout, limit):
    args = _with_empties(make_inputs(4096, 32, 128, dtype, layout, seed=76, device="cuda", head_pad=64),
                         layout, 3)
    run(args, layout, prefill_tokens_with_context=limit)
    check_kernel(args, layout, limit)


@pytest.mark.gpu
def test_kernel_fp8_output_matches_the_oracle_at_serving_shapes():
    args = make_inputs(4096, 16, 128, torch.bfloat16, "nh", seed=77, device="cuda", out_dtype=torch.float8_e4m3fn)
    scale = torch.tensor([0.01], device="cuda")
    run(args, "nh", output_scale=scale)
    out, _, mag = oracle(args, "nh", scale=scale)
    got = args["output"].view(torch.uint8)
    # every value within one e4m3 step of the oracle (on the GPU the fast exp/log can move a value
    # across a rounding midpoint), and nearly all of them bit-exact
    deq = args["output"].double()
    step = torch.exp2(torch.floor(torch.log2(out.abs().clamp_min(2.0 ** -6))) - 3)
    assert ((deq - out).abs() <= step + FP32_WORK * mag).all()
    assert (got == out.to(torch.float8_e4m3fn).view(torch.uint8)).double().mean() > 0.999
