"""merge_attn_states on the CPU through the Triton interpreter: small shapes, every rule.

Without CUDA, TRITON_INTERPRET=1 is set before the kernel module is imported
(``@triton.jit`` picks the interpreter when the decorator runs).
"""

from __future__ import annotations

import importlib
import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from merge_attn_states_util import (  # noqa: E402
    TOLERANCES,
    check_against_reference,
    make_inputs,
    padding_untouched,
    reference,
)

import graphcheck.kernels.merge_attn as mas  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

if DEVICE == "cpu":
    from triton.runtime.interpreter import InterpretedFunction

    if not isinstance(mas._merge_attn_states_kernel, InterpretedFunction):
        # imported earlier in this process before TRITON_INTERPRET was set
        mas = importlib.reload(mas)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
DTYPE_IDS = ["fp32", "fp16", "bf16"]


def run(args, **kw):
    mas.merge_attn_states(**args, **kw)
    return args


# ----------------------------------------------------------------------------- correctness

@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("layout", ["hn", "nh"])
@pytest.mark.parametrize("n,h,d", [(1, 1, 64), (3, 3, 48), (13, 5, 64), (6, 2, 96)])
def test_matches_float64_reference(dtype, layout, n, h, d):
    args = make_inputs(n, h, d, dtype, layout, seed=n * 100 + h * 10 + d, device=DEVICE)
    run(args, lse_layout=layout)
    check_against_reference(mas, args, layout, label=f"{dtype} {layout} {n}x{h}x{d}")


@pytest.mark.parametrize("d", [32, 192, 576])
def test_other_head_sizes(d):
    args = make_inputs(3, 2, d, torch.float16, "hn", seed=d, device=DEVICE)
    run(args)
    check_against_reference(mas, args, "hn", label=f"D={d}")


@pytest.mark.parametrize("layout", ["hn", "nh"])
@pytest.mark.parametrize("head_pad,token_pad", [(16, 0), (8, 40), (0, 24)])
def test_padded_strides_and_padding_untouched(layout, head_pad, token_pad):
    args = make_inputs(7, 3, 48, torch.bfloat16, layout, seed=head_pad + token_pad, device=DEVICE,
                       head_pad=head_pad, token_pad=token_pad)
    assert args["output"].stride(1) == 48 + head_pad
    run(args)
    check_against_reference(mas, args, layout, label="padded")
    assert padding_untouched(args["output"]), "kernel wrote outside the [N, H, D] view"


def test_transposed_lse_views_any_strides():
    # [H, N] LSEs given as transposed views of [N, H] storage: strides, not shape, differ
    args = make_inputs(5, 3, 64, torch.float32, "nh", seed=4, device=DEVICE)
    for k in ("prefix_lse", "suffix_lse", "output_lse"):
        args[k] = args[k].t()
    assert args["prefix_lse"].shape == (3, 5) and args["prefix_lse"].stride() == (1, 3)
    run(args, lse_layout="hn")
    check_against_reference(mas, args, "hn", label="transposed lse")


def test_inf_rules_per_position():
    n, h, d = 4, 2, 64
    args = make_inputs(n, h, d, torch.float32, "nh", seed=11, device=DEVICE, inf_frac=0)
    inf = float("inf")
    p, s = args["prefix_lse"], args["suffix_lse"]
    p[0, 0], s[0, 0] = inf, 1.5        # +inf prefix: read as empty prefix
    p[0, 1], s[0, 1] = 0.5, inf        # +inf suffix
    p[1, 0], s[1, 0] = inf, inf        # +inf in both: both empty
    p[1, 1], s[1, 1] = -inf, -inf      # both -inf
    p[2, 0], s[2, 0] = -inf, inf       # one of each: both empty
    p[2, 1], s[2, 1] = -inf, 2.0       # -inf prefix
    p[3, 0], s[3, 0] = -300.0, 10.0    # prefix weight underflows to exactly 0
    run(args, lse_layout="nh")
    out, lse = args["output"], args["output_lse"]
    pre, suf = args["prefix_output"], args["suffix_output"]
    torch.testing.assert_close(out[0, 0], suf[0, 0], atol=0, rtol=0)
    assert lse[0, 0].item() == 1.5
    torch.testing.assert_close(out[0, 1], pre[0, 1], atol=0, rtol=0)
    assert lse[0, 1].item() == 0.5
    for t, hh in ((1, 0), (1, 1), (2, 0)):
        assert torch.equal(out[t, hh], torch.zeros_like(out[t, hh])), (t, hh)
        assert lse[t, hh].item() == -inf, (t, hh)
    torch.testing.assert_close(out[2, 1], suf[2, 1], atol=0, rtol=0)
    torch.testing.assert_close(out[3, 0], suf[3, 0], atol=0, rtol=0)
    assert lse[3, 0].item() == 10.0
    check_against_reference(mas, args, "nh", label="inf rules")


@pytest.mark.parametrize("base", [0.0, 37.5, -1.0e4])
def test_lse_gaps_from_ties_to_underflow_match_float64(base):
    """The weights come from one exponential of the LSE gap (on CUDA an approximate ex2, rcp and lg2): every
    gap from a tie through the point where exp underflows (about 87 in fp32) to huge, in both orders, at a
    base where the LSEs cancel and one where they are large, matches a float64 reference tightly in fp32."""
    gaps = [0.0, 1e-7, 1e-3, 0.5, 1.0, 3.0, 10.0, 30.0, 80.0, 87.0, 88.0, 90.0, 103.0, 104.0, 110.0, 1e3, 1e30]
    n, h, d = 2 * len(gaps), 2, 64
    args = make_inputs(n, h, d, torch.float32, "nh", seed=3, device=DEVICE, inf_frac=0)
    gap = torch.tensor(gaps + [-g for g in gaps], dtype=torch.float64, device=DEVICE)[:, None].expand(n, h)
    args["prefix_lse"].copy_(base + gap / 2)
    args["suffix_lse"].copy_(base - gap / 2)
    run(args, lse_layout="nh")
    ref_out, ref_lse = reference(mas, args, "nh")
    torch.testing.assert_close(args["output"].double(), ref_out.double(), atol=1e-5, rtol=1e-5)
    # the LSE to a few fp32 ulps of its own size (exact where one part underflows)
    torch.testing.assert_close(args["output_lse"].double(), ref_lse.double(), atol=2e-6, rtol=4e-7)
    far = gap.abs() > 90
    winner = torch.where(gap > 0, args["prefix_lse"], args["suffix_lse"])
    assert torch.equal(args["output_lse"][far], winner[far])


@pytest.mark.parametrize("d", [64, 48])
def test_garbage_in_an_empty_part_does_not_leak(d):
    args = make_inputs(6, 2, d, torch.float16, "hn", seed=5, device=DEVICE, inf_frac=0)
    args["prefix_lse"][:, ::2] = float("inf")    # empty prefix on even tokens (FA-2 style)
    args["suffix_lse"][:, 1::2] = float("-inf")  # empty suffix on odd tokens (FA-3 style)
    args["prefix_output"][::2] = float("nan")
    args["suffix_output"][1::2] = float("inf")
    run(args)
    assert torch.isfinite(args["output"]).all()
    torch.testing.assert_close(args["output"][::2], args["suffix_output"][::2], atol=0, rtol=0)
    torch.testing.assert_close(args["output"][1::2], args["prefix_output"][1::2], atol=0, rtol=0)


@pytest.mark.parametrize("as_tensor", [None, torch.int32, torch.int64], ids=["int", "i32-tensor", "i64-tensor"])
@pytest.mark.parametrize("which", ["zero", "half", "all"])
def test_prefill_tokens_with_context(as_tensor, which):
    n, h, d = 9, 3, 48
    limit = {"zero": 0, "half": n // 2, "all": n}[which]
    args = make_inputs(n, h, d, torch.bfloat16, "hn", seed=limit, device=DEVICE)
    arg = limit if as_tensor is None else torch.tensor([limit], dtype=as_tensor, device=DEVICE)
    run(args, prefill_tokens_with_context=arg)
    check_against_reference(mas, args, "hn", limit=limit, label=f"limit={limit}")
    # tokens without a prefix copy the suffix exactly (unless the suffix is empty)
    s = args["suffix_lse"]
    for t in range(limit, n):
        for hh in range(h):
            if s[hh, t] != float("inf"):
                assert torch.equal(args["output"][t, hh], args["suffix_output"][t, hh])
                assert args["output_lse"][hh, t] == s[hh, t]


def test_prefill_limit_zero_dim_tensor_and_beyond_n():
    args = make_inputs(5, 2, 64, torch.float32, "hn", seed=3, device=DEVICE)
    run(args, prefill_tokens_with_context=torch.tensor(2, device=DEVICE))
    check_against_reference(mas, args, "hn", limit=2, label="0-dim limit")
    args = make_inputs(5, 2, 64, torch.float32, "hn", seed=4, device=DEVICE)
    run(args, prefill_tokens_with_context=1 << 40)  # larger than N: every token has a prefix
    check_against_reference(mas, args, "hn", limit=None, label="limit > N")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_fp8_output(dtype):
    args = make_inputs(7, 3, 64, dtype, "hn", seed=21, device=DEVICE, out_dtype=torch.float8_e4m3fn)
    scale = torch.tensor([0.02], device=DEVICE)
    run(args, output_scale=scale)
    assert args["output"].dtype == torch.float8_e4m3fn
    check_against_reference(mas, args, "hn", scale=scale, label="fp8")
    # values beyond the fp8 range saturate instead of becoming NaN
    args = make_inputs(3, 2, 64, dtype, "hn", seed=22, device=DEVICE, out_dtype=torch.float8_e4m3fn)
    run(args, output_scale=torch.tensor([1e-4], device=DEVICE))
    got = args["output"].to(torch.float32)
    assert not torch.isnan(got).any()
    assert got.abs().max().item() == 448.0


def test_output_lse_none_gives_the_same_output():
    a = make_inputs(11, 3, 64, torch.float16, "nh", seed=8, device=DEVICE)
    b = make_inputs(11, 3, 64, torch.float16, "nh", seed=8, device=DEVICE, with_lse=False)
    run(a)
    run(b)
    assert b["output_lse"] is None
    assert torch.equal(a["output"], b["output"])


def test_in_place_into_prefix_output():
    args = make_inputs(5, 4, 64, torch.float32, "hn", seed=9, device=DEVICE)
    ref_out, _ = reference(mas, args)
    args["output"] = args["prefix_output"]
    run(args)
    torch.testing.assert_close(args["output"].double(), ref_out, atol=1e-3, rtol=1e-3)


def test_empty_inputs_are_a_no_op(monkeypatch):
    calls = _record_launches(monkeypatch)
    args = make_inputs(0, 3, 64, torch.float16, "nh", seed=0, device=DEVICE)
    before = args["output"].untyped_storage().tolist() if DEVICE == "cpu" else None
    run(args, lse_layout="nh")
    assert calls == []  # nothing launched for N = 0
    assert args["output"].shape == (0, 3, 64) and args["output_lse"].shape == (0, 3)
    if before is not None:  # the output's storage (only padding here) is untouched
        assert args["output"].untyped_storage().tolist() == before
    assert padding_untouched(args["output"])


# ----------------------------------------------------------------------------- LSE layout selection

def test_auto_layout_square_defaults_to_hn_and_explicit_nh_works():
    n = h = 4
    args = make_inputs(n, h, 64, torch.float32, "nh", seed=30, device=DEVICE)
    run(args, lse_layout="nh")
    check_against_reference(mas, args, "nh", label="square nh")
    auto = make_inputs(n, h, 64, torch.float32, "hn", seed=31, device=DEVICE)
    run(auto)  # N == H: read as [H, N]
    check_against_reference(mas, auto, "hn", label="square auto")


def test_auto_layout_follows_shape():
    args = make_inputs(6, 2, 64, torch.float32, "nh", seed=32, device=DEVICE)
    run(args)  # [6, 2] can only be [N, H]
    check_against_reference(mas, args, "nh", label="auto nh")


# ----------------------------------------------------------------------------- launch plan

def _record_launches(monkeypatch):
    calls = []
    kernel = mas._merge_attn_states_kernel
    original = kernel.run

    def spy(*args, grid, warmup, **kwargs):
        calls.append((args, tuple(grid), dict(kwargs)))
        return original(*args, grid=grid, warmup=warmup, **kwargs)

    monkeypatch.setattr(kernel, "run", spy)
    return calls


@pytest.mark.skipif(DEVICE != "cpu", reason="spies on the interpreter's launch entry")
def test_launch_depends_on_shapes_only(monkeypatch):
    calls = _record_launches(monkeypatch)
    for seed, limit in ((1, 0), (2, 3), (3, 7)):
        args = make_inputs(7, 3, 64, torch.bfloat16, "hn", seed=seed, device=DEVICE)
        run(args, prefill_tokens_with_context=torch.tensor([limit], dtype=torch.int32))
        check_against_reference(mas, args, "hn", limit=limit, label=f"limit tensor {limit}")
    assert len(calls) == 3
    first = calls[0]
    for args, grid, kwargs in calls[1:]:
        assert grid == first[1]
        assert kwargs == first[2]  # num_warps
        scalars = [a for a in args if not isinstance(a, torch.Tensor)]  # ints and constexprs
        assert scalars == [a for a in first[0] if not isinstance(a, torch.Tensor)]


@pytest.mark.skipif(DEVICE != "cpu", reason="spies on the interpreter's launch entry")
def test_int_limit_is_a_runtime_argument_not_a_constexpr(monkeypatch):
    calls = _record_launches(monkeypatch)
    args = make_inputs(7, 3, 64, torch.bfloat16, "hn", seed=1, device=DEVICE)
    for limit in (0, 3, 7):
        run(args, prefill_tokens_with_context=limit)
    assert [c[2] for c in calls[1:]] == [calls[0][2]] * 2
    assert [c[1] for c in calls] == [calls[0][1]] * 3
    assert [c[0][8] for c in calls] == [0, 3, 7]  # limit_value argument
    assert "do_not_specialize" in mas._merge_attn_states_kernel.kwargs


def test_plan_cached_per_shape_key():
    mas._PLANS.clear()
    args = make_inputs(5, 2, 64, torch.float16, "hn", seed=1, device=DEVICE)
    run(args)
    size = len(mas._PLANS)
    assert size == 1
    for seed in (2, 3):
        run(make_inputs(5, 2, 64, torch.float16, "hn", seed=seed, device=DEVICE))
    assert len(mas._PLANS) == size
    run(make_inputs(6, 2, 64, torch.float16, "hn", seed=1, device=DEVICE))
    assert len(mas._PLANS) == size + 1


def test_default_config_is_shape_only_and_sane():
    for n, h, d, dt in ((256, 32, 128, torch.bfloat16), (65536, 32, 128, torch.bfloat16),
                        (65536, 32, 128, torch.float32), (13, 3, 576, torch.float16), (1, 1, 1, torch.float16)):
        rows, warps, head_major = mas.default_config(n, h, d, dt, "hn")
        assert rows >= 1 and rows & (rows - 1) == 0
        assert warps in (1, 2, 4, 8)
        # the layout's own row order for the large problems' big programs, token-major below them
        assert head_major is (n == 65536)
        assert mas.default_config(n, h, d, dt, "nh")[2] is False
    rows, _, _ = mas.default_config(65536, 32, 128, torch.bfloat16, "hn")
    assert rows * 128 * 2 >= 4096  # big problems move several rows per program


# ----------------------------------------------------------------------------- errors

def _good(**over):
    args = make_inputs(4, 2, 64, torch.float16, "hn", seed=0, device=DEVICE)
    args.update(over)
    return args


def _err(exc, match, **over):
    extra = {k: over.pop(k) for k in ("prefill_tokens_with_context", "output_scale", "lse_layout") if k in over}
    args = _good(**over)
    with pytest.raises(exc, match=match):
        mas.merge_attn_states(**args, **extra)


def test_errors_types_and_dtypes():
    _err(TypeError, "output must be a torch.Tensor", output=None)
    _err(TypeError, "prefix_output must be a torch.Tensor", prefix_output=[1.0])
    _err(TypeError, "float32, float16 or bfloat16",
         prefix_output=torch.ones(4, 2, 64, dtype=torch.float64), suffix_output=torch.ones(4, 2, 64, dtype=torch.float64),
         output=torch.ones(4, 2, 64, dtype=torch.float64))
    _err(TypeError, "suffix_output dtype", suffix_output=torch.ones(4, 2, 64, dtype=torch.bfloat16, device=DEVICE))
    _err(TypeError, "output dtype", output=torch.ones(4, 2, 64, dtype=torch.float32, device=DEVICE))
    _err(TypeError, "prefix_lse must be float32", prefix_lse=torch.ones(2, 4, dtype=torch.float16, device=DEVICE))
    _err(TypeError, "output_lse must be float32", output_lse=torch.ones(2, 4, dtype=torch.float64, device=DEVICE))
    _err(TypeError, "suffix_lse must be a torch.Tensor", suffix_lse=3.0)
    _err(TypeError, "integer dtype", prefill_tokens_with_context=torch.tensor([2.0], device=DEVICE))
    _err(TypeError, "prefill_tokens_with_context must be", prefill_tokens_with_context=2.0)
    _err(TypeError, "prefill_tokens_with_context must be", prefill_tokens_with_context=True)
    _err(TypeError, "output_scale must be float32",
         output=torch.empty(4, 2, 64, device=DEVICE).to(torch.float8_e4m3fn),
         output_scale=torch.ones(1, dtype=torch.float16, device=DEVICE))


def test_errors_shapes_layouts_and_combinations():
    _err(ValueError, "3-D", output=torch.ones(4, 128, dtype=torch.float16, device=DEVICE))
    _err(ValueError, "same shape", suffix_output=torch.ones(4, 2, 32, dtype=torch.float16, device=DEVICE))
    _err(ValueError, "same shape", output=torch.ones(5, 2, 64, dtype=torch.float16, device=DEVICE))
    _err(ValueError, "innermost", prefix_output=torch.ones(4, 64, 2, dtype=torch.float16, device=DEVICE).transpose(1, 2))
    _err(ValueError, "head stride", output=torch.ones(4, 64, dtype=torch.float16, device=DEVICE)[:, None, :].expand(4, 2, 64))
    _err(ValueError, "token stride", suffix_output=torch.ones(2, 4, 64, dtype=torch.float16, device=DEVICE).transpose(0, 1))
    _err(ValueError, "prefix_lse has shape", prefix_lse=torch.ones(3, 4, device=DEVICE))
    _err(ValueError, r"suffix_lse must have shape \[num_heads, num_tokens\]", suffix_lse=torch.ones(4, 2, device=DEVICE))
    _err(ValueError, "output_lse must have shape", output_lse=torch.ones(2, 5, device=DEVICE))
    _err(ValueError, r"prefix_lse must have shape \[num_tokens, num_heads\]", lse_layout="nh")
    _err(ValueError, "lse_layout must be one of", lse_layout="NH")
    _err(ValueError, "output_scale is given", output_scale=torch.ones(1, device=DEVICE))
    _err(ValueError, "no output_scale", output=torch.empty(4, 2, 64, device=DEVICE).to(torch.float8_e4m3fn))
    _err(ValueError, "output_scale must hold one value",
         output=torch.empty(4, 2, 64, device=DEVICE).to(torch.float8_e4m3fn), output_scale=torch.ones(2, device=DEVICE))
    _err(ValueError, "must hold one value", prefill_tokens_with_context=torch.tensor([1, 2], device=DEVICE))
    _err(ValueError, ">= 0", prefill_tokens_with_context=-1)


def test_errors_devices():
    other = "meta"  # a second device that exists everywhere
    _err(ValueError, "all tensors must be on one device", suffix_lse=torch.ones(2, 4, device=other))
    _err(ValueError, "prefill_tokens_with_context is on", prefill_tokens_with_context=torch.ones(1, dtype=torch.int32, device=other))
    _err(ValueError, "output_scale is on", output=torch.empty(4, 2, 64, device=DEVICE).to(torch.float8_e4m3fn),
         output_scale=torch.ones(1, device=other))


def test_bad_call_leaves_no_plan_and_good_call_still_works():
    size = len(mas._PLANS)
    with pytest.raises(ValueError):
        mas.merge_attn_states(**_good(suffix_lse=torch.ones(4, 2, device=DEVICE)))
    assert len(mas._PLANS) == size
    args = _good()
    run(args)
    check_against_reference(mas, args, "hn", label="after error")


# ----------------------------------------------------------------------------- reference and cases

def test_reference_is_stable_in_fp32_and_matches_fp64():
    args = make_inputs(8, 4, 64, torch.float32, "hn", seed=40, device=DEVICE)
    out32, lse32 = mas.merge_attn_states_reference(args["prefix_output"], args["prefix_lse"],
                                                   args["suffix_output"], args["suffix_lse"])
    out64, lse64 = reference(mas, args)
    assert out32.dtype == torch.float32 and not torch.isnan(out32).any()
    torch.testing.assert_close(out32.double(), out64, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(lse32.double(), lse64.double(), atol=1e-5, rtol=1e-5)


def test_declared_cases_run_and_match_the_reference():
    cases = mas.graphcheck_cases()
    names = [c.name for c in cases]
    assert len(set(names)) == len(names) >= 4
    seen_limit_tensor = seen_empty = seen_inf = False
    for case in cases:
        a, b = case.inputs(1, DEVICE), case.inputs(2, DEVICE)
        for k in a:  # two seeds: same shapes, dtypes and strides, different values
            if isinstance(a[k], torch.Tensor):
                assert (a[k].shape, a[k].dtype, a[k].stride()) == (b[k].shape, b[k].dtype, b[k].stride()), k
        assert not torch.equal(a["prefix_output"], b["prefix_output"])
        limit = a.get("prefill_tokens_with_context")
        seen_limit_tensor |= isinstance(limit, torch.Tensor)
        lse = torch.stack([a["prefix_lse"], a["suffix_lse"]])
        seen_inf |= bool((lse == float("inf")).any())
        case.fn(**a)
        layout = "hn" if a["prefix_lse"].shape == (a["output"].shape[1], a["output"].shape[0]) else "nh"
        ref_out, ref_lse = check_against_reference(mas, a, layout, limit=limit, scale=a.get("output_scale"),
                                                   label=case.name)
        seen_empty |= bool((ref_lse == float("-inf")).any())
        assert set(case.outputs) <= {"output", "output_lse"}
        atol, rtol = TOLERANCES.get(a["prefix_output"].dtype)
        assert (case.atol, case.rtol) in ((atol, rtol), (0.1, 0.1))
    assert seen_limit_tensor and seen_empty and seen_inf


# ----------------------------------------------------------------------------- fp8 rounding helper

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _round_e4m3_probe(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = i < n
    x = tl.load(x_ptr + i, mask=ok, other=0.0)
    tl.store(y_ptr + i, mas._round_to_e4m3(x).to(tl.float8e4nv), mask=ok)


def test_e4m3_rounding_is_bit_exact_with_torch():
    grid_values = torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn).float()
    grid_values = grid_values[torch.isfinite(grid_values)].sort().values
    mids = (grid_values[1:] + grid_values[:-1]) / 2  # exact ties: must round to even
    g = torch.Generator().manual_seed(0)
    rand = (torch.rand(4096, generator=g) * 2 - 1) * 448 * torch.rand(4096, generator=g) ** 6
    x = torch.cat([grid_values, mids, rand, torch.tensor([0.0, -0.0, 448.0, -448.0, 2.0**-10, -(2.0**-10)])])
    x = x.to(DEVICE)
    y = torch.empty(x.numel(), dtype=torch.float8_e4m3fn, device=DEVICE)
    _round_e4m3_probe[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    expect = x.to(torch.float8_e4m3fn)
    bad = (y.view(torch.uint8) != expect.view(torch.uint8)).nonzero().flatten()
    assert bad.numel() == 0, f"{bad.numel()} mismatches, e.g. x={x[bad[:5]].tolist()} got={y[bad[:5]].float().tolist()}"


@pytest.mark.parametrize("config", [(1, 1, True), (4, 2, False), (16, 4, True), (64, 4, False)])
@pytest.mark.parametrize("layout", ["hn", "nh"])
def test_every_launch_config_is_correct(config, layout):
    # the benchmark sweep's configs must all compute the same thing, whatever the row order
    args = make_inputs(11, 3, 48, torch.float16, layout, seed=sum(config[:2]), device=DEVICE, head_pad=16)
    mas._merge(**args, lse_layout=layout, config=config)
    check_against_reference(mas, args, layout, label=f"config {config}")
    assert padding_untouched(args["output"])
