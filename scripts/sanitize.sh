#!/usr/bin/env bash
# The whole test suite under AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer
# (docs/fuzzing.md): installs missing dependencies as scripts/test.sh does, builds into build-asan/
# with -DTUNE_SANITIZE=ON (UB aborts: -fno-sanitize-recover=undefined), checks that no binary needs
# libcuda.so.1 at load time (they must start without a driver, like the normal build), and runs
# ctest. Tests that need a GPU skip themselves without one.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/quickstart.sh

base_deps
need libcriterion-dev pkg-config --exists criterion
need python3-matplotlib /usr/bin/python3 -c "import matplotlib"
need python3-pandas /usr/bin/python3 -c "import pandas"
install_missing
find_cuda

out=build-asan
cmake -S . -B "$out" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTUNE_BUILD_TESTS=ON -DTUNE_SANITIZE=ON
cmake --build "$out" -j "$(nproc)"

# cudart is static and dlopens the driver: no binary may record libcuda.so.1 as DT_NEEDED.
bad=()
for bin in "$out"/tune "$out"/test_*; do
  [ -x "$bin" ] && [ -f "$bin" ] || continue
  readelf -d "$bin" | grep -q 'NEEDED.*\[libcuda\.so' && bad+=("$bin")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "FAIL: these binaries need libcuda.so at load time (no driver, no start): ${bad[*]}" >&2
  exit 1
fi

# protect_shadow_gap=0: the CUDA driver maps memory where ASan's shadow gap would be (without it,
# cudaMalloc fails on GPU machines). Leaks inside the CUDA libraries and Criterion are suppressed
# (tests/fuzz/lsan.supp); tune's own leaks are not.
export ASAN_OPTIONS=${ASAN_OPTIONS:-protect_shadow_gap=0:detect_leaks=1:check_initialization_order=1:strict_string_checks=1:detect_stack_use_after_return=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/fuzz/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Tests that crash a child process on purpose and check how it died (the worker's crash isolation)
# need the signal itself: ASan would catch the SIGSEGV, report it and exit 1 instead.
signal_tests=${TUNE_SANITIZE_SIGNAL_TESTS:-test_worker}
regex="^($(echo "$signal_tests" | tr ' ' '|'))\$"
rc=0
ctest --test-dir "$out" --output-on-failure -j "$(nproc)" -E "$regex" || rc=$?
cp "$out/Testing/Temporary/LastTest.log" "$out/Testing/Temporary/LastTest.main.log" 2>/dev/null || true
if ctest --test-dir "$out" -N -R "$regex" | grep -q 'Test *#'; then
  ASAN_OPTIONS="$ASAN_OPTIONS:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0" \
    ctest --test-dir "$out" --output-on-failure -R "$regex" || rc=$?
fi
skips=$(grep -h '^\[SKIP\]' "$out"/Testing/Temporary/LastTest*.log 2>/dev/null | sort -u || true)
if [ -n "$skips" ]; then
  echo "Skipped tests:"
  echo "$skips"
fi
[ "$rc" -eq 0 ] && echo "Sanitized test suite passed (ASan, LSan, UBSan)."
exit "$rc"
