#!/usr/bin/env bash
# SIGTERM and SIGINT while tune compiles (no GPU): `tune compile` of a sweep of many kernels into a
# fresh cache, and `tune SWEEP --compile-only --out DIR` (which writes rows and resumes like a
# measured run), stopped at a few moments: while NVRTC compiles (by the clock), in the middle of a
# cache entry's write, of a row's, of the tables' (an LD_PRELOAD shim, tests/probes/signal_probe.c,
# signals tune there and slows the write down). Each stop must exit 128 + the signal (130, 143),
# leave no temporary or partial file in the cache or the run folder (no lock, no row cut short);
# a second compile must be right (its kernels the same as a compile into an empty cache), and
# --resume of the compile-only run must finish with every configuration once.
# Needs a C compiler for the shim and a way to start tune with SIGINT not ignored (a background
# job of a shell without job control ignores it): exit 77 = skip without them.
#   tests/test_interrupt.sh build/tune
set -u
TUNE=${1:-build/tune}
cd "$(dirname "$0")/.."
SWEEP=sweeps/sparq.json # 41 kernels: a few seconds of NVRTC on two cores
CC=${CC:-cc}
command -v "$CC" >/dev/null || { echo "skipped: no C compiler"; exit 77; }
if env --default-signal=INT true 2>/dev/null; then
    dflt=(env --default-signal=INT,TERM)
elif command -v perl >/dev/null; then
    dflt=(perl -e '$SIG{INT} = $SIG{TERM} = "DEFAULT"; exec @ARGV or die "exec: $!"' --)
else
    echo "skipped: neither env --default-signal nor perl to start tune with SIGINT at its default"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$CC" -shared -fPIC -o "$tmp/probe.so" tests/probes/signal_probe.c -ldl || exit 1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# Nothing but whole cache entries (<32 hex digits>.bin) in the cache folder.
check_cache() { # what cache
    local extra
    extra=$(ls -A "$2" 2>/dev/null | grep -Ev '^[0-9a-f]{32}\.bin$')
    [ -z "$extra" ] || bad "$1: the cache holds files that are not whole entries: $extra"
}
# No temporary file, no lock, and every line of the rows whole (valid JSON, newline-ended).
check_run() { # what dir
    [ -d "$2" ] || return 0 # stopped before the folder was made
    local extra
    extra=$(ls -A "$2" | grep -Ev '^(meta\.json|raw\.jsonl|best\.(md|csv|json))$')
    [ -z "$extra" ] || bad "$1: the run folder holds $extra"
    if [ -s "$2/raw.jsonl" ]; then
        [ "$(tail -c 1 "$2/raw.jsonl" | od -An -c | tr -d ' ')" = '\n' ] ||
            bad "$1: raw.jsonl ends with a row cut short"
        jq -e . "$2/raw.jsonl" >/dev/null 2>&1 || bad "$1: raw.jsonl holds a line that is not JSON"
    fi
    [ ! -e "$2/meta.json" ] || jq -e . "$2/meta.json" >/dev/null 2>&1 ||
        bad "$1: meta.json is not whole"
}
# The exit status of a stop by signal number sig: 128 + sig (or 0 when, by the clock, tune ended
# before the signal came).
check_rc() { # what rc sig probe|clock
    local want=$((128 + $3))
    [ "$2" -eq "$want" ] && return
    [ "$4" = clock ] && [ "$2" -eq 0 ] && return
    bad "$1: exit status $2, expected $want:"
    cat "$tmp/err"
}
# tune with the shim, signalled at the probe's moment: call match at sig.
probed() { # call match at sig -- tune args
    local call=$1 match=$2 at=$3 sig=$4
    shift 5
    rm -f "$tmp/fired"
    SIGNAL_PROBE_CALL=$call SIGNAL_PROBE_MATCH=$match SIGNAL_PROBE_AT=$at SIGNAL_PROBE_SIG=$sig \
        SIGNAL_PROBE_OUT="$tmp/fired" LD_PRELOAD="$tmp/probe.so" "${dflt[@]}" "$TUNE" "$@" \
        >/dev/null 2>"$tmp/err"
}
# tune signalled by the clock, after secs seconds.
clocked() { # secs sig -- tune args
    local secs=$1 sig=$2
    shift 3
    "${dflt[@]}" "$TUNE" "$@" >/dev/null 2>"$tmp/err" &
    local pid=$!
    sleep "$secs"
    kill -"$sig" "$pid" 2>/dev/null
    wait "$pid"
}
command -v jq >/dev/null || { echo "skipped: no jq"; exit 77; }

# 1. tune compile into a fresh cache, stopped mid-entry (two moments), then by the clock
cache=$tmp/cache
for spec in "3 15" "9 2"; do
    set -- $spec
    probed rename .bin "$1" "$2" -- compile "$SWEEP" --cache "$cache"
    rc=$?
    [ -s "$tmp/fired" ] || bad "compile: the probe never fired at entry $1 (exit $rc)"
    check_rc "compile stopped at entry $1 by signal $2" $rc "$2" probe
    check_cache "compile stopped at entry $1 by signal $2" "$cache"
done
for spec in "0.3 TERM 15" "1.0 INT 2"; do
    set -- $spec
    clocked "$1" "$2" -- compile "$SWEEP" --cache "$cache"
    check_rc "compile stopped after $1 s by SIG$2" $? "$3" clock
    check_cache "compile stopped after $1 s by SIG$2" "$cache"
done
# an entry cut short by someone else is a miss, never a kernel
first=$(ls "$cache" | head -n 1)
if [ -n "$first" ]; then
    head -c 100 "$cache/$first" >"$cache/$first.cut" && mv "$cache/$first.cut" "$cache/$first"
fi
"$TUNE" compile "$SWEEP" --cache "$cache" --quiet >"$tmp/out" 2>&1 ||
    { bad "the second compile failed:"; cat "$tmp/out"; }
check_cache "the second compile" "$cache"

# 2. the kernels of the interrupted cache are those of a compile into an empty one: the run key's
# kernels_hash covers every cubin
"$TUNE" "$SWEEP" --compile-only --cache "$cache" --out "$tmp/ref_cached" --quiet >/dev/null 2>&1
"$TUNE" "$SWEEP" --compile-only --no-cache --out "$tmp/ref_fresh" --quiet >/dev/null 2>&1
h1=$(jq -r .key.kernels_hash "$tmp/ref_cached/meta.json" 2>/dev/null)
h2=$(jq -r .key.kernels_hash "$tmp/ref_fresh/meta.json" 2>/dev/null)
[ -n "$h1" ] && [ "$h1" != null ] && [ "$h1" = "$h2" ] ||
    bad "the kernels of the interrupted cache differ from a fresh compile's ($h1 vs $h2)"
n_configs=$(wc -l <"$tmp/ref_fresh/raw.jsonl")

# 3. tune SWEEP --compile-only --out DIR stopped while it compiles (a fresh cache), in the middle
# of a row (the warm cache), of the tables; each then resumed
resume_check() { # what dir cache
    "$TUNE" "$SWEEP" --compile-only --cache "$3" --out "$2" --resume --quiet >"$tmp/out" 2>&1 ||
        { bad "$1: --resume failed:"; cat "$tmp/out"; return; }
    check_run "$1, resumed" "$2"
    local rows distinct
    rows=$(wc -l <"$2/raw.jsonl")
    distinct=$(sed 's/"timestamp":"[^"]*",//' "$2/raw.jsonl" | sort -u | wc -l)
    [ "$rows" -eq "$n_configs" ] && [ "$distinct" -eq "$n_configs" ] ||
        bad "$1, resumed: $rows rows, $distinct distinct, expected $n_configs once each"
}
run=$tmp/run_compiling
probed rename .bin 5 15 -- "$SWEEP" --compile-only --cache "$tmp/cache2" --out "$run"
rc=$?
[ -s "$tmp/fired" ] || bad "compile-only: the probe never fired (exit $rc)"
check_rc "compile-only stopped while compiling" $rc 15 probe
check_cache "compile-only stopped while compiling" "$tmp/cache2"
check_run "compile-only stopped while compiling" "$run"
resume_check "compile-only stopped while compiling" "$run" "$tmp/cache2"
check_cache "compile-only resumed" "$tmp/cache2"

for spec in "write /raw.jsonl 200 2" "write /raw.jsonl 700 15" "rename /best.md 1 15" \
    "rename /meta.json 1 2"; do
    set -- $spec
    run=$tmp/run_${1}_${3}_${4}
    probed "$1" "$2" "$3" "$4" -- "$SWEEP" --compile-only --cache "$cache" --out "$run"
    rc=$?
    [ -s "$tmp/fired" ] || bad "compile-only ($spec): the probe never fired (exit $rc)"
    check_rc "compile-only stopped at $spec" $rc "$4" probe
    check_run "compile-only stopped at $spec" "$run"
    resume_check "compile-only stopped at $spec" "$run" "$cache"
done
# by the clock, into a fresh cache
run=$tmp/run_clock
clocked 0.5 INT -- "$SWEEP" --compile-only --cache "$tmp/cache3" --out "$run"
check_rc "compile-only stopped after 0.5 s by SIGINT" $? 2 clock
check_cache "compile-only stopped after 0.5 s by SIGINT" "$tmp/cache3"
check_run "compile-only stopped after 0.5 s by SIGINT" "$run"
resume_check "compile-only stopped after 0.5 s by SIGINT" "$run" "$tmp/cache3"

[ $fail -eq 0 ] && echo "test_interrupt: ok"
exit $fail
