"""Host cost per eager merge_attn_states call, the code before run s3 (main 8735a89, loaded from
old_merge_attn.py beside this file) against the current code, alternated in one process so the
machine is the same for both; plus the graph-timed device time of each (the same inputs)."""

import importlib.util
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "benchmarks"))
import common  # noqa: E402

import graphcheck.kernels.merge_attn as new  # noqa: E402

spec = importlib.util.spec_from_file_location("old_merge_attn", os.path.join(HERE, "old_merge_attn.py"))
old = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)

h, d = 32, 128
for n in (256, 4096):
    g = torch.Generator(device="cuda").manual_seed(n)
    args = dict(output=torch.empty(n, h, d, dtype=torch.bfloat16, device="cuda"),
                prefix_output=torch.randn(n, h, d, device="cuda", generator=g).bfloat16(),
                prefix_lse=torch.randn(h, n, device="cuda", generator=g),
                suffix_output=torch.randn(n, h, d, device="cuda", generator=g).bfloat16(),
                suffix_lse=torch.randn(h, n, device="cuda", generator=g),
                output_lse=torch.empty(h, n, device="cuda"))
    want = torch.empty_like(args["output"])
    old._merge(**args, lse_layout="hn")
    want.copy_(args["output"])
    new._merge(**args, lse_layout="hn")
    assert torch.equal(want.view(torch.int16), args["output"].view(torch.int16)), "old and new outputs differ"
    calls = {
        "old _merge": lambda: old._merge(**args, lse_layout="hn"),
        "new _merge": lambda: new._merge(**args, lse_layout="hn"),
        "new _merge runtime heads": lambda: new._merge(**args, lse_layout="hn",
                                                       config=(*new.default_config(n, h, d, torch.bfloat16, "hn"),
                                                               True, False)),
        "new merge_attn_states (op)": lambda: new.merge_attn_states(**args),
    }
    res = {k: [] for k in calls}
    for _ in range(3):
        for k, c in calls.items():
            res[k].append(common.host_us(c, iters=2000))
    for k, v in res.items():
        dev = common.graph_ms([calls[k]], per_graph=100, replays=20) * 1e3
        print(f"N={n:5d} {k:<28} host us/call {' '.join(f'{x:6.1f}' for x in v)}   graph us/call {dev:.3f}")
t0 = time.perf_counter()
print(f"done {time.perf_counter() - t0:.1f}")
