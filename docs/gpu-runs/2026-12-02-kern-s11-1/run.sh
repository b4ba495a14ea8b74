#!/usr/bin/env bash
# GPU run kern-s11-1 (2026-12-02): the warp-specialisation probe, then the sweep of paged-MQA and merge candidates
# (every candidate checked against the float64 oracle first), then the repo's benchmarks of the shipped code.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
{ date -u; git log -1 --format='main %h' 2>/dev/null; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
t0=$(date +%s)
timeout 120 python3 .gpu/kern/probe_ws_device.py > "$OUT/probe.log" 2>&1
echo "probe rc=$? $(( $(date +%s) - t0 )) s"; cat "$OUT/probe.log"
t0=$(date +%s)
timeout 240 python3 .gpu/kern/sweep_s11.py --json "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^\| (paged|merge|graph)" "$OUT/sweep.log" | awk -F'|' '{printf "%s|%s|%s|%s|%s|%s\n", $3, $4, $5, $7, $8, substr($10,1,50)}' | sed 's/  */ /g'
t0=$(date +%s)
timeout 90 python3 benchmarks/bench_mqa_logits.py --only decode --no-compile --no-reference --json "$OUT/bench-mqa.json" > "$OUT/bench-mqa.log" 2>&1
echo "mqa bench rc=$? $(( $(date +%s) - t0 )) s"
grep -A16 "^FP8 paged MQA" "$OUT/bench-mqa.log" | cut -f2,3,5,9,10 -d'|'
t0=$(date +%s)
timeout 80 python3 benchmarks/bench_merge_attn_states.py --no-compile --json "$OUT/bench-merge.json" > "$OUT/bench-merge.log" 2>&1
echo "merge bench rc=$? $(( $(date +%s) - t0 )) s"
tail -12 "$OUT/bench-merge.log"
