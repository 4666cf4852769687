#!/usr/bin/env bash
# scripts/plot.py (and scripts/plot_replay.py) on the committed fixtures, headless: the gather fixture tests/data/results
# (hand-made, no meta.json) and the synthetic GEMM fixture tests/data/plots/gemm. Checks every
# expected PNG and SVG exists and is a non-empty image of its type.
# Exit 0: pass; 1: fail; 77: skipped (no python3 with matplotlib and pandas).
set -u
cd "$(dirname "$0")/.."
# $PYTHON if set, else the first of python3 on PATH and Debian's /usr/bin/python3 that has both
PY=
for p in ${PYTHON:-python3 /usr/bin/python3}; do
    if "$p" -c 'import matplotlib, pandas' >/dev/null 2>&1; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
    echo "skipped: python3 with matplotlib and pandas is not installed"
    exit 77
fi
export MPLBACKEND=Agg
unset DISPLAY
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MPLCONFIGDIR="$tmp/mplconfig"
fail=0

check() { # dir stem...
    local dir=$1; shift
    local stem f
    for stem in "$@"; do
        f="$dir/$stem.png"
        if [ ! -s "$f" ] || [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" != 89504e470d0a1a0a ]; then
            echo "FAIL: $f missing, empty or not a PNG"; fail=1
        fi
        f="$dir/$stem.svg"
        if [ ! -s "$f" ] || ! grep -q '<svg' "$f" || ! grep -q '</svg>' "$f"; then
            echo "FAIL: $f missing, empty or not an SVG"; fail=1
        fi
    done
}

run() { # name args...
    local name=$1; shift
    if ! "$PY" scripts/plot.py "$@" >"$tmp/$name.log" 2>&1; then
        echo "FAIL: scripts/plot.py $* exited non-zero:"; cat "$tmp/$name.log"; fail=1
    fi
}

# gather fixture, no meta.json: defaults (read bandwidth from the rows, rows/cols first axis vs rest)
run gather tests/data/results --out "$tmp/gather"
check "$tmp/gather" bw_vs_chunk bw_vs_bytes best_chunk pct_read_bw
# the same with an explicit shape
run gather_shape tests/data/results --out "$tmp/gather_shape" --shape g=1024,k_pre=1024,k=64
check "$tmp/gather_shape" bw_vs_chunk
# synthetic GEMM fixture (with meta.json)
run gemm tests/data/plots/gemm --out "$tmp/gemm"
check "$tmp/gemm" speedup_vs_m speedup best_tile_m best_split_k
# several folders into one --out: one subfolder each
run both tests/data/results tests/data/plots/gemm --out "$tmp/both"
check "$tmp/both/data_results" bw_vs_chunk bw_vs_bytes
check "$tmp/both/plots_gemm" speedup_vs_m
# runs of both families written before meta.json recorded the methods' roles (the mixed GEMM's:
# tests/data/w4a16_legacy, the 4096 x 4096 rows of an H200 run of 2026-11-23 (20261123T041945Z), its 8 fastest
# rows per method and m, two others, every baseline row):
# defaults work (the tuned methods of mixed_gemm are fused, dequant and decode; the reference is
# cublas), and weight packing and the streaming floor are never drawn as competitors
run w4a16 tests/data/w4a16_legacy --out "$tmp/w4a16"
check "$tmp/w4a16" speedup_vs_m speedup best_bm best_stages
grep -q "not drawn as competitors (auxiliary): stream, pack" "$tmp/w4a16.log" ||
    { echo "FAIL: w4a16: pack and stream not set aside:"; cat "$tmp/w4a16.log"; fail=1; }
run w4a16_opts tests/data/w4a16_legacy --out "$tmp/w4a16_opts" --custom fused --reference cublas --columns 3
check "$tmp/w4a16_opts" speedup_vs_m speedup best_bm
grep -q "auxiliary): stream, pack" "$tmp/w4a16_opts.log" ||
    { echo "FAIL: w4a16 --custom fused: pack drawn:"; cat "$tmp/w4a16_opts.log"; fail=1; }
run sparq tests/data/runs/sparq_h200 --out "$tmp/sparq"
check "$tmp/sparq" bw_vs_chunk bw_vs_bytes best_chunk pct_read_bw
# roles declared in meta.json for methods no table knows (the GEMM fixture above); and a declared
# reference drives the speedups
"$PY" - "$tmp" <<'PY' || fail=1
import gzip, json, os, shutil, sys
tmp = sys.argv[1]
src = "tests/data/plots/gemm"
dst = os.path.join(tmp, "declared")
os.makedirs(dst)
names = {"custom": "mine", "cublas_fp16": "vendor", "cublaslt_fp8": "other", "dequant_cublas": "prep"}
with gzip.open(os.path.join(src, "raw.jsonl.gz"), "rt") as f, \
        open(os.path.join(dst, "raw.jsonl"), "w") as out:
    for line in f:
        r = json.loads(line)
        r["method"] = names[r["method"]]
        r["family"] = "declared_kernels"
        out.write(json.dumps(r) + "\n")
meta = json.load(open(os.path.join(src, "meta.json")))
meta["sweep"]["family"] = "declared_kernels"
meta["sweep"]["methods"] = {"mine": "tuned", "vendor": "reference", "other": "baseline",
                            "prep": "auxiliary"}
json.dump(meta, open(os.path.join(dst, "meta.json"), "w"))
PY
run declared "$tmp/declared" --out "$tmp/declared_out" --kind gemm
check "$tmp/declared_out" speedup_vs_m speedup
grep -q "auxiliary): prep" "$tmp/declared.log" ||
    { echo "FAIL: declared roles not used:"; cat "$tmp/declared.log"; fail=1; }

# numeric options are range-checked: a usage error (exit 2), not a crash
for bad in 0 -1 abc 1.5 ''; do
    "$PY" scripts/plot.py tests/data/plots/gemm --out "$tmp/cols" --columns "$bad" >"$tmp/cols.log" 2>&1
    rc=$?
    if [ $rc -ne 2 ] || grep -q Traceback "$tmp/cols.log"; then
        echo "FAIL: --columns '$bad' exited $rc:"; cat "$tmp/cols.log"; fail=1
    fi
done

# a folder without rows is an error, not a crash with a traceback
mkdir -p "$tmp/empty" && : >"$tmp/empty/raw.jsonl"
if "$PY" scripts/plot.py "$tmp/empty" --out "$tmp/empty_out" >"$tmp/empty.log" 2>&1; then
    echo "FAIL: empty raw.jsonl should exit non-zero"; fail=1
elif grep -q Traceback "$tmp/empty.log"; then
    echo "FAIL: empty raw.jsonl gave a traceback:"; cat "$tmp/empty.log"; fail=1
fi

# the replay figure (scripts/plot_replay.py) on the replay of tests/data/replay/run (3 seeds)
if ! "$PY" scripts/plot_replay.py tests/data/plots/replay --out "$tmp/replay" >"$tmp/replay.log" 2>&1; then
    echo "FAIL: scripts/plot_replay.py exited non-zero:"; cat "$tmp/replay.log"; fail=1
fi
check "$tmp/replay" replay
if "$PY" scripts/plot_replay.py "$tmp/empty" >"$tmp/replay_none.log" 2>&1 ||
   grep -q Traceback "$tmp/replay_none.log"; then
    echo "FAIL: plot_replay.py on a folder without replay.csv should exit non-zero, no traceback"
    cat "$tmp/replay_none.log"; fail=1
fi

if [ $fail -ne 0 ]; then
    exit 1
fi
echo "ok: plots written and checked"
