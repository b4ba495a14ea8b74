"""The next_n = 2 paged MQA logits as a persistent warp-specialised kernel (Gluon, Hopper only).

``P = programs_per_sm x SMs`` programs. Every request's key tiles are numbered one after another; program p takes
tiles ``[p·T/P, (p+1)·T/P)`` of the T in all (one contiguous stretch that crosses a request boundary or two), so each
program sets up once, and the programs' work differs by at most one tile whatever the lengths. The -inf fill past
each request's last key tile is cut the same way, in tiles of a block's width. Per program:

- a set-up: the barriers before the PDL wait (they read no input), this program's slice of the block table into L2
  beside the lengths load, then the lengths' running sums inside one warp (no shared memory, no barrier) for B <= 256;
- a producer warp: per request of its stretch, the two query tiles into a 2-slot ring, then per key tile (block ids
  read 64 at a time) the block's keys and scales by TMA into a STAGES-slot ring; after its last copy, both rows of
  its stretch of the fill;
- two consumer warpgroups, one per query row: per key tile one wgmma against the row's query tile, the ReLU-weighted
  head sum, the scale, the store (-inf past the row's end and for block ids outside the cache).

Launched by :func:`graphcheck.kernels.paged_mqa_logits.fp8_paged_mqa_logits` where ``PagedConfig.ws`` is set (the
default on compute capability 9.0 for H = 64, D = 128, 64-key blocks and short max_model_len; see
``paged_mqa_logits.default_config``). Triton's interpreter cannot run Gluon: the CPU tests cover the choice of path,
the GPU tests the kernel. Imported only when a launch takes this path.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

#: block ids read per vector load by the producer
CHUNK = 64
#: registers per thread at launch: three warpgroups (the producer warp is padded to one) fit twice per SM
MAXNREG = 80
#: the producer warpgroup's registers (it writes the fill as well as issuing copies; 80·8 + 40·4 <= 80·12)
PRODUCER_REGS = 40
#: elements per fill store loop step of the producer warp
PRODUCER_FILL_N = 256
#: largest batch whose set-up vector each warp holds whole (B / 32 values per thread)
WARP_SETUP_MAX = 256


@gluon.jit
def _add(a, b):
    return a + b


@gluon.jit
def _ends(lens_ptr, b, stride_lb, stride_ln, limit, BS: gl.constexpr, LENS_2D: gl.constexpr):
    """Request b's two row ends (clamped to [0, limit]) and its key-tile count."""
    if LENS_2D:
        e0 = gl.load(lens_ptr + b * stride_lb)
        e1 = gl.load(lens_ptr + b * stride_lb + stride_ln)
    else:
        e1 = gl.load(lens_ptr + b * stride_lb)
        e0 = e1 - 1
    e0 = gl.minimum(gl.maximum(e0, 0), limit)
    e1 = gl.minimum(gl.maximum(e1, 0), limit)
    return e0, e1, gl.cdiv(gl.maximum(e0, e1), BS)


@gluon.jit
def _span(b, b_first, start0, nt, g0, g1, i):
    """Tiles [lo, hi) of request b in the program's range [g0, g1) with ``i`` tiles of the range done: the first
    request starts at its tile g0 - start0, every later one at tile 0. Derived from ``i``, not from a carried running
    start: Triton 3.6 dropped that carried value in the consumer partitions (their TTGIR used the initial start in
    every iteration; H200 run kern-s13-1 hung)."""
    first = b == b_first
    lo = gl.where(first, g0 - start0, 0)
    hi = gl.where(first, gl.minimum(start0 + nt, g1) - start0, gl.minimum(nt, g1 - g0 - i))
    return lo, hi


@gluon.jit
def _producer(q_desc, k_desc, s_desc, lens_ptr, bt_ptr, stride_lb, stride_ln, stride_btb, stride_btk, limit,
              num_kv_blocks, kv_rows, b_first, b_end, start0, g0, g1,
              q_smem, k_smem, s_smem, q_full, q_empty, full, empty,
              out_ptr, stride_or, max_model_len, f0, f1, fb_first, fb_end, fs_first, fs_last,
              STAGES: gl.constexpr, BS: gl.constexpr, H: gl.constexpr, D: gl.constexpr, CH: gl.constexpr,
              LENS_2D: gl.constexpr, CLEAN: gl.constexpr, FILL_N: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([CH // 32], [32], [1], [0])
    jj = gl.arange(0, CH, layout=layout)
    i = 0
    for b in range(b_first, b_end):
        e0, e1, nt = _ends(lens_ptr, b, stride_lb, stride_ln, limit, BS, LENS_2D)
        lo, hi = _span(b, b_first, start0, nt, g0, g1, i)
        seg = b - b_first
        qs = seg % 2
        mbarrier.wait(q_empty.index(qs), ((seg // 2) & 1) ^ 1)
        mbarrier.expect(q_full.index(qs), 2 * H * D)
        tma.async_copy_global_to_shared(q_desc, [(b * 2) * H, 0], q_full.index(qs), q_smem.index(2 * qs))
        tma.async_copy_global_to_shared(q_desc, [(b * 2 + 1) * H, 0], q_full.index(qs), q_smem.index(2 * qs + 1))
        bt_row = bt_ptr + b.to(gl.int64) * stride_btb  # type: ignore[attr-defined]  # a tensor once traced
        for c0 in range(lo, hi, CH):
            ids = gl.load(bt_row + (c0 + jj) * stride_btk, mask=(c0 + jj) < hi, other=0)
            ids = gl.where((ids >= 0) & (ids < num_kv_blocks), ids, 0)  # a bad id reads block 0, scored -inf
            n = gl.minimum(hi - c0, CH)
            for j in range(0, n):
                phys = gl.sum(gl.where(jj == j, ids, 0), axis=0)
                s = i % STAGES
                mbarrier.wait(empty.index(s), ((i // STAGES) & 1) ^ 1)
                mbarrier.expect(full.index(s), BS * D + BS * 4)
                tma.async_copy_global_to_shared(k_desc, [phys * kv_rows, 0], full.index(s), k_smem.index(s))
                tma.async_copy_global_to_shared(s_desc, [phys, BS * D // 4], full.index(s), s_smem.index(s))
                i += 1
    if CLEAN:  # while the consumers work through the last tiles in the ring
        _fill(out_ptr, lens_ptr, stride_lb, stride_ln, stride_or, limit, max_model_len,
              f0, f1, fb_first, fb_end, fs_first, fs_last, BS, FILL_N, LENS_2D)


@gluon.jit
def _fill(out_ptr, lens_ptr, stride_lb, stride_ln, stride_or, limit, max_model_len,
          f0, f1, fb_first, fb_end, fs_first, fs_last, BS: gl.constexpr, FILL_N: gl.constexpr, LENS_2D: gl.constexpr):
    """-inf on both rows of fill tiles [f0, f1): each request's BS-wide tiles past its last key tile, numbered request
    after request (fs_first and fs_last: where the range's first and last request start in that order). Only those
    two requests are cut; the ones between lie whole in the range. One warp."""
    fl: gl.constexpr = gl.BlockedLayout([4], [32], [1], [0])
    f = gl.arange(0, FILL_N, layout=fl)
    neg = gl.full([FILL_N], float("-inf"), gl.float32, layout=fl)
    for b in range(fb_first, fb_end):
        e0, e1, nt = _ends(lens_ptr, b, stride_lb, stride_ln, limit, BS, LENS_2D)
        tiles = gl.maximum(gl.cdiv(max_model_len, BS) - nt, 0)
        lo = gl.where(b == fb_first, f0 - fs_first, 0)
        hi = gl.minimum(gl.where(b == fb_end - 1, f1 - fs_last, tiles), tiles)
        end = gl.minimum((nt + hi) * BS, max_model_len)
        for r in gl.static_range(2):
            out_row = out_ptr + (b * 2 + r).to(gl.int64) * stride_or
            for p0 in range((nt + lo) * BS, end, FILL_N):
                gl.store(out_row + p0 + f, neg, mask=(p0 + f) < end)


@gluon.jit
def _score_store(acc, w, scale, raw, num_kv_blocks, out_row, p, end, max_model_len, CLEAN: gl.constexpr):
    """The tile's head-weighted ReLU sum times the scales, -inf for an out-of-range block id, stored at ``p``."""
    r = gl.sum(gl.maximum(acc, 0.0) * w[None, :], axis=1) * scale
    r = gl.where((raw < 0) | (raw >= num_kv_blocks), float("-inf"), r)
    if CLEAN:
        gl.store(out_row + p, gl.where(p < end, r, float("-inf")), mask=p < max_model_len)
    else:
        gl.store(out_row + p, r, mask=p < end)


@gluon.jit
def _consumer(w_ptr, lens_ptr, bt_ptr, out_ptr, stride_wr, stride_wh, stride_lb, stride_ln, stride_btb, stride_btk,
              stride_or, limit, max_model_len, num_kv_blocks, b_first, b_end, start0, g0, g1,
              q_smem, k_smem, s_smem, q_full, q_empty, full, empty,
              R: gl.constexpr, STAGES: gl.constexpr, BS: gl.constexpr, H: gl.constexpr, D: gl.constexpr,
              CLEAN: gl.constexpr, LENS_2D: gl.constexpr):
    mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, H, 32])
    cols: gl.constexpr = gl.SliceLayout(0, mma)
    keys: gl.constexpr = gl.SliceLayout(1, mma)
    hc = gl.arange(0, H, layout=cols)
    t = gl.arange(0, BS, layout=keys)
    zero = gl.zeros([BS, H], gl.float32, layout=mma)
    i = 0
    for b in range(b_first, b_end):
        e0, e1, nt = _ends(lens_ptr, b, stride_lb, stride_ln, limit, BS, LENS_2D)
        end = e1 if R == 1 else e0
        lo, hi = _span(b, b_first, start0, nt, g0, g1, i)
        seg = b - b_first
        qs = seg % 2
        row = b * 2 + R
        w = gl.load(w_ptr + row.to(gl.int64) * stride_wr + hc * stride_wh)
        out_row = out_ptr + row.to(gl.int64) * stride_or
        bt_row = bt_ptr + b.to(gl.int64) * stride_btb  # type: ignore[attr-defined]  # a tensor once traced
        mbarrier.wait(q_full.index(qs), (seg // 2) & 1)
        q_t = q_smem.index(2 * qs + R).permute((1, 0))  # [D, H]
        for tt in range(lo, hi):
            raw = gl.load(bt_row + tt * stride_btk)
            s = i % STAGES
            mbarrier.wait(full.index(s), (i // STAGES) & 1)
            acc = warpgroup_mma(k_smem.index(s), q_t, zero, use_acc=False, is_async=True)
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
            scale = s_smem.index(s).reshape([BS]).load(keys)
            mbarrier.arrive(empty.index(s), count=1)
            _score_store(acc, w, scale, raw, num_kv_blocks, out_row, tt * BS + t, end, max_model_len, CLEAN)
            i += 1
        mbarrier.arrive(q_empty.index(qs), count=1)


@gluon.jit
def _paged_ws_kernel(q_desc, k_desc, s_desc, w_ptr, lens_ptr, bt_ptr, out_ptr,
                     stride_wr, stride_wh, stride_lb, stride_ln, stride_btb, stride_btk, stride_or,
                     batch, max_model_len, max_blocks, num_kv_blocks, kv_rows, pf_lines, pf_last,
                     H: gl.constexpr, D: gl.constexpr, BS: gl.constexpr, STAGES: gl.constexpr,
                     BLOCK_B: gl.constexpr, FILL_N: gl.constexpr, CH: gl.constexpr, PDL: gl.constexpr,
                     REGS: gl.constexpr, PREGS: gl.constexpr, CLEAN: gl.constexpr, LENS_2D: gl.constexpr,
                     WARP_SETUP: gl.constexpr):
    q_smem = gl.allocate_shared_memory(gl.float8e4nv, [4, H, D], q_desc.layout)
    k_smem = gl.allocate_shared_memory(gl.float8e4nv, [STAGES, BS, D], k_desc.layout)
    s_smem = gl.allocate_shared_memory(gl.float32, [STAGES, 1, BS], s_desc.layout)
    full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    q_full = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(full.index(s), count=1)
        mbarrier.init(empty.index(s), count=2)
    for s in gl.static_range(2):
        mbarrier.init(q_full.index(s), count=1)
        mbarrier.init(q_empty.index(s), count=2)
    if PDL:
        gl.inline_asm_elementwise("griddepcontrol.wait; // $0", "=r", [], dtype=gl.int32, is_pure=False, pack=1)
        gl.inline_asm_elementwise("griddepcontrol.launch_dependents; // $0", "=r", [], dtype=gl.int32, is_pure=False,
                                  pack=1)
    pid = gl.program_id(0)
    progs = gl.num_programs(0)
    limit = gl.minimum(max_model_len, max_blocks * BS)
    # Lines [pid·pf_lines, (pid+1)·pf_lines) of 32 ids into L2 now, so the producer's first id loads wait on L2,
    # not DRAM (the offset is clamped to the table's last id: repeats of one line are harmless).
    pl: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    kk = gl.arange(0, 128, layout=pl)
    off = gl.minimum((pid * pf_lines + gl.minimum(kk, pf_lines - 1)) * 32, pf_last)
    gl.inline_asm_elementwise("prefetch.global.L2 [$1]; mov.u32 $0, 0;", "=r,l", [bt_ptr + off], dtype=gl.int32,
                              is_pure=False, pack=1)
    # every request's tile count, their running sum, and this program's stretch [g0, g1) of it
    lay: gl.constexpr = gl.BlockedLayout([BLOCK_B // 32 if WARP_SETUP else 1], [32], [4], [0])
    ib = gl.arange(0, BLOCK_B, layout=lay)
    ok = ib < batch
    if LENS_2D:
        e0 = gl.load(lens_ptr + ib * stride_lb, mask=ok, other=0)
        e1 = gl.load(lens_ptr + ib * stride_lb + stride_ln, mask=ok, other=0)
    else:
        e1 = gl.load(lens_ptr + ib * stride_lb, mask=ok, other=0)
        e0 = e1 - 1
    e0 = gl.minimum(gl.maximum(e0, 0), limit)
    e1 = gl.minimum(gl.maximum(e1, 0), limit)
    tiles = gl.where(ok, gl.cdiv(gl.maximum(e0, e1), BS), 0)
    cum = gl.associative_scan(tiles, 0, _add)
    excl = cum - tiles
    total = gl.sum(tiles, axis=0)
    g0 = (pid.to(gl.int64) * total // progs).to(gl.int32)
    g1 = ((pid + 1).to(gl.int64) * total // progs).to(gl.int32)
    b_first = gl.sum((cum <= g0).to(gl.int32), axis=0)
    b_end = gl.sum((excl < g1).to(gl.int32), axis=0)
    start0 = gl.sum(gl.where(ib == b_first, excl, 0), axis=0)
    if CLEAN:
        # the same for the fill in BS-wide tiles (request b's: those past its last key tile): [f0, f1)
        ft = gl.where(ok, gl.maximum(gl.cdiv(max_model_len, BS) - tiles, 0), 0)
        cumf = gl.associative_scan(ft, 0, _add)
        exclf = cumf - ft
        ftotal = gl.sum(ft, axis=0)
        f0 = (pid.to(gl.int64) * ftotal // progs).to(gl.int32)
        f1 = ((pid + 1).to(gl.int64) * ftotal // progs).to(gl.int32)
        fb_first = gl.sum((cumf <= f0).to(gl.int32), axis=0)
        fb_end = gl.sum((exclf < f1).to(gl.int32), axis=0)
        fs_first = gl.sum(gl.where(ib == fb_first, exclf, 0), axis=0)
        fs_last = gl.sum(gl.where(ib == fb_end - 1, exclf, 0), axis=0)
    else:
        f0 = 0
        f1 = 0
        fb_first = 0
        fb_end = 0
        fs_first = 0
        fs_last = 0

    gl.warp_specialize([
        (_consumer, (w_ptr, lens_ptr, bt_ptr, out_ptr, stride_wr, stride_wh, stride_lb, stride_ln, stride_btb,
                     stride_btk, stride_or, limit, max_model_len, num_kv_blocks, b_first, b_end, start0,
                     g0, g1, q_smem, k_smem, s_smem, q_full, q_empty, full, empty,
                     0, STAGES, BS, H, D, CLEAN, LENS_2D)),
        (_consumer, (w_ptr, lens_ptr, bt_ptr, out_ptr, stride_wr, stride_wh, stride_lb, stride_ln, stride_btb,
                     stride_btk, stride_or, limit, max_model_len, num_kv_blocks, b_first, b_end, start0,
                     g0, g1, q_smem, k_smem, s_smem, q_full, q_empty, full, empty,
                     1, STAGES, BS, H, D, CLEAN, LENS_2D)),
        (_producer, (q_desc, k_desc, s_desc, lens_ptr, bt_ptr, stride_lb, stride_ln, stride_btb, stride_btk, limit,
                     num_kv_blocks, kv_rows, b_first, b_end, start0, g0, g1,
                     q_smem, k_smem, s_smem, q_full, q_empty, full, empty,
                     out_ptr, stride_or, max_model_len, f0, f1, fb_first, fb_end, fs_first, fs_last,
                     STAGES, BS, H, D, CH, LENS_2D, CLEAN, FILL_N)),
    ], [4, 1], [REGS, PREGS])


def _descriptors(q: torch.Tensor, kv_cache: torch.Tensor) -> tuple[Any, Any, Any, int]:
    """q as rows of D fp8 (one [H, D] box per query row), the keys as rows of D fp8 (a [block, D] box per block),
    the cache as fp32 words (a [1, block] box: a block's scales)."""
    b, n, h, d = q.shape
    num_blocks, bs = kv_cache.shape[0], kv_cache.shape[1]
    stride = kv_cache.stride(0)
    kv_rows = stride // d
    q_layout = gl.NVMMASharedLayout.get_default_for([h, d], gl.float8e4nv)
    k_layout = gl.NVMMASharedLayout.get_default_for([bs, d], gl.float8e4nv)
    s_layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=2)
    q_desc = TensorDescriptor(q.view(b * n * h, d), [b * n * h, d], [d, 1], [h, d], q_layout)
    rows = (num_blocks - 1) * kv_rows + bs  # the last block's keys end the view
    keys = torch.as_strided(kv_cache.view(torch.float8_e4m3fn), (rows, d), (d, 1))
    k_desc = TensorDescriptor(keys, [rows, d], [d, 1], [bs, d], k_layout)
    width = bs * (d + 4) // 4  # a block's packed words; its scales are the last bs
    words = torch.as_strided(kv_cache.view(torch.float32), (num_blocks, width), (stride // 4, 1))
    s_desc = TensorDescriptor(words, [num_blocks, width], [stride // 4, 1], [1, bs], s_layout)
    return q_desc, k_desc, s_desc, kv_rows


def launch(q: torch.Tensor, kv_cache: torch.Tensor, weights: torch.Tensor, context_lens: torch.Tensor,
           block_tables: torch.Tensor, max_model_len: int, clean_logits: bool, out: torch.Tensor,
           programs_per_sm: int, stages: int, pdl: bool, sms: int) -> None:
    """Launch on validated inputs (``paged_mqa_logits._run`` checks them and ``ws_fits``)."""
    b, _, h, d = q.shape
    q_desc, k_desc, s_desc, kv_rows = _descriptors(q, kv_cache)
    lens_2d = context_lens.dim() == 2
    progs = programs_per_sm * sms
    pf_last = (b - 1) * block_tables.stride(0) + (block_tables.shape[1] - 1) * block_tables.stride(1)
    pf_lines = -(-(pf_last // 32 + 1) // progs)  # the block table in 32-id lines, per program
    block_b = max(32, triton.next_power_of_2(b))
    extra: dict[str, Any] = {"launch_pdl": True} if pdl else {}
    _paged_ws_kernel[(progs,)](
        q_desc, k_desc, s_desc, weights, context_lens, block_tables, out,
        weights.stride(0), weights.stride(1), context_lens.stride(0), context_lens.stride(1) if lens_2d else 0,
        block_tables.stride(0), block_tables.stride(1), out.stride(0),
        b, max_model_len, block_tables.shape[1], kv_cache.shape[0], kv_rows, pf_lines, pf_last,
        H=h, D=d, BS=kv_cache.shape[1], STAGES=stages, BLOCK_B=block_b, FILL_N=PRODUCER_FILL_N, CH=CHUNK, PDL=pdl,
        REGS=MAXNREG, PREGS=PRODUCER_REGS, CLEAN=clean_logits, LENS_2D=lens_2d, WARP_SETUP=block_b <= WARP_SETUP_MAX,
        num_warps=4, maxnreg=MAXNREG, **extra,
    )
