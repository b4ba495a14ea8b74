"""sm_90 build of the shipped kernels/paged_mqa_logits_ws.py (Triton 3.6, no GPU): registers, stack, shared memory,
spills, 128-bit stores, barriers and the prefetch, for (clean, 2-D lengths, BLOCK_B) = the benchmark's case, a
clean_logits=False 2-D case, B > 256 and B <= 32. Writes the cubins to /tmp/k14/."""
import os, re, subprocess, sys
import torch, triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource
from triton.runtime.jit import mangle_type
import importlib.util
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
spec = importlib.util.spec_from_file_location("wsk", os.path.join(ROOT, "kernels", "paged_mqa_logits_ws.py"))
ws = importlib.util.module_from_spec(spec); spec.loader.exec_module(ws)
B, H, D, BS = 64, 64, 128, 64
q = torch.zeros(B, 2, H, D, dtype=torch.float8_e4m3fn)
kv = torch.zeros(10, BS, 1, D + 4, dtype=torch.uint8)
qd, kd, sd, kv_rows = ws._descriptors(q, kv)
fn = ws._paged_ws_kernel
for clean, l2d, bb in ((True, False, 64), (False, True, 256), (True, True, 1024), (True, False, 32)):
    const = dict(H=H, D=D, BS=BS, STAGES=4, BLOCK_B=bb, FILL_N=ws.PRODUCER_FILL_N, CH=ws.CHUNK, PDL=True,
                 REGS=ws.MAXNREG, PREGS=ws.PRODUCER_REGS, CLEAN=clean, LENS_2D=l2d, WARP_SETUP=bb <= ws.WARP_SETUP_MAX)
    descs = {"q_desc": qd, "k_desc": kd, "s_desc": sd}
    ptrs = {"w_ptr": "*fp32", "lens_ptr": "*i32", "bt_ptr": "*i32", "out_ptr": "*fp32"}
    sig = {n: "constexpr" if n in const else mangle_type(descs[n]) if n in descs else ptrs.get(n, "i32") for n in fn.arg_names}
    div16 = ["w_ptr", "lens_ptr", "bt_ptr", "out_ptr", "stride_wr", "stride_or", "batch", "max_model_len"]
    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in div16}
    src = GluonASTSource(fn, sig, constexprs={(fn.arg_names.index(k),): v for k, v in const.items()}, attrs=attrs)
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=4, maxnreg=ws.MAXNREG))
    path = f"/tmp/k14/ship_{int(clean)}{int(l2d)}_{bb}.cubin"
    open(path, "wb").write(k.asm["cubin"])
    bin_ = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin")
    res = subprocess.run([f"{bin_}/cuobjdump", "--dump-resource-usage", path], capture_output=True, text=True).stdout
    sass = subprocess.run([f"{bin_}/cuobjdump", "--dump-sass", path], capture_output=True, text=True).stdout
    print(clean, l2d, bb, re.findall(r"REG:\d+", res), re.findall(r"STACK:\d+", res), "smem", k.metadata.shared,
          "warps", k.metadata.num_warps, "GMMA", sass.count("GMMA"), "UTMALDG", sass.count("UTMALDG"),
          "LDL/STL", sass.count("LDL") + sass.count("STL"), "STG.128", sass.count("STG.E.128"),
          "BAR.SYNC", sass.count("BAR.SYNC"), "CCTL", sass.count("CCTL"), flush=True)
