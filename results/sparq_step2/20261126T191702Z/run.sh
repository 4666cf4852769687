#!/usr/bin/env bash
# One device call on an H200: sweeps/sparq_step1.json and sweeps/sparq_step2.json with the
# cp.async variants of the transposed-B kernels (gm_dense_async, gm_cols_async), cold caches, into
# results/ (tarred to $OUT).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
grep -q H200 $OUT/gpu.txt || { echo "not an H200: nothing run"; exit 3; }
for s in sparq_step1 sparq_step2; do
  t0=$(date +%s)
  timeout 250 build/tune sweeps/$s.json --results /tmp/res --cache /tmp/c_$s --quiet > /tmp/$s.log 2>&1
  echo "$s: exit $? in $(( $(date +%s) - t0 )) s"; cp /tmp/$s.log /tmp/res/
done
(cd /tmp/res && tar czf $OUT/res.tgz .)
