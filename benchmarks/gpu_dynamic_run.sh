#!/usr/bin/env bash
# One batched GPU run for the dynamic layers: the README main job on the worker pool (timed, verdicts
# compared with the last recorded GPU run), then the GPU tests of the dynamic layers.
# Usage (on the GPU host, from the repository root): bash benchmarks/gpu_dynamic_run.sh OUTDIR
set -u
OUT=${1:-gpu-out}
mkdir -p "$OUT"
{
  date -u +"%Y-%m-%d %H:%M UTC"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c "import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name(0))"
  nproc
} > "$OUT/env.txt" 2>&1

start=$(date +%s.%N)
timeout 110 graphcheck audit graphcheck.kernels examples --gpu required --format json --output "$OUT/main-job.json" \
  > "$OUT/main-job.log" 2>&1
rc=$?
end=$(date +%s.%N)
echo "exit $rc, wall $(python3 -c "print(round($end - $start, 1))") s" | tee -a "$OUT/main-job.log"
python3 - "$OUT/main-job.json" docs/gpu-runs/2026-11-29-run8/main-job.json <<'PY' | tee "$OUT/verdicts.txt"
import json, sys
def load(p):
    d = json.load(open(p))
    out = {}
    for c in d["cases"]:
        layers = {k: (v if isinstance(v, str) else v.get("status")) for k, v in c["layers"].items()}
        out[c["case"]] = {k: v.split(":")[0] for k, v in layers.items()}
    return out, d
new, nd = load(sys.argv[1])
old, od = load(sys.argv[2])
diff = {k: (old.get(k), new.get(k)) for k in set(old) | set(new) if old.get(k) != new.get(k)}
print(f"cases: {len(new)} now, {len(old)} in run 8; differing verdicts: {len(diff)}")
for k, (a, b) in sorted(diff.items()):
    print(f"  {k}: run8 {a} -> now {b}")
codes = sorted((f["code"], f.get("expected", False)) for f in nd["findings"])
print("findings now:", len(codes), "unexpected:", [c for c, e in codes if not e and c != "GC408"])
PY
timeout 80 python3 -m pytest -p no:cacheprovider -q -rA -m gpu tests/dynamic/test_dynamic_gpu.py > "$OUT/gpu-tests-dynamic.log" 2>&1
echo "dynamic GPU tests exit $?" | tee -a "$OUT/gpu-tests-dynamic.log"
timeout 60 python3 -m pytest -p no:cacheprovider -q -rA -m gpu tests/capture/test_capture_gpu.py -k "bad_case_reports_rule_and_line or legacy_stream or escaped_kernel" > "$OUT/gpu-tests-capture.log" 2>&1
echo "capture GPU tests exit $?" | tee -a "$OUT/gpu-tests-capture.log"
