#!/usr/bin/env bash
# GPU run merge-s14-1 (2026-12-02): merge_attn_states N = 256 in the benchmark harness's order, main's launch
# against the 8 x 4 candidate, graph timings as common.graph_ms was (cold) and after back-to-back replays (warm),
# SM clock logged by nvidia-smi every 20 ms and probed in-process; then bench_merge_attn_states.py's main() at
# N = 256/4096 on main, main + the warm-up graph_ms, and the branch (candidate default + warm-up), ABAB; then the
# new merge GPU test (either side of the mid-size threshold) on the branch's files.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
D=.gpu/merge14
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
mkdir -p /tmp/mainf && cp kernels/merge_attn.py benchmarks/common.py /tmp/mainf/
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,power.limit,pstate --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  git log -1 --format='main %H' 2>/dev/null; sha1sum kernels/merge_attn.py benchmarks/common.py $D/overlay/kernels/merge_attn.py $D/overlay/benchmarks/common.py; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,pstate,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader >/dev/null 2>&1 || Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,pstate
echo "$Q" > "$OUT/clocks.csv"
nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 20 >> "$OUT/clocks.csv" 2>&1 &
SMI=$!
t0=$(date +%s)
for spec in "cold-a 0" "warm-a 100" "cold-b 0" "warm-b 100"; do
  set -- $spec
  timeout 60 python3 $D/ramp_s14.py --tag $1 --warm-ms $2 --rounds 4 --jsonl "$OUT/ramp.jsonl" >> "$OUT/ramp.log" 2>&1
  echo "ramp $1 rc=$?"
done
timeout 90 python3 $D/ramp_s14.py --tag diag --diag --rounds 3 --jsonl "$OUT/ramp.jsonl" >> "$OUT/ramp.log" 2>&1
echo "ramp diag rc=$? $(( $(date +%s) - t0 )) s"
grep -E "round|Error|error" "$OUT/ramp.log" | cut -c1-260
t0=$(date +%s)
bench() { echo "== bench $1 $(date -u +%T)" >> "$OUT/bench.log"; timeout 60 python3 $D/bench256.py >> "$OUT/bench.log" 2>&1; echo "bench $1 rc=$?"; }
for r in 1 2; do
  cp /tmp/mainf/merge_attn.py kernels/; cp /tmp/mainf/common.py benchmarks/; bench "main-$r"
  cp $D/overlay/benchmarks/common.py benchmarks/; bench "main+warm-$r"
  cp $D/overlay/kernels/merge_attn.py kernels/; bench "branch-$r"
done
echo "benches $(( $(date +%s) - t0 )) s"
grep -E "^== |^\| (256|4096) " "$OUT/bench.log" | cut -d"|" -f2,3,5,6,7
kill $SMI
cp -r $D/overlay/. .
export GRAPHCHECK_REQUIRE_GPU=1
t0=$(date +%s)
timeout 60 python3 -m pytest -m gpu -n 4 -q -p no:cacheprovider tests/kernels/test_merge_attn_states_gpu.py -k mid_size > "$OUT/tests.log" 2>&1
echo "gpu tests rc=$? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/tests.log"
