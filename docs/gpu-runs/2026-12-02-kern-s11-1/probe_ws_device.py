"""Device probe (run kern-s11): does Triton on this GPU build the paged key loop with warp_specialize=True?

For each variant module: one launch on a small paged input (64-key blocks, next_n = 2, H = 64, D = 128), the result
against the float64 oracle, then what the compiled kernel is: warps, registers, shared memory, whether the TTGIR holds
a ttg.warp_specialize region and how many setmaxnreg the PTX has. The plain-query warp-specialised build (query tiles
by per-thread loads) runs in a subprocess: Triton 3.6 fails it with an assertion in its Hopper pass (here, locally).
"""
import dataclasses
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "kernels"))
import importlib

import torch
import triton

from graphcheck.kernels import paged_mqa_logits as pm


def one(tag, **changes):
    import mqa_check

    mod = importlib.import_module("paged_v_" + tag)
    dev = torch.device("cuda")
    inp = pm.make_inputs(4, 2, 64, 128, 64, 2048, seed=3, device=dev, avg_len=1500)
    base = pm.default_config(4, 2, 64, 64, 2048, dev, inp["block_tables"].shape[1])
    cfg = mod.PagedConfig(**{**dataclasses.asdict(base), **changes})
    out = torch.full((8, 2048), float("nan"), device=dev)
    try:
        mod._run(inp["q"], inp["kv_cache"], inp["weights"], inp["context_lens"], inp["block_tables"], 2048, True, out, cfg)
        torch.cuda.synchronize()
        res = mqa_check.check(out, mqa_check.paged_expected(inp))
        verdict = f"oracle ok {res['worst_ratio']:.2f}"
    except Exception as exc:  # noqa: BLE001
        verdict = f"FAILED {type(exc).__name__}: {str(exc)[:160]}"
    kern = mod._paged_mqa_logits_kernel
    for cache in kern.device_caches.values():
        for ck in cache[0].values():
            ttgir, ptx = ck.asm.get("ttgir", ""), ck.asm.get("ptx", "")
            print(f"{tag} {changes}: {verdict}; warps {ck.metadata.num_warps}, regs {ck.n_regs}, shared {ck.metadata.shared}, "
                  f"ttg.warp_specialize {'ttg.warp_specialize' in ttgir}, setmaxnreg {ptx.count('setmaxnreg')}, "
                  f"wgmma {ptx.count('wgmma.mma_async')}", flush=True)
            return
    print(f"{tag} {changes}: {verdict}; no compiled kernel", flush=True)


if __name__ == "__main__":
    print("triton", triton.__version__, "torch", torch.__version__, torch.cuda.get_device_name(), flush=True)
    if len(sys.argv) > 1:
        one(sys.argv[1], wsq=sys.argv[2] == "1")
        sys.exit(0)
    for tag, wsq in (("base", False), ("base", True), ("ws", True), ("ws", False)):
        r = subprocess.run([sys.executable, __file__, tag, "1" if wsq else "0"], capture_output=True, text=True, timeout=120)
        lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.startswith(tag) or "Assertion" in ln or "error:" in ln]
        print("\n".join(lines[:4]) or f"{tag} wsq={wsq}: rc {r.returncode}, no output", f"(rc {r.returncode})", flush=True)
