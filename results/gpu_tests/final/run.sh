#!/usr/bin/env bash
# The GPU tests of the modules this session changed (run: meta.json's ceilings; compare; roofline
# and calibration; searched runs and declared kernels through the tune binary; timing; workers)
# on an H200, after the last commit.
set -u
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export TUNE_BIN=$PWD/build/tune
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
grep -q H200 $OUT/gpu.txt || { echo "not an H200: nothing run"; exit 3; }
for t in test_run test_roofline test_roofline_model test_compare test_timing test_worker test_declared test_search_run; do
  t0=$(date +%s)
  TUNE_TEST_FAMILIES=fault_test TUNE_CACHE_DIR=/tmp/c_t timeout 300 build/gt/$t --verbose=0 -j4 > $OUT/$t.log 2>&1
  echo "$t: exit $? in $(( $(date +%s) - t0 )) s $(grep -h Synthesis $OUT/$t.log | tail -1)"
done
cd $OUT && tar czf logs.tgz test_*.log && rm -f test_*.log
