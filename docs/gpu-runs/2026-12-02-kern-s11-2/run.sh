#!/usr/bin/env bash
# GPU run kern-s11-2 (2026-12-02): merge_attn_states at N = 256 (and the shipped launch at 4096 / 65536): one row group
# per program with 1-8 warps and 2 or 4 rows per warp, the PDL trigger before the wait; each candidate twice, every
# candidate checked against the float64 reference first.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
t0=$(date +%s)
timeout 200 python3 .gpu/kern/sweep_s11.py --only merge --json "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^\| (merge|graph)" "$OUT/sweep.log" | awk -F'|' '{printf "%s|%s|%s|%s|%s|%s\n", $3, $4, $5, $7, $8, substr($10,1,60)}' | sed 's/  */ /g'
