#!/usr/bin/env bash
# GPU run kern-s11-3 (2026-12-02): branch kern's merge change (the mid-size launch from 1024 programs on, i.e.
# N = 256-512 at H = 32, D = 128 bf16), overlaid on main's tree from .gpu/kern/overlay: the sweep (new default
# against the previous one-warp launch, twice each, float64 reference first), the merge benchmark, the merge and
# PDL GPU tests, the merge CPU-style tests natively, and graphcheck's audit of the kernels.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
cp -r .gpu/kern/overlay/. .
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  sha1sum kernels/merge_attn.py; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
t0=$(date +%s)
timeout 120 python3 .gpu/kern/sweep_s11.py --only merge --json "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^\| (merge|graph)" "$OUT/sweep.log" | awk -F'|' '{printf "%s|%s|%s|%s|%s|%s\n", $3, $4, $5, $7, $8, substr($10,1,60)}' | sed 's/  */ /g'
t0=$(date +%s)
timeout 60 python3 benchmarks/bench_merge_attn_states.py --no-compile --json "$OUT/bench-merge.json" > "$OUT/bench-merge.log" 2>&1
echo "merge bench rc=$? $(( $(date +%s) - t0 )) s"
grep -A8 "^merge_attn_states, H" "$OUT/bench-merge.log" | cut -d'|' -f2,3,5,7,10,12
export GRAPHCHECK_REQUIRE_GPU=1
t0=$(date +%s)
timeout 150 python3 -m pytest -m gpu -n 4 -q -p no:cacheprovider tests/kernels -k "merge or pdl" > "$OUT/tests.log" 2>&1
echo "gpu tests rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
t0=$(date +%s)
timeout 90 python3 -m pytest -n 4 -q -p no:cacheprovider tests/kernels/test_merge_load_order.py tests/kernels/test_merge_attn_states.py >> "$OUT/tests.log" 2>&1
echo "merge tests natively rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
grep -E "passed|failed|^FAILED|^ERROR" "$OUT/tests.log" | head -12
t0=$(date +%s)
timeout 60 graphcheck audit graphcheck.kernels --gpu required > "$OUT/audit.log" 2>&1
echo "audit rc=$? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/audit.log"
