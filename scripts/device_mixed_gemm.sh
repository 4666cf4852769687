#!/usr/bin/env bash
# The mixed-input GEMM's build-check-benchmark on a GPU machine, with a build carried from the
# development machine (as scripts/device_check.sh): the family's GPU tests, then the given sweeps
# into results/ (default: the two shipped W4A16 sweeps). Full logs and a tarball of the new
# results go to $OUT (default /tmp/tune-out); printed last, per sweep: exit status, wall time,
# rows by status, and the best-time and speedup tables.
#   scripts/device_mixed_gemm.sh [SWEEP.json ...]     SKIP_TESTS=1 to skip the tests
# TUNE_CACHE_DIR is honoured (a cache compiled on the development machine can be carried).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tune-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/devlibs:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
export TUNE_CACHE_DIR=${TUNE_CACHE_DIR:-/tmp/tune-cache-$$}
sweeps=("$@")
[ ${#sweeps[@]} -gt 0 ] || sweeps=(sweeps/w4a16.json sweeps/w4a16_groups.json)

{ nvidia-smi; nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE; } >"$OUT/nvidia-smi.txt" 2>&1
if [ -z "${SKIP_TESTS:-}" ]; then
  build/test_mixed_gemm --verbose=0 -j4 >"$OUT/tests.log" 2>&1
  echo "test_mixed_gemm: exit $? $(grep -h Synthesis "$OUT/tests.log" | tail -1)" | tee "$OUT/summary.txt"
fi
new=()
for s in "${sweeps[@]}"; do
  name=$(basename "$s" .json)
  start=$(date +%s.%N)
  build/tune "$s" --results results >"$OUT/$name.md" 2>"$OUT/$name.log"
  rc=$?
  end=$(date +%s.%N)
  dir=$(ls -d results/"$name"/*/ 2>/dev/null | tail -1)
  new+=("$dir")
  {
    echo "== $name: exit $rc, wall $(awk "BEGIN{printf \"%.1f\", $end - $start}") s, $dir"
    grep -ho '"status": *"[a-z_]*"' "$dir"raw.jsonl 2>/dev/null | sort | uniq -c
    awk '/^## (Best time|Speedup over|Best method)/{p=1} /^## /&&!/^## (Best time|Speedup over|Best method)/{p=0} p' "$dir"best.md 2>/dev/null | grep -v '^$'
  } >>"$OUT/summary.txt"
done
[ ${#new[@]} -eq 0 ] || tar czf "$OUT/results.tgz" "${new[@]}"
cat "$OUT/summary.txt"
