#!/usr/bin/env bash
# The commands that read results (report, fit, roofline, compare) never modify the folders they
# read: every file is byte-identical afterwards and no file appears; their files go to --out DIR
# (created if missing). A reader that closes stdout early (| head -1) costs no file and no error.
# The committed runs read here hold raw.jsonl.gz: every reader (replay too) prints from it what it
# prints from the plain twin, and a damaged .gz is one error naming it.
# Usage: tests/test_readers.sh path/to/tune   (run from the source root)
set -u
tune=${1:?usage: test_readers.sh TUNE}
tmp=$(mktemp -d /tmp/tune_readers.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # check NAME COMMAND...
    local name=$1; shift
    if "$@"; then echo "ok: $name"; else echo "FAIL: $name"; fails=$((fails + 1)); fi
}
sums() { (cd "$1" && find . -print0 | sort -z | xargs -0 -n 50 sh -c 'for f; do
    if [ -f "$f" ]; then md5sum "$f"; else echo "dir $f"; fi; done' sh); }

a=$tmp/a; b=$tmp/b
cp -r tests/data/runs/sparq_h200 "$a"
cp -r tests/data/runs/sparq_h200_resumed "$b"
chmod -R u+w "$a" "$b"
check "the committed rows are gzipped" test -f "$a/raw.jsonl.gz" -a ! -e "$a/raw.jsonl" \
    -a -f "$b/raw.jsonl.gz"
tw=$tmp/twin # $a with its rows gunzipped
cp -r "$a" "$tw"; gunzip "$tw/raw.jsonl.gz"
sums "$a" >"$tmp/a.sums"; sums "$b" >"$tmp/b.sums"
unchanged() { sums "$a" | cmp -s - "$tmp/a.sums" && sums "$b" | cmp -s - "$tmp/b.sums"; }

run() { "$tune" "$@" >"$tmp/stdout" 2>"$tmp/stderr"; }
check "report prints the tables" run report "$a"
check "report's stdout has the table" grep -q '^# ' "$tmp/stdout"
# the rows predate the time model: the report fills it from results/calibration (docs/roofline.md)
check "report gives older rows the time model" grep -q '^## % of model (model time / time)' "$tmp/stdout"
pct_max() { awk '/^## % of measured read bandwidth/{p=1; next} /^## /{p=0}
    p && /^\| [0-9]/{for (i = 4; i <= NF; i += 2) if ($i + 0 > m) m = $i + 0} END{print m + 0}' "$1"; }
# 91.7 at g=4096 k_pre=16384 k=512; on the sweep's bytes it was 111.6. A lower bound too, so that
# a missing table (pct_max 0) fails.
pct=$(pct_max "$tmp/stdout" | cut -d. -f1)
check "report's % of read bandwidth is on modelled traffic, 90 to 100 (was 111.6): $pct" \
    test "$pct" -ge 90 -a "$pct" -lt 100
check "report leaves its folder as it was" unchanged
check "report over two folders" run report "$a" "$b" --quiet
check "report over two folders leaves them as they were" unchanged
check "fit runs" run fit "$a" --param chunk
check "fit leaves its folder as it was" unchanged
check "roofline runs" run roofline "$a" --results results
check "roofline reports the time model per op" \
    grep -q '^### time model: gather_matmul gather_inner_matrix_only_bmv' "$tmp/stdout"
check "roofline leaves its folder as it was" unchanged
run compare "$a" "$b"
check "compare exits 0 or 1" test $? -le 1
check "compare leaves both folders as they were" unchanged

out=$tmp/out/nested
check "report --out" run report "$a" --out "$out" --quiet
for f in best.md best.csv best.json; do check "report --out writes $f" test -s "$out/$f"; done
check "report --out's best.md holds the tables" grep -q '^# sparq' "$out/best.md"
check "fit --out" run fit "$a" --param chunk --out "$out" --quiet
check "fit --out writes heuristics.json" test -s "$out/heuristics.json"
check "fit --out writes the header" test -s "$out/heuristic_chunk.h"
check "roofline --out" run roofline "$a" --results results --out "$out" --quiet
check "roofline --out writes roofline.json" test -s "$out/roofline.json"
run compare "$a" "$b" --out "$out" --quiet
check "compare --out writes compare.md" test -s "$out/compare.md"
check "compare --out writes compare.json" test -s "$out/compare.json"
check "the --out runs leave the inputs as they were" unchanged

# --out naming a folder read, a link to it or a folder inside it: a usage error naming both, and
# nothing written (the folders read are never written)
ln -s "$a" "$tmp/link_a"; ln -s "$b" "$tmp/link_b"
for cmd in "report $a --out $a" "report $a $b --out $b/" "report $a --out $tmp/link_a" \
    "report $a --out $a/sub/.." "report $a --out $tmp/none/../link_a" \
    "fit $a --param chunk --out $a" "fit $a --param chunk --out $tmp/link_a" \
    "fit $a --param chunk --out $a/new" "fit $a --param chunk --header $tmp/link_a/h.h" \
    "roofline $a --results results --out $a" "roofline $a --results results --out $tmp/link_a/x" \
    "compare $a $b --out $b" "compare $a $b --out $tmp/link_a" "compare --base $a --new $b --out $b/c" \
    "replay $a --seeds 1 --out $tmp/link_a" "replay $tw --seeds 1 --prior $a --out $a/p"; do
    # shellcheck disable=SC2086
    timeout 60 "$tune" $cmd --quiet >"$tmp/stdout" 2>"$tmp/stderr"
    rc=$?
    check "'tune $cmd': exit 2 (got $rc)" test "$rc" -eq 2
    check "'tune $cmd': names the folder read" grep -q "a folder read" "$tmp/stderr"
done
check "an --out naming a folder read writes nothing" unchanged
check "a sibling folder is not a folder inside" run report "$a" --out "${a}_sibling" --quiet

# a closed pipe: the files are written first, and the command neither dies nor complains
p=$tmp/piped
for cmd in "report $a --out $p/r" "fit $a --param chunk --out $p/f" \
    "roofline $a --results results --out $p/l" "compare $a $b --out $p/c"; do
    # shellcheck disable=SC2086
    "$tune" $cmd 2>"$tmp/stderr" | head -c 1 >/dev/null
    rc=${PIPESTATUS[0]}
    check "'tune ${cmd%% *} | head' is not killed by SIGPIPE (status $rc)" test "$rc" -le 1
    check "'tune ${cmd%% *} | head' says nothing on stderr about stdout" \
        bash -c "! grep -q 'standard output' '$tmp/stderr'"
done
check "report | head wrote best.md" cmp -s "$p/r/best.md" "$out/best.md"
check "fit | head wrote heuristics.json" test -s "$p/f/heuristics.json"
check "roofline | head wrote roofline.json" test -s "$p/l/roofline.json"
check "compare | head wrote compare.json" test -s "$p/c/compare.json"
check "the piped runs leave the inputs as they were" unchanged


# damaged folders: one clear error naming the file and the place, never a crash or a hang
d=$tmp/damaged
bad() { # bad NAME EXPECTED-TEXT FOLDER...: tune report refuses with status 1 and the text
    local name=$1 want=$2; shift 2
    timeout 60 "$tune" report "$@" --quiet >"$tmp/stdout" 2>"$tmp/stderr"
    local rc=$?
    check "$name: exit 1 (got $rc)" test "$rc" -eq 1
    check "$name: says '$want'" grep -qF -- "$want" "$tmp/stderr"
}
fresh() { rm -rf "$d"; mkdir -p "$d"; cp "$a/meta.json" "$tw/raw.jsonl" "$d/"; }
fresh; python3 - "$d/meta.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); m["report"]["rows"] = [1]; json.dump(m, open(sys.argv[1], "w"))
PY
bad "a number among meta.json's report axes" "meta.json: \$.report.rows: [0]: expected a string" "$d"
fresh; python3 - "$d/meta.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); m["schema_version"] = 99; json.dump(m, open(sys.argv[1], "w"))
PY
bad "a newer schema_version" "\$.schema_version: version 99 is newer than this tune reads" "$d"
fresh; sed -i '3s/"time_median":[-0-9.e]*/"time_median":-1.0/' "$d/raw.jsonl"
bad "a negative time" "raw.jsonl:3: key 'time_median': expected a time in seconds >= 0" "$d"
fresh; sed -i '5s/"time_median":[-0-9.e]*/"time_median":0/' "$d/raw.jsonl"
bad "an ok row with a zero time" "raw.jsonl:5: key 'time_median': an ok row needs a time" "$d"
fresh; rm "$d/raw.jsonl"; mkfifo "$d/raw.jsonl"
bad "a FIFO as raw.jsonl" "raw.jsonl: not a regular file (a FIFO)" "$d"
fresh; rm "$d/raw.jsonl"; ln -s /dev/zero "$d/raw.jsonl"
bad "/dev/zero as raw.jsonl" "raw.jsonl: not a regular file (a character device)" "$d"
fresh; rm "$d/meta.json"; mkfifo "$d/meta.json"
bad "a FIFO as meta.json" "meta.json: not a regular file (a FIFO)" "$d"
bad "folders of different sweeps" "folders of different sweeps are not merged" "$a" tests/data/w4a16_legacy

# compare, roofline and fit apply the same checks to the folders they read
badcmd() { # badcmd NAME EXPECTED-TEXT ARGS...: tune ARGS refuses with the text and status 1
    local name=$1 want=$2 status=1; shift 2       # (compare: 2, its status of an input error)
    [ "$1" = compare ] && status=2
    timeout 20 "$tune" "$@" >"$tmp/stdout" 2>"$tmp/stderr"
    local rc=$?
    check "$name: exit $status (got $rc)" test "$rc" -eq "$status"
    check "$name: says '$want'" grep -qF -- "$want" "$tmp/stderr"
}
readers() { # readers NAME EXPECTED-TEXT: each of compare, roofline and fit on the damaged $d
    badcmd "compare, $1" "$2" compare "$a" "$d" --quiet
    badcmd "compare (base side), $1" "$2" compare "$d" "$a" --quiet
    badcmd "roofline, $1" "$2" roofline "$d" --results results --quiet
    badcmd "fit, $1" "$2" fit "$d" --param chunk --quiet
}
fresh; python3 - "$d/meta.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); m["report"]["cols"] = ["k", {"x": 1}]; json.dump(m, open(sys.argv[1], "w"))
PY
readers "a non-string among meta.json's report axes" "meta.json: \$.report.cols: [1]: expected a string"
fresh; python3 - "$d/meta.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); m["schema_version"] = 99; json.dump(m, open(sys.argv[1], "w"))
PY
readers "a newer schema_version" "\$.schema_version: version 99 is newer than this tune reads"
fresh; sed -i '3s/"time_median":[-0-9.e]*/"time_median":-1.0/' "$d/raw.jsonl"
readers "a negative time" "raw.jsonl:3: key 'time_median': expected a time in seconds >= 0"
fresh; rm "$d/raw.jsonl"; mkfifo "$d/raw.jsonl"
readers "a FIFO as raw.jsonl" "raw.jsonl: not a regular file (a FIFO)"
fresh; rm "$d/meta.json"; mkfifo "$d/meta.json"
readers "a FIFO as meta.json" "meta.json: not a regular file (a FIFO)"
w=tests/data/w4a16_legacy
badcmd "fit over folders of different sweeps" "folders of different sweeps are not merged" \
    fit "$a" "$w" --param chunk --quiet
badcmd "compare with a side of different sweeps" "folders of different sweeps are not merged" \
    compare --base "$a" "$w" --new "$b" --quiet
# retime.jsonl: read through infile, a damaged line named by file and line
fresh; mkfifo "$d/retime.jsonl"
bad "a FIFO as retime.jsonl" "retime.jsonl: not a regular file (a FIFO)" "$d"
fresh; head -2 "$a/retime.jsonl" >"$d/retime.jsonl"; echo '{"shape": 3}' >>"$d/retime.jsonl"
bad "a damaged retime.jsonl line" "retime.jsonl:3: key 'shape': expected an object" "$d"
fresh; : >"$d/raw.jsonl"
timeout 20 "$tune" report "$d" --quiet >"$tmp/stdout" 2>"$tmp/stderr"; rc=$?
check "an empty raw.jsonl: no crash (status $rc)" test "$rc" -le 1
# the tables of $a's rows alone (without its retime.jsonl, which only a single folder's tables use)
fresh; check "a folder without retime.jsonl" run report "$d" --out "$tmp/plain" --quiet
fresh; cat "$tw/raw.jsonl" >>"$d/raw.jsonl"
check "a folder whose rows are all twice" run report "$d" --out "$tmp/dup" --quiet
check "duplicated rows count once" cmp -s "$tmp/dup/best.csv" "$tmp/plain/best.csv"
check "the same folder given twice counts once" run report "$a" "$a" --out "$tmp/dup2" --quiet
check "the same folder twice: the tables of one" cmp -s "$tmp/dup2/best.csv" "$tmp/plain/best.csv"

# ---- gzipped rows: raw.jsonl.gz reads as its plain twin ----
same() { # same NAME X Y ARGS...: tune ARGS, with @ standing for folder X, then for Y, prints the same
    local name=$1 x=$2 y=$3; shift 3
    local v rx ry
    for v in x y; do # stdout and stderr apart: their interleaving is the buffers', not tune's
        local f=${!v}
        timeout 60 "$tune" "${@//@/$f}" >"$tmp/$v.raw" 2>"$tmp/$v.err"
        printf -v "r$v" %s "$?"
        sed -i "s|$f|@|g" "$tmp/$v.raw" "$tmp/$v.err"
        cat "$tmp/$v.raw" "$tmp/$v.err" >"$tmp/$v.out"
    done
    check "$name: exit 0 both ways ($rx, $ry)" test "$rx" -eq 0 -a "$ry" -eq 0
    check "$name: prints the same from raw.jsonl.gz as from raw.jsonl" cmp -s "$tmp/x.out" "$tmp/y.out"
    check "$name: prints something" test -s "$tmp/x.out"
}
same "report" "$a" "$tw" report @
same "report over two folders" "$a" "$tw" report @ "$b"
same "fit" "$a" "$tw" fit @ --param chunk
same "roofline" "$a" "$tw" roofline @ --results results
same "compare (a gzipped base)" "$a" "$tw" compare @ "$b" --threshold 1e6
same "compare (a gzipped new side)" "$a" "$tw" compare "$b" @ --threshold 1e6
same "replay" "$a" "$tw" replay @ --seeds 2 --budgets 10,100
check "report of the .gz --out" run report "$a" --out "$tmp/gz_out" --quiet
check "report of the plain twin --out" run report "$tw" --out "$tmp/tw_out" --quiet
for f in best.md best.csv best.json; do
    check "report --out: the same $f from raw.jsonl.gz" cmp -s "$tmp/gz_out/$f" "$tmp/tw_out/$f"
done
check "the gzipped folder is read only" unchanged
# retime.jsonl.gz: the verdicts read as from retime.jsonl (the tables mark the same ties)
rt=$tmp/retime_gz; cp -r "$tw" "$rt"; gzip -9n "$rt/retime.jsonl"
same "report with retime.jsonl.gz" "$rt" "$tw" report @
check "the ties of the re-timing are in the tables" grep -q 'statistical tie' "$tmp/x.out"

# damaged .gz: one clear error naming the file, for every reader
gzfresh() { rm -rf "$d"; mkdir -p "$d"; cp "$a/meta.json" "$d/"; }
gzbad() { # gzbad NAME EXPECTED-TEXT: report, compare, roofline, fit and replay refuse $d with it
    bad "$1" "$2" "$d"
    readers "$1" "$2"
    badcmd "replay, $1" "$2" replay "$d" --seeds 1
}
gzfresh; head -c "$(($(stat -c %s "$a/raw.jsonl.gz") / 2))" "$a/raw.jsonl.gz" >"$d/raw.jsonl.gz"
gzbad "a truncated raw.jsonl.gz" "$d/raw.jsonl.gz: truncated gzip file: the compressed data ends early"
gzfresh; cp "$a/raw.jsonl.gz" "$d/"
python3 - "$d/raw.jsonl.gz" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 3] ^= 0xFF; open(p, "wb").write(b)
PY
gzbad "a corrupt raw.jsonl.gz" "$d/raw.jsonl.gz: corrupt gzip file: "
gzfresh; sed '3s/"time_median":[-0-9.e]*/"time_median":-1.0/' "$tw/raw.jsonl" | gzip -9n >"$d/raw.jsonl.gz"
gzbad "a bad row in raw.jsonl.gz" "raw.jsonl.gz:3: key 'time_median': expected a time in seconds >= 0"
gzfresh; cp "$tw/raw.jsonl" "$d/raw.jsonl.gz"
gzbad "a plain text named raw.jsonl.gz" "raw.jsonl.gz: not gzip data"
gzfresh; cp "$a/raw.jsonl.gz" "$tw/raw.jsonl" "$d/"
gzbad "raw.jsonl and raw.jsonl.gz" "$d: holds both raw.jsonl and raw.jsonl.gz: which one holds the rows is ambiguous"
# two gzip members (cat a.gz b.gz is gzip): both read; a damaged second member is refused, never
# read as the end of the rows
gzfresh; n=$(wc -l <"$tw/raw.jsonl"); half=$((n / 2))
head -n "$half" "$tw/raw.jsonl" | gzip -9n >"$d/raw.jsonl.gz"
tail -n +"$((half + 1))" "$tw/raw.jsonl" | gzip -9n >"$tmp/second.gz"
cat "$tmp/second.gz" >>"$d/raw.jsonl.gz"
check "report of two gzip members" run report "$d" --out "$tmp/two_members" --quiet
check "two gzip members: the tables of every row" cmp -s "$tmp/two_members/best.csv" "$tmp/plain/best.csv"
head -n "$half" "$tw/raw.jsonl" | gzip -9n >"$d/raw.jsonl.gz"
python3 - "$tmp/second.gz" "$d/raw.jsonl.gz" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[len(b) // 2] ^= 0xFF
open(sys.argv[2], "ab").write(b)
PY
gzbad "a damaged second gzip member" "$d/raw.jsonl.gz: corrupt gzip file: "
check "a damaged second gzip member: named" grep -q "gzip member 2)" "$tmp/stderr"
# a NUL byte inside a line: two rows run together, never one row read and the other dropped
fresh; python3 - "$d/raw.jsonl" <<'PY'
import sys
lines = open(sys.argv[1], "rb").read().split(b"\n")
lines[3:5] = [lines[3] + b"\0" + lines[4]]
open(sys.argv[1], "wb").write(b"\n".join(lines))
PY
bad "a NUL byte in a row" "raw.jsonl:4: a NUL byte at column" "$d"
fresh; printf '\0' >>"$d/meta.json"
bad "a NUL byte in meta.json" "meta.json:" "$d"
check "a NUL byte in meta.json: says so" grep -q "a NUL byte" "$tmp/stderr"
# a gzip bomb: 80 MB of one line in 80 kB; refused at a row's bound (64 MiB), never unpacked whole
gzfresh; head -c 80000000 /dev/zero | gzip -9n >"$d/raw.jsonl.gz"
bad "a gzip bomb" "raw.jsonl.gz:1: a line over 67108864 bytes" "$d"

[ "$fails" = 0 ] && echo "ok: readers checked" && exit 0
echo "$fails checks failed"; exit 1
