import sys
sys.path.insert(0, "/tmp/kern_ws")
import triton
from triton.compiler import ASTSource
from triton.backends.compiler import GPUTarget
import probe4, re
fn = probe4.probe4_kernel
km, qn, warps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
sig = {"out_ptr": "*fp32", "k_desc": f"tensordesc<fp8e4nv[{km}, 128]>", "q_desc": f"tensordesc<fp8e4nv[{qn}, 128]>",
       "my": "i32", "KM": "constexpr", "QN": "constexpr", "WS": "constexpr"}
src = ASTSource(fn, sig, constexprs={(4,): km, (5,): qn, (6,): True}, attrs={(0,): [["tt.divisibility", 16]]})
try:
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=warps, num_stages=3))
    g = k.asm["ttgir"]
    open(f"/tmp/kern_ws/out/p4_{km}_{qn}_{warps}.ttgir", "w").write(g)
    print(sys.argv[1:], "ok warps", k.metadata.num_warps, "ws", "ttg.warp_specialize" in g, "smem", k.metadata.shared,
          re.findall(r"warp_group_dot [^:]*: (!ttg.memdesc<[0-9x]*)[^*]*\* (!ttg.memdesc<[0-9x]*)", g))
except Exception as e:
    print(sys.argv[1:], "FAILED", str(e)[:80])
