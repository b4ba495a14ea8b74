#!/usr/bin/env bash
# GPU run kern-s13-3: branch kern13's next_n = 2 default (the persistent warp-specialised Gluon kernel where
# max_model_len is at most two block tables) overlaid on main: bench_mqa_logits.py --only decode, an ABAB of the new
# default against the split launch on the shapes that take it, the paged-MQA GPU tests and the launch-knob tests natively.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
cp -r .gpu/kern13/overlay/. .
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  sha1sum kernels/paged_mqa_logits.py kernels/paged_mqa_logits_ws.py tests/kernels/test_mqa_logits_gpu.py tests/kernels/test_kernel_launch_knobs.py; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
t0=$(date +%s)
timeout 110 python3 benchmarks/bench_mqa_logits.py --only decode --no-compile --no-reference --json "$OUT/bench-mqa.json" > "$OUT/bench-mqa.log" 2>&1
echo "mqa bench rc=$? $(( $(date +%s) - t0 )) s"
grep -A16 "^FP8 paged MQA" "$OUT/bench-mqa.log" | cut -d"|" -f2,3,9,10; grep "copy bandwidth" "$OUT/bench-mqa.log"
export GRAPHCHECK_REQUIRE_GPU=1
t0=$(date +%s)
timeout 100 python3 -m pytest -m gpu -n 8 -q -p no:cacheprovider tests/kernels/test_mqa_logits_gpu.py tests/kernels/test_kernel_ops_gpu.py tests/kernels/test_pdl_gpu.py -k "ws_kernel or capture or edge or small_paged or opcheck or paged_op or paged_with_pdl" > "$OUT/tests.log" 2>&1
echo "gpu tests rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
t0=$(date +%s)
timeout 30 python3 -m pytest -n 4 -q -p no:cacheprovider tests/kernels/test_kernel_launch_knobs.py -k "ws_ or tma or join" >> "$OUT/tests.log" 2>&1
echo "knob tests natively rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
grep -E "passed|failed|^FAILED|^ERROR" "$OUT/tests.log" | head -12
t0=$(date +%s)
timeout 40 python3 .gpu/kern13/ab_s13.py > "$OUT/ab.log" 2>&1
echo "ab rc=$? $(( $(date +%s) - t0 )) s"; cat "$OUT/ab.log"
