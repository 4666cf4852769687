#!/usr/bin/env bash
# scripts/nightly.sh without a GPU (--from-results imports committed runs), nights in a temporary
# root: the first night has nothing to compare with; an honest second run of the sweep passes; a
# copy with injected regressions fails with exit 1 and names them; a driver change is refused
# (exit 2) unless allowed; a night does not run twice without --force; a config file with two
# sweeps; the dated folders, summary.md, index.md and index.json. Also tune compare's exit
# statuses on the hand-made pair of tests/data/compare.
# usage: tests/test_nightly.sh path/to/tune. Exit 0 pass, 1 fail, 77 skipped (no python3, which
# makes the injected copies).
set -u
cd "$(dirname "$0")/.."
tune=$(realpath "${1:?usage: tests/test_nightly.sh path/to/tune}")
command -v python3 >/dev/null || { echo "skipped: no python3"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
fail=0
SPARQ=tests/data/runs/sparq_h200
RESUMED=tests/data/runs/sparq_h200_resumed

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

# copies of the second committed run: slowed (3 configurations +20 %, a winner +30 %, one
# invalid) and with another driver in meta.json. (Copies of the first run would also differ from
# night 2 on three configurations that run to run move by 5-6.5 %: docs/compare.md.)
python3 - "$RESUMED" "$tmp/injected" "$tmp/driver" <<'EOF'
import gzip, json, os, sys, shutil
src, inj, drv = sys.argv[1:4]
raw = src + "/raw.jsonl"  # committed gzipped: raw.jsonl.gz
gz = os.path.exists(raw + ".gz")
times = ["time_median", "time_mean", "time_min", "time_max", "time_stdev", "time_stderr",
         "time_p10", "time_p90"]
slow = {(256, 1024, 64, 1, 256, 1, 0): 1.2, (4096, 1024, 128, 64, 128, 1, 0): 1.2,
        (4096, 4096, 64, 8, 256, 1, 0): 1.2, (1024, 4096, 512, 128, 128, 1, 4): 1.3}
broken = (4096, 16384, 512, 128, 128, 1, 0)
os.makedirs(inj); os.makedirs(drv)
with (gzip.open(raw + ".gz", "rt") if gz else open(raw)) as f, open(inj + "/raw.jsonl", "w") as out:
    for line in f:
        r = json.loads(line)
        key = tuple(r.get(k) for k in ("g", "k_pre", "k", "chunk", "threads", "unroll", "stages"))
        if r["method"] == "custom" and key in slow:
            for t in times: r[t] *= slow[key]
        if r["method"] == "custom" and key == broken:
            r.update({t: None for t in times}); r.update(status="invalid", reason="wrong", time_n=0)
        out.write(json.dumps(r) + "\n")
shutil.copy(src + "/meta.json", inj)
shutil.copy(raw + ".gz" if gz else raw, drv)  # the driver's night is imported from a .gz
meta = json.load(open(src + "/meta.json"))
meta["versions"]["driver"] = meta["key"]["driver"] = "575.57.08"
json.dump(meta, open(drv + "/meta.json", "w"), indent=2)
EOF

# night 1: nothing to compare with
nightly 0 --date 2026-11-22 --from-results "$SPARQ" --no-plots sparq
n1=$root/nightly/2026-11-22/sparq
check "night 1 imported" test -s "$n1/raw.jsonl" -a -s "$n1/meta.json" -a -s "$n1/best.md"
check "night 1 status first" test "$(field "$n1/nightly.txt" status)" = first
check "night 1 has no compare" test ! -e "$n1/compare.md"

# night 2: an honest second run; plots when matplotlib is there
nightly 0 --date 2026-11-23 --from-results "$RESUMED" sparq
n2=$root/nightly/2026-11-23/sparq
check "night 2 status ok" test "$(field "$n2/nightly.txt" status)" = ok
check "night 2 baseline" test "$(field "$n2/nightly.txt" baseline)" = 2026-11-22
check "night 2 compare.md" grep -q '^\*\*No regression beyond 5.0 %.\*\*' "$n2/compare.md"
check "night 2 compare.json" grep -q '"regression": false' "$n2/compare.json"
if python3 -c 'import matplotlib, pandas' 2>/dev/null || /usr/bin/python3 -c 'import matplotlib, pandas' 2>/dev/null; then
    check "night 2 plots" test -s "$n2/bw_vs_chunk.png" -a -s "$n2/best_chunk.svg"
    check "night 2 summary links plots" grep -q 'sparq/bw_vs_chunk.png' "$root/nightly/2026-11-23/summary.md"
else
    echo "note: no matplotlib, plots not checked"
fi

# the same night again: refused without --force
nightly 2 --date 2026-11-23 --from-results "$RESUMED" --no-plots sparq
check "re-run refused" grep -q 'exists' "$tmp/out.log"

# night 3: injected regressions, exit 1, each named
nightly 1 --date 2026-11-24 --from-results "$tmp/injected" --no-plots sparq
n3=$root/nightly/2026-11-24/sparq
check "night 3 status regression" test "$(field "$n3/nightly.txt" status)" = regression
check "night 3 compared with night 2" test "$(field "$n3/nightly.txt" baseline)" = 2026-11-23
check "night 3 regression count" test "$(field "$n3/nightly.txt" regressions)" = 5
for cfg in "g=256 k_pre=1024 k=64 custom chunk=1 threads=256 unroll=1 stages=0" \
           "g=4096 k_pre=1024 k=128 custom chunk=64 threads=128 unroll=1 stages=0" \
           "g=4096 k_pre=4096 k=64 custom chunk=8 threads=256 unroll=1 stages=0" \
           "g=1024 k_pre=4096 k=512 custom chunk=128 threads=128 unroll=1 stages=4" \
           "g=4096 k_pre=16384 k=512 custom chunk=128 threads=128 unroll=1 stages=0 | "; do
    check "night 3 names '$cfg'" grep -qF "| $cfg" "$n3/compare.md"
done
check "night 3 summary" grep -q '| sparq | regression | 5 | 2026-11-23 |' "$root/nightly/2026-11-24/summary.md"

# night 4: another driver: refused (exit 2, status mismatch), then allowed
nightly 2 --date 2026-11-25 --from-results "$tmp/driver" --no-plots sparq
n4=$root/nightly/2026-11-25/sparq
check "night 4 status mismatch" test "$(field "$n4/nightly.txt" status)" = mismatch
check "night 4 names the driver" grep -q 'driver (580.159.04 vs 575.57.08)' "$n4/nightly.txt"
nightly 0 --date 2026-11-25 --from-results "$tmp/driver" --no-plots --force --allow-mismatch all sparq
check "night 4 allowed: compared with night 3" test "$(field "$n4/nightly.txt" baseline)" = 2026-11-24
check "night 4 allowed: the fixed configuration" grep -q 'fixed' "$n4/compare.md"

# night 5: a config file with two sweeps, imported from a results root
mkdir -p "$tmp/import/sparq" "$tmp/import/mini/20261126T000000Z"
cp -r "$RESUMED" "$tmp/import/sparq/20261126T000000Z"
cp tests/data/compare/base/* "$tmp/import/mini/20261126T000000Z/"
cat >"$tmp/nightly.conf" <<EOF
# the nightly sweeps
threshold = 5
plots = no
allow_mismatch = kernels,tool,driver   # night 4 had another driver
sweeps/sparq.json
mini   # the hand-made sweep of tests/data/compare
EOF
nightly 0 --date 2026-11-26 --config "$tmp/nightly.conf" --from-results "$tmp/import"
check "night 5 sparq ok" test "$(field "$root/nightly/2026-11-26/sparq/nightly.txt" status)" = ok
check "night 5 mini first" test "$(field "$root/nightly/2026-11-26/mini/nightly.txt" status)" = first
check "night 5 sparq compared with night 4" test "$(field "$root/nightly/2026-11-26/sparq/nightly.txt" baseline)" = 2026-11-25

# the index: every night, newest first, with its status
idx=$root/nightly/index.md
check "index.md lists nights newest first" test "$(grep -o '^| \[20[0-9-]*\]' "$idx" | tr -d '|[] ' | tr '\n' ' ')" = "2026-11-26 2026-11-25 2026-11-24 2026-11-23 2026-11-22 "
check "index.md night 3" grep -q '^| \[2026-11-24\](2026-11-24/summary.md) | regression | 5 |' "$idx"
check "index.md night 5" grep -q '^| \[2026-11-26\](2026-11-26/summary.md) | ok | 0 | \[mini\](2026-11-26/mini/) first, \[sparq\](2026-11-26/sparq/) ok |' "$idx"
check "index.json" python3 - "$root/nightly/index.json" <<'EOF'
import json, sys
nights = json.load(open(sys.argv[1]))["nights"]
got = [(n["date"], n["status"], n["regressions"]) for n in nights]
want = [("2026-11-26", "ok", 0), ("2026-11-25", "ok", 0), ("2026-11-24", "regression", 5),
        ("2026-11-23", "ok", 0), ("2026-11-22", "first", 0)]
assert got == want, got
assert [s["sweep"] for s in nights[0]["sweeps"]] == ["mini", "sparq"], nights[0]
assert nights[2]["sweeps"][0]["baseline"] == "2026-11-23", nights[2]
EOF

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
