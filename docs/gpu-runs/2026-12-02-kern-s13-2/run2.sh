#!/usr/bin/env bash
# GPU run kern-s13-2: the persistent Gluon paged kernel with the consumers' tile ranges derived from their tile count
# (the carried running start was dropped by Triton in run s13-1: hang): probe (odd shapes; 8 and 20 programs' worth of
# tiles per request on 1-2 SM-sized grids, so the rings wrap), then the sweep of every next_n = 2 shape against main.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
cp -r .gpu/kern13/overlay/. .
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  sha1sum kernels/paged_mqa_logits.py .gpu/kern13/gluon_persist.py; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
t0=$(date +%s)
timeout 100 python3 .gpu/kern13/sweep_s13.py probe > "$OUT/probe.log" 2>&1
rc=$?
echo "probe rc=$rc $(( $(date +%s) - t0 )) s"; tail -12 "$OUT/probe.log"
if [ $rc -eq 0 ] && ! grep -q FAILED "$OUT/probe.log"; then
  t0=$(date +%s)
  timeout 200 python3 .gpu/kern13/sweep_s13.py sweep > "$OUT/sweep.log" 2>&1
  echo "sweep rc=$? $(( $(date +%s) - t0 )) s"; cat "$OUT/sweep.log"
fi
