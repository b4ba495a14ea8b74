#!/usr/bin/env bash
# run merge-s16-2: both benchmarks again without the compile baseline, on another machine start (is final-s16's
# B=128 n=2 ctx=32768 decode time, +9% on unchanged code, the machine?), then the merge benchmark once more
set -uo pipefail
out="$1"; t0=$SECONDS
log() { echo "$(date -u +%H:%M:%S) [+$((SECONDS - t0)) s] $*" | tee -a "$out/steps.txt"; }
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
timeout -k 5 150 python3 benchmarks/bench_mqa_logits.py --no-compile --no-reference --only decode --json "$out/bench-mqa.json" > "$out/bench-mqa.log" 2>&1
log "mqa bench rc=$?"
timeout -k 5 60 python3 benchmarks/bench_merge_attn_states.py --no-compile --json "$out/bench-merge.json" > "$out/bench-merge.log" 2>&1
log "merge bench rc=$?"
timeout -k 5 60 python3 benchmarks/bench_merge_attn_states.py --no-compile --json "$out/bench-merge2.json" > "$out/bench-merge2.log" 2>&1
log "merge bench 2 rc=$?"
grep "^| B=" "$out/bench-mqa.log" | cut -d'|' -f1-3
grep "^| 256\|^| 4096\|^| 65536" "$out"/bench-merge*.log | cut -d'|' -f1-3,7-8
