#!/usr/bin/env bash
# GPU run s4-4 of 2026-12-01 (kernels3): the head-weighted sum of the paged MQA logits as a second
# tensor-core dot (PagedConfig.head_dot, off by default) against the shipped launch on every decode shape of
# bench_mqa_logits.py (next_n = 1 and 2), each variant checked against the float64 oracle on every shape
# first. Then the registers / shared memory of every paged-MQA binary the sweep compiled.
# Run from the root of a copy of the branch.
set -uo pipefail
export PYTHONUNBUFFERED=1
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../.."
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
export TRITON_CACHE_DIR=/tmp/k3-triton-cache
t0=$(date +%s)
timeout 200 python3 benchmarks/sweep_kernel_variants.py --only paged --json "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^\| paged" "$OUT/sweep.log" | awk -F'|' '{printf "%s|%s|%s|%s|%s|%s\n", $3, $4, $5, $7, $8, substr($10,1,40)}' | sed 's/  */ /g'
grep -E "AssertionError|Traceback|Error" "$OUT/sweep.log" | head -5
# registers and shared memory of each compiled paged-MQA binary (name, REG, SHARED from the metadata)
for j in "$TRITON_CACHE_DIR"/*/_paged_mqa_logits_kernel.json; do
  d=$(dirname "$j")
  python3 - "$j" "$d"/_paged_mqa_logits_kernel.cubin <<'PY' >> "$OUT/binaries.txt" 2>&1
import json, subprocess, sys, re
meta = json.load(open(sys.argv[1]))
use = subprocess.run(["cuobjdump", "--dump-resource-usage", sys.argv[2]], capture_output=True, text=True).stdout
print(meta.get("shared"), meta.get("num_stages"), re.findall(r"REG:\d+", use), meta.get("hash", "")[:10])
PY
done
sort "$OUT/binaries.txt" | uniq -c
