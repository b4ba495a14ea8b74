#!/usr/bin/env bash
# GPU run record-s3-N: overhead (new, with breakdown and profile; then main's code), GPU tests, guide runs.
# usage (repo root of the device copy): bash .gpu/record/run-s3.sh OUTDIR
set -uo pipefail
out="$(mkdir -p "$1" && cd "$1" && pwd)"
here="$(cd "$(dirname "$0")" && pwd)"; before="$(cd "$here/../record-before" && pwd)"
cd "$here"; export PYTHONUNBUFFERED=1
started=$SECONDS
python3 -m pip install -q --no-deps --no-build-isolation -e "$here" > "$out/pip.log" 2>&1 || cat "$out/pip.log"
ln -sfn ../kernels "$before/graphcheck/kernels"  # main's code for the bench through PYTHONPATH, no second install
{ echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "commit: $(cat .gpu-commit)"; nproc
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import sys, torch, triton; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
  python3 -c "import cuda.bindings; print('cuda.bindings', cuda.bindings.__version__)" 2>&1; } > "$out/environment.txt" 2>&1
run() { local name="$1" limit="$2"; shift 2; local t0=$SECONDS
  { echo "\$ $*"; timeout "$limit" "$@"; echo "[exit $? after $((SECONDS - t0)) s]"; } > "$out/$name.log" 2>&1
  tar -czf "${TGZ:-$out.tgz}" -C "$(dirname "$out")" "$(basename "$out")"; }  # after each step: a run cut short still returns
run overhead 60 python3 benchmarks/bench_record_overhead.py --rounds 7 --breakdown --profile 10
run overhead-before 40 env PYTHONPATH="$before" python3 benchmarks/bench_record_overhead.py --rounds 7
run overhead-again 30 python3 benchmarks/bench_record_overhead.py --rounds 7
export GRAPHCHECK_REQUIRE_GPU=1 GRAPHCHECK_GPU_ARTIFACTS="$out/tests"
run pytest-gpu 100 python3 -m pytest -m gpu tests/record -q -p no:cacheprovider -rs
run pytest-monitoring 60 python3 -m pytest -q -p no:cacheprovider -rs tests/record/test_lines_monitoring.py tests/record/test_recorder_cpu.py
unset GRAPHCHECK_GPU_ARTIFACTS
run engine-record 40 python3 -m graphcheck record --out engine-map.json -- python3 examples/engine/run.py
run broken-record 40 python3 -m graphcheck record --out broken-map.json -- python3 examples/engine/run.py --broken
mv -f engine-map.json broken-map.json "$out/" 2>/dev/null
echo "total $((SECONDS - started)) s" > "$out/total.txt"
tar -czf "${TGZ:-$out.tgz}" -C "$(dirname "$out")" "$(basename "$out")"
