#!/usr/bin/env bash
# Build-check-benchmark on a GPU machine with a build carried from the development machine:
# GPU tests, then the given sweeps (default: the three SparQ sweeps) into results/. Full logs and
# a tarball of the new results folders go to $OUT (default /tmp/tune-out); printed last, per
# sweep: exit status, wall time, rows by status, and the best-method, best-time and speedup tables.
#   scripts/device_check.sh [SWEEP.json ...]
#   TESTS="build/test_mixed_gemm" to run only those test binaries (default: the tests labelled gpu,
#   listed in build/gpu_tests.txt by CMake, as `ctest -L gpu` selects them; TESTS=all: every one),
#   SKIP_TESTS=1 to run none, SKIP_CALIBRATE=1 to skip `tune calibrate`; TUNE_CACHE_DIR is
#   honoured (default: a cold cache of its own).
set -u
source "$(dirname "$0")/device_env.sh"
export TUNE_CACHE_DIR=${TUNE_CACHE_DIR:-/tmp/tune-cache-$$}
# the runs the tests and the sweeps finish go to a store of this check's, not results/history.sqlite
export TUNE_DB=${TUNE_DB:-/tmp/tune-history-$$.sqlite}
sweeps=("$@")
[ ${#sweeps[@]} -gt 0 ] || sweeps=(sweeps/sparq.json sweeps/sparq_step1.json sweeps/sparq_step2.json)

{ nvidia-smi; nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE; } >"$OUT/nvidia-smi.txt" 2>&1
build/tune devices 2>&1 | tee "$OUT/devices.txt"
# the ceilings first, so that the sweeps' rows get roofline times from measured values
[ -n "${SKIP_CALIBRATE:-}" ] || build/tune calibrate 2>&1 | tee "$OUT/calibrate.txt"
if [ -z "${SKIP_TESTS:-}" ]; then
  tests=${TESTS:-$(sed 's|^|build/|' build/gpu_tests.txt 2>/dev/null)}
  [ "$tests" != all ] || tests=$(ls build/test_*)
  for t in $tests; do
    "$t" --verbose=0 -j4 >"$OUT/tests.log" 2>&1
    echo "$(basename "$t"): exit $? $(grep -h Synthesis "$OUT/tests.log" | tail -1)" | tee -a "$OUT/tests-summary.txt"
    cat "$OUT/tests.log" >>"$OUT/tests-all.log"
  done
  rm -f "$OUT/tests.log"
fi
new=()
for s in "${sweeps[@]}"; do
  name=$(basename "$s" .json)
  start=$(date +%s.%N)
  build/tune "$s" --results results >"$OUT/$name.md" 2>"$OUT/$name.log"
  rc=$?
  end=$(date +%s.%N)
  # the folder the run names (a sweep's "name" need not be its file's)
  dir=$(sed -n 's/.*results in \(.*\)$/\1/p' "$OUT/$name.log" | tail -1)
  [ -z "$dir" ] || dir=${dir%/}/
  [ -z "$dir" ] || new+=("$dir")
  {
    echo "== $name: exit $rc, wall $(awk "BEGIN{printf \"%.1f\", $end - $start}") s (cold kernel cache unless TUNE_CACHE_DIR was set), $dir"
    grep -ho '"status": *"[a-z_]*"' "$dir"raw.jsonl 2>/dev/null | sort | uniq -c
    awk '/^## (Best time|Speedup over|Best method)/{p=1} /^## /&&!/^## (Best time|Speedup over|Best method)/{p=0} p' "$dir"best.md 2>/dev/null | grep -v '^$'
  } >>"$OUT/summary.txt"
done
[ ${#new[@]} -eq 0 ] || tar czf "$OUT/results.tgz" "${new[@]}"
cat "$OUT/summary.txt"
