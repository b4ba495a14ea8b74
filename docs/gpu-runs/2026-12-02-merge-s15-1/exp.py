"""Merge N = 256 (and the other small-grid sizes): the L2 prefetch before the PDL wait, one address per thread,
against main's launch, in the benchmark harness's order, several rounds with the variant order rotated."""
import json
import os
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import torch  # noqa: E402

import bench_merge_attn_states as bm  # noqa: E402
import common  # noqa: E402
from graphcheck.kernels import merge_attn as mas  # noqa: E402

out = sys.argv[1]
sizes = [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "256").split(",")]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
VARIANTS = {
    "main": None,
    "pf1": (4, 1, False, True, True, None, 1),
    "pf2": (4, 1, False, True, True, None, 2),
    "pf3": (4, 1, False, True, True, None, 3),
    "pf4": (4, 1, False, True, True, None, 4),
    "2w": (4, 2, False, True, True, None, 0),
    "2w-pf2": (4, 2, False, True, True, None, 2),
    "8x4-pf2": (8, 4, False, True, True, None, 2),
}
env = common.environment()
common.warm_up_gpu()
copy_gbs = common.copy_bandwidth_gbs()
print("env", env, "copy", round(copy_gbs), flush=True)
log = open(os.path.join(out, "exp.jsonl"), "a")
for n in sizes:
    dtype = torch.bfloat16
    size = bm.nbytes(n, dtype, torch)
    copies = common.copies_for(size)
    sets = [bm.make_set(n, dtype, "hn", torch) for _ in range(copies)]
    want, want_lse = mas.merge_attn_states_reference(sets[0]["prefix_output"], sets[0]["prefix_lse"],
                                                     sets[0]["suffix_output"], sets[0]["suffix_lse"])
    names = list(VARIANTS)
    ok = {}
    for name in names:
        cfg = VARIANTS[name]
        sets[0]["output"].fill_(float("nan"))
        sets[0]["output_lse"].fill_(float("nan"))
        try:
            mas._merge(**sets[0], config=cfg)
            torch.cuda.synchronize()
            torch.testing.assert_close(sets[0]["output"].float(), want.float(), atol=1e-3, rtol=1e-2)
            torch.testing.assert_close(sets[0]["output_lse"], want_lse, atol=1e-3, rtol=1e-3)
            ok[name] = True
        except Exception as exc:  # noqa: BLE001
            print(f"N={n} {name}: FAILED {type(exc).__name__}: {str(exc)[:300]}", flush=True)
            ok[name] = False
    print(f"N={n} checked: {ok}", flush=True)
    names = [x for x in names if ok[x]]
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            cfg = VARIANTS[name]
            calls = [(lambda s: (lambda: mas._merge(**s, config=cfg)))(s) for s in sets]
            ms = common.time_rotating(lambda i: calls[i], copies)
            pc = bm.per_call_us(calls, torch)
            g1 = common.graph_ms(calls, per_graph=100, replays=20) * 1e3
            g2 = common.graph_ms(calls, per_graph=100, replays=20) * 1e3
            rec = dict(N=n, round=r, variant=name, event_ms=ms, per_call_us=pc, graph_us=g1, graph2_us=g2,
                       floor_us=size / (copy_gbs * 1e9) * 1e6, time=time.time())
            log.write(json.dumps(rec) + "\n")
            log.flush()
            print(f"N={n} r{r} {name:8s} graph {g1:.3f} / {g2:.3f} us  event {ms*1e3:.2f} us  per-call {pc:.2f} us",
                  flush=True)
    del sets
    torch.cuda.empty_cache()
