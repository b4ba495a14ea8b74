"""Shared pieces of the kernel benchmarks: timing, the copy-bandwidth ceiling, the
environment line, and the result table. Each ``bench_*.py`` script builds on it.

Times are medians of CUDA-event-timed runs (``triton.testing.do_bench``), with
inputs rotated across several copies when the working set would fit in L2, so
the numbers measure HBM and not the cache. Kernels short enough for the host to
fall behind are also timed inside a CUDA graph (:func:`graph_ms`), which is how
an engine runs them and leaves only device time.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

L2_BYTES = 60 * 1024 * 1024  # H200: 60 MB of L2; rotate inputs below a few times this


def parse_args(description: str, argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--json", metavar="FILE", help="also write every row as JSON to FILE")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (smoke run)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    return parser.parse_args(argv)


def environment() -> dict[str, Any]:
    import torch
    import triton

    env = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
    }
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        env["device"] = props.name
        env["sms"] = props.multi_processor_count
        env["cuda"] = torch.version.cuda
    return env


def time_ms(fn: Callable[[], Any], quick: bool = False) -> float:
    """Median milliseconds per call, timed with CUDA events after a warm-up."""
    import triton.testing

    rep = 20 if quick else 100
    return float(triton.testing.do_bench(fn, warmup=10 if quick else 25, rep=rep, return_mode="median"))


def time_rotating(make_call: Callable[[int], Callable[[], Any]], copies: int, quick: bool = False) -> float:
    """Like :func:`time_ms`, but each call uses the next of ``copies`` input sets."""
    calls = [make_call(i) for i in range(copies)]
    state = {"i": 0}

    def step() -> None:
        calls[state["i"] % copies]()
        state["i"] += 1

    return time_ms(step, quick)


def graph_ms(calls: Sequence[Callable[[], Any]], per_graph: int = 0, replays: int = 10) -> float:
    """Median device milliseconds per call with the host out of the loop.

    ``per_graph`` calls (cycling through ``calls``, one per input copy) are
    captured in one CUDA graph, replayed ``replays`` times, each replay timed
    with CUDA events. The calls must not allocate (pass preallocated outputs).
    """
    import torch

    n = len(calls)
    per_graph = per_graph or n * max(1, -(-20 // n))
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # compile and warm up off the capturing stream
        for call in calls:
            call()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(per_graph):
            calls[i % n]()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / per_graph)
    del graph
    return median(times)


def host_us(call: Callable[[], Any], iters: int = 500) -> float:
    """Host-side microseconds per call of a wrapper (Python checks + launch)."""
    import torch

    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    for _ in range(min(20, iters)):
        call()
    sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        call()
    t1 = time.perf_counter()
    sync()
    return (t1 - t0) * 1e6 / iters


def copies_for(working_set_bytes: int) -> int:
    """How many input copies to rotate through so the working set exceeds 4x L2."""
    if working_set_bytes <= 0:
        return 1
    return max(1, min(64, -(-4 * L2_BYTES // working_set_bytes)))


def warm_up_gpu(seconds: float = 1.0) -> None:
    """Keep the GPU busy for ``seconds`` so its clocks have ramped up before the
    first timed row (an idle H200 starts far below its boost clock, which once
    made a benchmark's first row about 3x slower than the same row re-run)."""
    import torch

    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(10):
            a @ a
        torch.cuda.synchronize()


def copy_bandwidth_gbs(nbytes: int = 1 << 30, quick: bool = False) -> float:
    """Device-to-device copy bandwidth in GB/s, counting bytes read plus written."""
    import torch

    src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src), quick)
    return 2 * src.numel() / (ms * 1e-3) / 1e9


def compiled(fn: Callable[..., Any]) -> Callable[..., Any] | None:
    """torch.compile of ``fn``, or None where compile is unavailable here."""
    import torch

    try:
        return torch.compile(fn, dynamic=False)
    except Exception as exc:  # noqa: BLE001 - the baseline is optional, say why it is missing
        print(f"torch.compile unavailable: {exc}", file=sys.stderr)
        return None


def print_table(title: str, rows: list[dict[str, Any]], columns: Sequence[str]) -> None:
    """A plain fixed-width table, easy to paste into docs/benchmarks.md."""
    def fmt(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.4g}"
        return "" if value is None else str(value)

    cells = [[fmt(row.get(col)) for col in columns] for row in rows]
    widths = [max(len(col), *(len(c[i]) for c in cells)) if cells else len(col) for i, col in enumerate(columns)]
    print(f"\n{title}")
    print("| " + " | ".join(col.ljust(w) for col, w in zip(columns, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for c in cells:
        print("| " + " | ".join(v.ljust(w) for v, w in zip(c, widths)) + " |")


def write_json(path: str | None, env: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    if path:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump({"environment": env, "rows": rows}, fh, indent=2)


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))
