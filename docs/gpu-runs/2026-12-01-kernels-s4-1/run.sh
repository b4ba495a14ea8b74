#!/usr/bin/env bash
# GPU run s4-1 of 2026-12-01 (kernels): occupancy. Paged MQA next_n = 2 with a register cap of 168
# (three programs per SM instead of two; the candidate default) against the previous default and other
# caps / warp counts / stages / programs per SM; merge_attn_states N = 256 one-warp programs of 1-8 rows.
# Then the kernel GPU tests with the candidate paged default, the knob tests natively, and the merge GPU
# tests with two-row small programs as default (mergepatch.py). Run from the repository root of a copy.
set -uo pipefail
export PYTHONUNBUFFERED=1
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../.."
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/pip.log" 2>&1 || { cat "$OUT/pip.log"; exit 1; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
t0=$(date +%s)
timeout 60 python3 benchmarks/sweep_kernel_variants.py --json "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^\| (merge|paged|graph)" "$OUT/sweep.log" | awk -F'|' '{printf "%s|%s|%s|%s|%s\n", $3, $4, $5, $7, substr($10,1,40)}' | sed 's/  */ /g'
export GRAPHCHECK_REQUIRE_GPU=1
t0=$(date +%s)
timeout 95 python3 -m pytest -m gpu -n 8 -q -p no:cacheprovider tests/kernels > "$OUT/tests.log" 2>&1
echo "gpu tests rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout 30 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_kernel_launch_knobs.py -k "register_cap or fill_first" >> "$OUT/tests.log" 2>&1
echo "knob tests natively rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
PYTHONPATH="$HERE" timeout 40 python3 -m pytest -m gpu -n 8 -q -p no:cacheprovider -p mergepatch tests/kernels -k "merge" >> "$OUT/tests.log" 2>&1
echo "merge gpu tests, two-row small programs rc=$? $(( $(date +%s) - t0 )) s"
grep -E "passed|failed|^FAILED|^ERROR" "$OUT/tests.log" | head -12
