#!/usr/bin/env bash
set -uo pipefail
out="$1"; t0=$SECONDS
timeout 100 python3 .gpu/m15/exp4.py "$out" a 2 > "$out/exp4-a.log" 2>&1; echo "a rc=$? $((SECONDS-t0)) s"
timeout 100 python3 .gpu/m15/exp4.py "$out" b 2 > "$out/exp4-b.log" 2>&1; echo "b rc=$? $((SECONDS-t0)) s"
timeout 60 python3 .gpu/m15/exp4.py "$out" c 1 128 > "$out/exp4-c.log" 2>&1; echo "c rc=$? $((SECONDS-t0)) s"
cat "$out"/exp4-*.log | grep -v Warning
