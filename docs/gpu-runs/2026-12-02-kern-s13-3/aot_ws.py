"""sm_90 build of kernels/paged_mqa_logits_ws.py (Triton 3.6, no GPU): registers, shared memory, warps, spills."""
import os, re, subprocess, sys
import torch, triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource
from triton.runtime.jit import mangle_type
from graphcheck.kernels import paged_mqa_logits_ws as ws
B, H, D, BS = 64, 64, 128, 64
q = torch.zeros(B, 2, H, D, dtype=torch.float8_e4m3fn)
kv = torch.zeros(10, BS, 1, D + 4, dtype=torch.uint8)
qd, kd, sd, kv_rows = ws._descriptors(q, kv)
fn = ws._paged_ws_kernel
const = dict(H=H, D=D, BS=BS, STAGES=int(sys.argv[1]) if len(sys.argv) > 1 else 4, BLOCK_B=64, FILL_N=1024,
             CH=ws.CHUNK, PDL=True, REGS=ws.MAXNREG, PREGS=24, CLEAN=True, LENS_2D=False)
descs = {"q_desc": qd, "k_desc": kd, "s_desc": sd}
ptrs = {"w_ptr": "*fp32", "lens_ptr": "*i32", "bt_ptr": "*i32", "out_ptr": "*fp32"}
sig = {n: "constexpr" if n in const else mangle_type(descs[n]) if n in descs else ptrs.get(n, "i32") for n in fn.arg_names}
src = GluonASTSource(fn, sig, constexprs={(fn.arg_names.index(k),): v for k, v in const.items()})
k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=4, maxnreg=ws.MAXNREG))
open("/tmp/k13/ws.cubin", "wb").write(k.asm["cubin"])
bin_ = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin")
res = subprocess.run([f"{bin_}/cuobjdump", "--dump-resource-usage", "/tmp/k13/ws.cubin"], capture_output=True, text=True).stdout
sass = subprocess.run([f"{bin_}/cuobjdump", "--dump-sass", "/tmp/k13/ws.cubin"], capture_output=True, text=True).stdout
print(re.findall(r"REG:\d+", res), "smem", k.metadata.shared, "warps", k.metadata.num_warps, "GMMA", sass.count("GMMA"),
      "UTMALDG", sass.count("UTMALDG"), "LDL/STL", sass.count("LDL") + sass.count("STL"))
