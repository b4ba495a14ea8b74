#!/usr/bin/env bash
# GPU run kern-s14-2: start-up variants of the persistent warp-specialised next_n = 2 kernel (block-table prefetch into
# L2, warp-local set-up, early barrier set-up; 3 and 5 stages): probe against the float64 oracle and the split launch,
# then the sweep and an ABAB of the three fastest against the default.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
{ date -u; git log -1 --format='tree %h' 2>/dev/null; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  sha1sum kernels/paged_mqa_logits.py kernels/paged_mqa_logits_ws.py .gpu/kern14/ws_var.py .gpu/kern14/sweep_s14b.py; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
t0=$(date +%s)
timeout 150 python3 .gpu/kern14/sweep_s14b.py probe > "$OUT/probe.log" 2>&1
rc=$?
echo "probe rc=$rc $(( $(date +%s) - t0 )) s"; grep -v " ok " "$OUT/probe.log" | tail -12; grep -c " ok " "$OUT/probe.log"
if [ $rc -eq 0 ]; then
  t0=$(date +%s)
  timeout 330 python3 .gpu/kern14/sweep_s14b.py sweep > "$OUT/sweep.log" 2>&1
  echo "sweep rc=$? $(( $(date +%s) - t0 )) s"; cat "$OUT/sweep.log"
fi
