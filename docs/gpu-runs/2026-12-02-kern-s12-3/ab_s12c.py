"""Run kern-s12-3: main's per-row stores against the join_rows default, ABAB four times each, on B=128 n=2 ctx 32k
(the shape whose second new-default timing in run kern-s12-2 was 206.0 us against 189.7) and B=64 n=2 ctx 8k mml 16k."""
import dataclasses
import functools
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import torch  # noqa: E402
import triton  # noqa: E402

import common  # noqa: E402
from graphcheck.kernels import fp8_paged_mqa_logits  # noqa: E402
from graphcheck.kernels import paged_mqa_logits as pm  # noqa: E402

common.warm_up_gpu()
dev = torch.device("cuda")
for batch, avg, mml in ((128, 32768, 111000), (64, 8192, 16384)):
    mb = triton.cdiv(int(1.3 * avg), 64)
    make = functools.partial(pm.make_inputs, batch, 2, 64, 128, 64, mml, device="cuda", avg_len=avg, max_blocks=mb)
    first = make(seed=0)
    copies = common.copies_for(first["kv_cache"].shape[0] * first["kv_cache"].stride(0))
    sets = [first] + [make(seed=s) for s in range(1, copies)]
    outs = [torch.empty(batch * 2, mml, device="cuda") for _ in sets]
    new = pm.default_config(batch, 2, 64, 64, mml, dev, mb)
    old = dataclasses.replace(new, join_rows=False)
    res = {"per-row stores": [], "join_rows": []}
    for _ in range(4):
        for name, cfg in (("per-row stores", old), ("join_rows", new)):
            calls = [lambda s=s, o=o, c=cfg: fp8_paged_mqa_logits(**s, out=o, config=c) for s, o in zip(sets, outs)]
            res[name].append(common.graph_ms(calls, replays=5) * 1e3)
    for name, v in res.items():
        print(f"B={batch} n=2 ctx={avg} mml={mml} {name:<15} " + " ".join(f"{x:.2f}" for x in v)
              + f"  mean {sum(v) / len(v):.2f}", flush=True)
    del sets, outs, first
    torch.cuda.empty_cache()
