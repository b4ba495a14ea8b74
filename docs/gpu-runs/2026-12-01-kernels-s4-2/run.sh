#!/usr/bin/env bash
# GPU run s4-2 of 2026-12-01 (kernels): the persistent paged-MQA grid (PagedConfig.persistent: P = k·SMs
# programs share the flattened (request, key tile) range evenly) on every decode shape against the shipped
# launch, and merge_attn_states without masks / with 32-bit offsets. Sweep only (benchmarks/sweep_kernel_variants.py).
# Run from the repository root of a copy of the branch's working tree.
set -uo pipefail
export PYTHONUNBUFFERED=1
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../.."
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/pip.log" 2>&1 || { cat "$OUT/pip.log"; exit 1; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  python3 -c "import graphcheck, os; print('graphcheck from', os.path.dirname(graphcheck.__file__))"; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
t0=$(date +%s)
timeout 150 python3 benchmarks/sweep_kernel_variants.py --json "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^\| (merge|paged|graph)" "$OUT/sweep.log" | awk -F'|' '{printf "%s|%s|%s|%s|%s|%s\n", $3, $4, $5, $7, $8, substr($10,1,30)}' | sed 's/  */ /g'
grep -iE "error|Traceback|failed" "$OUT/sweep.log" | head -5
