#!/usr/bin/env bash
# scripts/nightly.sh without a GPU (--from-results imports runs), nights in a temporary root: ten
# nights made from a committed run (scripts/synth_nights.py), each added to the store and judged
# against the window: the first has nothing to compare with; honest nights pass; a planted step is
# not flagged on its first night and is on its second (exit 1, each series named); a driver
# change is annotated, not flagged; a night does not run twice without --force; a config file
# with two sweeps; the dated folders, summary.md, index.md, index.json and the dashboard; relative
# paths of the caller's; an import that tune refuses (a damaged .gz) fails the night; an
# impossible --date is refused. Also tune compare's exit statuses on the hand-made pair of
# tests/data/compare.
# usage: tests/test_nightly.sh path/to/tune. Exit 0 pass, 1 fail, 77 skipped (no python3, which
# makes the injected copies).
set -u
cd "$(dirname "$0")/.."
tune=$(realpath "${1:?usage: tests/test_nightly.sh path/to/tune}")
command -v python3 >/dev/null || { echo "skipped: no python3"; exit 77; }
tmp=$(mktemp -d)
unset TUNE_DB # each night's store is the root's (ROOT/history.sqlite)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
fail=0
SPARQ=tests/data/runs/sparq_h200

check() { # description command...
    local what=$1; shift
    if ! "$@"; then echo "FAIL: $what"; fail=1; fi
}

nightly() { # expected-exit args...
    local want=$1; shift
    scripts/nightly.sh --root "$root" --tune "$tune" "$@" >"$tmp/out.log" 2>&1
    local rc=$?
    if [ $rc -ne "$want" ]; then
        echo "FAIL: nightly.sh $* exited $rc, expected $want:"; cat "$tmp/out.log"; fail=1
    fi
}

field() { sed -n "s/^$2=//p" "$1" | head -n 1; }

# Ten nights made from the first committed run (scripts/synth_nights.py): quiet noise (0.2 %), a
# 6 % step on a tenth of the series from night 6, a driver change with a 10 % step on every
# series at night 8.
python3 scripts/synth_nights.py make "$SPARQ" "$tmp/syn" --nights 9 --first 2026-11-20 \
    --noise-pct 0.2 --row-noise-pct 0.05 --step 6:6:0.1 --driver 8:590.10 --driver-step 10 --seed 4 ||
    { echo "FAIL: synth_nights.py"; exit 1; }
night_of() { date -u -d "2026-11-20 + $1 days" +%F; }

# night 0: nothing to compare with
nightly 0 --date "$(night_of 0)" --from-results "$tmp/syn/$(night_of 0)" --no-plots sparq
n0=$root/nightly/$(night_of 0)/sparq
check "night 0 imported" test -s "$n0/raw.jsonl" -a -s "$n0/meta.json" -a -s "$n0/best.md"
check "night 0 status first" test "$(field "$n0/nightly.txt" status)" = first
check "night 0 has no compare" test ! -e "$n0/compare.md"
check "night 0 in the store" test -s "$root/history.sqlite"
check "night 0 history.md" grep -q '^same 0, regression 0, improvement 0, unstable 0, insufficient 108, missing 0$' "$n0/history.md"

# nights 1-5: honest; plots on night 1 when matplotlib is there
nightly 0 --date "$(night_of 1)" --from-results "$tmp/syn/$(night_of 1)" sparq
n1=$root/nightly/$(night_of 1)/sparq
check "night 1 status ok" test "$(field "$n1/nightly.txt" status)" = ok
check "night 1 baseline" test "$(field "$n1/nightly.txt" baseline)" = "$(night_of 0)"
check "night 1 compare.md (a detail)" test -s "$n1/compare.md"
check "night 1 compare recorded" test "$(field "$n1/nightly.txt" compare)" = ok
if python3 -c 'import matplotlib, pandas' 2>/dev/null || /usr/bin/python3 -c 'import matplotlib, pandas' 2>/dev/null; then
    check "night 1 plots" test -s "$n1/bw_vs_chunk.png" -a -s "$n1/best_chunk.svg"
    check "night 1 summary links plots" grep -q 'sparq/bw_vs_chunk.png' "$root/nightly/$(night_of 1)/summary.md"
else
    echo "note: no matplotlib, plots not checked"
fi
for k in 2 3 4 5; do
    nightly 0 --date "$(night_of $k)" --from-results "$tmp/syn/$(night_of $k)" --no-plots sparq
done
n5=$root/nightly/$(night_of 5)/sparq
check "night 5 judged: all the same" grep -q '^same 108, regression 0,' "$n5/history.md"

# the same night again: refused without --force
nightly 2 --date "$(night_of 5)" --from-results "$tmp/syn/$(night_of 5)" --no-plots sparq
check "re-run refused" grep -q 'exists' "$tmp/out.log"

# night 6: the step's first night is not yet a regression (two nights in a row are); night 7 is
python3 -c '
import json, sys
for s in json.load(open(sys.argv[1]))["steps"][0]["series"]:
    shape, method = s.rsplit("|", 1)
    print("| %s | %s | regression |" % (shape, method))
' "$tmp/syn/truth.json" >"$tmp/planted"
planted=$(wc -l <"$tmp/planted")
nightly 0 --date "$(night_of 6)" --from-results "$tmp/syn/$(night_of 6)" --no-plots sparq
n6=$root/nightly/$(night_of 6)/sparq
check "night 6 status ok" test "$(field "$n6/nightly.txt" status)" = ok
nightly 1 --date "$(night_of 7)" --from-results "$tmp/syn/$(night_of 7)" --no-plots sparq
n7=$root/nightly/$(night_of 7)/sparq
check "night 7 status regression" test "$(field "$n7/nightly.txt" status)" = regression
check "night 7 regression count ($planted planted)" test "$(field "$n7/nightly.txt" regressions)" = "$planted"
while IFS= read -r line; do
    check "night 7 names '$line'" grep -qF "$line" "$n7/history.md"
done <"$tmp/planted"
check "night 7 summary" grep -q "| sparq | regression | $planted | $(night_of 6) |" "$root/nightly/$(night_of 7)/summary.md"

# night 8: another driver and every series 10 % slower: a new segment, annotated, not flagged;
# the previous-night compare refuses the driver change, a detail noted
nightly 0 --date "$(night_of 8)" --from-results "$tmp/syn/$(night_of 8)" --no-plots sparq
n8=$root/nightly/$(night_of 8)/sparq
check "night 8 status ok" test "$(field "$n8/nightly.txt" status)" = ok
check "night 8 names the driver change" grep -q 'a new segment: driver 580.159.04 → 590.10' "$n8/nightly.txt"
check "night 8 compare refused, noted" test "$(field "$n8/nightly.txt" compare)" = mismatch
check "night 8 not judged across the change" grep -q '^same 0, regression 0, improvement 0, unstable 0, insufficient 108, missing 0$' "$n8/history.md"

# night 9: a config file with two sweeps, imported from a results root
mkdir -p "$tmp/import/sparq" "$tmp/import/mini/20261126T000000Z"
cp -r "$tmp/syn/$(night_of 8)" "$tmp/import/sparq/20261129T000000Z"
cp tests/data/compare/base/* "$tmp/import/mini/20261126T000000Z/"
# the hand-made run as a finished one (a start and an end), which the store takes
python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
m.update(start="2026-11-29T01:00:00Z", end="2026-11-29T01:10:00Z")
json.dump(m, open(sys.argv[1], "w"), indent=1)
' "$tmp/import/mini/20261126T000000Z/meta.json"
printf '%s\n' '# the nightly sweeps' 'threshold = 3' 'window = 7' 'plots = no' \
    'allow_mismatch = kernels,tool,driver' 'sweeps/sparq.json' \
    'mini   # the hand-made sweep of tests/data/compare' >"$tmp/nightly.conf"
nightly 0 --date 2026-11-29 --config "$tmp/nightly.conf" --from-results "$tmp/import"
check "night 9 sparq ok" test "$(field "$root/nightly/2026-11-29/sparq/nightly.txt" status)" = ok
check "night 9 mini first" test "$(field "$root/nightly/2026-11-29/mini/nightly.txt" status)" = first
check "night 9 sparq compared with night 8" test "$(field "$root/nightly/2026-11-29/sparq/nightly.txt" baseline)" = "$(night_of 8)"

# the dashboard of the store
check "dashboard rebuilt" test -s "$root/nightly/dashboard/index.html"

# the index: every night, newest first, with its status
idx=$root/nightly/index.md
check "index.md lists nights newest first" test "$(grep -o '^| \[20[0-9-]*\]' "$idx" | tr -d '|[] ' | tr '\n' ' ')" = "2026-11-29 2026-11-28 2026-11-27 2026-11-26 2026-11-25 2026-11-24 2026-11-23 2026-11-22 2026-11-21 2026-11-20 "
check "index.md night 7" grep -q "^| \[2026-11-27\](2026-11-27/summary.md) | regression | $planted |" "$idx"
check "index.md night 9" grep -q '^| \[2026-11-29\](2026-11-29/summary.md) | ok | 0 | \[mini\](2026-11-29/mini/) first, \[sparq\](2026-11-29/sparq/) ok |' "$idx"
check "index.json" python3 -c '
import json, sys
nights = json.load(open(sys.argv[1]))["nights"]
planted = int(sys.argv[2])
got = [(n["date"], n["status"], n["regressions"]) for n in nights]
want = [("2026-11-29", "ok", 0), ("2026-11-28", "ok", 0), ("2026-11-27", "regression", planted),
        ("2026-11-26", "ok", 0), ("2026-11-25", "ok", 0), ("2026-11-24", "ok", 0),
        ("2026-11-23", "ok", 0), ("2026-11-22", "ok", 0), ("2026-11-21", "ok", 0),
        ("2026-11-20", "first", 0)]
assert got == want, got
assert [s["sweep"] for s in nights[0]["sweeps"]] == ["mini", "sparq"], nights[0]
assert nights[2]["sweeps"][0]["baseline"] == "2026-11-26", nights[2]
' "$root/nightly/index.json" "$planted"

# values read from an old night's files are data, never evaluated: a crafted nightly.txt runs
# nothing and is an error of the night (exit 2), not a regression (exit 1)
hostile=$tmp/hostile
# a root whose night of 2026-11-20 left the nightly.txt that printf's arguments write; nightly.sh
# run over it (rc, out.log)
hostile_night() {
    rm -rf "$hostile"; mkdir -p "$hostile/nightly/2026-11-20/sparq"
    printf "$@" >"$hostile/nightly/2026-11-20/sparq/nightly.txt"
    scripts/nightly.sh --root "$hostile" --tune "$tune" --date 2026-11-21 --from-results "$SPARQ" \
        --no-plots sparq >"$tmp/out.log" 2>&1
    rc=$?
}
for bad in 'a[$(touch '"$tmp"'/pwned)]' 'x[$(touch '"$tmp"'/pwned2)]+1' '1+1' '-1' '99999999999999999999' '0x10' ' 3'; do
    hostile_night 'status=regression\nregressions=%s\nbaseline=none\nmessage=x\n' "$bad"
    check "crafted regressions='$bad': exit 2 (got $rc)" test $rc -eq 2
    check "crafted regressions='$bad': named as malformed" grep -q "malformed regressions" "$tmp/out.log"
done
check "a crafted nightly.txt ran no command" test ! -e "$tmp/pwned" -a ! -e "$tmp/pwned2"
for kv in 'status=$(touch '"$tmp"'/pwned3)' 'baseline=x"}]' ; do
    # the crafted line first, so that it is the one read
    hostile_night '%s\nstatus=ok\nregressions=0\nbaseline=none\n%s\n' "$kv" "$kv"
    check "crafted '$kv': exit 2 (got $rc)" test $rc -eq 2
    check "crafted '$kv': index.json stays JSON" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$hostile/nightly/index.json"
done
check "a crafted status ran no command" test ! -e "$tmp/pwned3"
for bad in abc nan -1 '1; touch x' ''; do
    scripts/nightly.sh --root "$tmp/thr" --tune "$tune" --threshold "$bad" --from-results "$SPARQ" sparq >"$tmp/out.log" 2>&1
    rc=$?
    check "--threshold '$bad': exit 2" test $rc -eq 2
    check "--threshold '$bad': named" grep -q -- "--threshold expects" "$tmp/out.log"
done

# relative paths on the command line are the caller's, not the checkout's (the script moves to
# its checkout): a night run from another folder with a relative --root, --from-results,
# --config, --tune and --db
repo=$PWD cw=$tmp/caller
mkdir -p "$cw/runs"
cp -r "$tmp/syn/$(night_of 0)" "$cw/runs/sparq"
printf '%s\n' 'plots = no' 'sparq' >"$cw/my.conf"
reltune=$(realpath --relative-to="$cw" "$tune")
(cd "$cw" && "$repo/scripts/nightly.sh" --root rel --from-results runs --config my.conf \
    --tune "$reltune" --db store.sqlite --date 2026-12-01) >"$tmp/out.log" 2>&1
rc=$?
check "relative paths: exit 0 (got $rc)" test $rc -eq 0
check "relative --root: the night in the caller's folder" test -s "$cw/rel/nightly/2026-12-01/sparq/raw.jsonl"
check "relative --db: the store in the caller's folder" test -s "$cw/store.sqlite"
check "relative --db: no default store in the root" test ! -e "$cw/rel/history.sqlite"
check "relative paths: nothing written into the checkout" test ! -e rel -a ! -e store.sqlite
# a relative sweep file of the caller's, and $TUNE_DB relative to the caller too
(cd "$cw" && TUNE_DB=env.sqlite "$repo/scripts/nightly.sh" --root rel --from-results runs/sparq \
    --tune "$tune" --no-plots --date 2026-12-02 sparq) >"$tmp/out.log" 2>&1
check "relative \$TUNE_DB: the store in the caller's folder" test -s "$cw/env.sqlite"

# --from-results refuses what tune refuses (and a .gz that is not whole): the night fails (exit
# 2) and imports nothing
bad_import() { # what file-to-damage how
    rm -rf "$tmp/bad" "$tmp/badroot"
    cp -r "$SPARQ" "$tmp/bad"
    local f=$tmp/bad/$2
    case $3 in
        truncate) sz=$(stat -c %s "$f"); head -c $((sz / 2)) "$f" >"$f.cut"; mv "$f.cut" "$f" ;;
        flip) python3 -c '
import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[len(b) // 2] ^= 0xFF
open(sys.argv[1], "wb").write(b)' "$f" ;;
        gzip-truncate) gzip -9n "$f"; f=$f.gz; sz=$(stat -c %s "$f"); head -c $((sz / 2)) "$f" >"$f.cut"; mv "$f.cut" "$f" ;;
        gzip-flip) gzip -9n "$f"; python3 -c '
import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[len(b) // 2] ^= 0xFF
open(sys.argv[1], "wb").write(b)' "$f.gz" ;;
    esac
    scripts/nightly.sh --root "$tmp/badroot" --tune "$tune" --from-results "$tmp/bad" --no-plots \
        --date 2026-12-03 sparq >"$tmp/out.log" 2>&1
    rc=$?
    local n=$tmp/badroot/nightly/2026-12-03/sparq
    check "$1: exit 2 (got $rc)" test $rc -eq 2
    check "$1: the night failed" test "$(field "$n/nightly.txt" status)" = failed
    check "$1: nothing imported" test ! -e "$n/raw.jsonl" -a ! -e "$n/meta.json" -a ! -e "$n/best.md"
}
bad_import "a truncated raw.jsonl.gz" raw.jsonl.gz truncate
bad_import "a corrupt raw.jsonl.gz" raw.jsonl.gz flip
bad_import "a corrupt retime.jsonl.gz" retime.jsonl gzip-flip
bad_import "a truncated heuristics.json.gz" heuristics.json gzip-truncate
bad_import "a truncated meta.json.gz" meta.json gzip-truncate
# an impossible --date
for d in 2026-99-99 2026-02-30 26-12-01; do
    scripts/nightly.sh --root "$tmp/dates" --tune "$tune" --from-results "$SPARQ" --date "$d" sparq >"$tmp/out.log" 2>&1
    rc=$?
    check "--date $d: exit 2 (got $rc)" test $rc -eq 2
    check "--date $d: named" grep -q -- "--date expects" "$tmp/out.log"
done
check "no night made for an impossible --date" test ! -e "$tmp/dates"

# tune compare's exit statuses on the hand-made pair
T=tests/data/compare
cp -r $T/new "$tmp/new"
"$tune" compare $T/base "$tmp/new" --quiet 2>"$tmp/err"; rc=$?
check "compare base new: exit 1" test $rc -eq 1
check "compare never writes into the folders it reads" test ! -e "$tmp/new/compare.md" -a ! -e "$tmp/new/compare.json"
check "compare leaves NEW as it was" diff -r $T/new "$tmp/new"
"$tune" compare $T/base "$tmp/new" --quiet --threshold 35 --out "$tmp/o" 2>"$tmp/err"; rc=$?
check "threshold 35: the broken configuration still fails" test $rc -eq 1
"$tune" compare $T/base $T/base --quiet --out "$tmp/o" 2>"$tmp/err"; rc=$?
check "compare base base: exit 0" test $rc -eq 0
"$tune" compare $T/base $T/other_gpu --quiet --out "$tmp/o2" 2>"$tmp/err"; rc=$?
check "compare with another GPU: exit 2" test $rc -eq 2
check "the refusal names what differs" grep -q 'differ in GPU (NVIDIA H200 vs NVIDIA H100 80GB HBM3), driver (580.159.04 vs 575.57.08)' "$tmp/err"
check "the refusal writes nothing" test ! -e "$tmp/o2/compare.md"
"$tune" compare $T/base $T/other_gpu --quiet --out "$tmp/o" --allow-mismatch 2>"$tmp/err"; rc=$?
check "--allow-mismatch: exit 0" test $rc -eq 0
"$tune" compare $T/base --quiet 2>"$tmp/err"; rc=$?
check "one folder: exit 2" test $rc -eq 2
"$tune" compare $T/base $T/nope --quiet 2>"$tmp/err"; rc=$?
check "missing folder: exit 2" test $rc -eq 2
"$tune" compare --base $T/base --new $T/new $T/other_gpu --allow-mismatch --quiet --out "$tmp/o" 2>"$tmp/err"; rc=$?
check "--base/--new with two NEW folders: exit 0" test $rc -eq 0

if [ $fail -ne 0 ]; then
    exit 1
fi
echo "ok: nightly nights, summaries, index and tune compare's exit statuses checked"
