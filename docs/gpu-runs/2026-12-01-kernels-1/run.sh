#!/usr/bin/env bash
# GPU run 1 of 2026-12-01 (kernels): the custom-op GPU tests, the persistent decode schedule
# and the merge change against the references, then both kernel benchmarks with their sweeps.
# Run from the repository root on the device machine; logs go to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/pip.log" 2>&1 || { cat "$OUT/pip.log"; exit 1; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
t0=$(date +%s)
timeout 90 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_kernel_ops_gpu.py \
  tests/kernels/test_paged_persistent_gpu.py tests/reliability/test_kernel_bounds.py > "$OUT/tests.log" 2>&1
echo "tests A rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
t0=$(date +%s)
timeout 70 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_mqa_logits_gpu.py tests/kernels/test_merge_attn_states_gpu.py \
  -k "deepgemm_decode_shapes or capture or vllm_small_paged or edge_cases or (public_sweep and bf16) or both_empty or prefill_tokens or fp8_output or padded" \
  >> "$OUT/tests.log" 2>&1
echo "tests B rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
grep -E "passed|failed|^FAILED|^ERROR" "$OUT/tests.log" | head -20
t0=$(date +%s)
timeout 70 python3 benchmarks/bench_merge_attn_states.py --sweep --json "$OUT/bench-merge.json" > "$OUT/bench-merge.log" 2>&1
echo "merge bench rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout 160 python3 benchmarks/bench_mqa_logits.py --sweep --json "$OUT/bench-mqa.json" > "$OUT/bench-mqa.log" 2>&1
echo "mqa bench rc=$? $(( $(date +%s) - t0 )) s"
grep -A8 "^merge_attn_states, H" "$OUT/bench-merge.log" | cut -c1-230
grep -A6 "^launch-config sweep" "$OUT/bench-merge.log" | cut -c1-200
grep -A16 "^FP8 paged MQA" "$OUT/bench-mqa.log" | cut -c1-260
