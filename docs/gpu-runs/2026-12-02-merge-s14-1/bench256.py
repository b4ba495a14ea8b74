"""Run merge-s14-1: bench_merge_attn_states.py's own main() on N = 256 and 4096 bf16 only (the rows the merge
default change can touch in that table), without the torch.compile baseline; whichever kernels/merge_attn.py and
benchmarks/common.py are installed in the checkout at the time (main's, or the branch's overlaid)."""
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import bench_merge_attn_states as bm  # noqa: E402

bm.SIZES = [(256, "bfloat16"), (4096, "bfloat16")]
sys.exit(bm.main(["--no-compile", *sys.argv[1:]]))
