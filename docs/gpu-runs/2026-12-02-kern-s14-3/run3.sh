#!/usr/bin/env bash
# GPU run kern-s14-3: branch kern14's next_n = 2 warp-specialised kernel (block table into L2 beside the lengths
# load, warp-held set-up, barriers before the PDL wait, the -inf fill cut by position and written by the producer)
# overlaid on main: the paged-MQA GPU tests, bench_mqa_logits.py --only decode, and an ABAB against session 13's kernel.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
cp -r .gpu/kern14/overlay/. .
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  sha1sum kernels/paged_mqa_logits.py kernels/paged_mqa_logits_ws.py tests/kernels/test_mqa_logits_gpu.py .gpu/kern14/ws_var.py .gpu/kern14/ab_s14.py; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
export GRAPHCHECK_REQUIRE_GPU=1
t0=$(date +%s)
timeout 120 python3 -m pytest -m gpu -n 8 -q -p no:cacheprovider tests/kernels/test_mqa_logits_gpu.py tests/kernels/test_kernel_ops_gpu.py tests/kernels/test_pdl_gpu.py -k "ws_kernel or capture or edge or small_paged or opcheck or paged_op or paged_with_pdl" > "$OUT/tests.log" 2>&1
echo "gpu tests rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
grep -E "passed|failed|^FAILED|^ERROR" "$OUT/tests.log" | head -12
unset GRAPHCHECK_REQUIRE_GPU
t0=$(date +%s)
timeout 110 python3 benchmarks/bench_mqa_logits.py --only decode --no-compile --no-reference --json "$OUT/bench-mqa.json" > "$OUT/bench-mqa.log" 2>&1
echo "mqa bench rc=$? $(( $(date +%s) - t0 )) s"
grep -A16 "^FP8 paged MQA" "$OUT/bench-mqa.log" | cut -d"|" -f2,3,9,10; grep "copy bandwidth" "$OUT/bench-mqa.log"
t0=$(date +%s)
timeout 60 python3 .gpu/kern14/ab_s14.py > "$OUT/ab.log" 2>&1
echo "ab rc=$? $(( $(date +%s) - t0 )) s"; cat "$OUT/ab.log"
