"""AOT sm_90 build (Triton 3.6) of the streaming merge candidate: SASS order of loads and stores."""
import os, re, subprocess, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import merge_var
fn = merge_var._merge_stream_kernel
kw = dict(a.split("=") for a in sys.argv[1:])
const = dict(HEADS=32, D=128, ROWS=int(kw.get("rows", 4)), ITERS=int(kw.get("iters", 2)), EVICT=kw.get("ev", "0") == "1", PDL=True, EARLY=kw.get("early", "0") == "1")
ptrs = {n: ("*bf16" if n in ("out_ptr", "pre_ptr", "suf_ptr") else "*fp32") for n in fn.arg_names if n.endswith("_ptr")}
sig = {n: ptrs.get(n) or ("constexpr" if n in const else "i32") for n in fn.arg_names}
for n in ("plse_st", "slse_st", "olse_st"):
    sig[n] = "constexpr"; const[n] = 1
div16 = set(ptrs) | {"out_st", "out_sh", "pre_st", "pre_sh", "suf_st", "suf_sh", "plse_sh", "slse_sh", "olse_sh", "num_tokens"}
attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in div16}
src = ASTSource(fn, sig, constexprs={(fn.arg_names.index(k),): v for k, v in const.items()}, attrs=attrs)
k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=int(kw.get("warps", 1)), num_stages=1))
d = "/tmp/kern_ws/aot"; os.makedirs(d, exist_ok=True)
tag = "merge_" + "_".join(f"{a}{b}" for a, b in kw.items())
open(f"{d}/{tag}.cubin", "wb").write(k.asm["cubin"])
bin_ = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin")
sass = subprocess.run([f"{bin_}/cuobjdump", "--dump-sass", f"{d}/{tag}.cubin"], capture_output=True, text=True).stdout
open(f"{d}/{tag}.sass", "w").write(sass)
ops = [m.group(1) for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass)]
seq = "".join("L" if o.startswith("LDG") else "S" if o.startswith("STG") else "" for o in ops)
print(tag, "instr", len(ops), "loads/stores in order:", seq, [o for o in set(ops) if o.startswith(("LDG", "STG"))])
