#!/usr/bin/env bash
# GPU run merge-s14-2 (2026-12-02): inst_s14.py in six fresh processes (main first / candidate first, alternating):
# graph instances A and B of the same calls timed A, B, A, B, A, eager calls, A, B; nvidia-smi clocks every 20 ms.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
D=.gpu/merge14
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  sha1sum kernels/merge_attn.py benchmarks/common.py; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,pstate,clocks_event_reasons.active
echo "$Q" > "$OUT/clocks.csv"
nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 20 >> "$OUT/clocks.csv" 2>&1 &
SMI=$!
t0=$(date +%s)
for spec in "p1 main" "p2 cand" "p3 main" "p4 cand" "p5 main" "p6 cand"; do
  set -- $spec
  timeout 45 python3 $D/inst_s14.py --tag $1 --first $2 --jsonl "$OUT/inst.jsonl" >> "$OUT/inst.log" 2>&1
  echo "$1 rc=$?"
done
echo "$(( $(date +%s) - t0 )) s"
kill $SMI
grep -E "first|Error|error" "$OUT/inst.log"
