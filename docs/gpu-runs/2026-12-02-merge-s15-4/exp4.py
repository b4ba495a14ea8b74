"""Merge N = 256 (run merge-s15-4): is the two-state timing a property of the graph instance, and does a later PDL
trigger (after the loads, after the stores, or none: at exit) remove it? Four graph instances per variant and
round, each timed three times in turn, after the harness's eager loop."""
import json
import os
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

import bench_merge_attn_states as bm  # noqa: E402
import common  # noqa: E402
import merge_exp as mx  # noqa: E402

out, tag, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
n = int(sys.argv[4]) if len(sys.argv) > 4 else 256
V = {"ship": (8, 4, False, True, True, None, True, 0), "trig-loads": (8, 4, False, True, True, None, True, 1),
     "trig-end": (8, 4, False, True, True, None, True, 2), "trig-exit": (8, 4, False, True, True, None, True, 3),
     "old4x1": (4, 1, False, True, True, None, False, 0), "4x1-pf-loads": (4, 1, False, True, True, None, True, 1)}
common.warm_up_gpu()
copy_gbs = common.copy_bandwidth_gbs()
dtype = torch.bfloat16
size = bm.nbytes(n, dtype, torch)
copies = common.copies_for(size)
sets = [bm.make_set(n, dtype, "hn", torch) for _ in range(copies)]
want, want_lse = mx.merge_attn_states_reference(sets[0]["prefix_output"], sets[0]["prefix_lse"],
                                                sets[0]["suffix_output"], sets[0]["suffix_lse"])
for name, cfg in V.items():
    sets[0]["output"].fill_(float("nan"))
    mx._merge(**sets[0], config=cfg)
    torch.cuda.synchronize()
    torch.testing.assert_close(sets[0]["output"].float(), want.float(), atol=1e-3, rtol=1e-2)
    torch.testing.assert_close(sets[0]["output_lse"], want_lse, atol=1e-3, rtol=1e-3)
print(tag, "all variants right; copy", round(copy_gbs), flush=True)
log = open(os.path.join(out, f"exp4-{tag}.jsonl"), "a")


def capture(calls, per_graph=100):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(per_graph):
            calls[i % len(calls)]()
    g.replay()
    torch.cuda.synchronize()
    return g


def time_graph(g, per_graph=100, replays=20):
    ts = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3 / per_graph)
    return common.median(ts)


names = list(V)
for r in range(rounds):
    for name in names[r % len(names):] + names[:r % len(names)]:
        cfg = V[name]
        calls = [(lambda s: (lambda: mx._merge(**s, config=cfg)))(s) for s in sets]
        common.time_rotating(lambda i: calls[i], copies)
        bm.per_call_us(calls, torch, iters=1000)
        graphs = [capture(calls) for _ in range(4)]
        grid = [[time_graph(g) for g in graphs] for _ in range(3)]
        rec = dict(tag=tag, N=n, round=r, variant=name, grid=grid, time=time.time())
        log.write(json.dumps(rec) + "\n")
        log.flush()
        print(f"{tag} N={n} r{r} {name:13s} " + " | ".join(" ".join(f"{x:.3f}" for x in row) for row in grid),
              flush=True)
        del graphs
