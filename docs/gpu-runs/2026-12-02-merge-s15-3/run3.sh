#!/usr/bin/env bash
# run merge-s15-3: bench main() at N = 256 (default), exp3 in two processes, bench again
set -uo pipefail
out="$1"
cat > /tmp/bench256.py <<'PY'
import os, sys
sys.path.insert(0, "benchmarks")
import bench_merge_attn_states as bm
bm.SIZES = [(256, "bfloat16")]
sys.exit(bm.main(["--no-compile"]))
PY
t0=$SECONDS
timeout 60 python3 /tmp/bench256.py > "$out/bench256-a.log" 2>&1; echo "bench a rc=$? $((SECONDS-t0)) s"
grep "^| 256" "$out/bench256-a.log" | cut -d'|' -f1-8
timeout 120 python3 .gpu/m15/exp3.py "$out" a 3 256 > "$out/exp3-a.log" 2>&1; echo "exp3 a rc=$? $((SECONDS-t0)) s"
timeout 100 python3 .gpu/m15/exp3.py "$out" b 2 256,128 > "$out/exp3-b.log" 2>&1; echo "exp3 b rc=$? $((SECONDS-t0)) s"
timeout 60 python3 /tmp/bench256.py > "$out/bench256-b.log" 2>&1; echo "bench b rc=$? $((SECONDS-t0)) s"
grep "^| 256" "$out/bench256-b.log" | cut -d'|' -f1-8
python3 - "$out" <<'PY'
import json,sys,collections,statistics,glob
rows=[json.loads(l) for f in sorted(glob.glob(sys.argv[1]+"/exp3-*.jsonl")) for l in open(f)]
g=collections.defaultdict(list)
for r in rows: g[(r["tag"],r["N"],r["variant"])]+=[r["graph_us"],r["graph2_us"]]
for k,v in g.items(): print(k, f"min {min(v):.3f} med {statistics.median(v):.3f} max {max(v):.3f} n {len(v)}")
PY
