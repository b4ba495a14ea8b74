#!/usr/bin/env bash
# GPU run s3-1 of 2026-12-01 (kernels): variant sweep, each variant checked first (paged MQA against the
# float64 oracle on two shapes and against the shipped output on every shape; merge against the float64
# reference). Paged MQA decode on every benchmark shape: the shipped launch; the -inf fill before the key
# loop; one row per program with five pipeline stages (16/32 programs per SM); next_n = 2 with both rows
# in one program (five stages, 8/16/32 per SM, fill first, block pairs). merge_attn_states at N = 256 /
# 4096: head-major one-warp programs, num_heads compiled in, larger programs loading both parts first.
# Device time per call inside CUDA graphs. Run from the repository root of a copy; logs go to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../../.."
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/pip.log" 2>&1 || { cat "$OUT/pip.log"; exit 1; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  git log -1 --format=%H 2>/dev/null; } > "$OUT/env.txt" 2>&1
t0=$(date +%s)
timeout 330 python3 benchmarks/sweep_kernel_variants.py --json "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^\| (merge|paged|graph)" "$OUT/sweep.log" | awk -F'|' '{printf "%s|%s|%s|%s|%s\n", $3, $4, $5, $7, substr($10,1,50)}' | sed 's/  */ /g'
grep -E "^  .*(us frac|us$)" "$OUT/sweep.log" | tail -3
