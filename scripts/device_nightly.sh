#!/usr/bin/env bash
# A week of nights on a GPU machine, end to end: scripts/nightly.sh runs the sweep on the GPU on
# the first night and on the last two; the nights between are made from the first night's real
# run with the noise measured between real runs (scripts/synth_nights.py, imported with
# --from-results). Every night goes into one store, is judged against the window and rebuilds the
# dashboard. Logs, the nights' summaries, `tune history` of the store and a tarball of the
# dashboard go to $OUT (default /tmp/tune-out); printed last: each night's status and message.
#   scripts/device_nightly.sh [SWEEP.json] [FIRST_DAY]     (default sweeps/sparq.json, 2026-11-21)
set -u
source "$(dirname "$0")/device_env.sh"
export TUNE_CACHE_DIR=${TUNE_CACHE_DIR:-/tmp/tune-cache-$$}
sweep=${1:-sweeps/sparq.json}
first=${2:-2026-11-21}
id=$(basename "$sweep" .json)
root=$(mktemp -d)/root
db=$root/history.sqlite # its own store, whatever $TUNE_DB says
day() { date -u -d "$first + $1 days" +%F; }
log=$OUT/nightly.log
night() { # k [nightly options]
    local k=$1
    shift
    local t0 t1
    t0=$(date +%s.%N)
    scripts/nightly.sh --root "$root" --db "$db" --date "$(day "$k")" --no-plots "$@" "$sweep" >>"$log" 2>&1
    local rc=$?
    t1=$(date +%s.%N)
    echo "night $k $(day "$k"): exit $rc, $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") s, $*" | tee -a "$OUT/nights.txt"
}
night 0 # the GPU
python3 scripts/synth_nights.py make "$root/nightly/$(day 0)/$id" "$root/synthetic" --nights 4 \
    --first "$(day 1)" --noise tests/data/history/noise_w4a16_h200.json --seed 1 >>"$log" 2>&1
for k in 1 2 3 4; do night "$k" --from-results "$root/synthetic/$(day "$k")"; done
night 5 # the GPU
night 6 # the GPU
build/tune history --db "$db" >"$OUT/history.md" 2>&1
for k in 0 1 2 3 4 5 6; do
    { echo "== $(day "$k")"; cat "$root/nightly/$(day "$k")/$id/nightly.txt"; } >>"$OUT/nightly-txt.txt" 2>&1
done
cp "$root/nightly/index.md" "$OUT/index.md" 2>/dev/null
tar czf "$OUT/dashboard.tgz" -C "$root/nightly" dashboard index.md index.json \
    $(cd "$root/nightly" && ls -d */"$id"/history.md */summary.md 2>/dev/null) 2>>"$log"
ls -la "$db" >>"$OUT/nights.txt"
cat "$OUT/nights.txt"
cat "$OUT/nightly-txt.txt"
