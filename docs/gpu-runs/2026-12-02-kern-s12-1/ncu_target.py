"""Run kern-s12: one launch per variant of the paged MQA decode kernel for ncu (each launch profiled, caches
flushed per pass): main's next_n = 2 launch at B=64 ctx 8k mml 16k, the mask_sum candidate (cap 128) there, main's
next_n = 1 launch at the same shape, and main's next_n = 2 launch at B=64 ctx 32k mml 64k (0.77 of the floor)."""
import dataclasses
import torch
import triton
from graphcheck.kernels import fp8_paged_mqa_logits, paged_mqa_logits as pm

dev = torch.device("cuda")
for (b, n, avg, mml, variant) in [(64, 2, 8192, 16384, "main"), (64, 2, 8192, 16384, "mask_sum cap128"),
                                  (64, 1, 8192, 16384, "main"), (64, 2, 32768, 65536, "main")]:
    mb = triton.cdiv(int(1.3 * avg), 64)
    inp = pm.make_inputs(b, n, 64, 128, 64, mml, device="cuda", avg_len=avg, max_blocks=mb)
    cfg = pm.default_config(b, n, 64, 64, mml, dev, mb)
    if variant != "main":
        cfg = dataclasses.replace(cfg, split_rows=False, mask_sum=True, maxnreg=128)
    out = torch.empty(b * n, mml, device="cuda")
    fp8_paged_mqa_logits(**inp, out=out, config=cfg)
    torch.cuda.synchronize()
    print("launched", b, n, avg, mml, variant, cfg, flush=True)
