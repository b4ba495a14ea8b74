"""Run kern-s13-3: the new next_n = 2 default (the persistent warp-specialised kernel) against the split launch
(PagedConfig.ws = 0, the previous default) on the shapes that take it, ABAB three times, device time per call in a
CUDA graph (5 replays, inputs cycled past L2), both outputs checked against the float64 oracle first."""
import dataclasses
import functools
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(ROOT, "tests", "kernels"))
import torch  # noqa: E402
import triton  # noqa: E402

import common  # noqa: E402
import mqa_check  # noqa: E402
from graphcheck.kernels import fp8_paged_mqa_logits  # noqa: E402
from graphcheck.kernels import paged_mqa_logits as pm  # noqa: E402

common.warm_up_gpu()
bw = common.copy_bandwidth_gbs()
print(f"copy bandwidth {bw:.0f} GB/s", flush=True)
dev = torch.device("cuda")
for batch, avg, mml in ((64, 8192, 16384), (128, 8192, 16384), (64, 32768, 65536)):
    mb = triton.cdiv(int(1.3 * avg), 64)
    make = functools.partial(pm.make_inputs, batch, 2, 64, 128, 64, mml, device="cuda", avg_len=avg, max_blocks=mb)
    first = make(seed=0)
    floor_us = (int(first["context_lens"].long().sum()) * 132 + batch * 2 * mml * 4) / (bw * 1e9) * 1e6
    sets = [first] + [make(seed=s) for s in range(1, common.copies_for(first["kv_cache"].numel()))]
    outs = [torch.empty(batch * 2, mml, device="cuda") for _ in sets]
    new = pm.default_config(batch, 2, 64, 64, mml, dev, mb)
    old = dataclasses.replace(new, ws=0)
    exp = mqa_check.paged_expected(first)
    for cfg in (new, old):
        got = torch.full((batch * 2, mml), float("nan"), device="cuda")
        fp8_paged_mqa_logits(**first, out=got, config=cfg)
        mqa_check.check(got, exp)
    times = {"ws (new default)": [], "split (previous default)": []}
    for _ in range(3):
        for name, cfg in zip(times, (new, old)):
            calls = [lambda s=s, o=o, c=cfg: fp8_paged_mqa_logits(**s, out=o, config=c) for s, o in zip(sets, outs)]
            times[name].append(common.graph_ms(calls, replays=5) * 1e3)
    for name, ts in times.items():
        mean = sum(ts) / len(ts)
        print(f"B={batch} n=2 ctx={avg} mml={mml} floor {floor_us:.1f} us  {name:<24} "
              f"{' / '.join(f'{t:.2f}' for t in ts)} us  mean {mean:.2f} = {floor_us / mean:.3f} of the floor", flush=True)
    del sets, outs, first, exp
    torch.cuda.empty_cache()
