#!/usr/bin/env bash
# scripts/plot.py on the committed fixtures, headless: the gather fixture tests/data/results
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
# a folder without rows is an error, not a crash with a traceback
mkdir -p "$tmp/empty" && : >"$tmp/empty/raw.jsonl"
if "$PY" scripts/plot.py "$tmp/empty" --out "$tmp/empty_out" >"$tmp/empty.log" 2>&1; then
    echo "FAIL: empty raw.jsonl should exit non-zero"; fail=1
elif grep -q Traceback "$tmp/empty.log"; then
    echo "FAIL: empty raw.jsonl gave a traceback:"; cat "$tmp/empty.log"; fail=1
fi

if [ $fail -ne 0 ]; then
    exit 1
fi
echo "ok: plots written and checked"
