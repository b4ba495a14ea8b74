#!/usr/bin/env bash
# GPU run s2-2 of 2026-12-01 (kernels): second variant sweep. The PDL dependency tests and the
# row-order tests on the GPU first, then paged MQA decode on every benchmark shape (shipped launch
# with and without PDL; next_n = 2 as one query row per program with the rows of a request side
# by side) and merge_attn_states at N = 256 / 4096 (launch shapes x PDL), each variant checked
# for correctness first; device time per call inside CUDA graphs. Logs go to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/pip.log" 2>&1 || { cat "$OUT/pip.log"; exit 1; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
t0=$(date +%s)
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_pdl_gpu.py tests/kernels/test_paged_row_order.py > "$OUT/tests.log" 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "passed|failed|^FAILED|^E " "$OUT/tests.log" | head -12
t0=$(date +%s)
timeout 240 python3 benchmarks/sweep_kernel_variants.py --json "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^\| (merge|paged|graph)" "$OUT/sweep.log" | awk -F'|' '{printf "%s|%s|%s|%s|%s|%s\n", $3, $4, $5, $7, $8, substr($10,1,40)}' | sed 's/  */ /g'
