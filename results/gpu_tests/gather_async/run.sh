#!/usr/bin/env bash
# The GPU tests of the gather_matmul family on an H200 (gm_dense_async and gm_cols_async on awkward
# sizes against the reference; they ran on an H100 before), and of the calibration's probes.
set -u
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
grep -q H200 $OUT/gpu.txt || { echo "not an H200: nothing run"; exit 3; }
for t in build/test_gather_matmul build/test_roofline build/test_roofline_model; do
  TUNE_TEST_FAMILIES=fault_test TUNE_CACHE_DIR=/tmp/c_t timeout 300 $t --verbose=0 -j4 > $OUT/$(basename $t).log 2>&1
  echo "$(basename $t): exit $? $(grep -h Synthesis $OUT/$(basename $t).log | tail -1)"
done
