"""``fp8_paged_mqa_logits``: the DeepSeek-V3.2 indexer's decode scores over a paged FP8 cache.

``logits[r, p] = scale[p] · Σ_h weights[r, h] · relu(Σ_d q[b, j, h, d] · k[p, d])``
for row ``r = b·next_n + j`` and key position ``p`` of request ``b``, in
DeepGEMM's argument order. The Triton kernel is capture-safe by construction:
its grid comes from tensor shapes only, every per-request length and block id is
read on the device, and nothing is allocated from tensor values. Also here: a
vectorised, capture-safe PyTorch reference and the declared graphcheck cases.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
import triton
import triton.language as tl

from graphcheck.kernels import _fp8, _launch, _pdl
from graphcheck.kernels import ops as _ops  # registers torch.ops.graphcheck.*  # noqa: F401
from graphcheck.kernels._fp8 import decode_e4m3, score_tile

__all__ = ["fp8_paged_mqa_logits", "fp8_paged_mqa_logits_reference", "graphcheck_cases", "PagedConfig"]


@dataclasses.dataclass(frozen=True)
class PagedConfig:
    """Launch configuration; chosen from shapes and the device only (never autotuned)."""

    rows: int  # speculative rows (next_n) per program, a power of two
    splits: int  # programs per request along the key axis
    num_warps: int = 4
    num_stages: int = 3
    reduce_dot: bool = False  # head reduction as a second dot instead of a sum
    fill_n: int = 1024  # columns per -inf fill store
    split_rows: bool = False  # one dot per query row (rows <= 4) instead of one dot over all rows
    pair_blocks: bool = False  # two KV blocks (2·block_size keys) per dot
    pdl: bool = False  # programmatic dependent launch (graphcheck.kernels._pdl); ignored where unsupported
    rows_first: bool = False  # row tiles on the grid's fastest axis: a request's row programs run side by side
    fill_first: bool = False  # the -inf fill past the last tile before the key loop instead of after it
    maxnreg: int = 0  # register cap per thread (0: the compiler's choice; sweeps only, run kernels-s4-1)
    #: > 0: a persistent grid of this many programs per SM that share the flattened (request, key tile)
    #: range evenly, one contiguous stretch each (split_rows launches with next_n <= rows; ``splits`` unused)
    persistent: int = 0
    #: the head-weighted sum ``Σ_h w[r, h]·relu(S[t, h])`` as a second tensor-core dot instead of a
    #: ReLU·weight reduction over heads: with split_rows ``relu(S_r) @ W_r`` accumulated over the rows r
    #: of the program into one [keys, 16] tile, ``W_r`` the [H, 16] matrix holding row r's weights in
    #: column r (without split_rows: one [rows·H, 16] block-diagonal W after the one first dot).
    #: 0 (off), HEAD_DOT_BF16 (relu(S) and W rounded to bf16), HEAD_DOT_BF16_W2 (relu(S) rounded to bf16,
    #: W as a bf16 hi + lo pair: two dots, W's rounding gone). Sweeps only: H200 run kernels-s4-4 below.
    head_dot: int = 0
    #: key tiles through the tensor-memory copy engine (TMA) instead of per-thread asynchronous copies:
    #: host tensor descriptors over the paged cache, one [block_size, D] box per block (the cache viewed as
    #: rows of D bytes, a block every block_stride / D rows). 0 (off), TMA_KEYS (keys only; the scales as
    #: before), TMA_KEYS_SCALES (the block's scales as a second [1, block_size] fp32 box). Needs single-block
    #: tiles (no pair_blocks), no persistent grid, and a cache that ``tma_fits`` (blocks of 64 or 128 keys, a
    #: block stride that is a multiple of 16 and of D, 16-byte aligned); where those fail an explicit config
    #: raises and the default falls back to 0.
    #: The next_n = 2 default on compute capability >= 9.0 (H200 runs kernels-s5-1/-2, see default_config).
    tma: int = 0
    #: split_rows with rows == 2 (and no head_dot): both rows' scores of a key tile written by one [KEYS, 2] store
    #: instead of one store per row, so the scores cross from the dot's layout to the store's through shared
    #: memory once per tile, not once per row (one barrier and one shared-memory round trip fewer per tile). The
    #: same values and positions as the per-row stores. The next_n = 2 default (H200 run kern-s12-1: 1-4% faster
    #: on every next_n = 2 shape, see default_config).
    join_rows: bool = False
    #: > 0: the persistent warp-specialised Gluon kernel (``paged_mqa_logits_ws``) with this many programs per SM:
    #: next_n = 2, H = 64, D = 128, blocks of 64 keys, a cache that ``tma_fits``, contiguous q, at most
    #: ``WS_MAX_BATCH`` requests, compute capability 9.0 (``ws_fits``; an explicit config that does not fit raises,
    #: the default falls back). The next_n = 2 default where max_model_len is at most ``WS_MAX_SPAN`` block tables
    #: (H200 run kern-s13-2, see default_config). ``ws_stages``: its key-tile ring.
    ws: int = 0
    ws_stages: int = 4


#: PagedConfig.tma values: off, the keys through TMA, keys and scales through TMA
TMA_OFF, TMA_KEYS, TMA_KEYS_SCALES = 0, 1, 2

#: PagedConfig.head_dot values (the kernel's HEAD_DOT): off, bf16 operands, bf16 with W as a hi + lo pair
HEAD_DOT_OFF, HEAD_DOT_BF16, HEAD_DOT_BF16_W2 = 0, 1, 2

#: programs per SM the key axis is split into, one query row per program (H200 sweep: 32-64 best)
PROGRAMS_PER_SM = 32
#: the same for the per-row variants (next_n 2-4), which do more work per key (16 best, run kernels-s3-1)
PROGRAMS_PER_SM_ROWS = 16
#: fewest block-table entries per program: shorter chunks cost more in per-program overhead than they win
MIN_BLOCKS_PER_PROGRAM = 5
#: pipeline stages of the key loop. Each tile's key address comes from a block-table load; with
#: three or four stages Triton 3.6 waits for every outstanding copy at the top of each tile
#: (``async_wait {num = 0}``: no copy in flight during the math), with five it keeps three tile
#: groups in flight (``num = 3``; TTGIR of the sm_90 build). H200 run kernels-s3-1: one row per
#: program with five stages was 1.5-9% faster than with three on every next_n = 1 shape.
KEY_STAGES = 5


#: the persistent warp-specialised kernel (``PagedConfig.ws``): programs per SM (registers: three warpgroups at 80
#: registers fit twice), its key-tile ring (H200 runs kern-s13-2 and kern-s14-1/-2: 3, 5, 6 and 8 stages were
#: slower than 4), the most requests its set-up vector holds, and the longest max_model_len it takes by default, in
#: block-table widths. Where max_model_len is several times the table (ctx 8k and 32k, mml 111k) the -inf fill
#: dominates: with the fill written per request after the key work the split launch was 1.7x faster (run kern-s13-2);
#: with the fill cut evenly by position and written by the producer warp, 0.2-3% faster (run kern-s14-2)
WS_PROGRAMS_PER_SM = 2
WS_STAGES = 4
WS_MAX_BATCH = 1024
WS_MAX_SPAN = 2


#: ``PagedConfig.persistent`` is for sweeps (default 0). H200 run kernels-s4-3, every next_n = 2 shape: a
#: persistent grid of five programs per SM (the most that fit: 41.7 KB of shared memory; registers capped
#: at 96, 128 uncapped) sharing the flattened key-tile range evenly was 2-6% slower than the split launch
#: (B=64 ctx 8k mml 16k 32.7-32.9 µs against 31.9), so the short-chunk pipeline fills and uneven request
#: lengths are not what holds that shape back.


#: ``PagedConfig.head_dot`` is for sweeps (default 0). H200 run kernels-s4-4, every decode shape: the
#: sm_90 build of the two-row program runs 233 instead of 311 instructions per key tile (78 registers) but
#: takes 49.7 KB of shared memory (the [H, 16] weights and the store's re-layout of the [keys, 16] tile), so
#: four programs per SM instead of five: 1.6-4.3% faster on the ctx 32k next_n = 2 shapes, 0-3% slower on
#: the ctx 8k ones (B=64 ctx 8k mml 16k 32.4 µs against 31.4-31.7; 30.4 with 8 programs per SM, which is
#: 2-7% slower elsewhere), 2-10% slower on the short next_n = 1 shapes; worst error 0.07 of the tests'
#: 2^-8·B tolerance.


def _tma_default(device: torch.device) -> bool:
    """Whether default launches on ``device`` take their key tiles through TMA (CUDA, compute capability
    >= 9.0; never under the interpreter, where tests choose it explicitly)."""
    capability = _launch.cuda_capability(device)
    return capability is not None and capability >= (9, 0)


def _ws_default(device: torch.device) -> bool:
    """Whether default launches on ``device`` may take the warp-specialised kernel: CUDA, compute capability 9.0
    exactly (its wgmma is Hopper's), never under the interpreter (which cannot run Gluon)."""
    return _launch.cuda_capability(device) == (9, 0)


def ws_fits(q: torch.Tensor, kv_cache: torch.Tensor) -> bool:
    """Whether the warp-specialised kernel (``PagedConfig.ws``) takes these inputs: next_n = 2, H = 64, D = 128,
    blocks of 64 keys, a cache that ``tma_fits``, q contiguous and 16-byte aligned (its query tiles come by TMA),
    at most ``WS_MAX_BATCH`` requests. The shapes it was written and measured for; the rest take the split launch."""
    batch, next_n, heads, dim = q.shape
    return (next_n == 2 and heads == 64 and dim == 128 and kv_cache.shape[1] == 64 and batch <= WS_MAX_BATCH
            and q.is_contiguous() and q.data_ptr() % 16 == 0 and tma_fits(kv_cache, dim))


def tma_fits(kv_cache: torch.Tensor, dim: int) -> bool:
    """Whether the cache can be cut into TMA boxes: a block stride that is a multiple of 16 bytes and of D
    (so each block's keys are whole rows of D bytes), a 16-byte aligned start, D a multiple of 16, and blocks
    of 64 or 128 keys: the key tile feeds a 64-row wgmma straight from the copy engine's buffer. With
    smaller blocks the dot is an mma.sync whose operand loads from that buffer faulted on the H200
    (misaligned address, block 16, D 64: run kernels-s5-2)."""
    stride = kv_cache.stride(0)
    return (stride % 16 == 0 and stride % dim == 0 and kv_cache.data_ptr() % 16 == 0 and dim % 16 == 0
            and kv_cache.shape[1] in (64, 128))


def default_config(batch: int, next_n: int, heads: int, block_size: int, max_model_len: int,
                   device: torch.device, max_blocks: int | None = None) -> PagedConfig:
    """Shape-only launch choice. ``max_blocks`` is the block-table width (a shape, default from max_model_len)."""
    rows = min(_launch.next_pow2(next_n), max(1, 128 // heads))
    row_tiles = _launch.cdiv(next_n, rows)
    if max_blocks is None:
        max_blocks = _launch.cdiv(max_model_len, block_size)
    blocks = min(max_blocks, _launch.cdiv(max_model_len, block_size))
    per_row = rows in (2, 4)  # the per-row variant holds at most four query tiles
    # Many programs per SM even out requests of different lengths, but each should still
    # walk several blocks of the table.
    pdl = _pdl.use(device)
    target = (PROGRAMS_PER_SM_ROWS if per_row else PROGRAMS_PER_SM) * _fp8.sm_count(device)
    splits = max(1, min(_launch.cdiv(target, batch * row_tiles), _launch.cdiv(blocks, MIN_BLOCKS_PER_PROGRAM)))
    if not per_row:
        # One query row per program (next_n = 1, or H = 128); with next_n = 2 the two row programs
        # of a request run side by side, so the second read of each key tile is an L2 hit.
        return PagedConfig(rows=rows, splits=splits, num_warps=4, num_stages=KEY_STAGES, pdl=pdl,
                           rows_first=next_n == 2)
    if next_n == 2:
        # Both rows in one program, a dot per row over single blocks: each key tile is read once.
        # H200 run kernels-s3-1, every next_n = 2 shape: 11-17% faster than one row per program
        # with three stages (the previous default) and within 1% of the best variant, except
        # B=64 ctx 8k mml 16k (8 programs per SM 1.8% faster) and B=64 ctx 32k mml 64k (the -inf fill
        # before the key loop 1.8% faster; 10% slower on B=64 ctx 8k mml 111k, so it stays off).
        # No register cap (PagedConfig.maxnreg): this program's sm_90 build takes 94 registers and 41.7 KB of
        # shared memory (five programs per SM, bound by shared memory); a cap of 168 or 128 makes ptxas
        # allocate 116 or 110 and was 1-3% slower on six of the seven next_n = 2 shapes (H200 run kernels-s4-1).
        # Key tiles through TMA on sm_90+ (H200 runs kernels-s5-1/-2): 4-5% faster on B=64/128 ctx 8k mml 16k and
        # B=64 ctx 32k mml 64k, within the pointer launch's spread on the other next_n = 2 shapes. Not for
        # next_n = 1, where it changed nothing (-2% to +1%).
        # Both rows in one store per tile (join_rows; H200 run kern-s12-1, same run, every next_n = 2 shape: 1-4%
        # faster, B=64 ctx 8k mml 16k 29.7 / 29.8 µs against 30.6 / 30.6). In that run, slower: one dot over both
        # rows' heads with masked per-row sums (PagedConfig.mask_sum of the run's code: 10-17% uncapped, 153
        # registers; 4-10% with a 128 cap), and 8 programs per SM on the long shapes (+9-10%).
        # The persistent warp-specialised kernel where max_model_len is at most WS_MAX_SPAN block tables (ws_fits
        # decides the rest in the launch). H200 run kern-s13-2 (device time per call in a CUDA graph, against this
        # launch in the same run): B=64 ctx 8k mml 16k 26.2 µs against 29.3-29.4, B=128 ctx 8k mml 16k 46.1 against
        # 49.3-49.5, B=64 ctx 32k mml 64k 86.1 against 90.6-90.9. Its set-up as of H200 run kern-s14-2 (the block
        # table into L2 beside the lengths load, the running sums inside a warp, the barriers before the PDL wait,
        # the fill cut by position and written by the producer): 2.6%, 1.6% and 0.6% faster than run s13's kernel
        # on those shapes (ABAB, 6 rounds). Where max_model_len is many tables long (mml 111k) it is still 0.2-3%
        # slower than this launch.
        ws = (WS_PROGRAMS_PER_SM if _ws_default(device) and heads == 64 and block_size == 64
              and max_model_len <= WS_MAX_SPAN * max_blocks * block_size else 0)
        return PagedConfig(rows=rows, splits=splits, num_warps=4, num_stages=KEY_STAGES, split_rows=True,
                           pdl=pdl, tma=TMA_KEYS if _tma_default(device) else TMA_OFF, join_rows=True, ws=ws,
                           ws_stages=WS_STAGES)
    # next_n 3-4 (not in the benchmark; unchanged since the 2026-11-29 sweeps): a dot per row over two
    # KV blocks at a time.
    return PagedConfig(rows=rows, splits=splits, num_warps=4, num_stages=4, split_rows=True, pair_blocks=True,
                       pdl=pdl)


@triton.jit
def _row_scores(k, q_t, w):
    """[KEYS] head-weighted ReLU scores of a key tile against one query row's [D, H] tile."""
    s = tl.dot(k, q_t)
    return tl.sum(tl.maximum(s, 0.0) * w[None, :], axis=1)


@triton.jit
def _head_matrix(w, col, HEAD_DOT: tl.constexpr, HI: tl.constexpr):
    """[N, 16] bf16 head-dot operand: weight ``w[i]`` [N] at column ``col[i]`` (an [N, 1] vector, or one
    column for all), zeros elsewhere. HEAD_DOT 1, or 2 with HI: w rounded to bf16; 2 without HI: the rest
    (w - bf16(w), rounded to bf16)."""
    g = tl.arange(0, 16)
    m = tl.where(g[None, :] == col, w[:, None], 0.0)
    if HEAD_DOT == 2 and not HI:
        return (m - m.to(tl.bfloat16).to(tl.float32)).to(tl.bfloat16)
    else:
        return m.to(tl.bfloat16)


@triton.jit
def _head_dot(k, q_t, wh, wl, acc, HEAD_DOT: tl.constexpr, EMULATE: tl.constexpr):
    """``acc`` [KEYS, 16] plus relu(k·q_t) @ W (W = wh, + wl for HEAD_DOT 2) on the tensor cores.
    EMULATE (the interpreter, whose bf16 dot reads the bits wrongly in Triton 3.9): the same bf16-rounded
    operands, multiplied in fp32 (each bf16 product is exact in fp32 either way)."""
    s = tl.dot(k, q_t)
    if EMULATE:
        a = tl.maximum(s, 0.0).to(tl.bfloat16).to(tl.float32)
        acc = tl.dot(a, wh.to(tl.float32), acc, input_precision="ieee")
        if HEAD_DOT == 2:
            acc = tl.dot(a, wl.to(tl.float32), acc, input_precision="ieee")
    else:
        # ReLU and the rounding to bf16 in one instruction per two scores (cvt.rn.relu.bf16x2.f32)
        a = tl.inline_asm_elementwise("cvt.rn.relu.bf16x2.f32 $0, $2, $1;", "=r,r,r", [s], dtype=tl.bfloat16,
                                      is_pure=True, pack=2)
        acc = tl.dot(a, wh, acc)
        if HEAD_DOT == 2:
            acc = tl.dot(a, wl, acc)
    return acc


@triton.jit
def _masked(r, bad):
    """Scores of keys whose block id is out of range are -inf."""
    return tl.where(bad, float("-inf"), r)


@triton.jit
def _load_row_query(q_ptr, w_ptr, b, j, next_n, stride_qb, stride_qn, stride_qh, stride_qd,
                    stride_wr, stride_wh, H: tl.constexpr, D: tl.constexpr, FP8_DOT: tl.constexpr):
    """Query row j of request b as a transposed [D, H] tile, and its [H] weights (zeros past next_n)."""
    h = tl.arange(0, H)
    d = tl.arange(0, D)
    ok = (h * 0 + j) < next_n  # a [H] mask, built by broadcasting (the interpreter rejects scalar masks here)
    off = b.to(tl.int64) * stride_qb + j * stride_qn + h[None, :] * stride_qh + d[:, None] * stride_qd
    w = tl.load(w_ptr + (b * next_n + j).to(tl.int64) * stride_wr + h * stride_wh, mask=ok, other=0.0)
    if FP8_DOT:
        q_t = tl.load(q_ptr.to(tl.pointer_type(tl.float8e4nv)) + off, mask=ok[None, :], other=0.0)
    else:
        q_t = decode_e4m3(tl.load(q_ptr + off, mask=ok[None, :], other=0))
    return q_t, w


@triton.jit
def _row_end(lens_ptr, b, j, next_n, limit, stride_lb, stride_ln, LENS_2D: tl.constexpr):
    """End (exclusive) of row j's valid keys, clamped to [0, limit]; 0 for rows past next_n."""
    if LENS_2D:
        end = tl.load(lens_ptr + b * stride_lb + j * stride_ln, mask=j < next_n, other=0)
    else:
        end = tl.load(lens_ptr + b * stride_lb) - next_n + 1 + j
    return tl.where(j < next_n, tl.minimum(tl.maximum(end, 0), limit), 0)


@triton.jit
def _store_row(out_ptr, row, stride_or, p, r, end, row_ok, max_model_len, CLEAN: tl.constexpr):
    """Row ``row``'s scores ``r`` at positions ``p``: -inf past ``end`` when cleaning, else only valid ones."""
    ptrs = out_ptr + row.to(tl.int64) * stride_or + p
    if CLEAN:
        # The row's limit folds row_ok into one tensor comparison (no scalar & tensor mask).
        tl.store(ptrs, tl.where(p < end, r, float("-inf")), mask=p < tl.where(row_ok, max_model_len, 0))
    else:
        tl.store(ptrs, r, mask=p < end)


@triton.jit
def _store_rows2(out_ptr, row, stride_or, p, r0, r1, end0, end1, row0, next_n, max_model_len, CLEAN: tl.constexpr):
    """Rows ``row`` and ``row + 1`` (the program's rows row0, row0 + 1) at positions ``p`` in one [KEYS, 2]
    store: as :func:`_store_row` for each, -inf past each row's end when cleaning, else only valid positions."""
    g = tl.arange(0, 2)
    r = tl.join(r0, r1)  # [KEYS, 2]
    end = tl.where(g == 0, end0, end1)
    ptrs = out_ptr + (row + g).to(tl.int64)[None, :] * stride_or + p[:, None]
    if CLEAN:
        # the rows' limits fold each row's existence into one tensor comparison, as in _store_row
        lim = tl.where(row0 + g < next_n, max_model_len, 0)
        tl.store(ptrs, tl.where(p[:, None] < end[None, :], r, float("-inf")), mask=p[:, None] < lim[None, :])
    else:
        tl.store(ptrs, r, mask=p[:, None] < end[None, :])


@triton.jit
def _fill_tail(out_ptr, b, row0, next_n, stride_or, start, split, splits, max_model_len,
               ROWS: tl.constexpr, FILL_N: tl.constexpr):
    """-inf at positions [start, max_model_len) of rows row0.. of request b: this program's share
    (every ``splits``-th FILL_N-column chunk from chunk ``split``). Past the last computed tile every
    position is invalid for every row of the program."""
    f = tl.arange(0, FILL_N)
    rr = tl.arange(0, ROWS)
    fill_rows = out_ptr + (b * next_n + row0 + rr).to(tl.int64) * stride_or
    fill_ok = (row0 + rr) < next_n
    neg = tl.full([ROWS, FILL_N], float("-inf"), tl.float32)
    for f0 in tl.range(start + split * FILL_N, max_model_len, splits * FILL_N):
        pos = f0 + f
        tl.store(fill_rows[:, None] + pos[None, :], neg, mask=fill_ok[:, None] & (pos[None, :] < max_model_len))


@triton.jit(do_not_specialize=["num_kv_blocks"])
def _paged_mqa_logits_kernel(
    q_ptr, kv_ptr, w_ptr, lens_ptr, bt_ptr, out_ptr,
    stride_qb, stride_qn, stride_qh, stride_qd,
    stride_kv,
    stride_wr, stride_wh,
    stride_lb, stride_ln,
    stride_btb, stride_btk,
    stride_or,
    next_n, max_model_len, max_blocks, num_kv_blocks,
    k_desc, s_desc, kv_rows,
    H: tl.constexpr, D: tl.constexpr, BS: tl.constexpr,
    ROWS: tl.constexpr, GN: tl.constexpr,
    LENS_2D: tl.constexpr, CLEAN: tl.constexpr, FP8_DOT: tl.constexpr, REDUCE_DOT: tl.constexpr,
    SPLIT_ROWS: tl.constexpr, PAIR: tl.constexpr, KEYS: tl.constexpr,
    FILL_N: tl.constexpr, NUM_STAGES: tl.constexpr, PDL: tl.constexpr, ROWS_FIRST: tl.constexpr,
    FILL_FIRST: tl.constexpr, HEAD_DOT: tl.constexpr, EMULATE: tl.constexpr, TMA: tl.constexpr,
    JOIN_ROWS: tl.constexpr,
):
    _pdl.enter(PDL)
    split = tl.program_id(1)
    splits = tl.num_programs(1)
    if ROWS_FIRST:
        # grid (row tiles, splits, B): the programs of one request's row tiles are launched next to
        # each other and read the same key tiles at about the same time (the second read is an L2 hit)
        b = tl.program_id(2)
        row0 = tl.program_id(0) * ROWS
    else:
        b = tl.program_id(0)
        row0 = tl.program_id(2) * ROWS
    limit = tl.minimum(max_model_len, max_blocks * BS)
    d = tl.arange(0, D)

    if SPLIT_ROWS:
        # Each row keeps its own [D, H] query tile and gets its own dot: no [KEYS, ROWS, H] reshape.
        q0, w0 = _load_row_query(q_ptr, w_ptr, b, row0, next_n, stride_qb, stride_qn, stride_qh, stride_qd,
                                 stride_wr, stride_wh, H, D, FP8_DOT)
        end0 = _row_end(lens_ptr, b, row0, next_n, limit, stride_lb, stride_ln, LENS_2D)
        end_max = end0
        if ROWS >= 2:
            q1, w1 = _load_row_query(q_ptr, w_ptr, b, row0 + 1, next_n, stride_qb, stride_qn, stride_qh,
                                     stride_qd, stride_wr, stride_wh, H, D, FP8_DOT)
            end1 = _row_end(lens_ptr, b, row0 + 1, next_n, limit, stride_lb, stride_ln, LENS_2D)
            end_max = tl.maximum(end_max, end1)
        if ROWS >= 4:
            q2, w2 = _load_row_query(q_ptr, w_ptr, b, row0 + 2, next_n, stride_qb, stride_qn, stride_qh,
                                     stride_qd, stride_wr, stride_wh, H, D, FP8_DOT)
            q3, w3 = _load_row_query(q_ptr, w_ptr, b, row0 + 3, next_n, stride_qb, stride_qn, stride_qh,
                                     stride_qd, stride_wr, stride_wh, H, D, FP8_DOT)
            end2 = _row_end(lens_ptr, b, row0 + 2, next_n, limit, stride_lb, stride_ln, LENS_2D)
            end3 = _row_end(lens_ptr, b, row0 + 3, next_n, limit, stride_lb, stride_ln, LENS_2D)
            end_max = tl.maximum(end_max, tl.maximum(end2, end3))
        num_blocks = tl.cdiv(end_max, BS)
        if HEAD_DOT:
            # loop-invariant second-dot operands, and each row's end / validity as a column vector
            wh0 = _head_matrix(w0, 0, HEAD_DOT, True)
            wl0 = _head_matrix(w0, 0, HEAD_DOT, False)
            gc = tl.arange(0, 16)
            end_c = tl.where(gc == 0, end0, 0)
            ok_c = (gc < ROWS) & (row0 + gc < next_n)  # the program's rows that exist
            if ROWS >= 2:
                wh1 = _head_matrix(w1, 1, HEAD_DOT, True)
                wl1 = _head_matrix(w1, 1, HEAD_DOT, False)
                end_c = tl.where(gc == 1, end1, end_c)
            if ROWS >= 4:
                wh2 = _head_matrix(w2, 2, HEAD_DOT, True)
                wl2 = _head_matrix(w2, 2, HEAD_DOT, False)
                wh3 = _head_matrix(w3, 3, HEAD_DOT, True)
                wl3 = _head_matrix(w3, 3, HEAD_DOT, False)
                end_c = tl.where(gc == 2, end2, tl.where(gc == 3, end3, end_c))
            out_cols = out_ptr + (b * next_n + row0 + gc).to(tl.int64) * stride_or
    else:
        # Per-row end of the valid key range, read on the device.
        cols = tl.arange(0, GN)
        j = row0 + cols
        col_ok = (cols < ROWS) & (j < next_n)
        if LENS_2D:
            end = tl.load(lens_ptr + b * stride_lb + j * stride_ln, mask=col_ok, other=0)
        else:
            ctx = tl.load(lens_ptr + b * stride_lb)
            end = ctx - next_n + 1 + j
        end = tl.where(col_ok, tl.minimum(tl.maximum(end, 0), limit), 0)
        num_blocks = tl.cdiv(tl.max(end, axis=0), BS)

        # The query tile for ROWS rows and all heads, transposed to [D, ROWS*H], and its weights.
        c = tl.arange(0, ROWS * H)
        qj = row0 + c // H
        qh = c % H
        q_ok = qj < next_n
        q_off = (b.to(tl.int64) * stride_qb + qj[None, :] * stride_qn + qh[None, :] * stride_qh
                 + d[:, None] * stride_qd)
        w = tl.load(w_ptr + (b * next_n + qj).to(tl.int64) * stride_wr + qh * stride_wh, mask=q_ok, other=0.0)
        if FP8_DOT:
            q_t = tl.load(q_ptr.to(tl.pointer_type(tl.float8e4nv)) + q_off, mask=q_ok[None, :], other=0.0)
        else:
            q_t = decode_e4m3(tl.load(q_ptr + q_off, mask=q_ok[None, :], other=0))
        out_rows = out_ptr + (b * next_n + j).to(tl.int64) * stride_or
        if HEAD_DOT:
            # one [ROWS·H, 16] operand: column r holds row r's weights in its H entries (GN = 16)
            wh = _head_matrix(w, (c // H)[:, None], HEAD_DOT, True)
            wl = _head_matrix(w, (c // H)[:, None], HEAD_DOT, False)

    # A tile is one block of BS keys, or with PAIR two consecutive table entries (KEYS = 2·BS keys).
    num_tiles = tl.cdiv(num_blocks, KEYS // BS)
    if CLEAN and FILL_FIRST:
        # The -inf stores need nothing from the scores: issued first, they drain while the keys load.
        _fill_tail(out_ptr, b, row0, next_n, stride_or, num_tiles * KEYS, split, splits, max_model_len, ROWS, FILL_N)
    t = tl.arange(0, KEYS)
    bt_row = bt_ptr + b.to(tl.int64) * stride_btb
    for tile in tl.range(split, num_tiles, splits, num_stages=NUM_STAGES):
        # A block id outside [0, num_kv_blocks) is read as block 0 (never out of bounds) and its
        # keys score -inf, as in the reference.
        if PAIR:
            blk = tile * 2
            raw_a = tl.load(bt_row + blk * stride_btk).to(tl.int64)
            # An odd last block pairs with itself (never with a table entry past the sequence);
            # its duplicate keys lie past every row's end and are masked at the store.
            raw_b = tl.load(bt_row + tl.minimum(blk + 1, num_blocks - 1) * stride_btk).to(tl.int64)
            phys_a = tl.where((raw_a >= 0) & (raw_a < num_kv_blocks), raw_a, -1)
            phys_b = tl.where((raw_b >= 0) & (raw_b < num_kv_blocks), raw_b, -1)
            phys_t = tl.where(t < BS, phys_a, phys_b)
            bad = phys_t < 0
            slot = t % BS
            base = kv_ptr + tl.maximum(phys_t, 0) * stride_kv
            k_ptrs = base[:, None] + slot[:, None] * D + d[None, :]
            s_ptrs = (base + BS * D).to(tl.pointer_type(tl.float32)) + slot
        elif TMA:
            # One copy-engine box per block: the block's keys are rows [phys·kv_rows, phys·kv_rows + BS) of the
            # cache viewed as rows of D bytes; its scales (TMA == 2) a [1, BS] box of the cache viewed as fp32.
            raw = tl.load(bt_row + tile * stride_btk)
            raw_bad = (raw < 0) | (raw >= num_kv_blocks)
            bad = raw_bad & (t >= 0)  # a [KEYS] mask
            phys = tl.where(raw_bad, 0, raw)
            k = k_desc.load([phys * kv_rows, 0])
            if not FP8_DOT:
                k = decode_e4m3(k)
            if TMA == 2:
                scale = tl.reshape(s_desc.load([phys, BS * D // 4]), [KEYS])
            else:
                s_ptrs = (kv_ptr + phys.to(tl.int64) * stride_kv + BS * D).to(tl.pointer_type(tl.float32)) + t
        else:
            raw = tl.load(bt_row + tile * stride_btk).to(tl.int64)
            bad = ((raw < 0) | (raw >= num_kv_blocks)) & (t >= 0)  # a [KEYS] mask
            base = kv_ptr + tl.where(bad, 0, raw) * stride_kv
            k_ptrs = base[:, None] + t[:, None] * D + d[None, :]
            s_ptrs = (base + BS * D).to(tl.pointer_type(tl.float32)) + t
        if not TMA:
            if FP8_DOT:
                k = tl.load(k_ptrs.to(tl.pointer_type(tl.float8e4nv)))
            else:
                k = decode_e4m3(tl.load(k_ptrs))
        if TMA != 2:
            scale = tl.load(s_ptrs)
        p = tile * KEYS + t
        if SPLIT_ROWS and HEAD_DOT:
            acc = tl.zeros([KEYS, 16], dtype=tl.float32)
            acc = _head_dot(k, q0, wh0, wl0, acc, HEAD_DOT, EMULATE)
            if ROWS >= 2:
                acc = _head_dot(k, q1, wh1, wl1, acc, HEAD_DOT, EMULATE)
            if ROWS >= 4:
                acc = _head_dot(k, q2, wh2, wl2, acc, HEAD_DOT, EMULATE)
                acc = _head_dot(k, q3, wh3, wl3, acc, HEAD_DOT, EMULATE)
            r = tl.where(bad[:, None], float("-inf"), acc * scale[:, None])
            ptrs = out_cols[None, :] + p[:, None]
            if CLEAN:
                tl.store(ptrs, tl.where(p[:, None] < end_c[None, :], r, float("-inf")),
                         mask=(p[:, None] < max_model_len) & ok_c[None, :])
            else:
                tl.store(ptrs, r, mask=(p[:, None] < end_c[None, :]) & ok_c[None, :])
        elif SPLIT_ROWS and JOIN_ROWS:
            # ROWS == 2 (checked on the host): both rows through one store
            r0 = _masked(_row_scores(k, q0, w0) * scale, bad)
            r1 = _masked(_row_scores(k, q1, w1) * scale, bad)
            _store_rows2(out_ptr, b * next_n + row0, stride_or, p, r0, r1, end0, end1, row0, next_n, max_model_len,
                         CLEAN)
        elif SPLIT_ROWS:
            row = b * next_n + row0
            _store_row(out_ptr, row, stride_or, p, _masked(_row_scores(k, q0, w0) * scale, bad), end0, row0 < next_n,
                       max_model_len, CLEAN)
            if ROWS >= 2:
                _store_row(out_ptr, row + 1, stride_or, p, _masked(_row_scores(k, q1, w1) * scale, bad), end1,
                           row0 + 1 < next_n, max_model_len, CLEAN)
            if ROWS >= 4:
                _store_row(out_ptr, row + 2, stride_or, p, _masked(_row_scores(k, q2, w2) * scale, bad), end2,
                           row0 + 2 < next_n, max_model_len, CLEAN)
                _store_row(out_ptr, row + 3, stride_or, p, _masked(_row_scores(k, q3, w3) * scale, bad), end3,
                           row0 + 3 < next_n, max_model_len, CLEAN)
        else:
            if HEAD_DOT:
                r = _head_dot(k, q_t, wh, wl, tl.zeros([KEYS, GN], dtype=tl.float32), HEAD_DOT, EMULATE)
            else:
                r = score_tile(k, q_t, w, ROWS, H, GN, REDUCE_DOT)
            r = tl.where(bad[:, None], float("-inf"), r * scale[:, None])
            valid = (p[:, None] < end[None, :]) & col_ok[None, :]
            ptrs = out_rows[None, :] + p[:, None]
            if CLEAN:
                tl.store(ptrs, tl.where(valid, r, float("-inf")),
                         mask=(p[:, None] < max_model_len) & col_ok[None, :])
            else:
                tl.store(ptrs, r, mask=valid)

    if CLEAN and not FILL_FIRST:
        _fill_tail(out_ptr, b, row0, next_n, stride_or, num_tiles * KEYS, split, splits, max_model_len, ROWS, FILL_N)


@triton.jit
def _request_tiles(lens_ptr, b, b_ok, next_n, limit, stride_lb, stride_ln, BS: tl.constexpr, ROWS: tl.constexpr,
                   LENS_2D: tl.constexpr):
    """Key tiles of request(s) ``b``: cdiv of the largest row end (clamped to [0, limit]) by BS; 0 where not b_ok.
    The program holds all of the request's rows (next_n <= ROWS), so with 1-D lengths the largest end is the
    context length itself (row next_n - 1)."""
    e = tl.load(lens_ptr + b * stride_lb, mask=b_ok, other=0)
    if LENS_2D:
        for j in tl.static_range(1, ROWS):
            j_ok = b_ok & ((b * 0 + j) < next_n)  # a tensor mask (the interpreter rejects int comparisons here)
            e = tl.maximum(e, tl.load(lens_ptr + b * stride_lb + j * stride_ln, mask=j_ok, other=0))
    e = tl.minimum(tl.maximum(e, 0), limit)
    return tl.cdiv(e, BS)


@triton.jit
def _fill_items(out_ptr, lens_ptr, pid, progs, batch, fill_parts, next_n, limit, stride_lb, stride_ln, stride_or,
                max_model_len, BS: tl.constexpr, ROWS: tl.constexpr, LENS_2D: tl.constexpr, FILL_N: tl.constexpr):
    """The persistent grid's share of the -inf fill: items (request, part), ``fill_parts`` per request, dealt
    out to the programs in turn; each fills its part of the positions past its request's last tile."""
    for item in range(pid, batch * fill_parts, progs):
        fb = pid * 0 + item // fill_parts
        nt = _request_tiles(lens_ptr, fb, fb >= 0, next_n, limit, stride_lb, stride_ln, BS, ROWS, LENS_2D)
        _fill_tail(out_ptr, fb, pid * 0, next_n, stride_or, nt * BS, item - fb * fill_parts, fill_parts,
                   max_model_len, ROWS, FILL_N)


@triton.jit(do_not_specialize=["num_kv_blocks"])
def _paged_mqa_logits_persistent_kernel(
    q_ptr, kv_ptr, w_ptr, lens_ptr, bt_ptr, out_ptr,
    stride_qb, stride_qn, stride_qh, stride_qd,
    stride_kv,
    stride_wr, stride_wh,
    stride_lb, stride_ln,
    stride_btb, stride_btk,
    stride_or,
    batch, next_n, max_model_len, max_blocks, num_kv_blocks, fill_parts,
    H: tl.constexpr, D: tl.constexpr, BS: tl.constexpr, ROWS: tl.constexpr, BLOCK_B: tl.constexpr,
    LENS_2D: tl.constexpr, CLEAN: tl.constexpr, FP8_DOT: tl.constexpr,
    FILL_N: tl.constexpr, NUM_STAGES: tl.constexpr, PDL: tl.constexpr, FILL_FIRST: tl.constexpr,
):
    """The split-rows kernel on a persistent grid (``PagedConfig.persistent``). Every request's key tiles
    are numbered one after another (request 0's, then request 1's, ...); program p of P takes tiles
    [p·T/P, (p+1)·T/P) of the T in all, i.e. one contiguous stretch that crosses at most a few request
    boundaries, so each program pays its pipeline's fill once or twice instead of once per short chunk,
    and the programs' work differs by at most one tile whatever the lengths. The -inf fill past each
    request's last tile is shared out as (request, part) items, ``fill_parts`` per request."""
    _pdl.enter(PDL)
    pid = tl.program_id(0)
    progs = tl.num_programs(0)
    limit = tl.minimum(max_model_len, max_blocks * BS)
    ib = tl.arange(0, BLOCK_B)
    tiles = _request_tiles(lens_ptr, ib, ib < batch, next_n, limit, stride_lb, stride_ln, BS, ROWS, LENS_2D)
    cum = tl.cumsum(tiles, axis=0)
    excl = cum - tiles
    total = tl.sum(tiles, axis=0)
    g0 = (pid.to(tl.int64) * total // progs).to(tl.int32)
    g1 = ((pid + 1).to(tl.int64) * total // progs).to(tl.int32)
    b_first = tl.sum((cum <= g0).to(tl.int32), axis=0)
    b_end = tl.sum((excl < g1).to(tl.int32), axis=0)

    if CLEAN and FILL_FIRST:
        _fill_items(out_ptr, lens_ptr, pid, progs, batch, fill_parts, next_n, limit, stride_lb, stride_ln,
                    stride_or, max_model_len, BS, ROWS, LENS_2D, FILL_N)

    t = tl.arange(0, BS)
    d = tl.arange(0, D)
    r0 = pid * 0  # row 0 of the request as a tensor (the interpreter rejects int masks)
    for bi in range(b_first, b_end):
        b = pid * 0 + bi  # a tensor also under the interpreter (whose loops yield ints)
        # Picked out of ``excl`` in every iteration, not carried from the last one: Triton 3.6 dropped
        # that loop-carried value (``start = start + nt``) when pipelining the inner loop (the TTIR
        # carries it, the TTGIR of the sm_90 build does not), so every stretch after a program's first
        # request started at the wrong tile (H200 run kernels-s4-2: unwritten positions).
        start = tl.sum(tl.where(ib == b, excl, 0), axis=0)
        nt = tl.sum(tl.where(ib == b, tiles, 0), axis=0)
        lo = tl.maximum(g0, start) - start
        hi = tl.minimum(g1, start + nt) - start
        q0, w0 = _load_row_query(q_ptr, w_ptr, b, r0 + 0, next_n, stride_qb, stride_qn, stride_qh, stride_qd,
                                 stride_wr, stride_wh, H, D, FP8_DOT)
        end0 = _row_end(lens_ptr, b, r0 + 0, next_n, limit, stride_lb, stride_ln, LENS_2D)
        if ROWS >= 2:
            q1, w1 = _load_row_query(q_ptr, w_ptr, b, r0 + 1, next_n, stride_qb, stride_qn, stride_qh, stride_qd,
                                     stride_wr, stride_wh, H, D, FP8_DOT)
            end1 = _row_end(lens_ptr, b, r0 + 1, next_n, limit, stride_lb, stride_ln, LENS_2D)
        if ROWS >= 4:
            q2, w2 = _load_row_query(q_ptr, w_ptr, b, r0 + 2, next_n, stride_qb, stride_qn, stride_qh, stride_qd,
                                     stride_wr, stride_wh, H, D, FP8_DOT)
            q3, w3 = _load_row_query(q_ptr, w_ptr, b, r0 + 3, next_n, stride_qb, stride_qn, stride_qh, stride_qd,
                                     stride_wr, stride_wh, H, D, FP8_DOT)
            end2 = _row_end(lens_ptr, b, r0 + 2, next_n, limit, stride_lb, stride_ln, LENS_2D)
            end3 = _row_end(lens_ptr, b, r0 + 3, next_n, limit, stride_lb, stride_ln, LENS_2D)
        bt_row = bt_ptr + b.to(tl.int64) * stride_btb
        row = b * next_n
        for tile in tl.range(lo, hi, num_stages=NUM_STAGES):
            raw = tl.load(bt_row + tile * stride_btk).to(tl.int64)
            bad = ((raw < 0) | (raw >= num_kv_blocks)) & (t >= 0)  # a [BS] mask
            base = kv_ptr + tl.where(bad, 0, raw) * stride_kv
            k_ptrs = base[:, None] + t[:, None] * D + d[None, :]
            if FP8_DOT:
                k = tl.load(k_ptrs.to(tl.pointer_type(tl.float8e4nv)))
            else:
                k = decode_e4m3(tl.load(k_ptrs))
            scale = tl.load((base + BS * D).to(tl.pointer_type(tl.float32)) + t)
            p = tile * BS + t
            _store_row(out_ptr, row, stride_or, p, _masked(_row_scores(k, q0, w0) * scale, bad), end0, 0 < next_n,
                       max_model_len, CLEAN)
            if ROWS >= 2:
                _store_row(out_ptr, row + 1, stride_or, p, _masked(_row_scores(k, q1, w1) * scale, bad), end1,
                           r0 + 1 < next_n, max_model_len, CLEAN)
            if ROWS >= 4:
                _store_row(out_ptr, row + 2, stride_or, p, _masked(_row_scores(k, q2, w2) * scale, bad), end2,
                           r0 + 2 < next_n, max_model_len, CLEAN)
                _store_row(out_ptr, row + 3, stride_or, p, _masked(_row_scores(k, q3, w3) * scale, bad), end3,
                           r0 + 3 < next_n, max_model_len, CLEAN)
        # every warp is done with this stretch's shared-memory tiles (and query tiles) before the next
        # stretch's prologue copies into the same buffers
        tl.debug_barrier()

    if CLEAN and not FILL_FIRST:
        _fill_items(out_ptr, lens_ptr, pid, progs, batch, fill_parts, next_n, limit, stride_lb, stride_ln,
                    stride_or, max_model_len, BS, ROWS, LENS_2D, FILL_N)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_tail(args: tuple, max_model_len: Any, clean_logits: Any, schedule_metadata: Any) -> tuple[int, bool]:
    """Accept both call forms after ``block_tables``.

    ``(max_model_len[, clean_logits])`` and DeepGEMM's
    ``(schedule_metadata, max_context_len[, clean_logits])``: a sixth positional
    argument that is a tensor or None is the (ignored) schedule metadata.
    """
    rest = list(args)
    if rest and (rest[0] is None or isinstance(rest[0], torch.Tensor)):
        schedule_metadata = rest.pop(0)  # noqa: F841 - accepted for drop-in compatibility, unused
    if len(rest) > 2:
        raise TypeError("fp8_paged_mqa_logits: too many positional arguments")
    if rest:
        if max_model_len is not None:
            raise TypeError("fp8_paged_mqa_logits: max_model_len given twice")
        max_model_len = rest.pop(0)
    if rest:
        clean_logits = rest.pop(0)
    if max_model_len is None:
        raise TypeError("fp8_paged_mqa_logits: missing max_model_len")
    if not _is_int(max_model_len):
        raise TypeError(f"max_model_len must be a Python int (a shape), got {type(max_model_len).__name__}")
    if max_model_len < 1:
        raise ValueError(f"max_model_len must be >= 1, got {max_model_len}")
    if not isinstance(clean_logits, bool):
        raise TypeError(f"clean_logits must be a bool, got {type(clean_logits).__name__}")
    return max_model_len, clean_logits


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _check_inputs(q, kv_cache, weights, context_lens, block_tables) -> tuple[int, int, int, int, int]:
    for name, t in (("q", q), ("kv_cache", kv_cache), ("weights", weights),
                    ("context_lens", context_lens), ("block_tables", block_tables)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if q.dtype != torch.float8_e4m3fn:
        raise TypeError(f"q must be float8_e4m3fn, got {q.dtype}")
    if q.dim() != 4:
        raise ValueError(f"q must be [B, next_n, H, D], got shape {list(q.shape)}")
    batch, next_n, heads, dim = q.shape
    if batch < 1 or next_n < 1:
        raise ValueError(f"q must have B >= 1 and next_n >= 1, got shape {list(q.shape)}")
    if not (_pow2(heads) and 16 <= heads <= 128):
        raise ValueError(f"H must be a power of two in [16, 128], got {heads}")
    if not (_pow2(dim) and 32 <= dim <= 256):
        raise ValueError(f"D must be a power of two in [32, 256], got {dim}")
    if kv_cache.dtype != torch.uint8:
        raise TypeError(f"kv_cache must be uint8 (packed FP8 keys + fp32 scales), got {kv_cache.dtype}")
    if kv_cache.dim() != 4 or kv_cache.shape[2] != 1 or kv_cache.shape[3] != dim + 4:
        raise ValueError(f"kv_cache must be [num_blocks, block_size, 1, {dim + 4}], got {list(kv_cache.shape)}")
    if kv_cache.shape[0] < 1:
        raise ValueError("kv_cache has no blocks (shape[0] == 0): every block-table entry would be out of range")
    block_size = kv_cache.shape[1]
    if not (_pow2(block_size) and 16 <= block_size <= 128):
        raise ValueError(f"block_size must be a power of two in [16, 128], got {block_size}")
    if kv_cache.stride(3) != 1 or kv_cache.stride(1) != dim + 4:
        raise ValueError(
            "kv_cache blocks must be packed (strides [block_stride, D+4, *, 1]); "
            f"got strides {list(kv_cache.stride())}"
        )
    if kv_cache.stride(0) < block_size * (dim + 4) or kv_cache.stride(0) % 4:
        raise ValueError(
            f"kv_cache block stride must be a multiple of 4 and >= {block_size * (dim + 4)}, got {kv_cache.stride(0)}"
        )
    if kv_cache.data_ptr() % 4:
        raise ValueError("kv_cache must start at a 4-byte aligned address (the fp32 scales are read as words)")
    if weights.dtype != torch.float32:
        raise TypeError(f"weights must be float32, got {weights.dtype}")
    if tuple(weights.shape) != (batch * next_n, heads):
        raise ValueError(f"weights must be [B*next_n, H] = [{batch * next_n}, {heads}], got {list(weights.shape)}")
    if context_lens.dtype != torch.int32:
        raise TypeError(f"context_lens must be int32, got {context_lens.dtype}")
    if tuple(context_lens.shape) not in ((batch,), (batch, next_n)):
        raise ValueError(f"context_lens must be [B] or [B, next_n] = [{batch}, {next_n}], got "
                         f"{list(context_lens.shape)}")
    if block_tables.dtype != torch.int32:
        raise TypeError(f"block_tables must be int32, got {block_tables.dtype}")
    if block_tables.dim() != 2 or block_tables.shape[0] != batch or block_tables.shape[1] < 1:
        raise ValueError(f"block_tables must be [B, max_blocks] with B = {batch}, got {list(block_tables.shape)}")
    return batch, next_n, heads, dim, block_size


def fp8_paged_mqa_logits(
    q: torch.Tensor,
    kv_cache: torch.Tensor,
    weights: torch.Tensor,
    context_lens: torch.Tensor,
    block_tables: torch.Tensor,
    *args: Any,
    max_model_len: int | None = None,
    clean_logits: bool = True,
    schedule_metadata: Any = None,
    out: torch.Tensor | None = None,
    config: PagedConfig | None = None,
    fp8_dot: bool | None = None,
) -> torch.Tensor:
    """FP8 paged MQA logits, ``[B·next_n, max_model_len]`` fp32.

    Call forms: ``(q, kv_cache, weights, context_lens, block_tables, max_model_len,
    clean_logits=True)`` and DeepGEMM's ``(..., block_tables, schedule_metadata,
    max_context_len, clean_logits)``; ``schedule_metadata`` is accepted and ignored.
    ``out`` (keyword) is an optional fp32 ``[B·next_n, max_model_len]`` buffer with
    unit column stride; with ``clean_logits=False`` only valid positions of it are
    written. ``config`` and ``fp8_dot`` override the shape-based launch choices
    (benchmarks and tests).

    Calls the custom op ``torch.ops.graphcheck.fp8_paged_mqa_logits`` (or
    ``fp8_paged_mqa_logits_out`` when ``out`` is given), which ``torch.compile``
    treats as one opaque op. Calls with ``config`` or ``fp8_dot``, and calls whose
    arguments the op schema cannot hold (so that validation can say what is wrong),
    launch the kernel directly.
    """
    max_model_len, clean_logits = _parse_tail(args, max_model_len, clean_logits, schedule_metadata)
    if (config is None and fp8_dot is None
            and all(isinstance(t, torch.Tensor) for t in (q, kv_cache, weights, context_lens, block_tables))
            and _launch.launchable_together(q, kv_cache, weights, context_lens, block_tables,
                                            out if isinstance(out, torch.Tensor) else None)):
        if out is None:
            return torch.ops.graphcheck.fp8_paged_mqa_logits(q, kv_cache, weights, context_lens, block_tables,
                                                             max_model_len, clean_logits)
        if isinstance(out, torch.Tensor):
            torch.ops.graphcheck.fp8_paged_mqa_logits_out(q, kv_cache, weights, context_lens, block_tables,
                                                          max_model_len, out, clean_logits)
            return out
    return _run(q, kv_cache, weights, context_lens, block_tables, max_model_len, clean_logits, out, config, fp8_dot)


def _tma_descriptors(cfg: PagedConfig, kv_cache: torch.Tensor, block_size: int, dim: int,
                     use_fp8: bool) -> tuple[Any, Any, int]:
    """Host tensor descriptors for ``PagedConfig.tma`` (None, None, 0 when off): the keys as rows of D
    bytes (fp8 for the native dot, else bytes) in [block_size, D] boxes, and the cache as fp32 words in
    [1, block_size] boxes whose column block_size·D/4 of block row p is block p's first scale."""
    if cfg.tma == TMA_OFF:
        return None, None, 0
    from triton.tools.tensor_descriptor import TensorDescriptor

    num_blocks, stride = kv_cache.shape[0], kv_cache.stride(0)
    if cfg.tma not in (TMA_KEYS, TMA_KEYS_SCALES) or cfg.pair_blocks or cfg.persistent:
        raise ValueError(f"tma must be 0, 1 or 2, with single-block tiles and no persistent grid, got {cfg}")
    if not tma_fits(kv_cache, dim):
        raise ValueError(f"tma needs blocks of 64 or 128 keys, a block stride that is a multiple of 16 and of "
                         f"D = {dim} and a 16-byte aligned cache, got block size {block_size}, stride {stride}, "
                         f"address {kv_cache.data_ptr():#x}")
    kv_rows = stride // dim
    rows = (num_blocks - 1) * kv_rows + block_size  # the last block's keys end the view
    keys = torch.as_strided(kv_cache.view(torch.float8_e4m3fn if use_fp8 else torch.uint8), (rows, dim), (dim, 1))
    k_desc = TensorDescriptor(keys, [rows, dim], [dim, 1], [block_size, dim])
    s_desc = None
    if cfg.tma == TMA_KEYS_SCALES:
        width = block_size * (dim + 4) // 4  # a block's packed words; its scales are the last block_size
        words = torch.as_strided(kv_cache.view(torch.float32), (num_blocks, width), (stride // 4, 1))
        s_desc = TensorDescriptor(words, [num_blocks, width], [stride // 4, 1], [1, block_size])
    return k_desc, s_desc, kv_rows


def _run(q, kv_cache, weights, context_lens, block_tables, max_model_len: int, clean_logits: bool,
         out: torch.Tensor | None, config: PagedConfig | None = None,
         fp8_dot: bool | None = None) -> torch.Tensor:
    """Validate and launch (the custom op's implementation)."""
    batch, next_n, heads, dim, block_size = _check_inputs(q, kv_cache, weights, context_lens, block_tables)
    device = _fp8.check_launchable(q, kv_cache, weights, context_lens, block_tables)
    rows_total = batch * next_n
    out = _fp8.logits_buffer(out, rows_total, max_model_len, device)
    cfg = config or default_config(batch, next_n, heads, block_size, max_model_len, device,
                                   max_blocks=block_tables.shape[1])
    if config is None and cfg.tma and not tma_fits(kv_cache, dim):
        cfg = dataclasses.replace(cfg, tma=TMA_OFF)  # a cache the copy engine cannot cut into boxes
    if cfg.ws:
        if not ws_fits(q, kv_cache) or not _ws_default(device) or fp8_dot is False:
            if config is not None:
                raise ValueError(f"ws needs next_n = 2, H = 64, D = 128, blocks of 64 keys, a TMA-cuttable cache, a "
                                 f"contiguous q, at most {WS_MAX_BATCH} requests, the FP8 dot and compute capability "
                                 f"9.0, got q "
                                 f"{list(q.shape)}, cache {list(kv_cache.shape)} on {device}")
            cfg = dataclasses.replace(cfg, ws=0)
        else:
            from graphcheck.kernels import paged_mqa_logits_ws

            paged_mqa_logits_ws.launch(q, kv_cache, weights, context_lens, block_tables, max_model_len, clean_logits,
                                       out, cfg.ws, cfg.ws_stages, cfg.pdl and _pdl.supported(device),
                                       _fp8.sm_count(device))
            return out
    if cfg.split_rows and (cfg.rows not in (1, 2, 4) or cfg.reduce_dot):
        raise ValueError(f"split_rows needs rows in (1, 2, 4) and reduce_dot=False, got {cfg}")
    if cfg.join_rows and (not cfg.split_rows or cfg.rows != 2 or cfg.head_dot or cfg.persistent):
        raise ValueError(f"join_rows needs split_rows with rows == 2, no head_dot and no persistent grid, got {cfg}")
    head_dot = cfg.head_dot
    if head_dot not in (HEAD_DOT_OFF, HEAD_DOT_BF16, HEAD_DOT_BF16_W2) or (
            head_dot and (cfg.reduce_dot or cfg.persistent or cfg.rows > 16)):
        raise ValueError(f"head_dot must be 0, 1 or 2; it needs rows <= 16 and neither reduce_dot nor "
                         f"persistent, got {cfg}")
    use_fp8 = _fp8.native_fp8_dot(device) if fp8_dot is None else bool(fp8_dot)
    k_desc, s_desc, kv_rows = _tma_descriptors(cfg, kv_cache, block_size, dim, use_fp8)
    lens_2d = context_lens.dim() == 2
    gn = max(16, cfg.rows) if cfg.reduce_dot or head_dot else cfg.rows
    rows_first = cfg.rows_first and batch <= 65535  # the grid's z extent
    row_tiles = _launch.cdiv(next_n, cfg.rows)
    grid = (row_tiles, cfg.splits, batch) if rows_first else (batch, cfg.splits, row_tiles)
    q_arg = q if use_fp8 else q.view(torch.uint8)
    pdl = cfg.pdl and _pdl.supported(device)
    extra: dict[str, Any] = {"launch_pdl": True} if pdl else {}
    if cfg.maxnreg:
        extra["maxnreg"] = cfg.maxnreg
    if cfg.persistent:
        if not cfg.split_rows or cfg.pair_blocks or cfg.reduce_dot or next_n > cfg.rows:
            raise ValueError(f"persistent needs split_rows, single blocks and next_n <= rows, got {cfg}")
        progs = cfg.persistent * _fp8.sm_count(device)
        _paged_mqa_logits_persistent_kernel[(progs,)](
            q_arg, kv_cache, weights, context_lens, block_tables, out,
            q.stride(0), q.stride(1), q.stride(2), q.stride(3),
            kv_cache.stride(0),
            weights.stride(0), weights.stride(1),
            context_lens.stride(0), context_lens.stride(1) if lens_2d else 0,
            block_tables.stride(0), block_tables.stride(1),
            out.stride(0),
            batch, next_n, max_model_len, block_tables.shape[1], kv_cache.shape[0], max(1, progs // batch),
            H=heads, D=dim, BS=block_size, ROWS=cfg.rows, BLOCK_B=_launch.next_pow2(batch),
            LENS_2D=lens_2d, CLEAN=clean_logits, FP8_DOT=use_fp8,
            FILL_N=cfg.fill_n, NUM_STAGES=cfg.num_stages, PDL=pdl, FILL_FIRST=cfg.fill_first,
            num_warps=cfg.num_warps, **extra,
        )
        return out
    _paged_mqa_logits_kernel[grid](
        q_arg, kv_cache, weights, context_lens, block_tables, out,
        q.stride(0), q.stride(1), q.stride(2), q.stride(3),
        kv_cache.stride(0),
        weights.stride(0), weights.stride(1),
        context_lens.stride(0), context_lens.stride(1) if lens_2d else 0,
        block_tables.stride(0), block_tables.stride(1),
        out.stride(0),
        next_n, max_model_len, block_tables.shape[1], kv_cache.shape[0],
        k_desc, s_desc, kv_rows,
        H=heads, D=dim, BS=block_size, ROWS=cfg.rows, GN=gn,
        LENS_2D=lens_2d, CLEAN=clean_logits, FP8_DOT=use_fp8, REDUCE_DOT=cfg.reduce_dot,
        SPLIT_ROWS=cfg.split_rows, PAIR=cfg.pair_blocks, KEYS=block_size * (2 if cfg.pair_blocks else 1),
        FILL_N=cfg.fill_n, NUM_STAGES=cfg.num_stages, PDL=pdl, ROWS_FIRST=rows_first,
        FILL_FIRST=cfg.fill_first, HEAD_DOT=head_dot,
        EMULATE=device.type != "cuda", TMA=cfg.tma, JOIN_ROWS=cfg.join_rows, num_warps=cfg.num_warps, **extra,
    )
    return out


# ----------------------------------------------------------------------------- reference


def valid_mask(context_lens: torch.Tensor, next_n: int, length: int, limit: int | None = None) -> torch.Tensor:
    """Boolean ``[B·next_n, length]``: which key positions each row may see."""
    batch = context_lens.shape[0]
    j = torch.arange(next_n, device=context_lens.device)
    if context_lens.dim() == 2:
        end = context_lens.long()
    else:
        end = context_lens.long()[:, None] - next_n + 1 + j[None, :]
    if limit is not None:
        end = end.clamp(max=limit)
    pos = torch.arange(length, device=context_lens.device)
    return (pos[None, None, :] < end[:, :, None]).reshape(batch * next_n, length)


def fp8_paged_mqa_logits_reference(
    q: torch.Tensor,
    kv_cache: torch.Tensor,
    weights: torch.Tensor,
    context_lens: torch.Tensor,
    block_tables: torch.Tensor,
    max_model_len: int,
    clean_logits: bool = True,
    compute_dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Pure PyTorch, vectorised and capture-safe (sizes from shapes only, no host sync).

    Gathers every block of every block table, dequantises in ``compute_dtype``
    and masks invalid positions to -inf (always; ``clean_logits`` is accepted for
    signature parity). A block id outside ``[0, num_blocks)`` reads nothing and its
    positions are -inf, valid or not (the kernel does the same).
    """
    batch, next_n, heads, dim = q.shape
    num_blocks, block_size = kv_cache.shape[:2]
    max_blocks = block_tables.shape[1]
    length = min(max_model_len, max_blocks * block_size)
    ids = block_tables.long()
    bad_block = (ids < 0) | (ids >= num_blocks)  # [B, MB]
    blocks = _fp8._block_bytes(kv_cache)[ids.clamp(0, max(num_blocks - 1, 0))]  # [B, MB, bs*(D+4)]
    keys = blocks[..., : block_size * dim].contiguous().view(torch.float8_e4m3fn)
    keys = keys.reshape(batch, max_blocks * block_size, dim)[:, :length].to(compute_dtype)
    scales = blocks[..., block_size * dim :].contiguous().view(torch.float32)
    scales = scales.reshape(batch, max_blocks * block_size)[:, :length].to(compute_dtype)
    scores = torch.einsum("bjhd,bpd->bjhp", q.to(compute_dtype), keys).relu_()
    w = weights.to(compute_dtype).reshape(batch, next_n, heads, 1)
    logits = (scores * w).sum(dim=2) * scales[:, None, :]  # [B, next_n, length]
    logits = logits.reshape(batch * next_n, length)
    bad = bad_block.repeat_interleave(block_size, dim=1)[:, :length]  # [B, length]
    bad = bad[:, None, :].expand(batch, next_n, length).reshape(batch * next_n, length)
    logits = logits.masked_fill(~valid_mask(context_lens, next_n, length) | bad, float("-inf"))
    result = torch.full((batch * next_n, max_model_len), float("-inf"), dtype=compute_dtype, device=q.device)
    result[:, :length] = logits
    return result


# ----------------------------------------------------------------------------- inputs and cases


def make_inputs(
    batch: int, next_n: int, heads: int, dim: int, block_size: int, max_model_len: int,
    lengths: torch.Tensor | None = None, *, seed: int = 0, device: Any = "cpu",
    lens_2d: bool = False, shuffle: bool = True, block_stride: int | None = None,
    extra_blocks: int = 3, avg_len: int | None = None, max_blocks: int | None = None,
) -> dict[str, Any]:
    """Random inputs for one call: FP8 q, a packed paged cache with shuffled physical blocks, weights, lengths.

    ``lengths`` [B] are the context lengths (default: uniform in 0.7-1.3x
    ``avg_len``, or in [1, max_model_len]). With ``lens_2d`` the lengths become
    ``[B, next_n]`` holding the same causal ends as the 1-D form. ``max_blocks``
    (block-table width) defaults to cdiv(max_model_len, block_size). Block-table
    entries past each sequence hold arbitrary in-range ids. Values are drawn on
    ``device`` from a generator seeded with ``seed``; shapes never depend on it.
    """
    device = torch.device(device)
    gen = torch.Generator(device=device).manual_seed(seed)
    if lengths is None:
        if avg_len is None:
            lengths = torch.randint(1, max_model_len + 1, (batch,), generator=gen, device=device)
        else:
            lo, hi = int(0.7 * avg_len), int(1.3 * avg_len)
            lengths = torch.randint(max(lo, 1), hi + 1, (batch,), generator=gen, device=device)
            lengths = lengths.clamp(max=max_model_len)
    lengths = torch.as_tensor(lengths, dtype=torch.int64).to(device)
    if max_blocks is None:
        max_blocks = _launch.cdiv(max_model_len, block_size)
    num_blocks = batch * max_blocks + extra_blocks
    perm = (torch.randperm(num_blocks, generator=gen, device=device) if shuffle
            else torch.arange(num_blocks, device=device))
    block_tables = perm[: batch * max_blocks].reshape(batch, max_blocks).to(torch.int32)
    keys = torch.randn(num_blocks, block_size, dim, generator=gen, device=device)
    keys *= 1 + torch.rand(num_blocks, block_size, 1, generator=gen, device=device)
    k8, ks = _fp8.quantize_fp8_per_token(keys)
    del keys
    kv_cache = _fp8.pack_paged_kv_cache(k8, ks, block_stride)
    q = (torch.randn(batch, next_n, heads, dim, generator=gen, device=device) * 2).to(torch.float8_e4m3fn)
    weights = torch.randn(batch * next_n, heads, generator=gen, device=device) / heads ** 0.5
    if lens_2d:
        j = torch.arange(next_n, device=device)
        context_lens = (lengths[:, None] - next_n + 1 + j[None, :]).clamp(min=0)
    else:
        context_lens = lengths
    return {
        "q": q,
        "kv_cache": kv_cache,
        "weights": weights,
        "context_lens": context_lens.to(torch.int32),
        "block_tables": block_tables,
        "max_model_len": max_model_len,
    }


def graphcheck_cases() -> list:
    """Declared cases for ``graphcheck audit graphcheck.kernels`` (tiny shapes for the interpreter)."""
    from graphcheck.case import Case

    def case(name: str, next_n: int, lens_2d: bool, clean: bool = True, block_stride: int | None = None,
             dim: int = 64, block: int = 16, mml: int = 80) -> Case:
        def make(seed: int, device: Any) -> dict[str, Any]:
            # Same shapes for every seed; lengths and block ids differ.
            inputs = make_inputs(2, next_n, 16, dim, block, mml, seed=seed, device=device, lens_2d=lens_2d,
                                 block_stride=block_stride)
            inputs["clean_logits"] = clean
            return inputs

        return Case(name=name, fn=fp8_paged_mqa_logits, make_inputs=make, atol=1e-3, rtol=1e-3,
                    description=f"paged FP8 MQA logits, next_n={next_n}, {'2-D' if lens_2d else '1-D'} lengths, "
                                "shuffled physical blocks")

    return [
        case("paged_mqa_logits/next_n1_1d", 1, False),
        case("paged_mqa_logits/next_n2_2d", 2, True),
        case("paged_mqa_logits/next_n4_1d_strided", 4, False, block_stride=16 * 68 + 64),
        # 64-key blocks, D = 128: on sm_90 the default next_n = 2 launch takes its key tiles through TMA
        case("paged_mqa_logits/next_n2_block64", 2, False, dim=128, block=64, mml=200),
    ]
