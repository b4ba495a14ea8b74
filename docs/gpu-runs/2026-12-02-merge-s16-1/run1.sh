#!/usr/bin/env bash
# run merge-s16-1: old vs new merge (exp.py, two processes), merge GPU tests, merge benchmark without compile
set -uo pipefail
out="$1"; t0=$SECONDS
log() { echo "$(date -u +%H:%M:%S) [+$((SECONDS - t0)) s] $*" | tee -a "$out/steps.txt"; }
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee -a "$out/steps.txt"
timeout -k 5 110 python3 .gpu/m16/exp.py "$out" a 2 > "$out/exp-a.log" 2>&1; log "exp a rc=$?"
timeout -k 5 50 python3 .gpu/m16/exp.py "$out" b 3 256,128,16 > "$out/exp-b.log" 2>&1; log "exp b rc=$?"
timeout -k 5 120 python3 -m pytest -m gpu -n 4 -q -p no:cacheprovider tests/kernels -k "merge or pdl or prefetch or ops" > "$out/tests.log" 2>&1
log "merge GPU tests rc=$?: $(tail -1 "$out/tests.log")"
grep -E "FAILED|Error" "$out/tests.log" | head -20
timeout -k 5 90 python3 benchmarks/bench_merge_attn_states.py --no-compile --json "$out/bench-merge.json" > "$out/bench-merge.log" 2>&1
log "merge bench rc=$?"
grep -v Warn "$out"/exp-*.log | grep -v "^.*env"
grep "^| 256\|^| 4096\|^| 65536" "$out/bench-merge.log" | cut -d'|' -f1-3,7-8
