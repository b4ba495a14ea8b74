#!/usr/bin/env bash
# GPU run s5-3 of 2026-12-01 (kern): key tiles through TMA (PagedConfig.tma = TMA_KEYS) as the next_n = 2 default
# on sm_90, final code (TMA only for blocks of 64 or 128 keys; descriptors traced as pointers + geometry). The sweep first (main's launch without TMA timed first and last, the new default twice, TMA with
# other launch choices; float64 oracle on every shape), then bench_mqa_logits.py (decode, no torch.compile), the
# kernel GPU tests, the knob tests natively and graphcheck's audit of the kernels. Run from the root of a copy
# of the branch.
set -uo pipefail
export PYTHONUNBUFFERED=1
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../.."
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
t0=$(date +%s)
timeout 90 python3 benchmarks/sweep_kernel_variants.py --only paged --json "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^\| paged" "$OUT/sweep.log" | awk -F'|' '{printf "%s|%s|%s|%s|%s|%s\n", $3, $4, $5, $7, $8, substr($10,1,40)}' | sed 's/  */ /g'
if grep -qE "AssertionError|Traceback" "$OUT/sweep.log"; then grep -E "AssertionError|Error" "$OUT/sweep.log" | head -5; exit 3; fi
t0=$(date +%s)
timeout 80 python3 benchmarks/bench_mqa_logits.py --only decode --no-compile --json "$OUT/bench-mqa.json" > "$OUT/bench-mqa.log" 2>&1
echo "mqa bench rc=$? $(( $(date +%s) - t0 )) s"
grep -A16 "^FP8 paged MQA" "$OUT/bench-mqa.log" | cut -f2,3,5,9,10,13,14 -d'|'
export GRAPHCHECK_REQUIRE_GPU=1
t0=$(date +%s)
timeout 100 python3 -m pytest -m gpu -n 4 -q -p no:cacheprovider tests/kernels > "$OUT/tests.log" 2>&1
echo "gpu tests rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
t0=$(date +%s)
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_kernel_launch_knobs.py -k "tma or default_paged" >> "$OUT/tests.log" 2>&1
echo "knob tests natively rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
grep -E "passed|failed|^FAILED|^ERROR" "$OUT/tests.log" | head -12
t0=$(date +%s)
timeout 60 graphcheck audit graphcheck.kernels --gpu required >> "$OUT/tests.log" 2>&1
echo "audit rc=$? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/tests.log"
