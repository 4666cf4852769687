#!/usr/bin/env bash
# The GPU check of the persistent grid and the calibration with the new probes, on an H200:
# test_mixed_gemm (every variant class; wgmma_ws on a persistent grid), then `tune calibrate`
# (results/calibration/pending/run.sh: the random-sector rate and the transposed gather probe).
set -u
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
grep -q H200 $OUT/gpu.txt || { echo "not an H200: nothing run"; exit 3; }
bash results/calibration/pending/run.sh > $OUT/calibration_run.txt 2>&1
echo "calibrate: exit $?"
t=build/test_mixed_gemm
TUNE_TEST_FAMILIES=fault_test TUNE_CACHE_DIR=/tmp/c_t timeout 400 $t --verbose=0 -j4 > $OUT/test_mixed_gemm.log 2>&1
echo "test_mixed_gemm: exit $? $(grep -h Synthesis $OUT/test_mixed_gemm.log | tail -1)"
grep -h "persistent" $OUT/test_mixed_gemm.log
tail -40 $OUT/calibrate.txt
