"""Benchmark of the FP8 MQA-logits kernels (DeepSeek-V3.2 indexer) on DeepGEMM's shapes.

Decode (``fp8_paged_mqa_logits``): B = 64 and 128, next_n = 1 and 2, H = 64,
D = 128, block 64, average context 8192 and 32768 (lengths uniform in
0.7-1.3x), max_model_len 111000; and the same at max_model_len 16384 (context
8192) and 65536 (B = 64, next_n = 2, context 32768). Prefill (``fp8_mqa_logits``): M = 2048 queries,
SKV = 8192 and 32768 keys, H = 64, D = 128, query i sees keys [0, SKV - M + i].

For each shape: our kernel with clean_logits True and False, the eager PyTorch
reference and ``torch.compile`` of it (decode: both also timed inside a CUDA
graph); achieved TFLOPS and GB/s; and the fraction of the bandwidth floor. Decode times are
device time per call inside a CUDA graph (how engines run the decode step; many decode calls are shorter
than the wrapper's host-side launch, so event-timed single calls would time the
host); the event-timed call (``ours_event_ms``) and the wrapper's host cost
(``host_us``) are reported next to it. The floor is bytes / copy bandwidth (measured in
the same run), with bytes = Σlen·(D+4) (keys and scales, read once per request)
+ the output the kernel must write: every B·next_n·max_model_len fp32 when
clean_logits is set (the -inf fill included), only the valid positions
otherwise. FLOPs = 2·H·D·(valid query-key pairs).

``--sweep`` also times the decode launch at other programs-per-SM counts per
shape and prints the best (``--sweep-prefill``: prefill tile shapes).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

REF_MEMORY_CAP = 60e9  # skip reference timings whose estimated footprint is larger

# (B, next_n, average context[, max_model_len]), H = 64, D = 128, block 64, max_model_len 111000 unless given
DECODE = dict(shapes=[(b, n, avg) for b in (64, 128) for n in (1, 2) for avg in (8192, 32768)]
              + [(b, n, 8192, 16384) for b in (64, 128) for n in (1, 2)] + [(64, 2, 32768, 65536)],
              heads=64, dim=128, block=64, max_model_len=111000)
# M, SKV values, H, D
PREFILL = dict(m=2048, skv=(8192, 32768), heads=64, dim=128)
# --smoke: tiny shapes that run on the CPU interpreter, to check the script itself
SMOKE_DECODE = dict(shapes=[(2, 1, 40), (2, 2, 60)], heads=16, dim=64, block=16, max_model_len=200)
SMOKE_PREFILL = dict(m=16, skv=(48,), heads=16, dim=64)
DEVICE = "cuda"
# --sweep, decode: programs per SM along the key axis, around the default's
SWEEP_PROGRAMS_PER_SM = (8, 16, 32, 64)


def _args():
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="FILE", help="also write every row as JSON to FILE")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (smoke run)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    parser.add_argument("--no-reference", action="store_true", help="skip the eager reference baseline")
    parser.add_argument("--sweep", action="store_true", help="also time candidate decode launch configurations")
    parser.add_argument("--sweep-prefill", action="store_true", help="also time candidate prefill configurations")
    parser.add_argument("--only", choices=("decode", "prefill"), help="run one half only")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny shapes, CPU allowed (Triton interpreter): checks the script, not the kernel speed")
    parser.add_argument("--compile-limit", type=int, default=None, metavar="N",
                        help="compile the reference for the first N shapes of each kernel only (each compile "
                             "takes seconds to tens of seconds)")
    return parser.parse_args()


def _time(fn: Callable[[], Any], quick: bool) -> float | None:
    try:
        return common.time_ms(fn, quick)
    except Exception as exc:  # noqa: BLE001 - report the failure, keep benchmarking
        print(f"  failed: {type(exc).__name__}: {str(exc)[:200]}", file=sys.stderr)
        return None


_compiled_count: dict[str, int] = {}


def _ref_time(call: Callable[[], Any], row: dict, name: str) -> float | None:
    """A reference call's time: device time inside a CUDA graph for decode rows, like ours (the
    graph's private pool takes its allocations); event-timed calls where capture fails, and
    for prefill rows."""
    if DEVICE == "cuda" and row["kernel"] == "paged":
        try:
            ms = common.graph_ms([call], per_graph=2, replays=5)
            row[f"{name}_timing"] = "graph"
            return ms
        except Exception as exc:  # noqa: BLE001 - fall back, and say so in the row
            print(f"  {name} reference: graph capture failed ({type(exc).__name__}: {str(exc)[:120]}); "
                  "event-timed instead", file=sys.stderr)
            import torch

            torch.cuda.synchronize()
    row[f"{name}_timing"] = "events"
    return _time(call, True)


def _baselines(ref: Callable[..., Any], inputs: dict, est_bytes: float, args, row: dict) -> None:
    """Time the reference eager and compiled into ``row``, and ours' speedup over each."""
    import torch

    if args.no_reference or est_bytes > REF_MEMORY_CAP:
        row["ref_note"] = "skipped" if args.no_reference else f"skipped: needs ~{est_bytes / 1e9:.0f} GB"
        return
    row["eager_ms"] = _ref_time(lambda: ref(**inputs), row, "eager")
    done = _compiled_count.get(row["kernel"], 0)
    if args.compile_limit is not None and done >= args.compile_limit:
        row["ref_note"] = "compile skipped (--compile-limit)"
    elif not args.no_compile:
        _compiled_count[row["kernel"]] = done + 1
        fn = common.compiled(ref)
        if fn is not None:
            t0 = time.perf_counter()
            try:
                fn(**inputs)
                if DEVICE == "cuda":
                    torch.cuda.synchronize()
                row["compile_s"] = time.perf_counter() - t0
                row["compiled_ms"] = _ref_time(lambda: fn(**inputs), row, "compiled")
            except Exception as exc:  # noqa: BLE001
                row["ref_note"] = f"compile failed: {type(exc).__name__}"
    if DEVICE == "cuda":
        torch.cuda.empty_cache()
    for base in ("eager", "compiled"):
        if row.get(f"{base}_ms") and row.get("ours_ms"):
            row[f"speedup_{base}"] = row[f"{base}_ms"] / row["ours_ms"]


def _sweep_decode(row: dict, shape: str, spec: dict, batch: int, next_n: int, mml: int, max_blocks: int, timed,
                  sweep_rows: list) -> None:
    """Time the default launch and the same variant at other programs-per-SM counts; record the best."""
    import dataclasses

    import torch

    from graphcheck.kernels import _fp8, _launch
    from graphcheck.kernels import paged_mqa_logits as pm

    device = torch.device(DEVICE)
    default = pm.default_config(batch, next_n, spec["heads"], spec["block"], mml, device, max_blocks)
    row_tiles = _launch.cdiv(next_n, default.rows)
    cands = [("default", default)]
    for per_sm in SWEEP_PROGRAMS_PER_SM:
        splits = max(1, _launch.cdiv(per_sm * _fp8.sm_count(device), batch * row_tiles))
        if splits != default.splits:
            cands.append((f"{per_sm}/SM", dataclasses.replace(default, splits=splits)))
    best = None
    for name, cfg in cands:
        ms = timed(True, cfg, quick=True)
        sweep_rows.append({"kernel": "paged", "shape": shape, "variant": name, "cfg": str(cfg), "ms": ms,
                           "frac_floor": row["floor_us"] / (ms * 1e3) if ms and row.get("floor_us") else None})
        if ms is not None and (best is None or ms < best[0]):
            best = (ms, name, cfg)
    if best:
        row["sweep_best_ms"], row["sweep_best_cfg"] = best[0], f"{best[1]}: {best[2]}"
        if row.get("floor_us"):
            row["sweep_best_frac_floor"] = row["floor_us"] / (best[0] * 1e3)


def bench_decode(args, bw_gbs: float, rows: list, sweep_rows: list) -> None:
    import torch
    import triton

    from graphcheck.kernels import fp8_paged_mqa_logits, fp8_paged_mqa_logits_reference, paged_mqa_logits
    from graphcheck.kernels.paged_mqa_logits import PagedConfig

    spec = SMOKE_DECODE if args.smoke else DECODE
    heads, dim, bs = spec["heads"], spec["dim"], spec["block"]
    for batch, next_n, avg, *rest in spec["shapes"]:
        mml = rest[0] if rest else spec["max_model_len"]
        max_blocks = triton.cdiv(int(1.3 * avg), bs)
        make = lambda seed: paged_mqa_logits.make_inputs(  # noqa: E731
            batch, next_n, heads, dim, bs, mml, seed=seed, device=DEVICE, avg_len=avg, max_blocks=max_blocks)
        first = make(0)
        lens = first["context_lens"].long()
        sum_len = int(lens.sum())
        rows_valid = sum(max(0, min(int(v), mml) - next_n + 1 + j) for v in lens.tolist() for j in range(next_n))
        key_bytes = sum_len * (dim + 4)
        bytes_clean = key_bytes + batch * next_n * mml * 4
        bytes_raw = key_bytes + rows_valid * 4
        flops = 2 * heads * dim * rows_valid
        cache_bytes = first["kv_cache"].shape[0] * first["kv_cache"].stride(0)
        copies = common.copies_for(cache_bytes)
        sets = [first] + [make(s) for s in range(1, copies)]
        outs = [torch.empty(batch * next_n, mml, device=DEVICE) for _ in sets]

        def timed(clean: bool, config: PagedConfig | None = None, quick: bool = args.quick,
                  graph: bool = DEVICE == "cuda") -> float | None:
            calls = [lambda i=i: fp8_paged_mqa_logits(**sets[i], clean_logits=clean, out=outs[i], config=config)
                     for i in range(len(sets))]
            try:
                if graph:
                    return common.graph_ms(calls, replays=5 if quick else 20)
                return common.time_rotating(lambda i: calls[i], len(sets), quick)
            except Exception as exc:  # noqa: BLE001
                print(f"  {config}: {type(exc).__name__}: {str(exc)[:200]}", file=sys.stderr)
                return None

        shape = f"B={batch} n={next_n} ctx={avg}" + (f" mml={mml}" if mml != spec["max_model_len"] else "")
        row: dict[str, Any] = {"kernel": "paged", "shape": shape, "sum_len": sum_len,
                               "cfg": str(paged_mqa_logits.default_config(batch, next_n, heads, bs, mml,
                                                                         torch.device(DEVICE), max_blocks))}
        row["ours_ms"] = timed(True)
        row["ours_unclean_ms"] = timed(False)
        # The same call timed one launch at a time (host included), and the wrapper's host cost.
        row["ours_event_ms"] = timed(True, graph=False)
        row["host_us"] = common.host_us(lambda: fp8_paged_mqa_logits(**first, clean_logits=True, out=outs[0]),
                                        iters=200 if DEVICE == "cuda" else 1)
        if row["ours_ms"]:
            row["TFLOPS"] = flops / (row["ours_ms"] * 1e-3) / 1e12
            row["GB/s"] = bytes_clean / (row["ours_ms"] * 1e-3) / 1e9
            row["floor_us"] = bytes_clean / (bw_gbs * 1e9) * 1e6
            row["frac_floor"] = row["floor_us"] / (row["ours_ms"] * 1e3)
        if row["ours_unclean_ms"]:
            row["floor_unclean_us"] = bytes_raw / (bw_gbs * 1e9) * 1e6
            row["frac_floor_unclean"] = row["floor_unclean_us"] / (row["ours_unclean_ms"] * 1e3)
        length = min(mml, max_blocks * bs)
        est = 4 * batch * length * (dim + 2 * next_n * heads) + batch * max_blocks * bs * (dim + 4)
        _baselines(fp8_paged_mqa_logits_reference, first, est, args, row)
        rows.append(row)
        print(f"{shape}: ours {row['ours_ms']} ms (unclean {row['ours_unclean_ms']}), "
              f"floor fraction {row.get('frac_floor')}", file=sys.stderr)

        if args.sweep:
            _sweep_decode(row, shape, spec, batch, next_n, mml, max_blocks, timed, sweep_rows)
        del sets, outs, first
        if DEVICE == "cuda":
            torch.cuda.empty_cache()


def bench_prefill(args, bw_gbs: float, rows: list, sweep_rows: list) -> None:
    import torch

    from graphcheck.kernels import fp8_mqa_logits, fp8_mqa_logits_reference, mqa_logits
    from graphcheck.kernels.mqa_logits import MqaConfig

    spec = SMOKE_PREFILL if args.smoke else PREFILL
    m, heads, dim = spec["m"], spec["heads"], spec["dim"]
    for n in spec["skv"]:
        inputs = mqa_logits.make_inputs(m, n, heads, dim, seed=0, device=DEVICE, start_frac=0.0)
        pairs = int((inputs["cu_seqlen_ke"].long() - inputs["cu_seqlen_ks"].long()).clamp(min=0).sum())
        flops = 2 * heads * dim * pairs
        out = torch.empty(m, n, device=DEVICE)
        shape = f"M={m} SKV={n}"
        row: dict[str, Any] = {"kernel": "mqa", "shape": shape, "pairs": pairs,
                               "cfg": str(mqa_logits.default_config(m, n, heads, torch.device(DEVICE)))}

        def timed(clean: bool, config: MqaConfig | None = None, quick: bool = args.quick) -> float | None:
            return _time(lambda: fp8_mqa_logits(**inputs, clean_logits=clean, out=out, config=config), quick)

        row["ours_ms"] = timed(True)
        row["ours_unclean_ms"] = timed(False)
        # The kernel is long enough for event timing; the wrapper's host cost beside it.
        row["host_us"] = common.host_us(lambda: fp8_mqa_logits(**inputs, clean_logits=True, out=out),
                                        iters=100 if DEVICE == "cuda" else 1)
        if row["ours_ms"]:
            row["TFLOPS"] = flops / (row["ours_ms"] * 1e-3) / 1e12
            row["GB/s"] = (n * (dim + 4) + m * n * 4) / (row["ours_ms"] * 1e-3) / 1e9
        if row["ours_unclean_ms"]:
            row["TFLOPS_unclean"] = flops / (row["ours_unclean_ms"] * 1e-3) / 1e12
        est = 4 * m * heads * n * 2 + 4 * m * n * 2
        _baselines(fp8_mqa_logits_reference, inputs, est, args, row)
        rows.append(row)
        print(f"{shape}: ours {row['ours_ms']} ms, {row.get('TFLOPS')} TFLOPS", file=sys.stderr)

        if args.sweep_prefill:
            best = None
            for bm in (2, 4):
                for bn in (64, 128):
                    for warps in (4, 8):
                        for stages in (2, 3):
                            for red in (False, True):
                                cfg = MqaConfig(block_m=bm, block_n=bn, splits=1, num_warps=warps,
                                                num_stages=stages, reduce_dot=red)
                                ms = timed(True, cfg, quick=True)
                                tflops = flops / (ms * 1e-3) / 1e12 if ms else None
                                sweep_rows.append({"kernel": "mqa", "shape": shape, "cfg": str(cfg), "ms": ms,
                                                   "TFLOPS": tflops})
                                if ms is not None and (best is None or ms < best[0]):
                                    best = (ms, tflops, cfg)
            if best:
                print(f"  sweep best {shape}: {best[0]:.4f} ms, {best[1]:.0f} TFLOPS with {best[2]}",
                      file=sys.stderr)
                row["sweep_best_ms"], row["sweep_best_cfg"] = best[0], str(best[2])
        del inputs, out
        if DEVICE == "cuda":
            torch.cuda.empty_cache()


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f} ms"


def _use_wall_clock() -> None:
    """CPU smoke runs: one timed call instead of CUDA events, no copy rotation."""

    def time_ms(fn, quick=False):
        fn()
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3

    common.time_ms = time_ms
    common.copies_for = lambda nbytes: 1
    common.compiled = lambda fn: None


def main() -> int:
    import torch

    global DEVICE
    args = _args()
    if not torch.cuda.is_available():
        if not args.smoke:
            print("bench_mqa_logits needs a CUDA device (or --smoke with TRITON_INTERPRET=1)", file=sys.stderr)
            return 2
        DEVICE = "cpu"
        _use_wall_clock()
    # One compile per shape of the same reference function: keep dynamo from falling back to eager.
    import torch._dynamo

    for knob in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 64)
    env = common.environment()
    if DEVICE == "cuda":
        common.warm_up_gpu()
    bw = common.copy_bandwidth_gbs(quick=args.quick) if DEVICE == "cuda" else 1.0
    env["copy_GBps"] = bw
    print(f"copy bandwidth {bw:.0f} GB/s on {env.get('device')}", file=sys.stderr)
    rows: list[dict[str, Any]] = []
    sweep_rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    if args.only in (None, "decode"):
        bench_decode(args, bw, rows, sweep_rows)
    if args.only in (None, "prefill"):
        bench_prefill(args, bw, rows, sweep_rows)
    print(f"\n{env}")
    common.print_table(
        "FP8 paged MQA logits (decode), H=64 D=128 block 64, max_model_len 111000 unless given",
        [r for r in rows if r["kernel"] == "paged"],
        ["shape", "ours_ms", "ours_unclean_ms", "ours_event_ms", "host_us", "TFLOPS", "GB/s", "floor_us", "frac_floor",
         "floor_unclean_us", "frac_floor_unclean", "eager_ms", "compiled_ms", "speedup_eager",
         "speedup_compiled", "sweep_best_ms", "sweep_best_frac_floor", "ref_note"],
    )
    common.print_table(
        "FP8 MQA logits (prefill), H=64 D=128, causal key ranges",
        [r for r in rows if r["kernel"] == "mqa"],
        ["shape", "ours_ms", "ours_unclean_ms", "TFLOPS", "TFLOPS_unclean", "GB/s", "host_us", "eager_ms",
         "compiled_ms", "speedup_eager", "speedup_compiled", "sweep_best_ms", "ref_note"],
    )
    if args.sweep:
        print("\nbest configurations:")
        for r in rows:
            print(f"  {r['kernel']} {r['shape']}: default {_ms(r.get('ours_ms'))} with {r['cfg']}")
            print(f"      best {_ms(r.get('sweep_best_ms'))} with {r.get('sweep_best_cfg')}")
        for r in sweep_rows:
            frac = f"{r['frac_floor']:.3f}" if r.get("frac_floor") else "n/a"
            print(f"  sweep {r['kernel']} {r['shape']:<28} {r.get('variant', r['cfg'])[:40]:<40} "
                  f"{_ms(r['ms'])} frac_floor {frac}")
    print(f"\ntotal {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    common.write_json(args.json, env, rows + [dict(r, sweep=True) for r in sweep_rows])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
