import sys, os, re, subprocess
sys.path.insert(0, "/tmp/kern_ws")
import triton
from triton.compiler import ASTSource
from triton.backends.compiler import GPUTarget
import probe5
fn = probe5.probe5_kernel
ws, mode, st = sys.argv[1] == "1", int(sys.argv[2]), 3
sig = {n: "i32" for n in fn.arg_names}
sig.update({"w_ptr": "*fp32", "bt_ptr": "*i32", "kv_ptr": "*u8", "out_ptr": "*fp32",
            "k_desc": "tensordesc<fp8e4nv[64, 128]>", "q_desc": "tensordesc<fp8e4nv[128, 128]>", "WS": "constexpr", "MODE": "constexpr"})
src = ASTSource(fn, sig, constexprs={(fn.arg_names.index("WS"),): ws, (fn.arg_names.index("MODE"),): mode},
                attrs={(i,): [["tt.divisibility", 16]] for i in range(4)})
tag = "p5_" + "_".join(sys.argv[1:])
try:
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=4, num_stages=st))
except Exception as e:
    print(tag, "FAILED", str(e)[:80]); sys.exit()
g = k.asm["ttgir"]
open(f"/tmp/kern_ws/out/{tag}.ttgir", "w").write(g)
open(f"/tmp/kern_ws/out/{tag}.cubin", "wb").write(k.asm["cubin"])
bin_ = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin")
res = subprocess.run([f"{bin_}/cuobjdump", "--dump-resource-usage", f"/tmp/kern_ws/out/{tag}.cubin"], capture_output=True, text=True).stdout
sass = subprocess.run([f"{bin_}/cuobjdump", "--dump-sass", f"/tmp/kern_ws/out/{tag}.cubin"], capture_output=True, text=True).stdout
open(f"/tmp/kern_ws/out/{tag}.sass", "w").write(sass)
print(tag, "ok warps", k.metadata.num_warps, "ws", "ttg.warp_specialize" in g, "smem", k.metadata.shared, re.findall(r"REG:\d+", res),
      re.findall(r"warp_group_dot [^:]*: (!ttg.memdesc<[0-9x]*)[^*]*\* (!ttg.memdesc<[0-9x]*)", g), "SETMAXNREG", len(re.findall("SETMAXNREG|USETMAXREG", sass)))
