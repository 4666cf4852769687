#!/usr/bin/env bash
# After the review mends (the shared-memory opt-in settled once per kernel and size): the GPU tests
# of the mixed GEMM and of searched runs, the wgmma_ws check sweep, and the gemv / wgmma_ws winners'
# times (results/w4a16_profile/20261126T155300Z/prof_m1 and prof_m32) on an H200.
set -u
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
grep -q H200 $OUT/gpu.txt || { echo "not an H200: nothing run"; exit 3; }
for t in build/test_mixed_gemm build/test_search_run; do
  TUNE_TEST_FAMILIES=fault_test TUNE_CACHE_DIR=/tmp/c_t timeout 400 $t --verbose=0 -j4 > $OUT/$(basename $t).log 2>&1
  echo "$(basename $t): exit $? $(grep -h Synthesis $OUT/$(basename $t).log | tail -1)"
done
build/tune sweeps/testing/w4a16_wgmma_check.json --out /tmp/check --cache /tmp/c_t --quiet > $OUT/check.log 2>&1
echo "check: exit $? $(grep -o '"status": *"[a-z_]*"' /tmp/check/raw.jsonl | sort | uniq -c | tr '\n' ' ')"
for m in 1 32; do
  sed 's/"reps": 3/"reps": 50/; s/"warmup": 1/"warmup": 10/' results/w4a16_profile/20261126T155300Z/prof_m$m.json > /tmp/p$m.json
  build/tune /tmp/p$m.json --out /tmp/p$m --cache /tmp/c_t --quiet > /dev/null 2>&1
  echo "m=$m: $(python3 -c "import json;r=json.loads(open('/tmp/p$m/raw.jsonl').readline());print(r['kernel'], r['status'], round(r['time_median']*1e6,2), 'us')")"
done
