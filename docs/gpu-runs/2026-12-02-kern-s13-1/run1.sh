#!/usr/bin/env bash
# GPU run kern-s13-1: merge N = 256 / 4096 with and without the L2 prefetch before the PDL wait (harness order), the
# persistent Gluon paged kernel's probe (odd shapes, bad block ids, 2-D lengths, clean False) and its sweep.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
git log -1 --format='main %h %s' | cut -c1-80
cp -r .gpu/kern13/overlay/. .
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  sha1sum kernels/merge_attn.py kernels/paged_mqa_logits.py .gpu/kern13/gluon_persist.py; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
t0=$(date +%s)
timeout 150 python3 .gpu/kern13/sweep_s13.py merge > "$OUT/merge.log" 2>&1
echo "merge rc=$? $(( $(date +%s) - t0 )) s"; grep -v "^copy" "$OUT/merge.log" | tail -40
t0=$(date +%s)
timeout 120 python3 .gpu/kern13/sweep_s13.py probe > "$OUT/probe.log" 2>&1
rc=$?
echo "probe rc=$rc $(( $(date +%s) - t0 )) s"; tail -30 "$OUT/probe.log"
if [ $rc -eq 0 ] && grep -q " ok " "$OUT/probe.log"; then
  t0=$(date +%s)
  timeout 200 python3 .gpu/kern13/sweep_s13.py sweep > "$OUT/sweep.log" 2>&1
  echo "sweep rc=$? $(( $(date +%s) - t0 )) s"; cat "$OUT/sweep.log"
fi
