"""Run merge-s16-1: main's merge (HEAD, merge_old.py) against the working tree's (fewer instructions after the
PDL wait: one exponential per row, approximate ex2/rcp/lg2, addresses before the wait, multiply-add), every
small shape, harness order, rounds rotated, two graph instances per timing step."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, HERE)
import torch  # noqa: E402

import bench_merge_attn_states as bm  # noqa: E402
import common  # noqa: E402
import merge_old  # noqa: E402
from graphcheck.kernels import merge_attn as mas  # noqa: E402

out, tag, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
only = sys.argv[4].split(",") if len(sys.argv) > 4 else None
SHAPES = [(256, 32, 128, "bfloat16", "hn"), (128, 32, 128, "bfloat16", "hn"), (16, 32, 128, "bfloat16", "hn"),
          (64, 32, 128, "bfloat16", "hn"), (192, 32, 128, "bfloat16", "hn"), (512, 32, 128, "bfloat16", "hn"),
          (4096, 32, 128, "bfloat16", "hn"), (256, 32, 128, "float16", "hn"), (256, 32, 128, "float32", "hn"),
          (256, 32, 64, "bfloat16", "hn"), (256, 32, 128, "bfloat16", "nh"), (65536, 32, 128, "bfloat16", "hn")]


def make_set(n, h, d, dtype, layout):
    shape = (h, n) if layout == "hn" else (n, h)
    lse = lambda: torch.randn(shape, device="cuda") * 4  # noqa: E731
    return dict(output=torch.empty(n, h, d, dtype=dtype, device="cuda"),
                prefix_output=torch.randn(n, h, d, dtype=dtype, device="cuda"), prefix_lse=lse(),
                suffix_output=torch.randn(n, h, d, dtype=dtype, device="cuda"), suffix_lse=lse(),
                output_lse=torch.empty(shape, device="cuda"))


env = common.environment()
common.warm_up_gpu()
copy_gbs = common.copy_bandwidth_gbs()
print("env", env, "copy", round(copy_gbs), flush=True)
log = open(os.path.join(out, f"exp-{tag}.jsonl"), "a")
MODS = {"old": merge_old, "new": mas}
for n, h, d, dname, layout in SHAPES:
    if only and f"{n}" not in only:
        continue
    dtype = getattr(torch, dname)
    size = 3 * n * h * d * dtype.itemsize + 3 * n * h * 4
    copies = common.copies_for(size)
    sets = [make_set(n, h, d, dtype, layout) for _ in range(copies)]
    s0 = sets[0]
    # parts with an empty (-inf) LSE and garbage outputs in some rows, as the tests do
    s0["prefix_lse"].view(-1)[::7] = float("-inf")
    s0["suffix_lse"].view(-1)[::11] = float("-inf")
    s0["prefix_lse"].view(-1)[::13] = float("inf")
    ref = mas.merge_attn_states_reference(s0["prefix_output"].double(), s0["prefix_lse"].double(),
                                          s0["suffix_output"].double(), s0["suffix_lse"].double(), lse_layout=layout)
    good = []
    for name, mod in MODS.items():
        s0["output"].fill_(float("nan"))
        s0["output_lse"].fill_(float("nan"))
        try:
            mod._merge(**s0, lse_layout=layout)
            torch.cuda.synchronize()
            tol = dict(atol=1e-3, rtol=1e-2) if dtype != torch.float32 else dict(atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(s0["output"].double(), ref[0].to(torch.float64).to(dtype).double(), **tol)
            torch.testing.assert_close(s0["output_lse"].double(), ref[1].double(), atol=1e-5, rtol=1e-5)
            good.append(name)
        except Exception as exc:  # noqa: BLE001
            print(f"{n},{h},{d},{dname},{layout} {name}: FAILED {type(exc).__name__}: {str(exc)[:400]}", flush=True)
    floor = size / (copy_gbs * 1e9) * 1e6
    for r in range(rounds):
        order = good[r % len(good):] + good[:r % len(good)]
        for name in order:
            mod = MODS[name]
            calls = [(lambda s: (lambda: mod._merge(**s, lse_layout=layout)))(s) for s in sets]
            common.time_rotating(lambda i: calls[i], copies)
            bm.per_call_us(calls, torch, iters=1000)
            pg = 100 if n <= 4096 else 20
            g = [common.graph_ms(calls, per_graph=pg, replays=20) * 1e3 for _ in range(3)]
            rec = dict(tag=tag, N=n, H=h, D=d, dtype=dname, layout=layout, round=r, variant=name, graph_us=g,
                       floor_us=floor, time=time.time())
            log.write(json.dumps(rec) + "\n")
            log.flush()
            print(f"{tag} N={n} H={h} D={d} {dname} {layout} r{r} {name:4s} graph "
                  + " / ".join(f"{x:.3f}" for x in g) + f"  floor {floor:.2f}", flush=True)
    del sets
    torch.cuda.empty_cache()
