# GPU run record-s4-1 (H200, 2026-12-01 12:21 UTC): the command given to the device, from the root of
# a copy of /work/main whose .gpu/record is branch record at d7ac6c3 and .gpu/record-before main 4f15559
# (graphcheck/ and kernels/ only); PYTHONPATH puts main's code first for overhead-before.log.
cd .gpu/record && export PYTHONUNBUFFERED=1 && python3 -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1; tail -2 /tmp/pip.log
ln -sfn ../kernels ../record-before/graphcheck/kernels; R=/tmp/record-s4-1; bash tests/record/gpu_run.sh $R
timeout 45 env PYTHONPATH=$PWD/../record-before python3 benchmarks/bench_record_overhead.py --rounds 7 > $R/overhead-before.log 2>&1
timeout 45 python3 benchmarks/bench_record_overhead.py --rounds 3 --profile 5 > $R/profile.log 2>&1
cp /tmp/pip.log $R/; echo "total with extras $SECONDS s" >> $R/total.txt; tar -czf $OUT/record-s4-1.tgz -C /tmp record-s4-1
