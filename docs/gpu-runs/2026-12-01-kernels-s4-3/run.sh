#!/usr/bin/env bash
# GPU run s4-3 of 2026-12-01 (kernels): the persistent next_n = 2 paged-MQA grid as the default (after the
# s4-2 fix: each stretch's start is picked out of the prefix sums, not carried across requests). The sweep
# first (new default against the previous one on every decode shape, float64 oracle on two shapes), then
# bench_mqa_logits.py, the kernel GPU tests, the knob tests natively and graphcheck's audit of the kernels
# (merge_attn_states unchanged by default; its numbers are run s4-2's sweep). Run from the root of a copy of the branch.
set -uo pipefail
export PYTHONUNBUFFERED=1
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../.."
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
t0=$(date +%s)
timeout 60 python3 benchmarks/sweep_kernel_variants.py --only paged --json "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^\| paged" "$OUT/sweep.log" | awk -F'|' '{printf "%s|%s|%s|%s|%s|%s\n", $3, $4, $5, $7, $8, substr($10,1,40)}' | sed 's/  */ /g'
# stop here (saving device time) if any variant disagreed with the oracle or the shipped output
if grep -qE "AssertionError|Traceback" "$OUT/sweep.log"; then grep -E "AssertionError|Error" "$OUT/sweep.log" | head -5; exit 3; fi
t0=$(date +%s)
timeout 100 python3 benchmarks/bench_mqa_logits.py --json "$OUT/bench-mqa.json" > "$OUT/bench-mqa.log" 2>&1
echo "mqa bench rc=$? $(( $(date +%s) - t0 )) s"
grep -A16 "^FP8 paged MQA" "$OUT/bench-mqa.log" | cut -f2,3,5,9,10,13,14 -d'|'
export GRAPHCHECK_REQUIRE_GPU=1
t0=$(date +%s)
timeout 100 python3 -m pytest -m gpu -n 4 -q -p no:cacheprovider tests/kernels > "$OUT/tests.log" 2>&1
echo "gpu tests rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
t0=$(date +%s)
timeout 45 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_kernel_launch_knobs.py -k "persistent or default_paged or fill_first" >> "$OUT/tests.log" 2>&1
echo "knob tests natively rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
grep -E "passed|failed|^FAILED|^ERROR" "$OUT/tests.log" | head -12
t0=$(date +%s)
timeout 60 graphcheck audit graphcheck.kernels --gpu required >> "$OUT/tests.log" 2>&1
echo "audit rc=$? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/tests.log"
