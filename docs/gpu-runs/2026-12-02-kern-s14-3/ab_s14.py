"""Run kern-s14-3: the new next_n = 2 default (the warp-specialised kernel with the session-14 set-up and fill)
against session 13's kernel (ws_var.py with every session-14 change off: 4 stages, fill after the key loop in the
consumers) on the target shape and B=128 mml 16k, ABAB 4 rounds, device time per call in a CUDA graph (5 replays,
inputs cycled past L2), both checked against the float64 oracle first (outputs poisoned with NaN)."""
import functools
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(ROOT, "tests", "kernels"))
import torch  # noqa: E402
import triton  # noqa: E402

import common  # noqa: E402
import mqa_check  # noqa: E402
import ws_var  # noqa: E402
from graphcheck.kernels import _fp8, _pdl, fp8_paged_mqa_logits  # noqa: E402
from graphcheck.kernels import paged_mqa_logits as pm  # noqa: E402

dev = torch.device("cuda")
common.warm_up_gpu()
bw = common.copy_bandwidth_gbs()
print(f"copy bandwidth {bw:.0f} GB/s", flush=True)


def s13(s, o):
    ws_var.launch(s["q"], s["kv_cache"], s["weights"], s["context_lens"], s["block_tables"], s["max_model_len"],
                  True, o, 2, 4, _pdl.supported(dev), _fp8.sm_count(dev))


for batch, avg, mml in ((64, 8192, 16384), (128, 8192, 16384)):
    mb = triton.cdiv(int(1.3 * avg), 64)
    make = functools.partial(pm.make_inputs, batch, 2, 64, 128, 64, mml, device="cuda", avg_len=avg, max_blocks=mb)
    first = make(seed=0)
    floor_us = (int(first["context_lens"].long().sum()) * 132 + batch * 2 * mml * 4) / (bw * 1e9) * 1e6
    sets = [first] + [make(seed=s) for s in range(1, common.copies_for(first["kv_cache"].numel()))]
    outs = [torch.empty(batch * 2, mml, device="cuda") for _ in sets]
    cfg = pm.default_config(batch, 2, 64, 64, mml, dev, mb)
    assert cfg.ws
    exp = mqa_check.paged_expected(first)
    calls = {"new default": lambda s, o: fp8_paged_mqa_logits(**s, out=o, config=cfg), "session-13 kernel": s13}
    for call in calls.values():
        got = torch.full((batch * 2, mml), float("nan"), device="cuda")
        call(first, got)
        torch.cuda.synchronize()
        mqa_check.check(got, exp)
    times = {n: [] for n in calls}
    for _ in range(4):
        for n, call in calls.items():
            times[n].append(common.graph_ms([lambda s=s, o=o, c=call: c(s, o) for s, o in zip(sets, outs)],
                                            replays=5) * 1e3)
    for n, ts in times.items():
        mean = sum(ts) / len(ts)
        print(f"B={batch} n=2 ctx={avg} mml={mml} floor {floor_us:.1f} us  {n:<18} "
              f"{' / '.join(f'{t:.2f}' for t in ts)} us  mean {mean:.2f} = {floor_us / mean:.3f} of the floor",
              flush=True)
    del sets, outs, first, exp
    torch.cuda.empty_cache()
