#!/usr/bin/env bash
# The GPU run of `graphcheck record` (docs/gpu-runs.md): the example engine recorded,
# the broken variant's findings, coverage and lint from the maps, recording overhead,
# and the record tests (CPU ones included: on Python 3.12 they exercise sys.monitoring).
# Usage: bash tests/record/gpu_run.sh OUTDIR   (from the repository root)
set -uo pipefail
out="${1:?output folder}"
mkdir -p "$out"
cd "$(dirname "$0")/../.."
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import sys, torch, triton; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
  python3 -c "import cuda.bindings; print('cuda.bindings', cuda.bindings.__version__)" 2>&1
} > "$out/environment.txt" 2>&1

run() {  # run NAME CMD...: log the command, its output and exit code
  local name="$1"; shift
  { echo "\$ $*"; "$@"; echo "[exit $?]"; } > "$out/$name.log" 2>&1
}

# most valuable first: the GPU tests write both maps and logs; then what reads the maps; then timing
export GRAPHCHECK_GPU_ARTIFACTS="$out"
run pytest-record python3 -m pytest -q -p no:cacheprovider -rs \
  tests/record/test_record_gpu.py tests/record/test_recorder_cpu.py -k "gpu or engine or collector or hooks or failed"
run engine-coverage python3 -m graphcheck coverage "$out/engine-map.json"
run broken-coverage python3 -m graphcheck coverage "$out/broken-map.json"
run broken-lint python3 -m graphcheck lint --no-cache --capture-map "$out/broken-map.json"
run overhead python3 benchmarks/bench_record_overhead.py --rounds 5
tar -czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")"
