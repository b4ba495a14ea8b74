"""FP8 (paged) MQA logits: correctness, -inf masks, writes, call forms and errors at small shapes.

Without CUDA the kernels run under Triton's interpreter (TRITON_INTERPRET=1 is
set before the kernel modules are imported); with CUDA the same tests run natively.
"""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from graphcheck.kernels import (  # noqa: E402 - the interpreter flag must be set first
    _fp8,
    fp8_mqa_logits,
    fp8_mqa_logits_reference,
    fp8_paged_mqa_logits,
    fp8_paged_mqa_logits_reference,
    mqa_logits,
    paged_mqa_logits,
)
from graphcheck.kernels._fp8 import decode_e4m3  # noqa: E402
from graphcheck.kernels.mqa_logits import MqaConfig  # noqa: E402
from graphcheck.kernels.paged_mqa_logits import PagedConfig  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def diff(x: torch.Tensor, y: torch.Tensor, valid: torch.Tensor) -> float:
    """DeepGEMM's metric 1 - 2Σxy/Σ(x²+y²) over valid positions (invalid masked to 0)."""
    x = torch.where(valid, x.double(), 0.0)
    y = torch.where(valid, y.double(), 0.0)
    return float(1 - 2 * (x * y).sum() / (x * x + y * y).sum())


def check_against(out: torch.Tensor, ref: torch.Tensor, cleaned: bool = True) -> None:
    valid = torch.isfinite(ref)
    assert valid.any(), "test inputs must have valid positions"
    assert not torch.isnan(out[valid]).any()
    # The public bar is diff < 1e-3. The interpreter's FP8 dot is exact, so it is held far tighter;
    # Hopper's FP8 tensor cores accumulate with fewer bits, so a GPU gets a looser element-wise bound.
    bar, rtol, atol = (1e-5, 1e-4, 1e-3) if DEVICE == "cpu" else (1e-4, 2e-3, 2e-2)
    assert diff(out, ref, valid) < bar
    torch.testing.assert_close(out[valid], ref[valid].float(), rtol=rtol, atol=atol)
    if cleaned:
        assert torch.equal(torch.isneginf(out), ~valid), "-inf mask differs from the validity mask"


def naive_paged(inputs: dict) -> torch.Tensor:
    """Per-request loop in float64, independent of the vectorised reference."""
    q, kv, w = inputs["q"].cpu(), inputs["kv_cache"].cpu(), inputs["weights"].cpu()
    lens, bt, mml = inputs["context_lens"].cpu(), inputs["block_tables"].cpu(), inputs["max_model_len"]
    keys, scales = _fp8.unpack_paged_kv_cache(kv)
    batch, next_n, heads, _ = q.shape
    bs = keys.shape[1]
    out = torch.full((batch * next_n, mml), float("-inf"), dtype=torch.float64)
    for b in range(batch):
        for j in range(next_n):
            end = int(lens[b, j]) if lens.dim() == 2 else int(lens[b]) - next_n + 1 + j
            end = min(end, mml, bt.shape[1] * bs)
            for p in range(max(end, 0)):
                blk = int(bt[b, p // bs])
                k = keys[blk, p % bs].double()
                s = (q[b, j].double() @ k).relu()
                out[b * next_n + j, p] = float(scales[blk, p % bs]) * float((w[b * next_n + j].double() * s).sum())
    return out


# ----------------------------------------------------------------------------- packing and references


def test_pack_round_trip_and_quantisation():
    keys = torch.randn(5, 16, 64) * 3
    keys[0, 0] = 0  # amax floor
    k8, scale = _fp8.quantize_fp8_per_token(keys)
    assert scale[0, 0] == pytest.approx(1e-4 / 448)
    assert torch.allclose(k8.float() * scale[..., None], keys, rtol=0.07, atol=1e-3)
    for stride in (None, 16 * 68 + 36):
        kv = _fp8.pack_paged_kv_cache(k8, scale, stride)
        assert kv.shape == (5, 16, 1, 68) and kv.stride(0) == (stride or 16 * 68)
        # bytes [0, bs*D) of block 2 are its keys, then its scales
        raw = kv.as_strided((16 * 68,), (1,), kv.storage_offset() + 2 * kv.stride(0))
        assert torch.equal(raw[: 16 * 64], k8[2].reshape(-1).view(torch.uint8))
        assert torch.equal(raw[16 * 64 :].view(torch.float32), scale[2])
        k2, s2 = _fp8.unpack_paged_kv_cache(kv)
        assert torch.equal(k2.view(torch.uint8), k8.view(torch.uint8)) and torch.equal(s2, scale)
    pow2 = _fp8.quantize_fp8_per_token(keys, pow2_scale=True)[1]
    assert torch.equal(torch.exp2(torch.log2(pow2).round()), pow2) and (pow2 >= scale).all()


@pytest.mark.parametrize("lens_2d", [False, True])
def test_paged_reference_matches_naive_loop(lens_2d):
    inputs = paged_mqa_logits.make_inputs(3, 3, 16, 64, 16, 50, torch.tensor([1, 37, 50]), seed=3,
                                          lens_2d=lens_2d, block_stride=16 * 68 + 8)
    ref = fp8_paged_mqa_logits_reference(**inputs, compute_dtype=torch.float64)
    torch.testing.assert_close(ref, naive_paged(inputs), rtol=1e-12, atol=1e-12)


def test_mqa_reference_matches_naive_loop():
    inputs = mqa_logits.make_inputs(7, 23, 16, 64, seed=4, causal=False)
    ref = fp8_mqa_logits_reference(**inputs, compute_dtype=torch.float64)
    q, (k, ks), w = inputs["q"].double(), inputs["kv"], inputs["weights"].double()
    naive = torch.full((7, 23), float("-inf"), dtype=torch.float64)
    for i in range(7):
        for p in range(int(inputs["cu_seqlen_ks"][i]), int(inputs["cu_seqlen_ke"][i])):
            naive[i, p] = float(ks[p]) * float((w[i] * (q[i] @ k[p].double()).relu()).sum())
    torch.testing.assert_close(ref, naive, rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- paged kernel

# (B, next_n, H, D, block, max_model_len, lengths, 2-D lens, block stride, fp8 dot, reduce dot)
PAGED_CASES = [
    ("ctx1_and_full", 2, 1, 16, 64, 16, 48, [1, 48], False, None, True, False),
    ("not_multiple", 3, 2, 32, 64, 16, 70, [17, 33, 70], False, 16 * 68 + 64, True, True),
    ("lens2d_next_n3", 2, 3, 16, 128, 32, 90, [5, 90], True, None, True, False),
    ("next_n4_decode", 2, 4, 16, 64, 16, 64, [4, 61], False, None, False, False),
    ("block64_decode", 2, 2, 16, 64, 64, 150, [150, 66], True, 64 * 68 + 128, False, True),
    ("short_in_long", 2, 1, 32, 64, 16, 200, [3, 20], False, None, True, False),
]


@pytest.mark.parametrize("case", PAGED_CASES, ids=[c[0] for c in PAGED_CASES])
def test_paged_matches_reference(case):
    _, batch, next_n, heads, dim, bs, mml, lengths, lens_2d, stride, fp8, red = case
    inputs = paged_mqa_logits.make_inputs(batch, next_n, heads, dim, bs, mml, torch.tensor(lengths), seed=11,
                                          device=DEVICE, lens_2d=lens_2d, block_stride=stride)
    ref = fp8_paged_mqa_logits_reference(**inputs, compute_dtype=torch.float64)
    cfg = PagedConfig(rows=min(4, 1 << (next_n - 1).bit_length()), splits=2, reduce_dot=red, fill_n=32)
    out = fp8_paged_mqa_logits(**inputs, config=cfg, fp8_dot=fp8)
    assert out.shape == (batch * next_n, mml) and out.dtype == torch.float32
    check_against(out, ref)
    # default launch choices give the same answer
    check_against(fp8_paged_mqa_logits(**inputs), ref)


# Row scoring and key-tile variants: (next_n, rows, split_rows, pair_blocks, lengths, 2-D lens, fp8 dot, splits).
# Lengths give odd and even block counts (block 16), lengths below next_n (empty rows) and a full row.
VARIANT_CASES = [
    ("split2", 2, 2, True, False, [1, 33, 70], False, True, 2),
    ("split4_rows_past_next_n_pair", 3, 4, True, True, [2, 47, 70], True, True, 3),
    ("split1_pair_decoded", 1, 1, True, True, [17, 49, 64], False, False, 2),
    ("pair_row_tile", 2, 2, False, True, [15, 48, 70], True, True, 1),
    ("pair_row_tile_next_n4_decoded", 4, 4, False, True, [3, 70, 31], False, False, 4),
    ("split2_rows_over_programs", 3, 2, True, False, [70, 5, 40], False, True, 2),
]


@pytest.mark.parametrize("clean", [True, False])
@pytest.mark.parametrize("case", VARIANT_CASES, ids=[c[0] for c in VARIANT_CASES])
def test_paged_variants_match_reference(case, clean):
    _, next_n, rows, split_rows, pair, lengths, lens_2d, fp8, splits = case
    inputs = paged_mqa_logits.make_inputs(3, next_n, 16, 64, 16, 70, torch.tensor(lengths), seed=14, device=DEVICE,
                                          lens_2d=lens_2d, block_stride=16 * 68 + 32)
    ref = fp8_paged_mqa_logits_reference(**inputs, compute_dtype=torch.float64)
    cfg = PagedConfig(rows=rows, splits=splits, split_rows=split_rows, pair_blocks=pair, fill_n=16)
    big = torch.full((3 * next_n + 2, 70 + 5), float("nan"), device=DEVICE)
    view = big[1:-1, 2:-3]
    fp8_paged_mqa_logits(**inputs, clean_logits=clean, out=view, config=cfg, fp8_dot=fp8)
    check_against(view, ref, cleaned=clean)
    if not clean:
        assert torch.isnan(view[~torch.isfinite(ref)]).all(), "clean_logits=False wrote an invalid position"
    outside = torch.ones_like(big, dtype=torch.bool)
    outside[1:-1, 2:-3] = False
    assert torch.isnan(big[outside]).all(), "wrote outside the output"
    # every variant computes the same sums: agreement with the row-tile kernel to rounding
    base = fp8_paged_mqa_logits(**inputs, config=PagedConfig(rows=rows, splits=1), fp8_dot=fp8)
    valid = torch.isfinite(ref)
    torch.testing.assert_close(view[valid], base[valid], rtol=1e-5, atol=1e-5)


def test_split_rows_config_is_checked():
    inputs = paged_mqa_logits.make_inputs(1, 2, 16, 64, 16, 32, seed=1, device=DEVICE)
    for cfg in (PagedConfig(rows=8, splits=1, split_rows=True), PagedConfig(rows=2, splits=1, split_rows=True,
                                                                            reduce_dot=True)):
        with pytest.raises(ValueError, match="split_rows"):
            fp8_paged_mqa_logits(**inputs, config=cfg)


def test_default_configs_are_shape_only_and_bounded():
    cpu = torch.device("cpu")
    for batch, next_n, heads, mml, max_blocks in [(64, 1, 64, 111000, 167), (64, 2, 64, 111000, 666),
                                                  (1, 4, 16, 128, 2), (128, 3, 32, 5000, None)]:
        cfg = paged_mqa_logits.default_config(batch, next_n, heads, 64, mml, cpu, max_blocks=max_blocks)
        # plain ints and bools only: nothing in a launch choice can carry a tensor value
        assert all(type(v) in (int, bool) for v in vars(cfg).values()), cfg
        assert cfg.num_warps == 4 and cfg.rows * heads <= 128 and cfg.rows >= 1
        blocks = min(max_blocks or 10**9, triton.cdiv(mml, 64))
        row_tiles = triton.cdiv(next_n, cfg.rows)
        # about PROGRAMS_PER_SM(_ROWS) programs per SM, but never fewer than MIN_BLOCKS_PER_PROGRAM table entries each
        per_sm = paged_mqa_logits.PROGRAMS_PER_SM_ROWS if cfg.split_rows else paged_mqa_logits.PROGRAMS_PER_SM
        assert cfg.split_rows == (cfg.rows in (2, 4))
        assert cfg.pair_blocks == (cfg.split_rows and next_n != 2)  # next_n = 2: single blocks (run kernels-s3-1)
        assert 1 <= cfg.splits <= max(1, triton.cdiv(blocks, paged_mqa_logits.MIN_BLOCKS_PER_PROGRAM))
        assert cfg.splits * batch * row_tiles < per_sm * _fp8.sm_count(cpu) + batch * row_tiles
    # a wide block table allows more splits than a narrow one
    narrow = paged_mqa_logits.default_config(8, 1, 64, 64, 111000, cpu, max_blocks=20)
    wide = paged_mqa_logits.default_config(8, 1, 64, 64, 111000, cpu, max_blocks=2000)
    assert narrow.splits < wide.splits
    m = mqa_logits.default_config(2048, 8192, 64, cpu)
    # a regression pin of the H200 measurement documented in default_config, not an oracle
    assert (m.block_m, m.block_n, m.num_warps, m.num_stages) == (4, 64, 4, 3)
    for heads in (16, 32, 64, 128):  # 256 query-head rows per program, whatever H is
        assert mqa_logits.default_config(100, 1000, heads, cpu).block_m * heads == 256


def test_paged_rows_split_over_programs_and_empty_rows():
    # next_n 4 with one row per program; a request whose 1-D length < next_n has empty rows.
    inputs = paged_mqa_logits.make_inputs(2, 4, 16, 64, 16, 40, torch.tensor([2, 40]), seed=5, device=DEVICE)
    ref = fp8_paged_mqa_logits_reference(**inputs, compute_dtype=torch.float64)
    assert torch.isneginf(ref[0]).all() and torch.isneginf(ref[1]).all()  # rows 0, 1 of request 0 see nothing
    out = fp8_paged_mqa_logits(**inputs, config=PagedConfig(rows=1, splits=3, fill_n=16))
    check_against(out, ref)


def test_paged_unclean_writes_only_valid_positions():
    inputs = paged_mqa_logits.make_inputs(3, 2, 16, 64, 16, 60, torch.tensor([9, 60, 30]), seed=6,
                                          device=DEVICE, lens_2d=True)
    ref = fp8_paged_mqa_logits_reference(**inputs, compute_dtype=torch.float64)
    big = torch.full((6 + 2, 60 + 7), float("nan"), device=DEVICE)
    view = big[1:7, 3:63]
    out = fp8_paged_mqa_logits(**inputs, clean_logits=False, out=view, config=PagedConfig(rows=2, splits=2))
    assert out.data_ptr() == view.data_ptr()
    valid = torch.isfinite(ref)
    check_against(out, ref, cleaned=False)
    assert torch.isnan(out[~valid]).all(), "clean_logits=False wrote an invalid position"
    outside = torch.ones_like(big, dtype=torch.bool)
    outside[1:7, 3:63] = False
    assert torch.isnan(big[outside]).all(), "wrote outside the output"
    # and cleaning into the same view writes exactly the -inf mask
    fp8_paged_mqa_logits(**inputs, out=view)
    check_against(view, ref)
    assert torch.isnan(big[outside]).all()


def test_paged_poisoned_output_and_bitwise_reruns():
    inputs = paged_mqa_logits.make_inputs(2, 2, 16, 64, 16, 50, seed=8, device=DEVICE)
    ref = fp8_paged_mqa_logits_reference(**inputs, compute_dtype=torch.float64)
    first = torch.full((4, 50), float("nan"), device=DEVICE)
    fp8_paged_mqa_logits(**inputs, out=first)
    check_against(first, ref)
    for _ in range(2):
        again = torch.full((4, 50), float("nan"), device=DEVICE)
        fp8_paged_mqa_logits(**inputs, out=again)
        assert torch.equal(again.view(torch.int32), first.view(torch.int32))


def test_paged_fp8_and_decoded_paths_agree():
    inputs = paged_mqa_logits.make_inputs(2, 1, 32, 64, 16, 40, seed=9, device=DEVICE)
    a = fp8_paged_mqa_logits(**inputs, fp8_dot=True)
    b = fp8_paged_mqa_logits(**inputs, fp8_dot=False)
    valid = torch.isfinite(a)
    assert torch.equal(valid, torch.isfinite(b))
    torch.testing.assert_close(a[valid], b[valid], rtol=1e-5 if DEVICE == "cpu" else 2e-3,
                               atol=1e-4 if DEVICE == "cpu" else 2e-2)


@triton.jit
def _decode_all(src, dst):
    i = tl.arange(0, 256)
    tl.store(dst + i, decode_e4m3(tl.load(src + i)).to(tl.float32))


def test_decode_e4m3_every_byte():
    src = torch.arange(256, dtype=torch.int32).to(torch.uint8).to(DEVICE)
    dst = torch.empty(256, device=DEVICE)
    _decode_all[(1,)](src, dst)
    want = src.view(torch.float8_e4m3fn).float()
    finite = ~torch.isnan(want)
    assert torch.equal(dst[finite], want[finite])
    assert finite.sum() == 254


def test_paged_call_forms():
    inputs = paged_mqa_logits.make_inputs(2, 1, 16, 64, 16, 32, seed=10, device=DEVICE)
    args = [inputs[k] for k in ("q", "kv_cache", "weights", "context_lens", "block_tables")]
    base = fp8_paged_mqa_logits(*args, 32)
    sched = torch.zeros(9, 2, dtype=torch.int32, device=DEVICE)
    for out in (
        fp8_paged_mqa_logits(*args, 32, True),
        fp8_paged_mqa_logits(*args, sched, 32, True),  # DeepGEMM's order
        fp8_paged_mqa_logits(*args, None, 32),
        fp8_paged_mqa_logits(*args, max_model_len=32, clean_logits=True, schedule_metadata=sched),
    ):
        assert torch.equal(out, base)
    with pytest.raises(TypeError, match="too many"):
        fp8_paged_mqa_logits(*args, sched, 32, True, 1)
    with pytest.raises(TypeError, match="missing max_model_len"):
        fp8_paged_mqa_logits(*args)
    with pytest.raises(TypeError, match="given twice"):
        fp8_paged_mqa_logits(*args, 32, max_model_len=32)


def _bad_paged(name):
    i = paged_mqa_logits.make_inputs(2, 2, 16, 64, 16, 32, seed=1, device=DEVICE)
    if name == "q_dtype":
        i["q"] = i["q"].float()
    elif name == "q_rank":
        i["q"] = i["q"][0]
    elif name == "heads":
        i["q"] = i["q"][:, :, :12]
    elif name == "kv_dtype":
        i["kv_cache"] = i["kv_cache"].view(torch.int8)
    elif name == "kv_width":
        i["kv_cache"] = i["kv_cache"][..., :67]
    elif name == "kv_unpacked":
        i["kv_cache"] = torch.zeros(7, 16, 1, 72, dtype=torch.uint8, device=DEVICE)[..., :68]
    elif name == "block_size":
        i["kv_cache"] = i["kv_cache"][:, :8]
    elif name == "weights_dtype":
        i["weights"] = i["weights"].half()
    elif name == "weights_shape":
        i["weights"] = i["weights"][:3]
    elif name == "lens_dtype":
        i["context_lens"] = i["context_lens"].long()
    elif name == "lens_shape":
        i["context_lens"] = i["context_lens"][:1]
    elif name == "bt_dtype":
        i["block_tables"] = i["block_tables"].long()
    elif name == "bt_shape":
        i["block_tables"] = i["block_tables"][:1]
    elif name == "mml_tensor":
        i["max_model_len"] = torch.tensor(32)
    elif name == "mml_zero":
        i["max_model_len"] = 0
    elif name == "clean_int":
        i["clean_logits"] = 1
    elif name == "not_tensor":
        i["weights"] = i["weights"].tolist()
    elif name == "out_shape":
        i["out"] = torch.empty(4, 31, device=DEVICE)
    elif name == "out_dtype":
        i["out"] = torch.empty(4, 32, device=DEVICE, dtype=torch.float64)
    elif name == "device_mix":
        i["weights"] = i["weights"].to("meta")
    return i


PAGED_ERRORS = {
    "q_dtype": TypeError, "q_rank": ValueError, "heads": ValueError, "kv_dtype": TypeError,
    "kv_width": ValueError, "kv_unpacked": ValueError, "block_size": ValueError, "weights_dtype": TypeError,
    "weights_shape": ValueError, "lens_dtype": TypeError, "lens_shape": ValueError, "bt_dtype": TypeError,
    "bt_shape": ValueError, "mml_tensor": TypeError, "mml_zero": ValueError, "clean_int": TypeError,
    "not_tensor": TypeError, "out_shape": ValueError, "out_dtype": TypeError, "device_mix": ValueError,
}


@pytest.mark.parametrize("name", sorted(PAGED_ERRORS))
def test_paged_errors(name):
    with pytest.raises(PAGED_ERRORS[name]):
        fp8_paged_mqa_logits(**_bad_paged(name))


def test_unsupported_device_is_refused():
    inputs = paged_mqa_logits.make_inputs(1, 1, 16, 64, 16, 16, seed=1)
    inputs = {k: v.to("meta") if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
    with pytest.raises(ValueError, match="CUDA device"):
        fp8_paged_mqa_logits(**inputs)


@pytest.mark.parametrize("split_rows,pair", [(False, False), (True, True)])
def test_block_table_entries_past_each_sequence_are_never_read(split_rows, pair):
    inputs = paged_mqa_logits.make_inputs(2, 2, 16, 64, 16, 64, torch.tensor([20, 47]), seed=7, device=DEVICE)
    ref = fp8_paged_mqa_logits_reference(**inputs, compute_dtype=torch.float64)
    bt = inputs["block_tables"]
    bt[0, 2:] = -(2**30)  # request 0 needs blocks 0-1, request 1 blocks 0-2 (an odd count: a lone last pair)
    bt[1, 3:] = 2**30
    cfg = PagedConfig(rows=2, splits=3, split_rows=split_rows, pair_blocks=pair)
    check_against(fp8_paged_mqa_logits(**inputs, config=cfg), ref)


def test_paged_misaligned_cache_is_refused():
    inputs = paged_mqa_logits.make_inputs(1, 1, 16, 64, 16, 16, seed=1, device=DEVICE)
    kv = inputs["kv_cache"]
    raw = torch.zeros(kv.shape[0] * kv.stride(0) + 8, dtype=torch.uint8, device=DEVICE)
    inputs["kv_cache"] = raw[2:].as_strided(kv.shape, kv.stride())
    with pytest.raises(ValueError, match="aligned"):
        fp8_paged_mqa_logits(**inputs)


# ----------------------------------------------------------------------------- non-paged kernel

MQA_CASES = [
    ("causal_fp8", 12, 40, 16, 64, True, True, False, MqaConfig(block_m=2, block_n=16, splits=1, fill_n=16)),
    ("ranges_decoded", 9, 33, 16, 64, False, False, True, MqaConfig(block_m=4, block_n=32, splits=2, fill_n=16)),
    ("h32_d128", 16, 48, 32, 128, True, True, True, MqaConfig(block_m=1, block_n=16, splits=3, fill_n=16)),
]


@pytest.mark.parametrize("case", MQA_CASES, ids=[c[0] for c in MQA_CASES])
def test_mqa_matches_reference(case):
    _, m, n, heads, dim, causal, fp8, red, cfg = case
    inputs = mqa_logits.make_inputs(m, n, heads, dim, seed=12, device=DEVICE, causal=causal)
    ref = fp8_mqa_logits_reference(**inputs, compute_dtype=torch.float64)
    out = fp8_mqa_logits(**inputs, config=cfg, fp8_dot=fp8)
    check_against(out, ref)
    rerun = fp8_mqa_logits(**inputs, config=cfg, fp8_dot=fp8)
    assert torch.equal(rerun.view(torch.int32), out.view(torch.int32))


def test_mqa_unclean_writes_only_valid_and_accepts_column_scales():
    inputs = mqa_logits.make_inputs(10, 37, 16, 64, seed=13, device=DEVICE, causal=False)
    inputs["cu_seqlen_ke"][3] = inputs["cu_seqlen_ks"][3]  # an empty range
    ref = fp8_mqa_logits_reference(**inputs, compute_dtype=torch.float64)
    k, scale = inputs["kv"]
    inputs["kv"] = (k, scale[:, None])
    big = torch.full((12, 40), float("nan"), device=DEVICE)
    view = big[1:11, 2:39]
    fp8_mqa_logits(**inputs, clean_logits=False, out=view, config=MqaConfig(block_m=2, block_n=16, splits=2))
    valid = torch.isfinite(ref)
    check_against(view, ref, cleaned=False)
    assert torch.isnan(view[~valid]).all()
    outside = torch.ones_like(big, dtype=torch.bool)
    outside[1:11, 2:39] = False
    assert torch.isnan(big[outside]).all()
    fp8_mqa_logits(**inputs, out=view, config=MqaConfig(block_m=2, block_n=16, splits=2, fill_n=8))
    check_against(view, ref)
    assert torch.isneginf(view[3]).all()


def _bad_mqa(name):
    i = mqa_logits.make_inputs(4, 20, 16, 64, seed=1, device=DEVICE)
    k, s = i["kv"]
    if name == "kv_not_pair":
        i["kv"] = k
    elif name == "q_dtype":
        i["q"] = i["q"].half()
    elif name == "q_rank":
        i["q"] = i["q"][None]
    elif name == "k_dtype":
        i["kv"] = (k.float(), s)
    elif name == "k_dim":
        i["kv"] = (k[:, :32], s)
    elif name == "scale_dtype":
        i["kv"] = (k, s.double())
    elif name == "scale_shape":
        i["kv"] = (k, s[:5])
    elif name == "weights_shape":
        i["weights"] = i["weights"].t()
    elif name == "ks_dtype":
        i["cu_seqlen_ks"] = i["cu_seqlen_ks"].long()
    elif name == "ke_shape":
        i["cu_seqlen_ke"] = i["cu_seqlen_ke"][:2]
    elif name == "clean_str":
        i["clean_logits"] = "yes"
    elif name == "out_strided":
        i["out"] = torch.empty(20, 4, device=DEVICE).t()
    return i


MQA_ERRORS = {
    "kv_not_pair": TypeError, "q_dtype": TypeError, "q_rank": ValueError, "k_dtype": TypeError,
    "k_dim": ValueError, "scale_dtype": TypeError, "scale_shape": ValueError, "weights_shape": ValueError,
    "ks_dtype": TypeError, "ke_shape": ValueError, "clean_str": TypeError, "out_strided": ValueError,
}


@pytest.mark.parametrize("name", sorted(MQA_ERRORS))
def test_mqa_errors(name):
    with pytest.raises(MQA_ERRORS[name]):
        fp8_mqa_logits(**_bad_mqa(name))


# ----------------------------------------------------------------------------- capture safety, GPU-free


def test_declared_cases_run_and_keep_shapes():
    from graphcheck.case import Case

    cases = paged_mqa_logits.graphcheck_cases() + mqa_logits.graphcheck_cases()
    assert len({c.name for c in cases}) == len(cases) >= 5
    ref_of = {fp8_paged_mqa_logits: fp8_paged_mqa_logits_reference, fp8_mqa_logits: fp8_mqa_logits_reference}
    for case in cases:
        assert isinstance(case, Case)
        a, b = case.inputs(0, torch.device(DEVICE)), case.inputs(1, torch.device(DEVICE))
        for key in a:
            if isinstance(a[key], torch.Tensor):
                assert a[key].shape == b[key].shape and a[key].stride() == b[key].stride()
        assert any(isinstance(a[k], torch.Tensor) and not torch.equal(a[k], b[k]) for k in a)
        out = case.fn(**b)
        check_against(out, ref_of[case.fn](**b, compute_dtype=torch.float64))


def test_wrappers_and_references_do_not_sync():
    """No op that reads a tensor value on the host (item, nonzero, bool-mask index) runs."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func.overloadpacket))
            return func(*args, **(kwargs or {}))

    paged = paged_mqa_logits.make_inputs(2, 2, 16, 64, 16, 32, seed=2, device=DEVICE, lens_2d=True)
    flat = mqa_logits.make_inputs(6, 20, 16, 64, seed=2, device=DEVICE)
    rec = Recorder()
    with rec:
        fp8_paged_mqa_logits_reference(**paged)
        fp8_mqa_logits_reference(**flat)
    with Recorder() as wrappers:
        if DEVICE == "cuda":  # the interpreter copies tensors to the host by design
            fp8_paged_mqa_logits(**paged)
            fp8_mqa_logits(**flat)
    syncing = {"aten._local_scalar_dense", "aten.nonzero", "aten.masked_select", "aten.item", "aten._unique2"}
    assert rec.ops and not syncing & set(rec.ops)
    assert not syncing & set(wrappers.ops)
