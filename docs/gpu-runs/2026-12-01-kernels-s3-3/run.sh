#!/usr/bin/env bash
# GPU run s3-3 of 2026-12-01 (kernels): run s3-2's merge bench showed 62 µs of host time per eager call
# against 32 µs in run s2-3; this times the host cost of the code before (main 8735a89) and now,
# alternated in one process on one machine. Run from the repository root of a copy; logs go to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../../.."
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/pip.log" 2>&1 || { cat "$OUT/pip.log"; exit 1; }
nproc; uptime
timeout 100 python3 docs/gpu-runs/2026-12-01-kernels-s3-3/host_ab.py 2>&1 | tee "$OUT/host_ab.log"
