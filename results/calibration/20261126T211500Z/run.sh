#!/usr/bin/env bash
# One device call on an H200: `tune calibrate` with the DRAM fetch granularity (dram_fetch, the
# stride probe), its file installed as results/calibration/nvidia-h200.json for the runs that
# follow, then the three SparQ sweeps (sweeps/sparq.json, sparq_step1.json with gm_dense_reg,
# sparq_step2.json), cold caches, into results/ (tarred to $OUT), and `tune roofline` on them.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee $OUT/nvidia-smi.txt
grep -q H200 $OUT/nvidia-smi.txt || { echo "not an H200: nothing run"; exit 3; }
build/tune calibrate --out $OUT/nvidia-h200.json --cache /tmp/c_cal > $OUT/calibrate.txt 2>&1
rc=$?; echo "calibrate: exit $rc"; grep -E "fetch|read band|random|grid floor|latency" $OUT/calibrate.txt | head -8
[ $rc -eq 0 ] || exit $rc
mkdir -p /tmp/res/calibration && cp $OUT/nvidia-h200.json /tmp/res/calibration/nvidia-h200.json
for s in sparq sparq_step1 sparq_step2; do
  t0=$(date +%s)
  timeout 200 build/tune sweeps/$s.json --results /tmp/res --cache /tmp/c_$s --quiet > /tmp/$s.log 2>&1
  echo "$s: exit $? in $(( $(date +%s) - t0 )) s"; cp /tmp/$s.log /tmp/res/
done
build/tune roofline /tmp/res/sparq/* /tmp/res/sparq_step1/* /tmp/res/sparq_step2/* --calibration $OUT/nvidia-h200.json > /tmp/res/roofline.txt 2>&1
grep -A12 "time model" /tmp/res/roofline.txt | grep "calibrated.*(best)" | cut -c1-120
(cd /tmp/res && tar czf $OUT/res.tgz .)
