"""Benchmark merge_attn_states: the Triton kernel vs the eager and compiled PyTorch reference.

For N in {256, 4096, 65536} (H = 32, D = 128, bf16; fp16 and fp32 at 65536) it
reports the kernel's time (CUDA events, median, inputs rotated past L2), the
per-call time of back-to-back calls (launch and wrapper included), the device
time per call inside a CUDA graph (how an engine runs it), the eager reference
and ``torch.compile`` of the reference (both also graph-timed), achieved GB/s
and the fraction of the bandwidth floor (bytes over the device-to-device copy
bandwidth measured in the same run).

``--sweep`` also times candidate launch configs (rows per program x num_warps x
row order) per size, inside CUDA graphs, and prints the best next to the shape
heuristic's choice.

    python benchmarks/bench_merge_attn_states.py [--sweep] [--quick] [--no-compile] [--json FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

H, D = 32, 128
SIZES = [(256, "bfloat16"), (4096, "bfloat16"), (65536, "bfloat16"), (65536, "float16"), (65536, "float32")]
SWEEP_SIZES = [(256, "bfloat16", "hn"), (4096, "bfloat16", "hn")]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="FILE", help="also write every row as JSON to FILE")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (smoke run)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    parser.add_argument("--sweep", action="store_true", help="also time candidate launch configs per size")
    return parser.parse_args(argv)


def make_set(n, dtype, layout, torch):
    shape = (H, n) if layout == "hn" else (n, H)
    return dict(
        output=torch.empty(n, H, D, dtype=dtype, device="cuda"),
        prefix_output=torch.randn(n, H, D, dtype=dtype, device="cuda"),
        prefix_lse=torch.randn(shape, device="cuda") * 4,
        suffix_output=torch.randn(n, H, D, dtype=dtype, device="cuda"),
        suffix_lse=torch.randn(shape, device="cuda") * 4,
        output_lse=torch.empty(shape, device="cuda"),
    )


def nbytes(n, dtype, torch) -> int:
    return 3 * n * H * D * torch.empty((), dtype=dtype).element_size() + 3 * n * H * 4


def per_call_us(calls, torch, iters=2000) -> float:
    """Back-to-back calls timed with CUDA events: includes launch and wrapper cost
    whenever the host cannot keep ahead of the GPU."""
    for i in range(50):
        calls[i % len(calls)]()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(iters):
        calls[i % len(calls)]()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / iters


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch

    from graphcheck.kernels import merge_attn as mas

    if not torch.cuda.is_available():
        print("bench_merge_attn_states: needs a CUDA device", file=sys.stderr)
        return 2
    t_start = time.perf_counter()
    env = common.environment()
    common.warm_up_gpu()
    copy_gbs = common.copy_bandwidth_gbs(quick=args.quick)
    print(f"environment: {env}")
    print(f"copy bandwidth (read + write): {copy_gbs:.0f} GB/s")

    ref = mas.merge_attn_states_reference
    cref = None if args.no_compile else common.compiled(ref)
    rows = []
    for n, dname in SIZES:
        dtype = getattr(torch, dname)
        size = nbytes(n, dtype, torch)
        copies = common.copies_for(size)
        sets = [make_set(n, dtype, "hn", torch) for _ in range(copies)]

        def ours(s):
            return lambda: mas.merge_attn_states(**s)

        def eager(s):
            return lambda: ref(s["prefix_output"], s["prefix_lse"], s["suffix_output"], s["suffix_lse"])

        calls = [ours(s) for s in sets]
        # correctness guard: a fast wrong kernel must not produce a row
        calls[0]()
        want, want_lse = ref(sets[0]["prefix_output"], sets[0]["prefix_lse"], sets[0]["suffix_output"],
                             sets[0]["suffix_lse"])
        torch.testing.assert_close(sets[0]["output"].float(), want.float(), atol=1e-3, rtol=1e-2)
        torch.testing.assert_close(sets[0]["output_lse"], want_lse, atol=1e-3, rtol=1e-3)

        ms = common.time_rotating(lambda i: calls[i], copies, args.quick)
        row = {
            "N": n, "H": H, "D": D, "dtype": dname, "MB": size / 1e6,
            "ours_ms": ms,
            "ours_per_call_us": per_call_us(calls, torch),
            "graph_per_call_us": common.graph_ms(calls, per_graph=100, replays=20) * 1e3,
            # host cost only where the GPU cannot be the bottleneck
            "host_us": common.host_us(calls[0], iters=2000) if n <= 4096 else None,
            "GB/s": size / (ms * 1e-3) / 1e9,
        }
        row["frac_copy"] = row["GB/s"] / copy_gbs
        row["floor_ms"] = size / (copy_gbs * 1e9) * 1e3
        row["frac_floor_graph"] = row["floor_ms"] * 1e3 / row["graph_per_call_us"]
        row["eager_ms"] = common.time_rotating(lambda i: eager(sets[i]), copies, args.quick)
        row["eager_graph_us"] = _graph_us([eager(s) for s in sets])
        if cref is not None:
            try:
                compiled_calls = [
                    (lambda s: (lambda: cref(s["prefix_output"], s["prefix_lse"],
                                             s["suffix_output"], s["suffix_lse"])))(s)
                    for s in sets
                ]
                compiled_calls[0]()
                row["compile_ms"] = common.time_rotating(lambda i: compiled_calls[i], copies, args.quick)
                row["compile_graph_us"] = _graph_us(compiled_calls)
            except Exception as exc:  # noqa: BLE001 - report the missing baseline, keep the run
                print(f"torch.compile failed at N={n} {dname}: {exc}", file=sys.stderr)
        rows.append(row)
        del sets, calls
        torch.cuda.empty_cache()

    common.print_table(
        f"merge_attn_states, H={H}, D={D}, [H, N] LSE, copy bandwidth {copy_gbs:.0f} GB/s",
        rows,
        ["N", "dtype", "MB", "ours_ms", "ours_per_call_us", "graph_per_call_us", "host_us", "floor_ms", "GB/s",
         "frac_copy", "frac_floor_graph", "eager_ms", "eager_graph_us", "compile_ms", "compile_graph_us"],
    )

    sweep_rows = sweep(mas, torch, copy_gbs, args.quick) if args.sweep else []
    print(f"\ntotal benchmark time {time.perf_counter() - t_start:.1f} s")
    common.write_json(args.json, {**env, "copy_gbs": copy_gbs}, rows + sweep_rows)
    return 0


def _graph_us(calls):
    """Device µs per call of reference calls inside a CUDA graph (their allocations come from the
    graph's pool), or None where capture fails."""
    try:
        return common.graph_ms(calls, per_graph=max(2, len(calls)), replays=5) * 1e3
    except Exception as exc:  # noqa: BLE001 - the baseline is optional, say why it is missing
        import torch

        torch.cuda.synchronize()
        print(f"reference graph timing failed: {type(exc).__name__}: {str(exc)[:160]}", file=sys.stderr)
        return None


def candidate_configs(dtype, torch):
    """(rows, num_warps, head_major) with at least half the threads busy and at
    most 8 16-byte accesses per thread per input."""
    elem = torch.empty((), dtype=dtype).element_size()
    for rows in (1, 2, 4, 8, 16, 32, 64):
        vectors = rows * D * elem // 16
        for warps in (1, 2, 4, 8):
            if 8 * warps <= vectors <= 256 * warps:
                for head_major in (True, False):
                    yield rows, warps, head_major


def sweep(mas, torch, copy_gbs, quick):
    """Time each candidate config per size; print the best and the heuristic's pick."""
    out_rows = []
    summary = []
    for n, dname, layout in SWEEP_SIZES:
        dtype = getattr(torch, dname)
        size = nbytes(n, dtype, torch)
        copies = common.copies_for(size)
        sets = [make_set(n, dtype, layout, torch) for _ in range(copies)]
        default = mas.default_config(n, H, D, dtype, layout)
        results = {}
        for cfg in candidate_configs(dtype, torch):
            if dname == "float32" and cfg[2] != (layout == "hn"):
                continue  # row order: only the layout's own order for fp32 (keeps the sweep short)
            calls = [(lambda s: (lambda: mas._merge(**s, lse_layout=layout, config=cfg)))(s) for s in sets]
            results[cfg] = common.graph_ms(calls, per_graph=100 if n <= 4096 else 20, replays=5)
        if default not in results:
            calls = [(lambda s: (lambda: mas._merge(**s, lse_layout=layout, config=default)))(s) for s in sets]
            results[default] = common.graph_ms(calls, per_graph=100 if n <= 4096 else 20, replays=5)
        for cfg, ms in results.items():
            out_rows.append({"sweep": True, "N": n, "dtype": dname, "layout": layout, "rows": cfg[0],
                             "num_warps": cfg[1], "head_major": cfg[2], "ms": ms,
                             "frac_copy": size / (ms * 1e-3) / 1e9 / copy_gbs, "heuristic": cfg == default})
        best = min(results, key=results.get)
        summary.append({
            "N": n, "dtype": dname, "layout": layout,
            "best (rows,warps,head_major)": str(best), "best_ms": results[best],
            "best_frac_copy": size / (results[best] * 1e-3) / 1e9 / copy_gbs,
            "heuristic": str(default), "heuristic_ms": results[default],
            "heuristic/best": results[default] / results[best],
        })
        del sets
        torch.cuda.empty_cache()
    common.print_table("launch-config sweep (device time per call inside a CUDA graph)", summary,
                       ["N", "dtype", "layout", "best (rows,warps,head_major)", "best_ms", "best_frac_copy",
                        "heuristic", "heuristic_ms", "heuristic/best"])
    for n, dname, layout in SWEEP_SIZES:
        top = sorted((r for r in out_rows if (r["N"], r["dtype"], r["layout"]) == (n, dname, layout)),
                     key=lambda r: r["ms"])[:5]
        common.print_table(f"top 5 at N={n} {dname} {layout}", top,
                           ["rows", "num_warps", "head_major", "ms", "frac_copy", "heuristic"])
    return out_rows


if __name__ == "__main__":
    sys.exit(main())
