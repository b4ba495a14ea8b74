#!/usr/bin/env bash
# run tests-s16: after the review mend bc2c6c7, the merge/PDL/prefetch/op GPU tests, the interpreter merge tests
# natively, the merge benchmark without compile
set -uo pipefail
out="$1"; t0=$SECONDS
log() { echo "$(date -u +%H:%M:%S) [+$((SECONDS - t0)) s] $*" | tee -a "$out/steps.txt"; }
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
timeout -k 5 150 python3 -m pytest -m gpu -n 4 -q -p no:cacheprovider tests/kernels -k "merge or pdl or prefetch or ops" > "$out/tests.log" 2>&1
log "merge GPU tests rc=$?: $(tail -1 "$out/tests.log")"
timeout -k 5 90 python3 -m pytest -n 4 -q -p no:cacheprovider -m "not gpu" tests/kernels/test_merge_attn_states.py tests/kernels/test_merge_prefetch.py tests/kernels/test_merge_load_order.py > "$out/native.log" 2>&1
log "native merge tests rc=$?: $(tail -1 "$out/native.log")"
timeout -k 5 60 python3 benchmarks/bench_merge_attn_states.py --no-compile --json "$out/bench-merge.json" > "$out/bench-merge.log" 2>&1
log "merge bench rc=$?"
grep -E "FAILED|Error" "$out/tests.log" "$out/native.log" | head
grep "^| 256\|^| 4096\|^| 65536" "$out/bench-merge.log" | cut -d'|' -f1-3,7-8
