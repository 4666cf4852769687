#!/usr/bin/env bash
# A run holds its results folder's lock for its whole life: still held when it writes its last
# tables (best.md), so that a second run on the same --out cannot start while the first is
# writing. An LD_PRELOAD shim (tests/probes/lock_probe.c) looks at the lock at the moment best.md
# is renamed into place. Needs a C compiler (exit 77 = skip without one).
#   tests/test_lock.sh build/tune
set -u
TUNE=${1:-build/tune}
cd "$(dirname "$0")/.."
CC=${CC:-cc}
command -v "$CC" >/dev/null || { echo "skipped: no C compiler"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$CC" -shared -fPIC -o "$tmp/probe.so" tests/probes/lock_probe.c -ldl || exit 1
# an ASan build wants its runtime first among the preloaded libraries: the shim comes first here
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
fail=0
LD_PRELOAD="$tmp/probe.so" LOCK_PROBE_OUT="$tmp/probe.txt" \
    "$TUNE" tests/data/valid/minimal.json --compile-only --out "$tmp/run" --cache "$tmp/cache" \
    --quiet >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: the compile-only run exited $rc:"; cat "$tmp/out"; fail=1; }
if [ ! -s "$tmp/probe.txt" ]; then
    echo "FAIL: the run wrote no best.md through rename (the probe saw nothing)"
    fail=1
elif grep -qv '^locked$' "$tmp/probe.txt"; then
    echo "FAIL: best.md was written after the results folder's lock was released:"
    cat "$tmp/probe.txt"
    fail=1
fi
[ $fail -eq 0 ] && echo "test_lock: ok ($(wc -l <"$tmp/probe.txt") best.md written under the lock)"
exit $fail
