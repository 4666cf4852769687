#!/usr/bin/env bash
# Build-check-benchmark on a GPU machine with a build carried from the development machine:
# GPU tests, then the given sweeps (default: the three SparQ sweeps) with a cold kernel cache.
# Full logs and a tarball of the results go to $OUT (default /tmp/tune-out); a short table is
# printed last. Usage: scripts/device_check.sh [sweep.json ...]
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tune-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/devlibs:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
export TUNE_CACHE_DIR=/tmp/tune-cache-$$
sweeps=("$@")
[ ${#sweeps[@]} -gt 0 ] || sweeps=(sweeps/sparq.json sweeps/sparq_step1.json sweeps/sparq_step2.json)

{ nvidia-smi; nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE; } >"$OUT/nvidia-smi.txt" 2>&1
build/tune devices 2>&1 | tee "$OUT/devices.txt"
# the ceilings first, so that the sweeps' rows get roofline times from measured values
[ -n "${SKIP_CALIBRATE:-}" ] || build/tune calibrate 2>&1 | tee "$OUT/calibrate.txt"
if [ -z "${SKIP_TESTS:-}" ]; then
  for t in build/test_*; do
    # the tests use the fault-injection family (docs/fault-tolerance.md)
    TUNE_TEST_FAMILIES=fault_test "$t" --verbose=0 -j4 >"$OUT/tests.log" 2>&1
    echo "$(basename "$t"): exit $? $(grep -h Synthesis "$OUT/tests.log" | tail -1)" | tee -a "$OUT/tests-summary.txt"
    cat "$OUT/tests.log" >>"$OUT/tests-all.log"
  done
  rm -f "$OUT/tests.log"
fi
for s in "${sweeps[@]}"; do
  name=$(basename "$s" .json)
  start=$(date +%s.%N)
  build/tune "$s" --results results >"$OUT/$name.md" 2>"$OUT/$name.log"
  rc=$?
  end=$(date +%s.%N)
  echo "$name: exit $rc, wall $(awk "BEGIN{printf \"%.1f\", $end - $start}") s (cold kernel cache)" | tee -a "$OUT/summary.txt"
  tail -2 "$OUT/$name.log"
done
tar czf "$OUT/results.tgz" results
cat "$OUT/summary.txt"
