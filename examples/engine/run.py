"""Run the toy decode engine: capture per batch size, then replay with changing lengths.

    python examples/engine/run.py            # the engine that is safe to capture
    python examples/engine/run.py --broken   # the variant with three hazards
    graphcheck record -- python examples/engine/run.py --broken

Each step draws a batch size and new request lengths, replays the graph and
compares it with an eager step on the same inputs.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

import torch

from engine import Engine
from kv_cache import PagedKVCache


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broken", action="store_true", help="run the variant with three hazards")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("the example engine needs a CUDA GPU", file=sys.stderr)
        return 2
    if args.broken:
        from broken_model import BrokenToyDecoder as Decoder
    else:
        from model import ToyDecoder as Decoder
    device = torch.device("cuda")
    cache = PagedKVCache(max(args.batch_sizes), max_model_len=1024, dim=64, block_size=16, device=device)
    engine = Engine(Decoder(cache), cache, args.batch_sizes)
    engine.capture()
    print(f"captured batch sizes {sorted(engine.graphs)} in {engine.capture_seconds:.3f} s "
          "(warm-up and capture)")
    for bs, why in sorted(engine.failed.items()):
        print(f"capture of batch size {bs} failed, it runs eagerly: {why}")
    rng = random.Random(0)
    gen = torch.Generator().manual_seed(0)
    worst = 0.0
    started = time.perf_counter()
    for _ in range(args.steps):
        bs = rng.choice(range(1, max(args.batch_sizes) + 1))
        lens = [rng.randint(1, 1000) for _ in range(bs)]
        hidden = torch.randn(bs, 256, generator=gen).to(device)
        replayed = engine.step(hidden, lens)
        expected = engine.eager(hidden, lens)
        worst = max(worst, (replayed - expected).abs().max().item())
    torch.cuda.synchronize()
    print(f"{args.steps} steps in {time.perf_counter() - started:.3f} s; replay vs eager: max abs error {worst:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
