#!/usr/bin/env bash
# Every committed run can be ingested: each folder under results/ and tests/data/ that holds a
# meta.json with an end and rows goes into a fresh results store with `tune ingest` (exit 0,
# every one added), a second ingest of all of them adds nothing and still exits 0, and
# `tune history` over the store runs and names every sweep and GPU model ingested. One store per
# tree: tests/data holds copies and cuts of runs (the same run, other contents), which a store
# rightly keeps once (as first ingested). Folders
# skipped, each with its reason: no end in meta.json (hand-made fixtures, replay folders), a
# shard (its merge is ingested), a compile-only run, no rows, and the deliberately invalid
# fixtures of tests/data/invalid.
# usage: tests/test_ingest_committed.sh path/to/tune (from the source root). Exit 0 pass, 1 fail,
# 77 skipped (no python3, which reads meta.json).
set -u
cd "$(dirname "$0")/.."
tune=$(realpath "${1:?usage: tests/test_ingest_committed.sh path/to/tune}")
command -v python3 >/dev/null || { echo "skipped: no python3"; exit 77; }
tmp=$(mktemp -d /tmp/tune_ingest_committed.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# "why" when the folder is not a finished run with rows (empty: ingest it), then its sweep and GPU
classify() {
    python3 - "$1" <<'PY'
import json, os, sys
d = sys.argv[1]
try:
    m = json.load(open(os.path.join(d, "meta.json")))
except Exception as e:  # noqa: BLE001 - any unreadable meta.json is reported, not ingested
    print("skip\tmeta.json unreadable (%s)" % e); sys.exit()
shard = m.get("shard")
if d.startswith("tests/data/invalid"):
    why = "a deliberately invalid fixture"
elif not m.get("end"):
    why = "no end in meta.json (not a finished run: a hand-made fixture or a replay)"
elif m.get("compile_only"):
    why = "a compile-only run"
elif isinstance(shard, dict) and not shard.get("merged"):
    why = "a shard (its merge is ingested)"
elif not any(os.path.isfile(os.path.join(d, f)) for f in ("raw.jsonl", "raw.jsonl.gz")):
    why = "no rows (raw.jsonl)"
else:
    why = ""
if why:
    print("skip\t" + why)
else:
    print("run\t%s on %s" % ((m.get("sweep") or {}).get("name"), (m.get("device") or {}).get("name")))
PY
}

# ingest_tree TREE: every run under TREE into a store of its own ($tmp/TREE.sqlite)
ingest_tree() {
    local tree=$1 n dir meta kind what rc
    local db=$tmp/${tree//\//_}.sqlite
    n=0
    : >"$tmp/expected"
    : >"$tmp/dirs"
    while IFS= read -r -d '' meta; do
        dir=$(dirname "$meta")
        IFS=$'\t' read -r kind what < <(classify "$dir")
        if [ "$kind" = skip ]; then
            echo "skipped: $dir: $what"
            continue
        fi
        n=$((n + 1))
        echo "$what" >>"$tmp/expected"
        "$tune" ingest --db "$db" "$dir" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        if [ $rc -ne 0 ]; then
            fail "tune ingest $dir exited $rc: $(cat "$tmp/err")"
        elif ! grep -q ": added (" "$tmp/out"; then
            fail "tune ingest $dir did not add it: $(cat "$tmp/out" "$tmp/err")"
        else
            echo "ok: $dir ($what)"
        fi
        echo "$dir" >>"$tmp/dirs"
    done < <(find "$tree" -name meta.json -print0 | sort -z)

    [ "$n" -gt 0 ] || fail "no committed run found under $tree"
    # a second ingest of every run adds nothing and is no error
    if [ "$n" -gt 0 ]; then
        mapfile -t dirs <"$tmp/dirs"
        "$tune" ingest --db "$db" --quiet "${dirs[@]}" >"$tmp/out" 2>"$tmp/err" ||
            fail "a second ingest of the committed runs exited $?: $(head -5 "$tmp/err")"
    fi

    "$tune" history --db "$db" >"$tmp/history" 2>"$tmp/err" ||
        fail "tune history --db exited $?: $(head -5 "$tmp/err")"
    sort -u "$tmp/expected" | while IFS= read -r what; do
        grep -qF "## $what" "$tmp/history" || echo "$what"
    done >"$tmp/missing"
    [ -s "$tmp/missing" ] && fail "tune history names no '## SWEEP on GPU' for: $(tr '\n' ';' <"$tmp/missing")"
    "$tune" history --db "$db" --json >"$tmp/history.json" 2>"$tmp/err" ||
        fail "tune history --db --json exited $?: $(head -5 "$tmp/err")"
    python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/history.json" ||
        fail "tune history --json is not JSON"
    total=$((total + n))
}

total=0
ingest_tree results
ingest_tree tests/data

[ $fails -eq 0 ] && echo "test_ingest_committed: ok ($total runs ingested)"
exit $((fails > 0))
