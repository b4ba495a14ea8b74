#!/usr/bin/env bash
# GPU run kern-s13-4: the warp-specialised kernel's GPU tests again after the test's clean_logits=False assertion was
# corrected (an id outside the cache inside a row's range is written as -inf, as the split launch does), and the
# launch-knob tests of the new path natively.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
cp -r .gpu/kern13/overlay/. .
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
{ date -u; sha1sum kernels/paged_mqa_logits.py kernels/paged_mqa_logits_ws.py tests/kernels/test_mqa_logits_gpu.py tests/kernels/test_kernel_launch_knobs.py tests/kernels/test_pdl_gpu.py; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
export GRAPHCHECK_REQUIRE_GPU=1
t0=$(date +%s)
timeout 60 python3 -m pytest -m gpu -n 8 -q -p no:cacheprovider tests/kernels/test_mqa_logits_gpu.py tests/kernels/test_pdl_gpu.py -k "ws_kernel or capture or paged_with_pdl" > "$OUT/tests.log" 2>&1
echo "gpu tests rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
t0=$(date +%s)
timeout 50 python3 -m pytest -n 8 -q -p no:cacheprovider tests/kernels/test_kernel_launch_knobs.py -k "ws_ or tma_is or join_rows_is" >> "$OUT/tests.log" 2>&1
echo "knob tests natively rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.log"
grep -E "passed|failed|^FAILED|^ERROR" "$OUT/tests.log" | head -12
