#!/usr/bin/env bash
# GPU run kern-s12-2 (2026-12-02): branch kern12's join_rows default (both rows of a next_n = 2 program in one store)
# overlaid on main: the sweep (main's per-row stores against the new default, ABAB, every decode shape, float64
# oracle first), the merge N = 256 harness-order timing (warm-up variants), bench_mqa_logits.py --only decode,
# the kernel GPU tests and the launch-knob tests natively.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
cp -r .gpu/kern12/overlay/. .
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  sha1sum kernels/paged_mqa_logits.py kernels/merge_attn.py tests/kernels/test_kernel_launch_knobs.py; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
t0=$(date +%s)
timeout 150 python3 .gpu/kern12/sweep_s12b.py --json "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^\| (paged|merge|graph)" "$OUT/sweep.log" | awk -F'|' '{printf "%s|%s|%s|%s|%s\n", $3, $4, $5, $7, substr($8,1,12)}' | sed 's/  */ /g'
grep -E "Error|error" "$OUT/sweep.log" | head -5
t0=$(date +%s)
timeout 60 python3 .gpu/kern12/merge_harness_s12b.py > "$OUT/merge-harness.log" 2>&1
echo "merge harness rc=$? $(( $(date +%s) - t0 )) s"; tail -8 "$OUT/merge-harness.log"
t0=$(date +%s)
timeout 100 python3 benchmarks/bench_mqa_logits.py --only decode --no-compile --no-reference --json "$OUT/bench-mqa.json" > "$OUT/bench-mqa.log" 2>&1
echo "mqa bench rc=$? $(( $(date +%s) - t0 )) s"
grep -A16 "^FP8 paged MQA" "$OUT/bench-mqa.log" | cut -d"|" -f2,3,9,10; grep "copy bandwidth" "$OUT/bench-mqa.log"
export GRAPHCHECK_REQUIRE_GPU=1
t0=$(date +%s)
timeout 200 python3 -m pytest -m gpu -n 8 -q -p no:cacheprovider tests/kernels > "$OUT/tests.log" 2>&1
echo "gpu tests rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
t0=$(date +%s)
timeout 60 python3 -m pytest -n 4 -q -p no:cacheprovider tests/kernels/test_kernel_launch_knobs.py >> "$OUT/tests.log" 2>&1
echo "knob tests natively rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
grep -E "passed|failed|^FAILED|^ERROR" "$OUT/tests.log" | head -12
