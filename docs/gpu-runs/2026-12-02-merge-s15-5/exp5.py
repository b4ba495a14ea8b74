"""Run merge-s15-5: the default (the next kernel launches once the loads are issued) against the early launch
(right after the wait, as in 931c52d), every small shape. Derived from exp2.py;: main's launch against the mid-size launch (about 2 KiB of each input per program)
with and without the one-address-per-thread L2 prefetch before the PDL wait; harness order, rounds rotated."""
import json
import os
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import torch  # noqa: E402

import bench_merge_attn_states as bm  # noqa: E402
import common  # noqa: E402
from graphcheck.kernels import _launch  # noqa: E402
from graphcheck.kernels import merge_attn as mas  # noqa: E402

out = sys.argv[1]
tag = sys.argv[2]
rounds = int(sys.argv[3])
only = sys.argv[4].split(",") if len(sys.argv) > 4 else None
SHAPES = [(256, 32, 128, "bfloat16", "hn"), (128, 32, 128, "bfloat16", "hn"), (512, 32, 128, "bfloat16", "hn"),
          (16, 32, 128, "bfloat16", "hn"), (32, 32, 128, "bfloat16", "hn"), (64, 32, 128, "bfloat16", "hn"),
          (96, 32, 128, "bfloat16", "hn"), (192, 32, 128, "bfloat16", "hn"), (384, 32, 128, "bfloat16", "hn"),
          (256, 32, 128, "float16", "hn"), (256, 32, 128, "float32", "hn"), (256, 32, 64, "bfloat16", "hn"),
          (256, 16, 256, "bfloat16", "hn"), (256, 32, 128, "bfloat16", "nh"), (256, 8, 128, "bfloat16", "hn")]


def mid(n, h, d, dtype):
    elem = dtype.itemsize
    block_d = _launch.next_pow2(d)
    vec = max(1, 16 // elem)
    rows = max(1, 2048 // (block_d * elem))
    return rows, max(1, min(4, rows * block_d // (vec * 32))), False


def make_set(n, h, d, dtype, layout):
    shape = (h, n) if layout == "hn" else (n, h)
    return dict(output=torch.empty(n, h, d, dtype=dtype, device="cuda"),
                prefix_output=torch.randn(n, h, d, dtype=dtype, device="cuda"),
                prefix_lse=torch.randn(shape, device="cuda") * 4,
                suffix_output=torch.randn(n, h, d, dtype=dtype, device="cuda"),
                suffix_lse=torch.randn(shape, device="cuda") * 4,
                output_lse=torch.empty(shape, device="cuda"))


env = common.environment()
common.warm_up_gpu()
copy_gbs = common.copy_bandwidth_gbs()
print("env", env, "copy", round(copy_gbs), flush=True)
log = open(os.path.join(out, f"exp5-{tag}.jsonl"), "a")
for n, h, d, dname, layout in SHAPES:
    dtype = getattr(torch, dname)
    if only and f"{n}" not in only:
        continue
    size = 3 * n * h * d * dtype.itemsize + 3 * n * h * 4
    copies = common.copies_for(size)
    sets = [make_set(n, h, d, dtype, layout) for _ in range(copies)]
    dflt = mas.default_config(n, h, d, dtype, layout)
    m = mid(n, h, d, dtype)
    variants = {"late": dflt, "early": (*dflt, True, True, None, None, False)}
    ref = mas.merge_attn_states_reference(sets[0]["prefix_output"], sets[0]["prefix_lse"], sets[0]["suffix_output"],
                                          sets[0]["suffix_lse"], lse_layout=layout)
    good = []
    for name, cfg in variants.items():
        sets[0]["output"].fill_(float("nan"))
        sets[0]["output_lse"].fill_(float("nan"))
        try:
            mas._merge(**sets[0], config=cfg, lse_layout=layout)
            torch.cuda.synchronize()
            tol = dict(atol=1e-3, rtol=1e-2) if dtype == torch.bfloat16 else dict(atol=1e-3, rtol=1e-3)
            torch.testing.assert_close(sets[0]["output"].float(), ref[0].float(), **tol)
            torch.testing.assert_close(sets[0]["output_lse"], ref[1], atol=1e-3, rtol=1e-3)
            good.append(name)
        except Exception as exc:  # noqa: BLE001
            print(f"{n},{h},{d},{dname},{layout} {name} {cfg}: FAILED {type(exc).__name__}: {str(exc)[:300]}",
                  flush=True)
    floor = size / (copy_gbs * 1e9) * 1e6
    for r in range(rounds):
        order = good[r % len(good):] + good[:r % len(good)]
        for name in order:
            cfg = variants[name]
            calls = [(lambda s: (lambda: mas._merge(**s, config=cfg, lse_layout=layout)))(s) for s in sets]
            ms = common.time_rotating(lambda i: calls[i], copies)
            pc = bm.per_call_us(calls, torch, iters=1000)
            g1 = common.graph_ms(calls, per_graph=100, replays=20) * 1e3
            g2 = common.graph_ms(calls, per_graph=100, replays=20) * 1e3
            rec = dict(tag=tag, N=n, H=h, D=d, dtype=dname, layout=layout, round=r, variant=name, cfg=str(cfg),
                       event_ms=ms, per_call_us=pc, graph_us=g1, graph2_us=g2, floor_us=floor, time=time.time())
            log.write(json.dumps(rec) + "\n")
            log.flush()
            print(f"{tag} N={n} H={h} D={d} {dname} {layout} r{r} {name:9s} {str(cfg):32s} graph {g1:.3f} / {g2:.3f}"
                  f"  floor {floor:.2f}", flush=True)
    del sets
    torch.cuda.empty_cache()
