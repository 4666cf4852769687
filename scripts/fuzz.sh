#!/usr/bin/env bash
# Fuzzing (docs/fuzzing.md): builds the libFuzzer targets of tests/fuzz/ with clang into build-fuzz/
# (-DTUNE_FUZZ=ON: ASan + UBSan + libFuzzer), replays tests/fuzz/regressions/, then runs each
# target for SECONDS (default 60) on its seed corpus. Exits 1 when any target crashes, leaks, hangs
# or breaks one of its properties; the input is saved under build-fuzz/crashes/.
#
#   scripts/fuzz.sh [SECONDS]          every target (CI: scripts/fuzz.sh 60)
#   FUZZ_TARGETS="fuzz_expr" scripts/fuzz.sh 600
#   FUZZ_JOBS=4 scripts/fuzz.sh 3600   4 processes per target, sharing its corpus
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/quickstart.sh

seconds=${1:-60}
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "usage: scripts/fuzz.sh [SECONDS]" >&2; exit 2; }
targets=(${FUZZ_TARGETS:-fuzz_sweep fuzz_expr fuzz_jsonloc})
jobs=${FUZZ_JOBS:-1}
out=build-fuzz

# clang with the libFuzzer/sanitizer runtimes (libclang-rt-14-dev on Debian 12), and OpenMP for
# clang, which the project's configure step requires (libomp-dev).
probe_fuzzer() {
  printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return (int)(d && n); }\n' |
    clang -fsanitize=fuzzer,address,undefined -x c - -o /dev/null
}
probe_openmp() { printf 'int main(void) { return 0; }\n' | clang -fopenmp -x c - -o /dev/null; }
base_deps
need clang command -v clang
need libclang-rt-14-dev probe_fuzzer
need libomp-dev probe_openmp
install_missing
find_cuda

cmake -S . -B "$out" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTUNE_FUZZ=ON -DTUNE_BUILD_TESTS=OFF -DTUNE_SANITIZE=OFF >/dev/null
cmake --build "$out" -j "$(nproc)" --target "${targets[@]}"

# Seeds: the sweeps, the valid and invalid test sweeps, tests/fuzz/corpus/<target>/. For jsonloc,
# "<path>\n<text>" pairs: each invalid sweep with the path its .expected error names, and a few
# paths into every sweep.
seeds=$out/seeds
rm -rf "$seeds"
mkdir -p "$seeds"/{fuzz_sweep,fuzz_expr,fuzz_jsonloc} "$out/crashes"
cp sweeps/*.json tests/data/valid/*.json tests/data/invalid/*.json "$seeds/fuzz_sweep/"
n=0
for f in tests/data/invalid/*.json; do
  path=$(grep -o '\$[^:]*' "${f%.json}.expected" | head -n 1 || true)
  [ -n "$path" ] || continue
  { printf '%s\n' "$path"; cat "$f"; } >"$seeds/fuzz_jsonloc/invalid-$((n++))"
done
for f in sweeps/*.json tests/data/valid/*.json; do
  for path in '$' '$.name' '$.problem.g' '$.params.chunk.pow2[0]' '$.methods[1]' '$.skip_if[1]' \
    '$["problem"]["k_pre"]'; do
    { printf '%s\n' "$path"; cat "$f"; } >"$seeds/fuzz_jsonloc/valid-$((n++))"
  done
done
# expressions of the sweeps' skip_if, bytes and flops
python3 - "$seeds/fuzz_expr" sweeps/*.json tests/data/valid/*.json <<'PY' || true
import json, sys
n = 0
for path in sys.argv[2:]:
    try:
        sw = json.load(open(path))
    except Exception:
        continue
    exprs = sw.get("skip_if", [])
    exprs = [exprs] if isinstance(exprs, str) else list(exprs)
    exprs += [sw[k] for k in ("bytes", "flops") if isinstance(sw.get(k), str)]
    for e in exprs:
        if isinstance(e, str):
            open(f"{sys.argv[1]}/sweep-{n}", "w").write(e)
            n += 1
PY

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

failed=()
for t in "${targets[@]}"; do
  dict=tests/fuzz/dict/sweep.dict
  [ "$t" = fuzz_expr ] && dict=tests/fuzz/dict/expr.dict
  opts=(-max_len=4096 -rss_limit_mb=2048 -timeout=10 -dict="$dict"
        -artifact_prefix="$out/crashes/$t-" -print_final_stats=1)

  # every saved regression input first: these once crashed, they must not again
  regs=()
  while IFS= read -r -d '' f; do regs+=("$f"); done < <(find "tests/fuzz/regressions/$t" -type f \
    ! -name '*.md' -print0 2>/dev/null | sort -z)
  if [ ${#regs[@]} -gt 0 ]; then
    echo "== $t: ${#regs[@]} regression inputs"
    if ! "$out/$t" "${opts[@]}" "${regs[@]}" >"$out/$t.regressions.log" 2>&1; then
      tail -n 60 "$out/$t.regressions.log"
      echo "FAIL: $t crashes on a regression input (log: $out/$t.regressions.log)" >&2
      failed+=("$t (regressions)")
      continue
    fi
  fi

  echo "== $t: fuzzing for ${seconds}s"
  corpus=$out/corpus/$t
  mkdir -p "$corpus"
  seed_dirs=("$seeds/$t")
  [ -d "tests/fuzz/corpus/$t" ] && seed_dirs+=("tests/fuzz/corpus/$t")
  rc=0
  if [ "$jobs" -gt 1 ]; then
    "$out/$t" "${opts[@]}" -max_total_time="$seconds" -jobs="$jobs" -workers="$jobs" \
      "$corpus" "${seed_dirs[@]}" >"$out/$t.log" 2>&1 || rc=$?
    cat fuzz-*.log >>"$out/$t.log" 2>/dev/null && rm -f fuzz-*.log
  else
    "$out/$t" "${opts[@]}" -max_total_time="$seconds" "$corpus" "${seed_dirs[@]}" \
      >"$out/$t.log" 2>&1 || rc=$?
  fi
  grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$out/$t.log" || true
  if [ "$rc" -ne 0 ]; then
    tail -n 60 "$out/$t.log"
    echo "FAIL: $t exited $rc; inputs saved: $(ls "$out/crashes/$t-"* 2>/dev/null | tr '\n' ' ')" >&2
    echo "      reproduce with: $out/$t <input>; minimise with: $out/$t -minimize_crash=1 -runs=10000 <input>" >&2
    failed+=("$t")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "Fuzzing failed: ${failed[*]}" >&2
  exit 1
fi
echo "Fuzzing passed: ${targets[*]} (${seconds}s each)"
