"""AOT sm_90 build (Triton 3.6, no GPU needed) of a paged variant module: registers, shared memory, warps, SASS."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import importlib

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

kw = dict(a.split("=") for a in sys.argv[1:])
mod = importlib.import_module("paged_v_" + kw.pop("v", "base"))
fn = mod._paged_mqa_logits_kernel
rows = int(kw.get("rows", 2)); stages = int(kw.get("stages", 5)); tma = int(kw.get("tma", 1))
wsq = kw.get("wsq", "0") == "1"; warps = int(kw.get("warps", 4))
ptrs = {"q_ptr": "*fp8e4nv", "kv_ptr": "*u8", "w_ptr": "*fp32", "lens_ptr": "*i32", "bt_ptr": "*i32", "out_ptr": "*fp32"}
const = dict(H=64, D=128, BS=64, ROWS=rows, GN=rows, LENS_2D=False, CLEAN=True, FP8_DOT=True, REDUCE_DOT=False,
             SPLIT_ROWS=True, PAIR=False, KEYS=64, FILL_N=1024, NUM_STAGES=stages, PDL=True, ROWS_FIRST=False,
             FILL_FIRST=False, HEAD_DOT=0, EMULATE=False, TMA=tma, WSQ=wsq)
sig = {}
for name in fn.arg_names:
    if name in ptrs:
        sig[name] = ptrs[name]
    elif name in const:
        sig[name] = "constexpr"
    elif name == "k_desc":
        sig[name] = "tensordesc<fp8e4nv[64, 128]>" if tma else "constexpr"
    elif name == "s_desc":
        sig[name] = "constexpr"
    elif name == "q_desc":
        sig[name] = "tensordesc<fp8e4nv[64, 128]>" if wsq else "constexpr"
    else:
        sig[name] = "i32"
for n, on in (("k_desc", tma), ("s_desc", False), ("q_desc", wsq)):
    if not on:
        const[n] = None
for n in ("stride_qd", "stride_wh", "stride_btk"):
    sig[n] = "constexpr"; const[n] = 1
div16 = {"q_ptr", "kv_ptr", "w_ptr", "lens_ptr", "bt_ptr", "out_ptr", "stride_qb", "stride_qn", "stride_qh", "stride_kv",
         "stride_wr", "stride_btb", "stride_or", "max_model_len", "max_blocks"}
attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in div16}
src = ASTSource(fn, sig, constexprs={(fn.arg_names.index(k),): v for k, v in const.items()}, attrs=attrs)
tag = mod.__name__ + "_" + "_".join(f"{k}{v}" for k, v in kw.items())
try:
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=warps, num_stages=stages))
except Exception as exc:  # noqa: BLE001
    print(tag, "COMPILE FAILED", type(exc).__name__, str(exc)[:100])
    sys.exit(0)
d = os.environ.get("AOT_DIR", "/tmp/kern_ws/aot")
os.makedirs(d, exist_ok=True)
ttgir = k.asm["ttgir"]
open(f"{d}/{tag}.ttgir", "w").write(ttgir)
open(f"{d}/{tag}.cubin", "wb").write(k.asm["cubin"])
bin_ = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin")
res = subprocess.run([f"{bin_}/cuobjdump", "--dump-resource-usage", f"{d}/{tag}.cubin"], capture_output=True, text=True).stdout
sass = subprocess.run([f"{bin_}/cuobjdump", "--dump-sass", f"{d}/{tag}.cubin"], capture_output=True, text=True).stdout
open(f"{d}/{tag}.sass", "w").write(sass)
body = [ln for ln in sass.splitlines() if re.match(r"\s+/\*[0-9a-f]{4}\*/", ln)]
print(tag, re.findall(r"REG:\d+", res), "smem", k.metadata.shared, "warps", k.metadata.num_warps,
      "ws", "ttg.warp_specialize" in ttgir, "instr", len(body), "GMMA", sass.count("GMMA"), "UTMALDG", sass.count("UTMALDG"),
      "SETMAXREG", len(re.findall("SETMAXNREG|USETMAXREG", sass)))
