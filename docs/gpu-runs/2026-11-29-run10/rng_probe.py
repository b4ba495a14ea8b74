import subprocess, sys, textwrap
SNIPS = {
"graphcheck_sync_case": """
import torch, graphcheck
def mk(seed, device): return {"x": torch.arange(1.0, 9.0, device=device) * (seed + 1)}
try:
    graphcheck.assert_graph_safe(lambda x: x / x.max().item(), mk, gpu="required", name="sync")
except AssertionError as e: print("assert ok")
""",
"raw_failed_capture": """
import torch
x = torch.ones(8, device="cuda"); torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
try:
    with torch.cuda.graph(g): x.max().item()
except Exception as e: print("capture failed:", type(e).__name__)
""",
"raw_failed_capture_global": """
import torch
x = torch.ones(8, device="cuda"); torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
try:
    with torch.cuda.graph(g, capture_error_mode="global"): x.max().item()
except Exception as e: print("capture failed:", type(e).__name__)
""",
}
CHECK = """
def rand():
    try:
        torch.randn(4, device="cuda"); torch.cuda.synchronize(); return "ok"
    except Exception as e: return "ERR " + str(e)[:80]
print("randn after:", rand())
import warnings
g2 = torch.cuda.CUDAGraph()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    try:
        with torch.cuda.graph(g2): pass
        print("empty capture ok")
    except Exception as e: print("empty capture ERR", str(e)[:80])
print("randn after empty capture:", rand())
"""
for name, code in SNIPS.items():
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code) + CHECK], capture_output=True, text=True, timeout=120)
    print("==", name, "rc", p.returncode); print(p.stdout.strip()); print(p.stderr.strip()[-600:])
