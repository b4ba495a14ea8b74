#!/usr/bin/env bash
# One call on a GPU machine: install graphcheck from this tree (no network
# needed), run every test marked `gpu` and the kernel benchmarks, and write logs
# to OUTDIR (default ./gpu-out). Usage: bash benchmarks/gpu_suite.sh [OUTDIR] [STEPS]
# STEPS is a comma list of: env,tests,bench-merge,bench-mqa,audit (default: all).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-gpu-out}"
steps="${2:-env,tests,bench-merge,bench-mqa,audit}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# a gpu test that cannot run (no device, a missing binding) fails instead of skipping
export GRAPHCHECK_REQUIRE_GPU=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$out/install.log" 2>&1 \
  || { echo "install failed"; tail -20 "$out/install.log"; exit 1; }

has() { [[ ",$steps," == *",$1,"* ]]; }
status=0

if has env; then
  {
    date -u +"date: %Y-%m-%d %H:%M UTC"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c 'import sys,torch,triton; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda); print("triton", triton.__version__); print("capability", torch.cuda.get_device_capability())'
    python3 -c 'import cuda.bindings; print("cuda.bindings", cuda.bindings.__version__)' 2>&1
    python3 -c 'import cupy; print("cupy", cupy.__version__)' 2>&1
  } | tee "$out/env.txt"
fi

if has tests; then
  echo "== pytest -m gpu"
  timeout 420 python3 -m pytest -m gpu -q -p no:cacheprovider -rA --junitxml="$out/gpu-junit.xml" tests \
    >"$out/gpu-tests.log" 2>&1 || status=1
  tail -40 "$out/gpu-tests.log"
fi

if has bench-merge; then
  echo "== bench merge_attn_states"
  timeout 240 python3 benchmarks/bench_merge_attn_states.py --json "$out/bench-merge.json" \
    >"$out/bench-merge.log" 2>&1 || status=1
  tail -30 "$out/bench-merge.log"
fi

if has bench-mqa; then
  echo "== bench mqa logits"
  timeout 300 python3 benchmarks/bench_mqa_logits.py --json "$out/bench-mqa.json" \
    >"$out/bench-mqa.log" 2>&1 || status=1
  tail -30 "$out/bench-mqa.log"
fi

if has audit; then
  echo "== graphcheck audit graphcheck.kernels"
  timeout 300 graphcheck audit graphcheck.kernels >"$out/audit.log" 2>&1
  rc=$?
  echo "audit exit: $rc" >>"$out/audit.log"
  [[ $rc -eq 0 ]] || status=1
  tail -30 "$out/audit.log"
fi
exit $status
