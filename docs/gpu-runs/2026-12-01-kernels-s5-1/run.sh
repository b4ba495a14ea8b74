#!/usr/bin/env bash
# GPU run s5-1 of 2026-12-01 (kern): key tiles of the paged MQA logits through the copy engine
# (PagedConfig.tma, off by default; alone, with four/six stages, 8/24 programs per SM and with the head dot)
# against the shipped launch on every decode shape, each variant checked against the float64 oracle on every
# shape first; merge_attn_states at N = 256: looped programs (config iters/stages) and two/four-warp programs
# against the shipped launch. Shipped launches timed first and last. Then REG/SHARED of every binary.
# Run from the root of a copy of the branch.
set -uo pipefail
export PYTHONUNBUFFERED=1
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../.."
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
export TRITON_CACHE_DIR=/tmp/kern-triton-cache
t0=$(date +%s)
timeout 220 python3 benchmarks/sweep_kernel_variants.py --json "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^\| (paged|merge|graph)" "$OUT/sweep.log" | awk -F'|' '{printf "%s|%s|%s|%s|%s|%s\n", $3, $4, $5, $7, $8, substr($10,1,40)}' | sed 's/  */ /g'
grep -E "AssertionError|Traceback|Error" "$OUT/sweep.log" | head -5
for j in "$TRITON_CACHE_DIR"/*/_paged_mqa_logits_kernel.json "$TRITON_CACHE_DIR"/*/_merge_attn_states_kernel.json; do
  d=$(dirname "$j"); b=$(basename "$j" .json)
  python3 - "$j" "$d/$b.cubin" <<'PY' >> "$OUT/binaries.txt" 2>&1
import json, subprocess, sys, re
meta = json.load(open(sys.argv[1]))
use = subprocess.run(["cuobjdump", "--dump-resource-usage", sys.argv[2]], capture_output=True, text=True).stdout
print(meta.get("name"), meta.get("shared"), meta.get("num_warps"), meta.get("num_stages"), re.findall(r"REG:\d+", use))
PY
done
sort "$OUT/binaries.txt" | uniq -c
