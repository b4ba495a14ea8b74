"""Run merge-s14-2: is the candidate's slow first graph timing a property of the graph instance or of the moment?
merge_attn_states N = 256 bf16 (H 32, D 128, [H, N] LSE, output_lse) in one process: per variant (main's 2048 x 1
warp launch, the 8 rows x 4 warps candidate; --first picks which runs first), the float64 check, do_bench with
rotated inputs and 2000 eager calls (the benchmark's steps), then graph A captured and timed (100 calls, 20
replays each timed alone, as common.graph_ms), graph B captured and timed, then A, B, A again, 2000 eager calls,
and A, B once more (the graphs kept alive throughout)."""
import argparse
import json
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(ROOT, "tests", "kernels"))
import torch  # noqa: E402

import bench_merge_attn_states as bm  # noqa: E402
import common  # noqa: E402
import merge_attn_states_util as mu  # noqa: E402
from graphcheck.kernels import merge_attn as mas  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--tag", required=True)
ap.add_argument("--first", choices=("main", "cand"), default="main")
ap.add_argument("--jsonl", required=True)
args = ap.parse_args()
orig = mas.default_config


def cand_default(n, h, d, dtype, layout):
    if (n, h, d, dtype) == (256, 32, 128, torch.bfloat16):
        return (8, 4, False)
    return orig(n, h, d, dtype, layout)


def capture(calls, per_graph=100):
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for call in calls:
            call()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(per_graph):
            calls[i % len(calls)]()
    graph.replay()
    torch.cuda.synchronize()
    return graph


def timed(graph, per_graph=100, replays=20):
    times = []
    for _ in range(replays):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        graph.replay()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / per_graph * 1e3)
    return round(common.median(times), 4)


common.warm_up_gpu()
n, dtype = 256, torch.bfloat16
size = bm.nbytes(n, dtype, torch)
copies = common.copies_for(size)
sets = [bm.make_set(n, dtype, "hn", torch) for _ in range(copies)]
calls = [(lambda s: (lambda: mas.merge_attn_states(**s)))(s) for s in sets]
order = ("main", "cand") if args.first == "main" else ("cand", "main")
out = open(args.jsonl, "a")
for name in order:
    mas.default_config = orig if name == "main" else cand_default
    mas._PLANS.clear()
    for layout in ("hn", "nh"):
        a = mu.make_inputs(n, 32, 128, dtype, layout, seed=3, device="cuda")
        mas.merge_attn_states(**a, lse_layout=layout)
        mu.check_against_reference(mas, a, layout, label=f"{name} {layout}")
    common.time_rotating(lambda i: calls[i], copies)
    bm.per_call_us(calls, torch)
    seq = []
    ga = capture(calls)
    seq.append(("A", timed(ga)))
    gb = capture(calls)
    seq += [("B", timed(gb)), ("A", timed(ga)), ("B", timed(gb)), ("A", timed(ga))]
    bm.per_call_us(calls, torch)
    seq += [("eager A", timed(ga)), ("B", timed(gb))]
    del ga, gb
    out.write(json.dumps({"tag": args.tag, "first": args.first, "variant": name, "seq": seq}) + "\n")
    print(f"{args.tag} (first {args.first}) {name}: " + ", ".join(f"{k} {v:.3f}" for k, v in seq), flush=True)
