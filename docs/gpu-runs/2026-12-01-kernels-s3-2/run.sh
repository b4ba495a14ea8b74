#!/usr/bin/env bash
# GPU run s3-2 of 2026-12-01 (kernels): the new defaults after run s3-1 (paged MQA: five key-loop stages,
# next_n = 2 with both rows in one program; merge_attn_states: num_heads compiled into token-major
# launches, mid-size grids token-major). Every kernel GPU test, the CPU-interpreter test files of the new
# knobs natively, both benchmark scripts in full (ours vs the floor vs eager and torch.compile of the
# reference), then the variant sweep again (shipped vs the previous default in the same run).
# Run from the repository root of a copy; logs go to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../../.."
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/pip.log" 2>&1 || { cat "$OUT/pip.log"; exit 1; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
t0=$(date +%s)
timeout 150 python3 -m pytest -m gpu -n 4 -q -p no:cacheprovider tests/kernels > "$OUT/tests.log" 2>&1
echo "gpu tests rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
t0=$(date +%s)
timeout 90 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_kernel_launch_knobs.py tests/kernels/test_paged_row_order.py tests/reliability/test_kernel_bounds.py >> "$OUT/tests.log" 2>&1
echo "knob, row-order and kernel-bounds tests on the GPU rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
grep -E "passed|failed|^FAILED|^ERROR" "$OUT/tests.log" | head -12
t0=$(date +%s)
timeout 80 python3 benchmarks/bench_merge_attn_states.py --json "$OUT/bench-merge.json" > "$OUT/bench-merge.log" 2>&1
echo "merge bench rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout 120 python3 benchmarks/bench_mqa_logits.py --json "$OUT/bench-mqa.json" > "$OUT/bench-mqa.log" 2>&1
echo "mqa bench rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout 60 python3 benchmarks/sweep_kernel_variants.py --json "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
grep -A8 "^merge_attn_states, H" "$OUT/bench-merge.log" | cut -f2-9 -d'|'
grep -A16 "^FP8 paged MQA" "$OUT/bench-mqa.log" | cut -f2,3,5,6,9,10,13,14 -d'|'
grep -A5 "^FP8 MQA logits (prefill)" "$OUT/bench-mqa.log" | cut -f2-5 -d'|'
grep -E "^\| (merge|paged)" "$OUT/sweep.log" | grep -E "shipped|previous" | awk -F'|' '{printf "%s|%s|%s|%s\n", $3, $4, $5, $7}' | sed 's/  */ /g'
