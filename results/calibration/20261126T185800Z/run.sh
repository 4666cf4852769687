#!/usr/bin/env bash
# Device call (one, on an H200): `tune calibrate` with the DRAM-resident transposed gather probe
# (gather_element_transposed_dram: gm_gather<half_t, 1, 1> over a 1 GiB source that the L2
# cannot hold, 1.5 GiB allocated, a few seconds). Writes $OUT/nvidia-h200.json (the calibration
# file, for results/calibration/nvidia-h200.json), $OUT/calibrate.txt (its log and comparison
# table) and $OUT/nvidia-smi.txt; prints the log, then the JSON last. Needs build/ (carried or
# built).
set -u
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || exit 3
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
if [ ! -x build/tune ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTUNE_BUILD_TESTS=OFF > "$OUT/build.log" 2>&1 &&
    cmake --build build -j16 >> "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader \
  > "$OUT/nvidia-smi.txt"
build/tune calibrate --out "$OUT/nvidia-h200.json" --cache /tmp/tune-cal-cache > "$OUT/calibrate.txt" 2>&1
rc=$?
cat "$OUT/calibrate.txt"
echo "tune calibrate: exit $rc"
[ $rc -eq 0 ] && cat "$OUT/nvidia-h200.json"
exit $rc
