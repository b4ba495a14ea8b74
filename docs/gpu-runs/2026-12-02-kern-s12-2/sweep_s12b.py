"""Sweep of kernel variants against the shipped launch, each checked for correctness first.

Decode (``fp8_paged_mqa_logits``) on every shape of ``bench_mqa_logits.py``:
the shipped configuration (timed first and last) and candidates selected by
``PagedConfig`` (now: main's launch without TMA against key tiles through TMA,
``tma``, the next_n = 2 default since run s5-3; earlier runs: TMA for keys and
scales, the head-weighted sum as a second dot, the persistent grid, register
caps, eight warps, six stages, 8-32 programs per SM). Each candidate is checked against the float64
oracle of ``tests/kernels/mqa_check.py`` on every shape and against the shipped
kernel's output (same -inf mask; values to fp32 rounding, except ``head_dot``
variants, which round to bf16 and are held to the oracle's tolerance), outputs
poisoned with NaN first.

``merge_attn_states`` at N = 256, 4096 and 65536 (bf16, H = 32, D = 128): the
shipped launch (earlier runs: looped programs merging several row groups,
one-warp programs of 1-8 rows, head-major, the LSE math first, no masks, 32-bit
offsets), each
checked against the float64 reference; plus the per-node cost of an empty
kernel in a CUDA graph (with and without PDL), the floor under any tiny kernel.

Times are device time per call inside a CUDA graph (``common.graph_ms``, inputs
cycled past L2). ``--smoke`` runs tiny shapes on the CPU interpreter (wall
clock, no graphs) to check the script itself.

    python benchmarks/sweep_kernel_variants.py [--only paged|merge] [--json FILE] [--smoke]
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(ROOT, "tests", "kernels"))

import common  # noqa: E402

DECODE = dict(shapes=[(64, 2, 8192, 16384), (128, 2, 8192, 16384), (64, 2, 8192), (64, 2, 32768), (128, 2, 8192),
                      (128, 2, 32768), (64, 2, 32768, 65536), (64, 1, 8192), (64, 1, 32768), (128, 1, 8192),
                      (128, 1, 32768), (64, 1, 8192, 16384), (128, 1, 8192, 16384)],
              heads=64, dim=128, block=64, max_model_len=111000, oracle="all")
# 64-key blocks: the TMA variants need them (tma_fits)
SMOKE_DECODE = dict(shapes=[(2, 1, 100), (2, 2, 150)], heads=16, dim=64, block=64, max_model_len=300,
                    oracle="all")
MERGE = dict(sizes=(256,), heads=32, dim=128)
SMOKE_MERGE = dict(sizes=(6, 40), heads=4, dim=64)
DEVICE = "cuda"


def _args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--only", choices=("paged", "merge"))
    parser.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU interpreter")
    return parser.parse_args()


def timed(calls: list, replays: int = 5) -> float | None:
    """Device ms per call in a graph (wall clock per call on the CPU); None and a message on failure."""
    try:
        if DEVICE == "cuda":
            return common.graph_ms(calls, replays=replays)
        calls[0]()
        t0 = time.perf_counter()
        calls[0]()
        return (time.perf_counter() - t0) * 1e3
    except Exception as exc:  # noqa: BLE001 - report, keep sweeping
        print(f"  timing failed: {type(exc).__name__}: {str(exc)[:240]}", file=sys.stderr)
        if DEVICE == "cuda":
            import torch

            torch.cuda.synchronize()
        return None


# ----------------------------------------------------------------------------- paged MQA decode


def paged_variants(batch: int, next_n: int, blocks: int, sms: int, default) -> list:
    """(name, PagedConfig) candidates for one shape; the first is the shipped launch, the last its re-run."""
    from graphcheck.kernels import _launch
    from graphcheck.kernels import paged_mqa_logits as pm

    def splits(per_sm: int, rows: int) -> int:
        tiles = _launch.cdiv(next_n, rows)
        return max(1, min(_launch.cdiv(per_sm * sms, batch * tiles), _launch.cdiv(blocks, pm.MIN_BLOCKS_PER_PROGRAM)))

    rep = dataclasses.replace
    # run kern-s12-2: main's launch (one store per row) against the new default (join_rows: both rows in one
    # store; next_n = 1 launches are unchanged, the same config twice), ABAB
    old = rep(default, join_rows=False)
    return [("main (per-row stores)", old), ("new default", default)] * 2
    # Run kern-s11-1 (copies of the kernel, docs/gpu-runs/2026-12-02-kern-s11-1/gen_variants.py): tl.range(...,
    # warp_specialize=True) fails Triton 3.6's Hopper pass unless the query tiles come through TMA, and then both
    # consumer warpgroups run every 64-key tile (wrong at 5 stages, 3x slower at 3); loop_unroll_factor=2 13-35%
    # slower; disallow_acc_multi_buffer builds the same binary.
    # Earlier candidates, no longer timed. Run s4-4: the head dot (bf16, bf16w2, four stages, 8 and 32 per SM, one
    # dot over both rows; next_n = 1 also split_rows). Runs s4-2/s4-3: a persistent grid (PagedConfig.persistent, e.g.
    # rows=2 split_rows persistent=5 maxnreg=96, fill first or not; rows=1 persistent=6 maxnreg=80 or 5):
    # P = k·SMs programs share the flattened (request, key tile) range evenly, one contiguous stretch each.
    # Run s4-3 (the fixed kernel): 2-6% slower than the split launch on every next_n = 2 shape, 1-11%
    # slower on five of six next_n = 1 shapes.


def sweep_paged(spec: dict, bw_gbs: float, rows_out: list) -> None:
    import mqa_check
    import torch
    import triton

    from graphcheck.kernels import _fp8, fp8_paged_mqa_logits
    from graphcheck.kernels import paged_mqa_logits as pm

    heads, dim, bs = spec["heads"], spec["dim"], spec["block"]
    sms = _fp8.sm_count(torch.device(DEVICE))
    for shape_spec in spec["shapes"]:
        batch, next_n, avg, *rest = shape_spec
        mml = rest[0] if rest else spec["max_model_len"]
        max_blocks = triton.cdiv(int(1.3 * avg), bs)
        blocks = min(max_blocks, triton.cdiv(mml, bs))

        make = functools.partial(pm.make_inputs, batch, next_n, heads, dim, bs, mml, device=DEVICE, avg_len=avg,
                                 max_blocks=max_blocks)

        first = make(seed=0)
        key_bytes = int(first["context_lens"].long().sum()) * (dim + 4)
        floor_us = (key_bytes + batch * next_n * mml * 4) / (bw_gbs * 1e9) * 1e6
        copies = common.copies_for(first["kv_cache"].shape[0] * first["kv_cache"].stride(0)) if DEVICE == "cuda" else 1
        sets = [first] + [make(seed=s) for s in range(1, copies)]
        outs = [torch.empty(batch * next_n, mml, device=DEVICE) for _ in sets]
        shape = f"B={batch} n={next_n} ctx={avg}" + (f" mml={mml}" if mml != spec["max_model_len"] else "")
        default = pm.default_config(batch, next_n, heads, bs, mml, torch.device(DEVICE), max_blocks)
        exp = (mqa_check.paged_expected(first) if spec["oracle"] == "all"
               or tuple(shape_spec) in [tuple(o) for o in spec["oracle"]] else None)
        base = None
        for name, cfg in paged_variants(batch, next_n, blocks, sms, default):
            row: dict[str, Any] = {"kernel": "paged", "shape": shape, "variant": name, "cfg": str(cfg),
                                   "floor_us": floor_us}
            try:
                got = torch.full((batch * next_n, mml), float("nan"), device=DEVICE)
                fp8_paged_mqa_logits(**first, out=got, config=cfg)
                if exp is not None:
                    # head_dot's bf16 rounding is held to the GPU tolerance also under the interpreter
                    res = mqa_check.check(got, exp, eps=mqa_check.EPS_CUDA if cfg.head_dot else None)
                    row["oracle"] = f"ok {res['worst_ratio']:.2f}"
                if base is None:
                    base = got
                else:
                    same_mask = torch.equal(torch.isneginf(got), torch.isneginf(base))
                    valid = torch.isfinite(base)
                    err = float((got[valid] - base[valid]).abs().max()) if valid.any() else 0.0
                    row["vs_shipped"] = f"{'mask ok' if same_mask else 'MASK DIFFERS'} {err:.1e}"
                    # head_dot rounds relu(S) to bf16: its values are held to the float64 oracle's
                    # tolerance (mqa_check.check above), not to the shipped kernel's fp32 rounding
                    close = err <= 1e-3 or (cfg.head_dot != 0 and exp is not None)
                    if not same_mask or not close or torch.isnan(got).any():
                        raise AssertionError(f"differs from the shipped kernel: mask {same_mask}, max err {err}")
                del got
            except Exception as exc:  # noqa: BLE001 - a wrong or failing variant gets no time
                row["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
                print(f"  {shape} {name}: {row['error']}", file=sys.stderr)
                rows_out.append(row)
                continue
            calls = [lambda s=s, o=o, c=cfg: fp8_paged_mqa_logits(**s, out=o, config=c)
                     for s, o in zip(sets, outs)]
            ms = timed(calls)
            row["us"] = None if ms is None else ms * 1e3
            row["frac_floor"] = None if ms is None else floor_us / (ms * 1e3)
            rows_out.append(row)
            print(f"  {shape:<28} {name:<26} {row['us']} us frac {row['frac_floor']}", file=sys.stderr)
        del sets, outs, first, base, exp
        if DEVICE == "cuda":
            torch.cuda.empty_cache()


# ----------------------------------------------------------------------------- merge


def _nop_kernel():
    """An empty kernel (optionally entered through PDL), defined at module level for Triton's globals."""
    global _NOP
    if _NOP is None:
        import triton
        import triton.language as tl

        from graphcheck.kernels import _pdl

        globals().update(tl=tl, _pdl=_pdl)

        @triton.jit
        def nop(x_ptr, PDL: tl.constexpr):
            _pdl.enter(PDL)

        _NOP = nop
    return _NOP


_NOP = None


def _merge_set(torch, n: int, heads: int, dim: int, dtype, gen) -> dict:
    """One merge input set: random parts and [H, N] LSEs, outputs poisoned with NaN."""
    def lse():
        return torch.randn(heads, n, device=DEVICE, generator=gen) * 4

    return {"output": torch.full((n, heads, dim), float("nan"), dtype=dtype, device=DEVICE),
            "prefix_output": torch.randn(n, heads, dim, device=DEVICE, generator=gen).to(dtype),
            "prefix_lse": lse(),
            "suffix_output": torch.randn(n, heads, dim, device=DEVICE, generator=gen).to(dtype),
            "suffix_lse": lse(),
            "output_lse": torch.full((heads, n), float("nan"), device=DEVICE)}


def sweep_merge(spec: dict, bw_gbs: float, rows_out: list) -> None:
    import torch

    from graphcheck.kernels import merge_attn as mas

    _nop = _nop_kernel()

    heads, dim = spec["heads"], spec["dim"]
    dtype = torch.bfloat16

    if DEVICE == "cuda":
        x = torch.empty(1, device=DEVICE)
        for pdl in (False, True):
            launch = {"launch_pdl": True} if pdl else {}
            ms = common.graph_ms([lambda p=pdl, kw=launch: _nop[(1,)](x, PDL=p, **kw)], per_graph=100, replays=20)
            rows_out.append({"kernel": "graph-node", "shape": "empty kernel, 1 program",
                             "variant": "pdl" if pdl else "plain", "us": ms * 1e3})

    for n in spec["sizes"]:
        size = 3 * n * heads * dim * 2 + 3 * n * heads * 4
        floor_us = size / (bw_gbs * 1e9) * 1e6
        copies = common.copies_for(size) if DEVICE == "cuda" else 1
        gen = torch.Generator(device=DEVICE).manual_seed(n)

        sets = [_merge_set(torch, n, heads, dim, dtype, gen) for _ in range(copies)]
        s0 = sets[0]
        s0["prefix_lse"][0, : max(1, n // 10)] = float("inf")  # an empty prefix part (FlashAttention-2's +inf)
        want, want_lse = mas.merge_attn_states_reference(s0["prefix_output"], s0["prefix_lse"], s0["suffix_output"],
                                                         s0["suffix_lse"], compute_dtype=torch.float64,
                                                         output_dtype=torch.float64)
        rows, warps, head_major = mas.default_config(n, heads, dim, dtype, "hn")
        shipped = (rows, warps, head_major, True)
        # (rows, warps, head_major, pdl[, num_heads compiled in (default: yes, token-major only)[, load both
        # parts first]]). Run s4-2 timed the shipped launch without masks and with 32-bit offsets (launch
        # options EVEN/IDX32 of the commit that added PagedConfig.persistent, removed after the run):
        # N = 256 3.17 / 3.14 µs against 3.08 / 3.09 shipped, no faster at N = 4096 / 65536. Run s4-1:
        # one-warp programs of 1, 2 and 8 rows 10.5, 5.4 and 3.32 µs, the LSE math first 3.39, against
        # 3.06-3.08. Run s5-1 (14:47 UTC; the kernel body as a helper called once or from a pipelined
        # loop, config[6:8] = iters, stages, removed after the run): programs of 4 rows / 1 warp looping over 2,
        # 4, 8, 16 row groups (1024-128 programs) 4.24-10.3 µs, 8 rows / 1 warp x2 4.51, 8 rows / 2 warps 4.13
        # (x2: 4.33), 16 rows / 4 warps 4.14 (x2: 4.42), against 3.08 / 3.03 for the shipped launch.
        # Runs kern-s11-1..3 (merge_var.py / candidate.patch in docs/gpu-runs/2026-12-02-kern-s11-*): programs
        # streaming 2-8 row groups (register double buffering) 3.42-7.97 us, cache hints 3.14, the PDL trigger
        # before the wait 3.66; four warps of two rows per warp 2.96-2.98 in a copy, 3.01-3.05 as the shipped
        # kernel's default (candidate, not shipped) against 3.05-3.10 for the one-warp launch.
        cand = (8, 4, False, True)  # kern-s11-3's candidate: 2 KiB programs, 4 warps, 2 rows per warp
        two = (4, 2, False, True)  # 2 warps, 2 rows per warp (kern-s11-2: 3.00-3.01 in a copy)
        cands = [("main", shipped), ("8x4", cand)] * 2
        per_graph = 100 if n <= 4096 else 20
        for name, cfg in cands:
            row: dict[str, Any] = {"kernel": "merge", "shape": f"N={n} bf16 H={heads} D={dim}", "variant": name,
                                   "cfg": str(cfg), "floor_us": floor_us}
            try:
                s0["output"].fill_(float("nan"))
                s0["output_lse"].fill_(float("nan"))
                mas._merge(**s0, lse_layout="hn", config=cfg)
                torch.testing.assert_close(s0["output"].double(), want, atol=1e-3, rtol=1e-2)
                torch.testing.assert_close(s0["output_lse"].double(), want_lse.double(), atol=1e-5, rtol=1e-5)
                row["oracle"] = "ok"
            except Exception as exc:  # noqa: BLE001
                row["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
                print(f"  merge N={n} {name}: {row['error']}", file=sys.stderr)
                rows_out.append(row)
                continue
            calls = [lambda s=s, c=cfg: mas._merge(**s, lse_layout="hn", config=c) for s in sets]
            if DEVICE == "cuda":
                try:
                    ms = common.graph_ms(calls, per_graph=per_graph, replays=20 if n <= 4096 else 5)
                except Exception as exc:  # noqa: BLE001
                    print(f"  merge N={n} {name}: graph failed: {exc}", file=sys.stderr)
                    torch.cuda.synchronize()
                    ms = None
            else:
                ms = timed(calls)
            row["us"] = None if ms is None else ms * 1e3
            row["frac_floor"] = None if ms is None else floor_us / (ms * 1e3)
            rows_out.append(row)
            print(f"  merge N={n} {name:<22} {row['us']} us", file=sys.stderr)
        del sets
        if DEVICE == "cuda":
            torch.cuda.empty_cache()


def main() -> int:
    import torch

    global DEVICE
    args = _args()
    if not torch.cuda.is_available():
        if not args.smoke:
            print("sweep_kernel_variants needs a CUDA device (or --smoke with TRITON_INTERPRET=1)", file=sys.stderr)
            return 2
        DEVICE = "cpu"
        common.copies_for = lambda nbytes: 1
    env = common.environment()
    if DEVICE == "cuda":
        common.warm_up_gpu()
    bw = common.copy_bandwidth_gbs() if DEVICE == "cuda" else 1.0
    env["copy_GBps"] = bw
    print(f"{env}")
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    if args.only in (None, "merge"):
        sweep_merge(SMOKE_MERGE if args.smoke else MERGE, bw, rows)
    if args.only in (None, "paged"):
        sweep_paged(SMOKE_DECODE if args.smoke else DECODE, bw, rows)
    common.print_table("variants (device µs per call inside a CUDA graph)", rows,
                       ["kernel", "shape", "variant", "us", "floor_us", "frac_floor", "oracle", "vs_shipped", "error"])
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    common.write_json(args.json, env, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
