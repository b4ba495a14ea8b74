"""Sweep candidates for merge_attn_states at small N (run kern-s11): programs that stream ITERS row groups each.

Row group g (ROWS consecutive token-major rows, one warp per 4 rows) is handled by program g % P at step g // P,
P = the grid. The loads of group i + 1 are issued before group i's math and stores (register double buffering,
a static loop: no shared memory, no waits between groups), so one group's reads are in flight while the previous
group's writes go out. EVICT: loads marked evict_first and stores .cs (streaming). Token-major, num_heads
compiled in, [H, N] LSE strides as arguments, no prefill limit, no FP8 output: the benchmark's shape only.
"""
import torch
import triton
import triton.language as tl

from graphcheck.kernels import _pdl


@triton.jit
def _load_group(g, pre_ptr, suf_ptr, pre_lse_ptr, suf_lse_ptr, num_tokens, pre_st, pre_sh, suf_st, suf_sh,
                plse_st, plse_sh, slse_st, slse_sh,
                HEADS: tl.constexpr, D: tl.constexpr, ROWS: tl.constexpr, EVICT: tl.constexpr):
    rows = g * ROWS + tl.arange(0, ROWS)
    row_ok = rows < num_tokens * HEADS
    t = (rows // HEADS).to(tl.int64)
    h = (rows % HEADS).to(tl.int64)
    d = tl.arange(0, D)
    m = row_ok[:, None]
    if EVICT:
        p = tl.load(pre_lse_ptr + t * plse_st + h * plse_sh, mask=row_ok, other=float("-inf"), eviction_policy="evict_first")
        s = tl.load(suf_lse_ptr + t * slse_st + h * slse_sh, mask=row_ok, other=float("-inf"), eviction_policy="evict_first")
        x = tl.load(pre_ptr + (t * pre_st + h * pre_sh)[:, None] + d[None, :], mask=m, other=0.0, eviction_policy="evict_first")
        y = tl.load(suf_ptr + (t * suf_st + h * suf_sh)[:, None] + d[None, :], mask=m, other=0.0, eviction_policy="evict_first")
    else:
        p = tl.load(pre_lse_ptr + t * plse_st + h * plse_sh, mask=row_ok, other=float("-inf"))
        s = tl.load(suf_lse_ptr + t * slse_st + h * slse_sh, mask=row_ok, other=float("-inf"))
        x = tl.load(pre_ptr + (t * pre_st + h * pre_sh)[:, None] + d[None, :], mask=m, other=0.0)
        y = tl.load(suf_ptr + (t * suf_st + h * suf_sh)[:, None] + d[None, :], mask=m, other=0.0)
    return x, y, p, s, t, h, row_ok


@triton.jit
def _finish_group(x, y, p, s, t, h, row_ok, out_ptr, out_lse_ptr, out_st, out_sh, olse_st, olse_sh,
                  D: tl.constexpr, EVICT: tl.constexpr):
    p = tl.where(p == float("inf"), float("-inf"), p)
    s = tl.where(s == float("inf"), float("-inf"), s)
    m = tl.maximum(p, s)
    empty = m == float("-inf")
    m = tl.where(empty, 0.0, m)
    a = tl.exp(p - m)
    b = tl.exp(s - m)
    z = tl.where(empty, 1.0, a + b)
    sa = a / z
    sb = b / z
    x = x.to(tl.float32)
    y = y.to(tl.float32)
    o = tl.where(sa[:, None] > 0.0, x * sa[:, None], 0.0) + tl.where(sb[:, None] > 0.0, y * sb[:, None], 0.0)
    d = tl.arange(0, D)
    ptrs = out_ptr + (t * out_st + h * out_sh)[:, None] + d[None, :]
    lse = tl.where(empty, float("-inf"), tl.log(z) + m)
    if EVICT:
        tl.store(ptrs, o.to(out_ptr.dtype.element_ty), mask=row_ok[:, None], cache_modifier=".cs")
        tl.store(out_lse_ptr + t * olse_st + h * olse_sh, lse, mask=row_ok, cache_modifier=".cs")
    else:
        tl.store(ptrs, o.to(out_ptr.dtype.element_ty), mask=row_ok[:, None])
        tl.store(out_lse_ptr + t * olse_st + h * olse_sh, lse, mask=row_ok)


@triton.jit
def _merge_stream_kernel(out_ptr, pre_ptr, suf_ptr, pre_lse_ptr, suf_lse_ptr, out_lse_ptr, num_tokens,
                         out_st, out_sh, pre_st, pre_sh, suf_st, suf_sh, plse_st, plse_sh, slse_st, slse_sh,
                         olse_st, olse_sh,
                         HEADS: tl.constexpr, D: tl.constexpr, ROWS: tl.constexpr, ITERS: tl.constexpr,
                         EVICT: tl.constexpr, PDL: tl.constexpr):
    _pdl.enter(PDL)
    pid = tl.program_id(0)
    P = tl.num_programs(0)
    xn, yn, pn, sn, tn, hn, okn = _load_group(pid, pre_ptr, suf_ptr, pre_lse_ptr, suf_lse_ptr, num_tokens, pre_st,
                                              pre_sh, suf_st, suf_sh, plse_st, plse_sh, slse_st, slse_sh,
                                              HEADS, D, ROWS, EVICT)
    for i in tl.static_range(ITERS):
        x, y, p, s, t, h, ok = xn, yn, pn, sn, tn, hn, okn
        if i + 1 < ITERS:
            xn, yn, pn, sn, tn, hn, okn = _load_group(pid + (i + 1) * P, pre_ptr, suf_ptr, pre_lse_ptr, suf_lse_ptr,
                                                      num_tokens, pre_st, pre_sh, suf_st, suf_sh, plse_st, plse_sh,
                                                      slse_st, slse_sh, HEADS, D, ROWS, EVICT)
        _finish_group(x, y, p, s, t, h, ok, out_ptr, out_lse_ptr, out_st, out_sh, olse_st, olse_sh, D, EVICT)


def merge(output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse, *, rows=4, warps=1, iters=1,
          evict=False, pdl=True):
    """[H, N] LSE layout, token-major rows; ``rows`` per group (4 per warp), ``iters`` groups per program."""
    n, h, d = output.shape
    assert triton.next_power_of_2(d) == d and output_lse is not None
    groups = triton.cdiv(n * h, rows)
    grid = (triton.cdiv(groups, iters),)
    pdl = pdl and output.is_cuda and torch.cuda.get_device_capability(output.device) >= (9, 0)
    _merge_stream_kernel[grid](
        output, prefix_output, suffix_output, prefix_lse, suffix_lse, output_lse, n,
        output.stride(0), output.stride(1), prefix_output.stride(0), prefix_output.stride(1),
        suffix_output.stride(0), suffix_output.stride(1),
        prefix_lse.stride(1), prefix_lse.stride(0), suffix_lse.stride(1), suffix_lse.stride(0),
        output_lse.stride(1), output_lse.stride(0),
        HEADS=h, D=d, ROWS=rows, ITERS=iters, EVICT=evict, PDL=pdl, num_warps=warps,
        **({"launch_pdl": True} if pdl else {}))
