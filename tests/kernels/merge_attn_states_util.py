"""Input builders and the float64 check shared by the merge_attn_states CPU and GPU tests."""

from __future__ import annotations

import torch

TOLERANCES = {
    torch.float32: (1e-3, 1e-3),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1e-3, 1e-2),
}
FP8_TOLERANCE = (0.1, 0.1)


def make_inputs(n, h, d, dtype, layout="hn", *, seed=0, device="cpu", head_pad=0, token_pad=0,
                inf_frac=0.1, with_lse=True, out_dtype=None):
    """Fresh random inputs (values never zero), outputs poisoned with NaN.

    ``head_pad`` widens the head stride beyond D, ``token_pad`` the token
    stride beyond H x head stride; the padding of ``output`` holds a sentinel
    (7.0) that the kernel must leave alone. About ``inf_frac`` of each LSE is
    +inf, never at the same position in both.
    """
    g = torch.Generator(device=device).manual_seed(seed)
    hs = d + head_pad
    ts = h * hs + token_pad

    def strided(dt, values=None):
        buf = torch.full((n * ts + hs,), 7.0, dtype=dt, device=device)
        view = buf.as_strided((n, h, d), (ts, hs, 1))
        view.copy_(values if values is not None else torch.full((n, h, d), float("nan"), device=device))
        return view

    def randn(*shape):
        return torch.randn(shape, generator=g, device=device)

    pre = strided(dtype, randn(n, h, d) * 2)
    suf = strided(dtype, randn(n, h, d) * 2)
    out = strided(out_dtype or dtype)
    shape = (h, n) if layout == "hn" else (n, h)
    p = randn(*shape) * 5
    s = randn(*shape) * 5
    if inf_frac:
        pick = torch.rand(shape, generator=g, device=device)
        p = torch.where(pick < inf_frac, float("inf"), p)
        s = torch.where(pick > 1 - inf_frac, float("inf"), s)
    args = {
        "output": out,
        "prefix_output": pre,
        "prefix_lse": p,
        "suffix_output": suf,
        "suffix_lse": s,
        "output_lse": torch.full(shape, float("nan"), device=device) if with_lse else None,
    }
    return args


def reference(mas, args, layout="hn", limit=None, scale=None):
    """float64 reference for ``args`` (as built by :func:`make_inputs`)."""
    return mas.merge_attn_states_reference(
        args["prefix_output"], args["prefix_lse"], args["suffix_output"], args["suffix_lse"],
        limit, scale, lse_layout=layout, compute_dtype=torch.float64, output_dtype=torch.float64,
    )


def check_against_reference(mas, args, layout="hn", limit=None, scale=None, label=""):
    """Compare the kernel's outputs in ``args`` with the float64 reference."""
    ref_out, ref_lse = reference(mas, args, layout, limit, scale)
    out = args["output"]
    if scale is not None:
        atol, rtol = FP8_TOLERANCE
        got = out.to(torch.float64) * scale.to(torch.float64)
        ref_out = ref_out * scale.to(torch.float64)
    else:
        atol, rtol = TOLERANCES[args["prefix_output"].dtype]
        got = out.to(torch.float64)
    assert not torch.isnan(got).any(), f"{label}: NaN in output"
    torch.testing.assert_close(got, ref_out, atol=atol, rtol=rtol, msg=lambda m: f"{label}: output: {m}")
    if args.get("output_lse") is not None:
        lse = args["output_lse"]
        assert not torch.isnan(lse).any(), f"{label}: NaN in output_lse"
        torch.testing.assert_close(lse.to(torch.float64), ref_lse.to(torch.float64), atol=1e-3, rtol=1e-3,
                                   msg=lambda m: f"{label}: output_lse: {m}")
    return ref_out, ref_lse


def padding_untouched(t):
    """True when the storage outside the [N, H, D] view still holds the sentinel 7.0."""
    n, h, d = t.shape
    storage = torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())
    inside = torch.zeros(storage.numel(), dtype=torch.bool, device=t.device)
    idx = torch.arange(n * h * d, device=t.device)
    tok, rem = idx // (h * d), idx % (h * d)
    flat = t.storage_offset() + tok * t.stride(0) + (rem // d) * t.stride(1) + rem % d
    inside[flat] = True
    return bool((storage[~inside].to(torch.float32) == 7.0).all())
