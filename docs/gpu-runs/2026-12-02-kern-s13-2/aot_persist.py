"""sm_90 build of gluon_persist.py without a GPU (Triton 3.6): registers, shared memory, warps, SASS counts."""
import os, re, subprocess, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch, triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource
from triton.runtime.jit import mangle_type
import gluon_persist as gp
stages = int(sys.argv[1]) if len(sys.argv) > 1 else 6
regs = int(sys.argv[2]) if len(sys.argv) > 2 else 152
pregs = int(sys.argv[3]) if len(sys.argv) > 3 else 40
maxnreg = int(sys.argv[4]) if len(sys.argv) > 4 else 0
pipe = int(sys.argv[5]) if len(sys.argv) > 5 else 0
B, H, D, BS = 64, 64, 128, 64
q = torch.zeros(B, 2, H, D, dtype=torch.float8_e4m3fn)
kv = torch.zeros(10, BS, 1, D + 4, dtype=torch.uint8)
out = torch.zeros(B * 2, 100, dtype=torch.float32)
lens = torch.zeros(B, dtype=torch.int32); bt = torch.zeros(B, 4, dtype=torch.int32); w = torch.zeros(B * 2, H)
args, const = gp.launch_args(q, kv, w, lens, bt, 100, out, 132)
const.update(STAGES=stages, FILL_N=1024, CH=gp.CHUNK, PDL=True, REGS=regs, PREGS=pregs, FILL_FIRST=True, PIPE=bool(pipe))
fn = gp._paged_persistent_kernel
sig = {}
vals = dict(zip(fn.arg_names, args))
for name in fn.arg_names:
    if name in const: sig[name] = "constexpr"
    elif name.endswith("_desc"): sig[name] = mangle_type(vals[name])
    elif name.endswith("_ptr"): sig[name] = {"w_ptr": "*fp32", "lens_ptr": "*i32", "bt_ptr": "*i32", "out_ptr": "*fp32"}[name]
    else: sig[name] = "i32"
src = GluonASTSource(fn, sig, constexprs={(fn.arg_names.index(k),): v for k, v in const.items()})
opts = dict(num_warps=4)
if maxnreg: opts["maxnreg"] = maxnreg
k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=opts)
d = "/tmp/k13/aot"; os.makedirs(d, exist_ok=True); tag = f"persist_s{stages}_r{regs}_p{pregs}_m{maxnreg}_pipe{pipe}"
open(f"{d}/{tag}.ttgir", "w").write(k.asm["ttgir"]); open(f"{d}/{tag}.ptx", "w").write(k.asm["ptx"]); open(f"{d}/{tag}.cubin", "wb").write(k.asm["cubin"])
bin_ = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin")
res = subprocess.run([f"{bin_}/cuobjdump", "--dump-resource-usage", f"{d}/{tag}.cubin"], capture_output=True, text=True).stdout
sass = subprocess.run([f"{bin_}/cuobjdump", "--dump-sass", f"{d}/{tag}.cubin"], capture_output=True, text=True).stdout
open(f"{d}/{tag}.sass", "w").write(sass)
print(tag, re.findall(r"REG:\d+", res), "smem", k.metadata.shared, "warps", k.metadata.num_warps, "GMMA", sass.count("GMMA"), "UTMALDG", sass.count("UTMALDG"), "SETMAXNREG", re.findall(r"SETMAXNREG[^;]*", sass), "LDL/STL", sass.count("LDL")+sass.count("STL"))
