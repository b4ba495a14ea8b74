#!/usr/bin/env bash
# GPU run s2-1 of 2026-12-01 (kernels): the variant sweep. Paged MQA decode on every benchmark shape
# (shipped launch vs the prefetching per-row kernel, register caps, programs per SM, PDL) and
# merge_attn_states at N = 256 / 4096 (PDL, launch shapes), each variant checked for correctness
# first; device time per call inside CUDA graphs. Run from the repository root; logs go to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/pip.log" 2>&1 || { cat "$OUT/pip.log"; exit 1; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
t0=$(date +%s)
timeout 330 python3 benchmarks/sweep_kernel_variants.py --json "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^\| (merge|paged|graph)" "$OUT/sweep.log" | awk -F'|' '{printf "%s|%s|%s|%s|%s|%s|%s\n", $3, $4, $5, $7, $8, $9, substr($10,1,40)}' | sed 's/  */ /g'
