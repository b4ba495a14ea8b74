"""Run merge-s14-1: merge_attn_states N = 256 bf16 (H 32, D 128, [H, N] LSE, output_lse) in the order of
bench_merge_attn_states.py's steps (do_bench with rotated inputs, 2000 eager calls, then two graph timings of 100
calls per graph x 20 replays, each replay timed alone with a host sync), main's launch (2048 x 1 warp, 4 rows)
against the 8 rows x 4 warps candidate (1024 programs), ABAB.

--warm-ms W: back-to-back replays for about W ms of device time before each graph timing (0: as
common.graph_ms was). --diag: after the harness steps, more warm-up lengths and host idle instead of eager calls.
Each graph timing also records the SM clock just before and after its timed replays (torch.cuda._sleep of a
fixed cycle count timed with events: cycles / elapsed) and every replay's time; wall-clock markers (the format of
nvidia-smi's timestamp) go to the JSON lines so that the background nvidia-smi log can be aligned."""
import argparse
import datetime
import json
import os
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(ROOT, "tests", "kernels"))
import torch  # noqa: E402

import bench_merge_attn_states as bm  # noqa: E402
import common  # noqa: E402
import merge_attn_states_util as mu  # noqa: E402
from graphcheck.kernels import merge_attn as mas  # noqa: E402

SLEEP_CYCLES = 200_000
ap = argparse.ArgumentParser()
ap.add_argument("--tag", required=True)
ap.add_argument("--warm-ms", type=float, default=0.0)
ap.add_argument("--rounds", type=int, default=4)
ap.add_argument("--diag", action="store_true")
ap.add_argument("--jsonl", required=True)
args = ap.parse_args()

orig = mas.default_config


def cand_default(n, h, d, dtype, layout):
    if (n, h, d, dtype) == (256, 32, 128, torch.bfloat16):
        return (8, 4, False)
    return orig(n, h, d, dtype, layout)


def stamp():
    return datetime.datetime.now().strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]


def ev():
    return torch.cuda.Event(enable_timing=True)


def clock_probe():
    a, b = ev(), ev()
    a.record()
    torch.cuda._sleep(SLEEP_CYCLES)
    b.record()
    return a, b


def mhz(pair):
    return SLEEP_CYCLES / (pair[0].elapsed_time(pair[1]) * 1e3)


def graph_times(calls, warm_ms=0.0, warm_n=0, per_graph=100, replays=20):
    """common.graph_ms's steps (capture, one replay, sync, timed replays), with the warm-up and probes."""
    n = len(calls)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for call in calls:
            call()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(per_graph):
            calls[i % n]()
    s, e = ev(), ev()
    s.record()
    graph.replay()
    e.record()
    e.synchronize()
    first = s.elapsed_time(e)
    k = warm_n
    if warm_ms > 0:
        k += min(10_000, int(warm_ms / max(first, 1e-3)) + 1)
    for _ in range(k):
        graph.replay()
    if k:
        torch.cuda.synchronize()
    pre = clock_probe()
    times = []
    for _ in range(replays):
        s, e = ev(), ev()
        s.record()
        graph.replay()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / per_graph * 1e3)
    post = clock_probe()
    torch.cuda.synchronize()
    del graph
    return {"us": common.median(times), "replay_us": [round(t, 4) for t in times], "warm_replays": k,
            "first_replay_us": round(first / per_graph * 1e3, 4), "mhz_pre": round(mhz(pre), 1),
            "mhz_post": round(mhz(post), 1)}


out = open(args.jsonl, "a")


def log(**rec):
    rec = {"tag": args.tag, "t": stamp(), **rec}
    out.write(json.dumps(rec) + "\n")
    out.flush()


common.warm_up_gpu()
n, dtype = 256, torch.bfloat16
size = bm.nbytes(n, dtype, torch)
copies = common.copies_for(size)
sets = [bm.make_set(n, dtype, "hn", torch) for _ in range(copies)]
calls = [(lambda s: (lambda: mas.merge_attn_states(**s)))(s) for s in sets]
log(event="start", warm_ms=args.warm_ms, diag=args.diag, copies=copies)
for rnd in range(args.rounds):
    for name, fn in (("main", orig), ("cand", cand_default)):
        mas.default_config = fn
        mas._PLANS.clear()
        # float64 reference, outputs poisoned with NaN, both LSE layouts; then the harness's own check
        for layout in ("hn", "nh"):
            a = mu.make_inputs(n, 32, 128, dtype, layout, seed=rnd, device="cuda")
            mas.merge_attn_states(**a, lse_layout=layout)
            mu.check_against_reference(mas, a, layout, label=f"{name} {layout}")
        calls[0]()
        want, want_lse = mas.merge_attn_states_reference(sets[0]["prefix_output"], sets[0]["prefix_lse"],
                                                         sets[0]["suffix_output"], sets[0]["suffix_lse"])
        torch.testing.assert_close(sets[0]["output"].float(), want.float(), atol=1e-3, rtol=1e-2)
        torch.testing.assert_close(sets[0]["output_lse"], want_lse, atol=1e-3, rtol=1e-3)
        plan = next(iter(p for p in mas._PLANS.values() if p.num_tokens == n))
        cfg = (plan.grid[0], plan.num_warps, plan.constexprs["ROWS"])
        steps = []
        t0 = stamp()
        ms = common.time_rotating(lambda i: calls[i], copies)
        steps.append(("do_bench", t0, {"us": ms * 1e3}))
        t0 = stamp()
        steps.append(("eager", t0, {"us": bm.per_call_us(calls, torch)}))
        for label in ("graph 1", "graph 2"):
            t0 = stamp()
            steps.append((label, t0, graph_times(calls, warm_ms=args.warm_ms)))
        if args.diag:
            for label, kw in (("eager+warm10", {"warm_n": 10}), ("eager+warm20ms", {"warm_ms": 20}),
                              ("eager+warm50ms", {"warm_ms": 50}), ("eager+warm200ms", {"warm_ms": 200}),
                              ("eager+cold", {})):
                t0 = stamp()
                e_us = bm.per_call_us(calls, torch)
                steps.append((label, t0, {**graph_times(calls, **kw), "eager_us": e_us}))
            for label, kw in (("idle100ms+cold", {}), ("idle100ms+warm100ms", {"warm_ms": 100})):
                t0 = stamp()
                torch.cuda.synchronize()
                time.sleep(0.1)
                steps.append((label, t0, graph_times(calls, **kw)))
        for label, t0, rec in steps:
            log(event="step", round=rnd, variant=name, config=cfg, step=label, t0=t0, **rec)
        g = [r for lbl, _, r in steps if lbl.startswith("graph")]
        print(f"{args.tag} round {rnd} {name} {cfg}: do_bench {steps[0][2]['us']:.2f} eager {steps[1][2]['us']:.1f} "
              + " | ".join(f"{x['us']:.3f} (first 3 replays {x['replay_us'][:3]}, MHz {x['mhz_pre']:.0f}->"
                           f"{x['mhz_post']:.0f}, warm {x['warm_replays']})" for x in g), flush=True)
        for label, _, rec in steps[4:]:
            print(f"    {label:<20} {rec['us']:.3f} first3 {rec['replay_us'][:3]} MHz {rec['mhz_pre']:.0f}->"
                  f"{rec['mhz_post']:.0f} warm {rec['warm_replays']}", flush=True)
mas.default_config = orig
log(event="end")
