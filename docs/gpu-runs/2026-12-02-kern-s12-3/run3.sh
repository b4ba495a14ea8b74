#!/usr/bin/env bash
# GPU run kern-s12-3 (2026-12-02): branch kern12's join_rows default (as in run kern-s12-2) overlaid on main: ABAB of
# the per-row stores against join_rows (B=128 n=2 ctx 32k, B=64 n=2 mml 16k), graphcheck's audit of the kernels, then
# the warp-specialised Gluon experiment (gluon_paged.py): a small correctness probe, and if it passes the sweep of
# every next_n = 2 shape against main's launch.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
cp -r .gpu/kern12/overlay/. .
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  sha1sum kernels/paged_mqa_logits.py tests/kernels/test_kernel_launch_knobs.py .gpu/kern12/gluon_paged.py; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
t0=$(date +%s)
timeout 60 python3 .gpu/kern12/ab_s12c.py > "$OUT/ab.log" 2>&1
echo "ab rc=$? $(( $(date +%s) - t0 )) s"; cat "$OUT/ab.log"
t0=$(date +%s)
timeout 120 graphcheck audit graphcheck.kernels --gpu required > "$OUT/audit.log" 2>&1
echo "audit rc=$? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/audit.log"
t0=$(date +%s)
timeout 90 python3 .gpu/kern12/sweep_s12c.py --probe > "$OUT/gluon-probe.log" 2>&1
rc=$?
echo "gluon probe rc=$rc $(( $(date +%s) - t0 )) s"; tail -12 "$OUT/gluon-probe.log"
if [ $rc -eq 0 ] && ! grep -q FAILED "$OUT/gluon-probe.log"; then
  t0=$(date +%s)
  timeout 170 python3 .gpu/kern12/sweep_s12c.py > "$OUT/gluon-sweep.log" 2>&1
  echo "gluon sweep rc=$? $(( $(date +%s) - t0 )) s"; cat "$OUT/gluon-sweep.log"
fi
