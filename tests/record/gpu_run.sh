#!/usr/bin/env bash
# The GPU run of `graphcheck record` (docs/gpu-runs.md): the record tests (CPU ones included: on
# Python 3.12 they exercise sys.monitoring), `graphcheck record` of the example engine and of its
# broken variant as the guide shows it, coverage and lint from those maps, a check that no code run
# by an import is in the maps, and the recording overhead; with BEFORE (a checkout of an earlier
# graphcheck) the overhead is measured again with that one installed, in the same run.
# Usage: bash tests/record/gpu_run.sh OUTDIR [BEFORE]   (from the repository root; writes OUTDIR.tgz too)
set -uo pipefail
out="$(mkdir -p "${1:?output folder}" && cd "$1" && pwd)"
before="${2:-}"
[ -n "$before" ] && before="$(cd "$before" && pwd)"
cd "$(dirname "$0")/../.."
started=$SECONDS
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(cat .gpu-commit 2>/dev/null || git rev-parse --short HEAD)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import sys, torch, triton; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
  python3 -c "import cuda.bindings; print('cuda.bindings', cuda.bindings.__version__)" 2>&1
} > "$out/environment.txt" 2>&1

run() {  # run NAME LIMIT CMD...: log the command, its output, exit code and seconds
  local name="$1" limit="$2"; shift 2
  local t0=$SECONDS
  { echo "\$ $*"; timeout "$limit" "$@"; echo "[exit $? after $((SECONDS - t0)) s]"; } > "$out/$name.log" 2>&1
}

# most valuable first: the GPU tests (they keep their maps and outputs under tests/)
export GRAPHCHECK_GPU_ARTIFACTS="$out/tests"
run pytest-record 100 python3 -m pytest -q -p no:cacheprovider -rs tests/record/test_record_gpu.py \
  tests/record/test_recorder_cpu.py -k "gpu or engine or collector or hooks or failed or import or sets_up_once"
run pytest-monitoring 30 python3 -m pytest -q -p no:cacheprovider -rs tests/record/test_lines_monitoring.py

# the guide's runs, with the commands as a user types them (maps written here, then moved)
run engine-plain 40 python3 examples/engine/run.py
run engine-record 40 python3 -m graphcheck record --out engine-map.json -- python3 examples/engine/run.py
run broken-record 40 python3 -m graphcheck record --out broken-map.json -- python3 examples/engine/run.py --broken
run engine-coverage 20 python3 -m graphcheck coverage engine-map.json
run broken-coverage 20 python3 -m graphcheck coverage broken-map.json
run broken-lint 30 python3 -m graphcheck lint --no-cache --capture-map broken-map.json
run import-filter 10 python3 - engine-map.json broken-map.json <<'EOF'
import json, sys
for path in sys.argv[1:]:
    data = json.load(open(path))
    outside = [f"{f['path']}:{f['qualname']}" for f in data["functions"]
               if not f["path"].startswith(("examples/engine/", "kernels/")) or f["qualname"] == "<module>"]
    print(f"{path}: {len(data['functions'])} functions recorded, {len(outside)} outside the engine and its kernels: {outside}")
EOF
mv -f engine-map.json broken-map.json "$out/" 2>/dev/null

# overhead: this checkout, then the earlier one in the same process environment
run overhead 60 python3 benchmarks/bench_record_overhead.py --rounds 7 --breakdown
if [ -n "$before" ] && [ $((SECONDS - started)) -lt 130 ]; then
  run overhead-before 60 bash -c "python3 -m pip install -q --no-deps --no-build-isolation -e '$before' \
    && (cd / && python3 -c 'import graphcheck; print(\"graphcheck from\", graphcheck.__file__)') \
    && python3 benchmarks/bench_record_overhead.py --rounds 5"
fi
echo "total $((SECONDS - started)) s" > "$out/total.txt"
# the device hands back only a few files: everything also goes in one archive beside OUTDIR
tar -czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")"
