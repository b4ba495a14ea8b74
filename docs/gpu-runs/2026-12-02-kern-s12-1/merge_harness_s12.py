"""Run kern-s12: merge_attn_states N = 256 bf16 (H 32, D 128) through bench_merge_attn_states.py's own steps
(do_bench with rotated inputs, 2000 eager calls, then 100 calls per graph x 20 replays), with the default
launch switched between main's one-warp launch and the kern-s11-3 candidate (8 rows x 4 warps), ABAB, 3 times
each; the op path (torch.ops.graphcheck.merge_attn_states) as in the harness. Also the graph time alone
(no eager loop before it), to see whether the eager loop's idle GPU moves the graph number."""
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import torch  # noqa: E402

import bench_merge_attn_states as bm  # noqa: E402
import common  # noqa: E402
from graphcheck.kernels import merge_attn as mas  # noqa: E402

orig = mas.default_config


def cand_default(n, h, d, dtype, layout):
    cfg = orig(n, h, d, dtype, layout)
    if n * h <= 8192 and cfg[1] == 1:
        return (8, 4, False)
    return cfg


common.warm_up_gpu()
n, dtype = 256, torch.bfloat16
size = bm.nbytes(n, dtype, torch)
copies = common.copies_for(size)
sets = [bm.make_set(n, dtype, "hn", torch) for _ in range(copies)]
calls = [(lambda s: (lambda: mas.merge_attn_states(**s)))(s) for s in sets]
res = {"main": [], "cand": []}
alone = {"main": [], "cand": []}
for rnd in range(3):
    for name, fn in (("main", orig), ("cand", cand_default)):
        mas.default_config = fn
        mas._PLANS.clear()
        calls[0]()
        want, want_lse = mas.merge_attn_states_reference(sets[0]["prefix_output"], sets[0]["prefix_lse"],
                                                         sets[0]["suffix_output"], sets[0]["suffix_lse"])
        torch.testing.assert_close(sets[0]["output"].float(), want.float(), atol=1e-3, rtol=1e-2)
        g_alone = common.graph_ms(calls, per_graph=100, replays=20) * 1e3
        common.time_rotating(lambda i: calls[i], copies)
        bm.per_call_us(calls, torch)
        g = common.graph_ms(calls, per_graph=100, replays=20) * 1e3
        plan = next(iter(mas._PLANS.values()))
        res[name].append(g)
        alone[name].append(g_alone)
        print(f"round {rnd} {name:<5} grid {plan.grid} warps {plan.num_warps} rows {plan.constexprs['ROWS']}: "
              f"graph alone {g_alone:.3f} us, after the harness's eager steps {g:.3f} us", flush=True)
mas.default_config = orig
for name in res:
    print(f"{name}: harness-order graph us {[round(x, 3) for x in res[name]]}, alone {[round(x, 3) for x in alone[name]]}")
