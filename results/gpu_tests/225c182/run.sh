#!/usr/bin/env bash
# The GPU tests of the mixed GEMM and of searched runs at the session's last code commit (225c182),
# on an H200, and the wgmma_ws variants' check sweep.
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
