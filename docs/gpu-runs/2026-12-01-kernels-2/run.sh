#!/usr/bin/env bash
# GPU run 2 of 2026-12-01 (kernels): the shipped merge_attn_states (new launch heuristic,
# load order by program size) on the GPU tests that cover it, then its benchmark.
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/pip.log" 2>&1 || { cat "$OUT/pip.log"; exit 1; }
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())" > "$OUT/env.txt" 2>&1
t0=$(date +%s)
timeout 45 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_merge_load_order.py tests/kernels/test_merge_attn_states_gpu.py \
  -k "load_order or both_orders or garbage or (public_sweep and bf16) or capture or fp8_output" > "$OUT/tests.log" 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
grep -E "passed|failed|^FAILED" "$OUT/tests.log" | head -8
t0=$(date +%s)
timeout 60 python3 benchmarks/bench_merge_attn_states.py --json "$OUT/bench-merge.json" > "$OUT/bench-merge.log" 2>&1
echo "merge bench rc=$? $(( $(date +%s) - t0 )) s"
grep -A8 "^merge_attn_states, H" "$OUT/bench-merge.log" | cut -c1-240
