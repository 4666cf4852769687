#!/usr/bin/env bash
# The readers on the committed runs of kernels declared in sweep files (no GPU): tune report
# rebuilds their tables (every shape's winner an ok row of its raw.jsonl), tune fit finds and
# evaluates rules over the declared parameters, tune compare passes a run against itself and
# flags a copy made 30 % slower on the g = 4096 shapes.
# usage: tests/test_declared_results.sh path/to/tune (from the source root). Exit 0 pass, 1 fail.
set -u
tune=$(realpath "${1:?usage: tests/test_declared_results.sh path/to/tune}")
tmp=$(mktemp -d /tmp/tune_declared.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # check NAME COMMAND...
    local name=$1; shift
    if "$@"; then echo "ok: $name"; else echo "FAIL: $name"; fails=$((fails + 1)); fi
}
run() { "$tune" "$@" >"$tmp/stdout" 2>"$tmp/stderr"; }
# H200 runs of sweeps/examples/*/ (tests/data/runs/README.md)
runs=$(ls -d tests/data/runs/example_*/ 2>/dev/null)
check "committed declared runs exist" test -n "$runs"

# every shape of best.json: its winner is an ok row of raw.jsonl; every shape of the raw rows has one
winners_are_rows() {
    python3 - "$1" "$2" <<'PY'
import gzip, json, os, sys
run, out = sys.argv[1], sys.argv[2]
best = json.load(open(out + "/best.json"))
raw = run + "/raw.jsonl"  # or raw.jsonl.gz: the larger committed runs are gzipped
rows = [json.loads(l) for l in (gzip.open(raw + ".gz", "rt") if os.path.exists(raw + ".gz") else open(raw))]
keys = best["axes"] + best["params"]
ok = {tuple(r.get(k) for k in ["method"] + keys) for r in rows if r["status"] == "ok"}
shapes = {tuple(r[a] for a in best["axes"]) for r in rows if r["status"] == "ok"}
assert best["shapes"], "no shapes"
for s in best["shapes"]:
    assert tuple(s.get(k) for k in ["method"] + keys) in ok, s
assert len(best["shapes"]) == len(shapes), (len(best["shapes"]), len(shapes))
PY
}
for r in $runs; do
    name=$(basename "$r")
    check "$name: a declared run" grep -q '"family": *"kernel"' "$r/meta.json"
    check "$name: tune report" run report "$r" --out "$tmp/$name" --quiet
    check "$name: winners are ok rows" winners_are_rows "$r" "$tmp/$name"
    check "$name: best.md has the tables" grep -q '^| ' "$tmp/$name/best.md"
done

sparq=tests/data/runs/example_sparq_h200
check "fit chunk on the declared SparQ op" run fit "$sparq" --param chunk
check "fit prints a chosen rule" grep -q '(chosen)' "$tmp/stdout"
check "fit --rule 64: 98.4 % of the best over 36 shapes" run fit "$sparq" --param chunk --rule 64
check "fit --rule 64's efficiency" grep -q '98\.4 %' "$tmp/stdout"
matmul=tests/data/runs/example_matmul_h200
check "fit a -D macro parameter (tile)" run fit "$matmul" --param tile

check "compare a declared run with itself: exit 0" run compare "$sparq" "$sparq"
check "compare: no regression" grep -q '^\*\*No regression' "$tmp/stdout"
cp -r "$sparq" "$tmp/slower"
chmod -R u+w "$tmp/slower"
rm -f "$tmp/slower/retime.jsonl"
python3 - "$tmp/slower" <<'PY'
import gzip, json, os, sys
raw = sys.argv[1] + "/raw.jsonl"  # kept gzipped when it is: compare reads the .gz
gz = os.path.exists(raw + ".gz")
rows = [json.loads(l) for l in (gzip.open(raw + ".gz", "rt") if gz else open(raw))]
for r in rows:
    if r["g"] == 4096 and r["status"] == "ok":
        for k in r:
            if k.startswith("time_") and k != "time_n" and isinstance(r[k], float):
                r[k] *= 1.3
text = "".join(json.dumps(r) + "\n" for r in rows)
if gz:
    with gzip.open(raw + ".gz", "wt") as f:
        f.write(text)
else:
    open(raw, "w").write(text)
PY
run compare "$sparq" "$tmp/slower"
check "compare with a slower copy: exit 1" test $? -eq 1
check "compare names the 12 slower shapes" grep -q '12 shapes' "$tmp/stdout"
check "compare names a slower shape's winner" grep -q '| g=4096 k_pre=1024 k=64 | .* +30\.0 % | regression' "$tmp/stdout"

[ $fails -eq 0 ] && echo "test_declared_results: ok"
exit $((fails > 0))
