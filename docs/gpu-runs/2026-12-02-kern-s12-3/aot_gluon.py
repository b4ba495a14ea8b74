import os, re, subprocess, sys
sys.path.insert(0, "/work/main/.gpu/kern12")
import torch, triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource
from triton.runtime.jit import mangle_type
import gluon_paged as gp
stages = int(sys.argv[1]) if len(sys.argv) > 1 else 4
B, H, D, BS = 2, 64, 128, 64
q = torch.zeros(B, 2, H, D, dtype=torch.float8_e4m3fn)
kv = torch.zeros(10, BS, 1, D + 4, dtype=torch.uint8)
q_desc, k_desc, s_desc, kv_rows = gp.descriptors(q, kv)
fn = gp._paged_ws_kernel
sig = {}
mr = int(sys.argv[2]) if len(sys.argv) > 2 else 80
const = dict(H=H, D=D, BS=BS, STAGES=stages, FILL_N=1024, CHUNK=128, PDL=True, REGS=mr)
for name in fn.arg_names:
    if name in const: sig[name] = "constexpr"
    elif name == "q_desc": sig[name] = mangle_type(q_desc)
    elif name == "k_desc": sig[name] = mangle_type(k_desc)
    elif name == "s_desc": sig[name] = mangle_type(s_desc)
    elif name.endswith("_ptr"): sig[name] = {"w_ptr": "*fp32", "lens_ptr": "*i32", "bt_ptr": "*i32", "out_ptr": "*fp32"}[name]
    else: sig[name] = "i32"
print(sig)
src = GluonASTSource(fn, sig, constexprs={(fn.arg_names.index(k),): v for k, v in const.items()})

opts = dict(num_warps=4)
if mr: opts["maxnreg"] = mr
k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=opts)
d = "/tmp/k12/aot"; tag = f"gluon_s{stages}_r{mr}"
open(f"{d}/{tag}.ttgir", "w").write(k.asm["ttgir"]); open(f"{d}/{tag}.ptx", "w").write(k.asm["ptx"]); open(f"{d}/{tag}.cubin", "wb").write(k.asm["cubin"])
bin_ = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin")
res = subprocess.run([f"{bin_}/cuobjdump", "--dump-resource-usage", f"{d}/{tag}.cubin"], capture_output=True, text=True).stdout
sass = subprocess.run([f"{bin_}/cuobjdump", "--dump-sass", f"{d}/{tag}.cubin"], capture_output=True, text=True).stdout
open(f"{d}/{tag}.sass", "w").write(sass)
print(tag, re.findall(r"REG:\d+", res), "smem", k.metadata.shared, "warps", k.metadata.num_warps, "GMMA", sass.count("GMMA"), "UTMALDG", sass.count("UTMALDG"), "SETMAXNREG", sass.count("SETMAXNREG"), "LDL/STL", sass.count("LDL")+sass.count("STL"))
