#!/usr/bin/env bash
# Device call: the GPU test of searched runs (resume included) with the cost-aware plan, then
# sweeps/w4a16.json exhaustive and searched (model, 10 %, the sweep's features), each with a cold
# kernel cache of its own, and tune compare of the two. Only on an H200.
set -u
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then nvidia-smi --query-gpu=name --format=csv,noheader; echo "not an H200: nothing run"; exit 3; fi
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p $OUT/logs
TUNE_TEST_FAMILIES=fault_test TUNE_CACHE_DIR=/tmp/c_t timeout 300 build/test_search_run --verbose=0 -j4 > $OUT/logs/test_search_run.log 2>&1
echo "test_search_run: exit $? $(grep -h Synthesis $OUT/logs/test_search_run.log | tail -1)"
t0=$(date +%s.%N); build/tune sweeps/w4a16.json --results /tmp/ex --cache /tmp/c_ex --quiet > $OUT/logs/exhaustive.log 2>&1; rc=$?; t1=$(date +%s.%N)
echo "exhaustive: exit $rc, wall $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") s"
t0=$(date +%s.%N); build/tune sweeps/w4a16.json --search model --budget 10% --results /tmp/sr --cache /tmp/c_sr --quiet > $OUT/logs/search.log 2>&1; rc=$?; t1=$(date +%s.%N)
echo "search: exit $rc, wall $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") s"
ex=$(ls -d /tmp/ex/w4a16/*/); sd=$(ls -d /tmp/sr/w4a16/*/)
build/tune compare $ex $sd --out /tmp/cmp > $OUT/logs/compare.md 2>&1; echo "compare exit $?"
mkdir -p /tmp/pack && cp -r $ex /tmp/pack/exhaustive && cp -r $sd /tmp/pack/w4a16_model_10pct && cp -r /tmp/cmp /tmp/pack/compare && cp $OUT/logs/* /tmp/pack/
(cd /tmp/pack && tar czf $OUT/pack.tgz .)
python3 - <<'PY'
import json, statistics
c = json.load(open('/tmp/cmp/compare.json'))
r = [s['best_base']['time_us'] / s['best_new']['time_us'] for s in c['shapes']]
print(len(r), 'shapes; within 3 %:', sum(x >= 1 / 1.03 for x in r), 'median %.4f worst %.3f' % (statistics.median(r), min(r)))
PY
