#!/usr/bin/env bash
# The last device call of 2026-11-26: the exhaustive runs of sweeps/w4a16.json and
# sweeps/w4a16_groups.json (scripts/device_check.sh, a cold kernel cache), sweeps/w4a16.json
# searched by the model with 10 % of the run's candidates and the sweep's derived features (a cold
# kernel cache of its own), tune compare of the two, then the GPU tests of the mixed GEMM and of
# searched runs. Logs in $OUT/logs.tgz, result folders in $OUT/results.tgz and $OUT/search.tgz.
set -u
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then nvidia-smi --query-gpu=name --format=csv,noheader; echo "not an H200: nothing run"; exit 3; fi
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
SKIP_CALIBRATE=1 SKIP_TESTS=1 bash scripts/device_check.sh sweeps/w4a16.json sweeps/w4a16_groups.json > $OUT/device_check.txt 2>&1
grep -E "^== " $OUT/device_check.txt
ex=$(ls -d results/w4a16/*/ | tail -1)
t0=$(date +%s.%N)
build/tune sweeps/w4a16.json --search model --budget 10% --results /tmp/sr --cache /tmp/c_search > $OUT/search.md 2> $OUT/search.log
rc=$?; t1=$(date +%s.%N)
sd=$(ls -d /tmp/sr/w4a16/*/ | tail -1)
echo "search: exit $rc, wall $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") s, $sd (exhaustive: $ex)"
build/tune compare $ex $sd --out /tmp/cmp > $OUT/compare.md 2>&1; echo "compare exit $?"
mkdir -p /tmp/pack/search && cp -r $sd /tmp/pack/search/ && cp -r /tmp/cmp /tmp/pack/compare
(cd /tmp/pack && tar czf $OUT/search.tgz .)
for t in ${TESTS-build/test_mixed_gemm build/test_search_run}; do
  TUNE_TEST_FAMILIES=fault_test TUNE_CACHE_DIR=/tmp/c_tests timeout 400 $t --verbose=0 -j4 > $OUT/$(basename $t).log 2>&1
  echo "$(basename $t): exit $? $(grep -h Synthesis $OUT/$(basename $t).log | tail -1)"
done
cd $OUT && tar czf /tmp/logs.tgz --exclude='*.tgz' . && find . -maxdepth 1 -type f ! -name '*.tgz' -delete && mv /tmp/logs.tgz .
