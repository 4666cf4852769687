#!/usr/bin/env bash
# One device call on an H200: sweeps/testing/sparq_step1_reg.json (gm_dense_reg over chunk,
# threads and reg_rows beside gm_dense_async and gm_dense), a cold cache, into results/.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
grep -q H200 $OUT/gpu.txt || { echo "not an H200: nothing run"; exit 3; }
mkdir -p /tmp/res/calibration && cp results/calibration/nvidia-h200.json /tmp/res/calibration/
t0=$(date +%s)
timeout 400 build/tune sweeps/testing/sparq_step1_reg.json --results /tmp/res --cache /tmp/c_r --quiet > /tmp/res/tune.log 2>&1
echo "sparq_step1_reg: exit $? in $(( $(date +%s) - t0 )) s"
(cd /tmp/res && tar czf $OUT/res.tgz .)
