#!/usr/bin/env bash
# One device call on an H200: the gather_matmul GPU tests with gm_cols_reg (SparQ step 2's kernel
# with the gathered rows of B^T in registers) and gm_dense_reg, then `tune calibrate`, its file
# installed as the runs' calibration, then the three SparQ sweeps (step 2 with gm_cols_reg), cold
# caches, into results/ (tarred to $OUT), and `tune roofline` on them.
set -u
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee $OUT/nvidia-smi.txt
grep -q H200 $OUT/nvidia-smi.txt || { echo "not an H200: nothing run"; exit 3; }
mkdir -p /tmp/res/calibration
t0=$(date +%s)
TUNE_TEST_FAMILIES=fault_test TUNE_CACHE_DIR=/tmp/c_t timeout 300 build/test_gather_matmul --verbose=0 -j12 > /tmp/res/test_gather_matmul.log 2>&1
echo "test_gather_matmul: exit $? in $(( $(date +%s) - t0 )) s: $(grep -h Synthesis /tmp/res/test_gather_matmul.log | tail -1)"
build/tune calibrate --out $OUT/nvidia-h200.json --cache /tmp/c_cal > $OUT/calibrate.txt 2>&1
rc=$?; echo "calibrate: exit $rc"; grep -E "fetch|read band" $OUT/calibrate.txt | head -3
[ $rc -eq 0 ] || exit $rc
cp $OUT/nvidia-h200.json /tmp/res/calibration/nvidia-h200.json
for s in sparq sparq_step1 sparq_step2; do
  t0=$(date +%s)
  timeout 150 build/tune sweeps/$s.json --results /tmp/res --cache /tmp/c_$s --quiet > /tmp/$s.log 2>&1
  echo "$s: exit $? in $(( $(date +%s) - t0 )) s"; cp /tmp/$s.log /tmp/res/
done
build/tune roofline /tmp/res/sparq/* /tmp/res/sparq_step1/* /tmp/res/sparq_step2/* --calibration $OUT/nvidia-h200.json > /tmp/res/roofline.txt 2>&1
grep -A12 "time model" /tmp/res/roofline.txt | grep "calibrated.*(best)" | cut -c1-120
(cd /tmp/res && tar czf $OUT/res.tgz .)
