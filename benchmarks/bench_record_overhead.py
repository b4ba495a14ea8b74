"""How much `graphcheck record` slows an engine's warm-up and capture.

Builds the example engine (examples/engine) several times in one process and
times ``Engine.capture()`` (an eager warm-up of every batch size, then its
capture) plain and inside ``graphcheck.recording()``, alternating, after one
untimed capture that compiles the kernels. Prints the medians and the ratio.

    python benchmarks/bench_record_overhead.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "engine"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 2, 4, 8])
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

    def capture_once(record: bool) -> tuple[float, int, int]:
        cache = PagedKVCache(max(args.batch_sizes), 1024, 64, 16, torch.device("cuda"))
        engine = Engine(ToyDecoder(cache), cache, args.batch_sizes)
        torch.cuda.synchronize()
        started = time.perf_counter()
        if not record:
            engine.capture()
            return time.perf_counter() - started, 0, 0
        with graphcheck.recording(None) as session:
            engine.capture()
        seconds = time.perf_counter() - started
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
