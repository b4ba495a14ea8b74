"""sm_90 build of the merge kernel (Triton 3.6, no GPU): check the L2 prefetch compiles; SASS counts."""
import os, re, subprocess, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
sys.path.insert(0, sys.argv[1])
from graphcheck.kernels import merge_attn as ma
fn = ma._merge_attn_states_kernel
rows, warps, pf = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
const = dict(HEAD_SIZE=128, BLOCK_D=128, ROWS=rows, HEAD_MAJOR=False, HAS_OUT_LSE=True, LIMIT_MODE=0, FP8_OUT=False,
             FP8_MAX=448.0, LOAD_FIRST=True, PDL=True, HEADS=32, PREFETCH=pf)
ptr = {"out_ptr": "*bf16", "pre_ptr": "*bf16", "suf_ptr": "*bf16", "pre_lse_ptr": "*fp32", "suf_lse_ptr": "*fp32",
       "out_lse_ptr": "*fp32", "limit_ptr": "*fp32", "scale_ptr": "*fp32"}
sig = {n: ("constexpr" if n in const else ptr.get(n, "i32")) for n in fn.arg_names}
src = ASTSource(fn, sig, constexprs={(fn.arg_names.index(k),): v for k, v in const.items()})
k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=warps))
bin_ = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin")
open("/tmp/k13/m.cubin", "wb").write(k.asm["cubin"])
sass = subprocess.run([f"{bin_}/cuobjdump", "--dump-sass", "/tmp/k13/m.cubin"], capture_output=True, text=True).stdout
open(f"/tmp/k13/merge_r{rows}_w{warps}_pf{pf}.sass", "w").write(sass)
print(rows, warps, pf, "instr", len(re.findall(r"/\*[0-9a-f]{4}\*/", sass)), "CCTL/prefetch", sass.count("CCTL"), sass.count("PREFETCH"), "LDG", sass.count("LDG"), "ACQBULK/griddep", sass.count("ACQBULK"))
