#!/usr/bin/env bash
# GPU run s2-3 of 2026-12-01 (kernels): the shipped kernels after runs s2-1/s2-2 (PDL on by default on
# sm_90+; merge_attn_states one-warp programs for one-wave grids; paged MQA next_n = 2 as one row
# per program with a request's rows side by side). Every kernel GPU test, then both benchmark
# scripts in full (ours vs the floor vs eager and torch.compile of the reference). Logs go to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/pip.log" 2>&1 || { cat "$OUT/pip.log"; exit 1; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
t0=$(date +%s)
timeout 200 python3 -m pytest -m gpu -n 4 -q -p no:cacheprovider tests/kernels > "$OUT/tests.log" 2>&1
echo "gpu tests rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
t0=$(date +%s)
timeout 90 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_paged_row_order.py tests/reliability/test_kernel_bounds.py >> "$OUT/tests.log" 2>&1
echo "row-order and kernel-bounds tests on the GPU rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
grep -E "passed|failed|^FAILED|^ERROR" "$OUT/tests.log" | head -12
t0=$(date +%s)
timeout 100 python3 benchmarks/bench_merge_attn_states.py --json "$OUT/bench-merge.json" > "$OUT/bench-merge.log" 2>&1
echo "merge bench rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout 150 python3 benchmarks/bench_mqa_logits.py --json "$OUT/bench-mqa.json" > "$OUT/bench-mqa.log" 2>&1
echo "mqa bench rc=$? $(( $(date +%s) - t0 )) s"
grep -A8 "^merge_attn_states, H" "$OUT/bench-merge.log" | cut -f2-9 -d'|'
grep -A16 "^FP8 paged MQA" "$OUT/bench-mqa.log" | cut -f2,3,5,6,9,10,13,14 -d'|'
grep -A5 "^FP8 MQA logits (prefill)" "$OUT/bench-mqa.log" | cut -f2-5 -d'|'
