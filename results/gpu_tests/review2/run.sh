#!/usr/bin/env bash
# After the review mends (calibrate's probes allocate through one helper; the device facts set in
# one place): `tune calibrate` on an H200, its file not installed, to check the probes and the
# ceilings they give.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
grep -q H200 $OUT/gpu.txt || { echo "not an H200: nothing run"; exit 3; }
build/tune calibrate --out $OUT/nvidia-h200.json --cache /tmp/c_cal > $OUT/calibrate.txt 2>&1
echo "calibrate: exit $?"; head -16 $OUT/calibrate.txt
