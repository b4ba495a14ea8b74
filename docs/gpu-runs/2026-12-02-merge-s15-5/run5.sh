#!/usr/bin/env bash
# run merge-s15-5: merge GPU tests, exp5 (late vs early next launch, every small shape, two processes), both
# benchmark scripts in full
set -uo pipefail
out="$1"; t0=$SECONDS
log() { echo "$(date -u +%H:%M:%S) [+$((SECONDS - t0)) s] $*" | tee -a "$out/steps.txt"; }
timeout -k 5 120 python3 -m pytest -m gpu -n 4 -q -p no:cacheprovider tests/kernels -k "merge or pdl or prefetch" > "$out/tests.log" 2>&1
log "merge GPU tests rc=$?: $(tail -1 "$out/tests.log")"
timeout -k 5 80 python3 .gpu/m15/exp5.py "$out" a 2 > "$out/exp5-a.log" 2>&1; log "exp5 a rc=$?"
timeout -k 5 60 python3 .gpu/m15/exp5.py "$out" b 3 256,128 > "$out/exp5-b.log" 2>&1; log "exp5 b rc=$?"
timeout -k 5 90 python3 benchmarks/bench_merge_attn_states.py --json "$out/bench-merge.json" > "$out/bench-merge.log" 2>&1
log "merge bench rc=$?"
timeout -k 5 150 python3 benchmarks/bench_mqa_logits.py --json "$out/bench-mqa.json" > "$out/bench-mqa.log" 2>&1
log "mqa bench rc=$?"
python3 - "$out" <<'PY'
import json,sys,collections,statistics,glob
rows=[json.loads(l) for f in sorted(glob.glob(sys.argv[1]+"/exp5-*.jsonl")) for l in open(f)]
g=collections.defaultdict(list)
for r in rows: g[(r["tag"],r["N"],r["H"],r["D"],r["dtype"],r["layout"],r["variant"])]+=[r["graph_us"],r["graph2_us"]]
for k,v in g.items(): print(k, f"min {min(v):.3f} med {statistics.median(v):.3f} max {max(v):.3f} n {len(v)}")
PY
grep "^| 256\|^| 4096\|^| 65536" "$out/bench-merge.log" | cut -d'|' -f1-3,7-8
grep "mml=16384\|^| B=" "$out/bench-mqa.log" | cut -d'|' -f1-3,10 | head -14
