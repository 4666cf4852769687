#!/usr/bin/env bash
# The dashboard's pages in headless Chromium, opened from the file system: a site built by
# tests/dashboard_fixture (dashboard_write) from tests/data/history/history.json. Checks that the
# pages log nothing to the console and throw nothing (and, first, that this check catches a
# planted error), that each shape has its chart, that the planted regression and improvement are
# marked on their shapes' charts, the driver change as a segment line, the winner's change in
# the table, and that no page refers to the network.
# With TUNE, also the whole pipeline: ten synthetic nights of a committed run with a planted step
# (scripts/synth_nights.py), `tune ingest`, `tune dashboard`: the page loads without a console
# message, has a chart per shape, and marks the planted regressions on their shapes' charts.
#   tests/test_dashboard_browser.sh build/dashboard_fixture [build/tune]
# TUNE_DASHBOARD_SCREENSHOT=1: also writes docs/dashboard.png (the group page, 1400x1000).
# TUNE_DASHBOARD_BIG=1: also loads a synthetic history of 365 runs x 250 series
#   (tests/dashboard_synth.py) and prints its load times; fails when drawing took over 3 s.
# Exit 0: pass; 1: fail; 77: skipped (no chromium).
set -u
cd "$(dirname "$0")/.."
fixture=${1:?usage: tests/test_dashboard_browser.sh DASHBOARD_FIXTURE [TUNE]}
tune=${2:-}
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$CHROMIUM" ]; then
    echo "skipped: chromium is not installed (apt-get install chromium)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
H200=sparq--NVIDIA_H200
H100=sparq--NVIDIA_H100_80GB_HBM3

# browse PAGE DOM [options]: the DOM of PAGE after its scripts ran into DOM, the log in DOM.log
browse() {
    local page=$1 dom=$2
    shift 2
    "$CHROMIUM" --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=1 \
        --user-data-dir="$tmp/profile" --virtual-time-budget=5000 "$@" \
        --dump-dom "file://$page" >"$dom" 2>"$dom.log"
}

# Chromium logs every console message (console.log as console.error) as INFO:CONSOLE, and an
# uncaught exception as a console message "Uncaught ...": the pages write none, so any fails.
page_errors() {
    grep -E ':CONSOLE[:(]|Uncaught' "$1"
}

# section DOM ID: the lines of <section ... id="ID"> through its </section>
section() {
    awk -v id="id=\"$2\"" 'index($0, "<section") && index($0, id) { on = 1 }
        on { print } on && index($0, "</section>") { exit }' "$1"
}

count() { # PATTERN FILE: occurrences of an extended regex
    grep -oE "$1" "$2" | wc -l
}

expect() { # DESCRIPTION COMMAND...
    local what=$1
    shift
    if ! "$@"; then
        echo "FAIL: $what"
        fail=1
    fi
}

site=$tmp/site
if ! "$fixture" tests/data/history/history.json "$site"; then
    echo "FAIL: dashboard_fixture could not write the site"
    exit 1
fi

# The check of the check: a copy of the site whose script throws must be caught.
cp -r "$site" "$tmp/broken"
printf 'setTimeout(function () { throw new Error("planted"); }, 0);\n' >>"$tmp/broken/dashboard.js"
browse "$tmp/broken/$H200.html" "$tmp/broken.dom"
if ! page_errors "$tmp/broken.dom.log" | grep -q 'Uncaught Error: planted'; then
    echo "FAIL: a thrown error is not seen in Chromium's log; the console check cannot work:"
    grep -n CONSOLE "$tmp/broken.dom.log" | head -5
    fail=1
fi

for page in index $H200 $H100; do
    browse "$site/$page.html" "$tmp/$page.dom"
    if page_errors "$tmp/$page.dom.log"; then
        echo "FAIL: $page.html logged the messages above"
        fail=1
    fi
    expect "$page.html was not loaded" grep -q '</html>' "$tmp/$page.dom"
done

expect "index.html: the group with a regression is highlighted and linked" \
    grep -q "<tr class=\"regression\"><td><a href=\"$H200.html\">" "$tmp/index.dom"
dom=$tmp/$H200.dom
n=$(count '<svg[^>]*class="trend"' "$dom")
expect "$H200.html: 2 charts expected, found $n" test "$n" -eq 2
n=$(count '<svg[^>]*class="trend"' "$tmp/$H100.dom")
expect "$H100.html: 1 chart expected, found $n" test "$n" -eq 1
section "$dom" s0 >"$tmp/s0"
section "$dom" s1 >"$tmp/s1"
expect "the shape of the regression has its chart" grep -q '<h2>g=1024 k=64 n=16384</h2>' "$tmp/s0"
n=$(count '<circle[^>]*class="marker regression"' "$tmp/s0")
expect "one regression marker on g=1024 k=64 n=16384, found $n" test "$n" -eq 1
n=$(count 'class="marker regression"' "$tmp/s1")
expect "no regression marker on g=1024 k=128 n=16384, found $n" test "$n" -eq 0
n=$(count '<circle[^>]*class="marker improvement"' "$tmp/s1")
expect "one improvement marker on g=1024 k=128 n=16384, found $n" test "$n" -eq 1
n=$(count '<g class="segment"><title>2026-11-20: driver 570.86 → 580.159.04</title>' "$dom")
expect "a segment line at the driver change on each chart, found $n" test "$n" -eq 2
expect "the winner's change in the table" \
    grep -qE '<tr class="changed"><td>custom</td><td>2026-11-21 – 2026-11-25</td><td class="n">5</td><td class="config">chunk=128 threads=256</td>' "$tmp/s0"
n=$(count 'class="segment"' "$tmp/$H100.dom")
expect "no segment line without a change, found $n" test "$n" -eq 0
# nothing from the network: no URL but the SVG namespace in any file of the site
if grep -rEo 'https?://[^"'"'"' )]*' "$site" | grep -v 'http://www.w3.org/2000/svg$'; then
    echo "FAIL: the site refers to the network (above)"
    fail=1
fi

if [ -n "${TUNE_DASHBOARD_SCREENSHOT:-}" ]; then
    browse "$site/$H200.html" "$tmp/shot.dom" --hide-scrollbars --window-size=1400,1000 \
        --screenshot="$PWD/docs/dashboard.png"
    size=$(stat -c %s docs/dashboard.png 2>/dev/null || echo 0)
    expect "docs/dashboard.png: $size bytes, expected 1 to 300 KB" test "$size" -gt 0 -a "$size" -lt 300000
    echo "wrote docs/dashboard.png ($size bytes)"
fi

# The pipeline: a store of synthetic nights, its dashboard
SPARQ=tests/data/runs/sparq_h200
if [ -n "$tune" ]; then
    python3 scripts/synth_nights.py make "$SPARQ" "$tmp/nights" --nights 10 --first 2026-11-20 \
        --noise-pct 0.2 --row-noise-pct 0.05 --step 8:8:0.05 --seed 9 >"$tmp/synth.log" 2>&1 ||
        { echo "FAIL: synth_nights.py:"; cat "$tmp/synth.log"; exit 1; }
    "$tune" ingest --quiet --db "$tmp/h.sqlite" "$tmp"/nights/20*/ >"$tmp/ingest.log" 2>&1 ||
        { echo "FAIL: tune ingest:"; cat "$tmp/ingest.log"; exit 1; }
    "$tune" dashboard --db "$tmp/h.sqlite" --out "$tmp/real" >"$tmp/dash.log" 2>&1 ||
        { echo "FAIL: tune dashboard:"; cat "$tmp/dash.log"; exit 1; }
    for page in index $H200; do
        browse "$tmp/real/$page.html" "$tmp/real-$page.dom"
        if page_errors "$tmp/real-$page.dom.log"; then
            echo "FAIL: the store's $page.html logged the messages above"
            fail=1
        fi
    done
    dom=$tmp/real-$H200.dom
    n=$(count '<svg[^>]*class="trend"' "$dom")
    expect "the store's page: 36 charts (one per shape) expected, found $n" test "$n" -eq 36
    expect "the store's index: the group with regressions is highlighted" \
        grep -q "<tr class=\"regression\"><td><a href=\"$H200.html\">" "$tmp/real-index.dom"
    # each planted series' shape: its chart has a regression marker; the others none (the
    # sections of shapes: headed "name=value ...")
    python3 -c '
import json, sys
for s in json.load(open(sys.argv[1]))["steps"][0]["series"]:
    print(s.rsplit("|", 1)[0])
' "$tmp/nights/truth.json" | sort -u >"$tmp/planted"
    expect "some series planted" test -s "$tmp/planted"
    awk '/<section/ { sec = "" } { sec = sec $0 "\n" } /<\/section>/ {
            if (match(sec, /<h2>[^<]*<\/h2>/)) {
                shape = substr(sec, RSTART + 4, RLENGTH - 9)
                if (index(shape, "=")) print shape "\t" (index(sec, "class=\"marker regression\"") > 0)
            } }' "$dom" | sort >"$tmp/marked"
    while IFS=$'\t' read -r shape marked; do
        if grep -qxF "$shape" "$tmp/planted"; then
            expect "the planted shape '$shape' has a regression marker" test "$marked" = 1
        else
            expect "the shape '$shape' has no regression marker" test "$marked" = 0
        fi
    done <"$tmp/marked"
    n=$(wc -l <"$tmp/marked")
    expect "36 shape sections read, found $n" test "$n" -eq 36
fi

if [ -n "${TUNE_DASHBOARD_BIG:-}" ]; then
    python3 tests/dashboard_synth.py --runs 365 --series 250 >"$tmp/big.json" &&
        "$fixture" "$tmp/big.json" "$tmp/big" || fail=1
    page=$tmp/big/$H200.html
    browse "$site/index.html" "$tmp/warm.dom" # a first start of the browser, not counted
    t0=$(date +%s%N)
    browse "$page" "$tmp/big.dom"
    t1=$(date +%s%N)
    browse "$site/index.html" "$tmp/tiny.dom"
    t2=$(date +%s%N)
    first=$(grep -o 'data-first-drawn-ms="[0-9]*"' "$tmp/big.dom" | grep -o '[0-9]*')
    all=$(grep -o 'data-all-drawn-ms="[0-9]*"' "$tmp/big.dom" | grep -o '[0-9]*')
    n=$(count '<svg[^>]*class="trend"' "$tmp/big.dom")
    echo "365 runs x 250 series: data $(stat -c %s "$tmp/big/data/$H200.js") bytes; charts in view" \
        "drawn ${first:-?} ms after navigation, all $n at ${all:-?} ms; chromium --dump-dom" \
        "$(((t1 - t0) / 1000000)) ms (an empty page: $(((t2 - t1) / 1000000)) ms)"
    expect "the big history: 125 charts expected, found $n" test "$n" -eq 125
    expect "the big history drawn within 3 s" test "${all:-99999}" -le 3000
    if page_errors "$tmp/big.dom.log"; then
        echo "FAIL: the big page logged the messages above"
        fail=1
    fi
fi
exit $fail
