#!/usr/bin/env bash
# GPU run kern-s12-1 (2026-12-02): paged MQA decode candidates (sweep, every next_n = 2 shape, float64 oracle first),
# merge N = 256 launches ABAB (sweep and the benchmark harness's own steps), ncu of the paged kernel.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
cp -r .gpu/kern12/overlay/. .
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  sha1sum kernels/paged_mqa_logits.py kernels/merge_attn.py; which ncu || ls /opt/nvidia/nsight-compute/*/ncu; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
t0=$(date +%s)
timeout 200 python3 .gpu/kern12/sweep_s12.py --json "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^\| (paged|merge|graph)" "$OUT/sweep.log" | awk -F'|' '{printf "%s|%s|%s|%s|%s\n", $3, $4, $5, $7, substr($8,1,12)}' | sed 's/  */ /g'
grep -E "Error|error" "$OUT/sweep.log" | head -5
t0=$(date +%s)
timeout 60 python3 .gpu/kern12/merge_harness_s12.py > "$OUT/merge-harness.log" 2>&1
echo "merge harness rc=$? $(( $(date +%s) - t0 )) s"; tail -8 "$OUT/merge-harness.log"
NCU=$(which ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
t0=$(date +%s)
mkdir -p /tmp/ncu
timeout 150 $NCU --clock-control none -k regex:_paged_mqa_logits_kernel --launch-count 4 --set full --import-source no \
  -f -o /tmp/ncu/paged python3 .gpu/kern12/ncu_target.py > /tmp/ncu/ncu-run.log 2>&1
echo "ncu rc=$? $(( $(date +%s) - t0 )) s"; tail -3 /tmp/ncu/ncu-run.log
$NCU -i /tmp/ncu/paged.ncu-rep --page details > /tmp/ncu/details.txt 2>&1
$NCU -i /tmp/ncu/paged.ncu-rep --page source --csv --print-source sass > /tmp/ncu/source.csv 2>&1
$NCU -i /tmp/ncu/paged.ncu-rep --page raw --csv > /tmp/ncu/raw.csv 2>&1
ls -la /tmp/ncu; tar czf "$OUT/ncu.tgz" -C /tmp ncu
grep -E "^  _paged|Duration|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Issue Slots Busy|Eligible Warps|No Eligible|Warp Cycles Per Issued" /tmp/ncu/details.txt | head -60
