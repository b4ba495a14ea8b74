"""Run kern-s12-3: the warp-specialised Gluon experiment (gluon_paged.py) against main's next_n = 2 launch (branch kern12:
join_rows), every next_n = 2 decode shape; each launch checked against the float64 oracle and main's output first
(outputs poisoned with NaN), then device time per call inside a CUDA graph (5 replays, inputs cycled past L2)."""
import functools
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(ROOT, "tests", "kernels"))
import torch  # noqa: E402
import triton  # noqa: E402

import common  # noqa: E402
import gluon_paged as gp  # noqa: E402
import mqa_check  # noqa: E402
from graphcheck.kernels import fp8_paged_mqa_logits  # noqa: E402
from graphcheck.kernels import paged_mqa_logits as pm  # noqa: E402

SHAPES = [(64, 8192, 16384), (128, 8192, 16384), (64, 32768, 65536), (64, 8192, 111000), (64, 32768, 111000),
          (128, 8192, 111000), (128, 32768, 111000)]
only = sys.argv[1:] and sys.argv[1] == "--probe"
common.warm_up_gpu()
bw = common.copy_bandwidth_gbs()
print(f"copy bandwidth {bw:.0f} GB/s", flush=True)
dev = torch.device("cuda")
if only:
    SHAPES = [(4, 700, 1000)]
for batch, avg, mml in SHAPES:
    mb = triton.cdiv(int(1.3 * avg), 64)
    make = functools.partial(pm.make_inputs, batch, 2, 64, 128, 64, mml, device="cuda", avg_len=avg, max_blocks=mb)
    first = make(seed=0)
    key_bytes = int(first["context_lens"].long().sum()) * 132
    floor_us = (key_bytes + batch * 2 * mml * 4) / (bw * 1e9) * 1e6
    copies = 1 if only else common.copies_for(first["kv_cache"].shape[0] * first["kv_cache"].stride(0))
    sets = [first] + [make(seed=s) for s in range(1, copies)]
    outs = [torch.empty(batch * 2, mml, device="cuda") for _ in sets]
    cfg = pm.default_config(batch, 2, 64, 64, mml, dev, mb)
    exp = mqa_check.paged_expected(first)
    shape = f"B={batch} n=2 ctx={avg} mml={mml}"
    variants = [("main", None, None, None)]
    for stages, splits in ((4, cfg.splits), (6, cfg.splits), (4, 8), (6, 16), (6, 4)):
        variants.append((f"gluon ws {stages} stages, {splits} splits", stages, splits, 80))
    variants.append(("main (again)", None, None, None))
    base = None
    for name, stages, splits, regs in variants:
        if stages is None:
            def call(s, o):
                return fp8_paged_mqa_logits(**s, out=o, config=cfg)
        else:
            def call(s, o, st=stages, sp=splits, rg=regs):
                return gp.run(s["q"], s["kv_cache"], s["weights"], s["context_lens"], s["block_tables"], mml, o,
                              splits=sp, stages=st, regs=rg)
        try:
            got = torch.full((batch * 2, mml), float("nan"), device="cuda")
            t0 = time.time()
            call(first, got)
            torch.cuda.synchronize()
            res = mqa_check.check(got, exp)
            if base is None:
                base = got
            else:
                same = torch.equal(torch.isneginf(got), torch.isneginf(base))
                valid = torch.isfinite(base)
                err = float((got[valid] - base[valid]).abs().max())
                if not same or err > 1e-3 or torch.isnan(got).any():
                    raise AssertionError(f"differs from main: mask {same}, max err {err}")
            note = f"ok {res['worst_ratio']:.2f} ({time.time() - t0:.1f} s first call)"
        except Exception as exc:  # noqa: BLE001
            print(f"{shape:<32} {name:<32} FAILED {type(exc).__name__}: {str(exc)[:300]}", flush=True)
            torch.cuda.synchronize()
            continue
        if only:
            print(f"{shape:<32} {name:<32} {note}", flush=True)
            continue
        calls = [lambda s=s, o=o, c=call: c(s, o) for s, o in zip(sets, outs)]
        us = common.graph_ms(calls, replays=5) * 1e3
        print(f"{shape:<32} {name:<32} {us:8.2f} us  frac {floor_us / us:.3f}  floor {floor_us:.1f}  {note}", flush=True)
    del sets, outs, first, base, exp
    torch.cuda.empty_cache()
