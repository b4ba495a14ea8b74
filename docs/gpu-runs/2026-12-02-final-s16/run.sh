#!/usr/bin/env bash
# Final GPU verification of main (session 16: install first; after the benchmarks, run merge-s16-1's old-vs-new
# comparison at N = 256, 128 and 16 in one more process (.gpu/m16/exp.py, carried); both benchmark scripts in full first, then the suite; the record run only if 120 s are left): the GPU suite (env, tests, audit), the interpreter kernel tests
# run natively, the README main job with the GPU required, then the record run if time is left. Usage: bash final.sh OUT COMMIT
set -uo pipefail
out="${1:?out}"; commit="${2:-unknown}"
mkdir -p "$out"
t0=$SECONDS
budget=570   # seconds for the whole script
log() { echo "$(date -u +%H:%M:%S) [+$((SECONDS - t0)) s] $*" | tee -a "$out/steps.txt"; }
echo "$commit" > .gpu-commit
log "commit $commit"
python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/install.log 2>&1 || cat /tmp/install.log
log "install: exit $?"

# (0) the benchmarks in full, one run: ours vs the floor, eager and torch.compile of the reference
s=$SECONDS
timeout -k 5 90 python3 benchmarks/bench_merge_attn_states.py --json "$out/bench-merge.json" > "$out/bench-merge.log" 2>&1
log "step 0a merge bench: exit $? after $((SECONDS - s)) s"
s=$SECONDS
timeout -k 5 150 python3 benchmarks/bench_mqa_logits.py --json "$out/bench-mqa.json" > "$out/bench-mqa.log" 2>&1
log "step 0b mqa bench: exit $? after $((SECONDS - s)) s"
s=$SECONDS
timeout -k 5 60 python3 .gpu/m16/exp.py "$out" c 2 256,128,16 > "$out/exp-c.log" 2>&1
log "step 0c exp old/new: exit $? after $((SECONDS - s)) s"
cd "$out" && tar -czf bench.tgz exp-c.log exp-c.jsonl bench-merge.log bench-merge.json bench-mqa.log bench-mqa.json && rm -f bench-*.json exp-c.*; cd - > /dev/null

# (1) the suite: env, every test marked gpu (GRAPHCHECK_REQUIRE_GPU=1), the audit of graphcheck.kernels;
# pytest with 4 xdist workers, as run lead-4 did (the serial suite took 474 s on 2026-11-29)
s=$SECONDS
PYTEST_ADDOPTS="-n 4" timeout -k 10 330 bash benchmarks/gpu_suite.sh "$out/suite" env,tests,audit
log "step 1 suite: exit $? after $((SECONDS - s)) s"

# (1b) the kernel tests CI runs through the interpreter, here natively (they pick CUDA when it exists)
s=$SECONDS
timeout -k 5 120 python3 -m pytest -q -n 8 -p no:cacheprovider tests/kernels -m "not gpu" > "$out/native-kernels.log" 2>&1
log "step 1b native kernel tests: exit $? after $((SECONDS - s)) s: $(tail -1 "$out/native-kernels.log")"

# (2) the README main job with the GPU required
s=$SECONDS
{ echo '$ graphcheck audit graphcheck.kernels examples --gpu required'
  timeout -k 5 90 graphcheck audit graphcheck.kernels examples --gpu required; rc=$?
  echo "[exit $rc after $((SECONDS - s)) s]"; } > "$out/main-job.log" 2>&1
log "step 2 main job: $(tail -1 "$out/main-job.log")"

# (3) the record run, capped by what is left
left=$((budget - (SECONDS - t0) - 15))
if [ "$left" -ge 120 ]; then
  s=$SECONDS
  timeout -k 5 "$left" bash tests/record/gpu_run.sh "$out/record"
  log "step 3 record: exit $? after $((SECONDS - s)) s (limit $left s)"
else
  log "step 3 record: skipped, only $left s left"
fi

# archive: the device returns at most 8 files
cd "$out" && for d in suite record; do
  [ -d "$d" ] && tar -czf "$d.tgz" "$d" && rm -rf "$d"
done
log "done"
ls -la "$out"
