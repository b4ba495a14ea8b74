"""How much `graphcheck record` slows an engine's warm-up and capture.

Builds the example engine (examples/engine) several times in one process and
times ``Engine.capture()`` (an eager warm-up of every batch size, then its
capture) plain and inside ``graphcheck.recording()``, alternating, after one
untimed capture that compiles the kernels. Prints the medians and the ratio.

``--breakdown`` also times, in the same alternation, recordings with one part
switched off (the line collector; the dispatch mode and launch records; the
graph's nodes) and several ``Engine.capture()`` calls inside one recording (what
a recording costs once it is set up), and ``--profile N`` prints where the
Python time of N recorded rounds goes (cProfile). These are diagnostics: the
parts switched off there are always on in ``graphcheck record``.

    python benchmarks/bench_record_overhead.py [--rounds 5] [--breakdown] [--profile 10]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "engine"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--breakdown", action="store_true", help="also time recordings with one part switched off")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="cProfile N recorded rounds")
    args = parser.parse_args()
    import torch
    from engine import Engine
    from kv_cache import PagedKVCache
    from model import ToyDecoder

    import graphcheck

    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 2

    phases: dict[str, list[float]] = {}

    def new_engine() -> Engine:
        cache = PagedKVCache(max(args.batch_sizes), 1024, 64, 16, torch.device("cuda"))
        engine = Engine(ToyDecoder(cache), cache, args.batch_sizes)
        torch.cuda.synchronize()
        return engine

    def capture_once(record: bool, variant: str = "full") -> tuple[float, int, int]:
        engine = new_engine()
        started = time.perf_counter()
        if not record:
            engine.capture()
            return time.perf_counter() - started, 0, 0
        with switched_off(variant), graphcheck.recording(None) as session:
            engine.capture()
        seconds = time.perf_counter() - started
        if variant == "full":
            for phase, spent in getattr(session, "overhead", {}).items():  # absent before the phases were timed
                phases.setdefault(phase, []).append(spent)
        ops = sum(sum(cap.ops.values()) for cap in session.captures)
        return seconds, len(session.functions), ops

    capture_once(False)  # compiles every kernel
    first = capture_once(True)[0]  # imports and sets up what recording needs, once per process
    phases.clear()
    plain, recorded = [], []
    functions = ops = 0
    for _ in range(args.rounds):
        plain.append(capture_once(False)[0])
        seconds, functions, ops = capture_once(True)
        recorded.append(seconds)
    p, r = statistics.median(plain), statistics.median(recorded)
    n = len(args.batch_sizes)
    print(f"graphcheck from {os.path.dirname(graphcheck.__file__)}")
    print(f"device: {torch.cuda.get_device_name()}  python {sys.version.split()[0]}  torch {torch.__version__}")
    print(f"Engine.capture(): eager warm-up (2 steps) and capture of each of the batch sizes {args.batch_sizes}; "
          f"{args.rounds} rounds each")
    print(f"plain:     median {p * 1e3:.1f} ms  (all: {', '.join(f'{x * 1e3:.1f}' for x in plain)})")
    print(f"recorded:  median {r * 1e3:.1f} ms  (all: {', '.join(f'{x * 1e3:.1f}' for x in recorded)}); "
          f"{functions} functions, {ops} dispatched ops recorded over {n} captures")
    print(f"overhead:  {r / p:.2f}x, {(r - p) * 1e3 / n:.1f} ms per capture "
          f"({(r - p) * 1e6 / max(1, ops):.0f} us per dispatched op under capture)")
    if phases:
        shown = ", ".join(f"{name} {statistics.median(v) * 1e3 / n:.2f} ms" for name, v in sorted(phases.items()))
        print(f"recording's own calls per capture (median): {shown}")
    print(f"first recorded Engine.capture() in the process: {first * 1e3:.0f} ms (one-time imports and set-up)")
    if args.breakdown:
        variants = ["no-lines", "no-ops", "no-nodes", "no-parts"]
        times: dict[str, list[float]] = {v: [] for v in variants}
        base: list[float] = []
        for _ in range(args.rounds):
            base.append(capture_once(False)[0])
            for v in variants:
                times[v].append(capture_once(True, v)[0])
        b = statistics.median(base)
        print(f"breakdown (plain {b * 1e3:.1f} ms in these rounds; full recording cost {(r - p) * 1e3:.1f} ms above):")
        for v in variants:
            t = statistics.median(times[v])
            print(f"  recorded with {v:9s}: median {t * 1e3:.1f} ms ({t / b:.2f}x, {(t - b) * 1e3:.1f} ms above plain)")
        engines = [new_engine() for _ in range(args.rounds)]
        started = time.perf_counter()
        with graphcheck.recording(None):
            for engine in engines:
                engine.capture()
        inside = (time.perf_counter() - started) / args.rounds
        engines = [new_engine() for _ in range(args.rounds)]
        started = time.perf_counter()
        for engine in engines:
            engine.capture()
        outside = (time.perf_counter() - started) / args.rounds
        print(f"  {args.rounds} Engine.capture() inside one recording: {inside * 1e3:.1f} ms each, plain "
              f"{outside * 1e3:.1f} ms each ({inside / outside:.2f}x): the rest of the cost above is setting a "
              "recording up and down")
    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.profile):
            capture_once(True)
        profiler.disable()
        stats = pstats.Stats(profiler, stream=sys.stdout)
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats(45)
    return 0


@contextlib.contextmanager
def switched_off(variant: str):
    """Recording with one part switched off, for --breakdown (diagnostics only)."""
    from graphcheck.capture.nodes import GraphInspectionError
    from graphcheck.record import graph, lines, session

    saved = []

    def patch(owner, name, value):
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    if variant in ("no-lines", "no-parts"):
        patch(lines.LineCollector, "start", lambda self, frame=None: None)
        patch(lines.LineCollector, "stop", lambda self: None)
        patch(lines.LineCollector, "take", lambda self: {})
    if variant in ("no-ops", "no-parts"):
        class Off:
            def __init__(self, **kwargs):
                pass

            def __enter__(self):
                raise RuntimeError("switched off")

        patch(session, "CaptureRecorder", Off)
    if variant in ("no-nodes", "no-parts"):
        def off(*args):
            raise GraphInspectionError("switched off")

        patch(graph, "nodes_while_capturing", off)
        patch(graph, "nodes_after_capture", off)
    try:
        yield
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)


if __name__ == "__main__":
    sys.exit(main())
