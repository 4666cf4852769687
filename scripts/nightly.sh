#!/usr/bin/env bash
# Nightly sweeps (docs/nightly.md): run each configured sweep into ROOT/nightly/<date>/<sweep>/,
# add it to the results store (`tune ingest`), judge it against the window of earlier comparable
# nights (`tune history`), compare it with the last earlier night's run as a detail (`tune
# compare`), draw its plots (scripts/plot.py), write <date>/summary.md, rebuild
# ROOT/nightly/index.md and index.json and the dashboard (`tune dashboard`).
#
#   scripts/nightly.sh [options] [SWEEP.json...]
#
# Exit status: 0 every sweep ran and none regressed (or there was nothing to compare with);
# 1 a regression (the window's verdict; a compile-only night: the previous-night compare's);
# 2 a sweep failed, could not be stored or judged (a compile-only night: compared), or a usage
# error.
set -uo pipefail
# Paths on the command line (--root, --from-results, --config, --tune, --db, sweep files) and
# $TUNE_DB are the caller's: relative ones are resolved from the caller's working folder before
# the script moves to its checkout. Paths in a config file and the defaults are the checkout's.
caller=$PWD
cd "$(dirname "$0")/.." || exit 2
from_caller() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$caller/$1" ;; esac; }

usage() {
    cat <<'EOF'
usage: scripts/nightly.sh [options] [SWEEP.json...]
  --config FILE        sweeps and settings (default: nightly.conf when it exists)
  --root DIR           results root (default results): DIR/nightly/YYYY-MM-DD/<sweep>/
  --date YYYY-MM-DD    the night (default: today, UTC)
  --tune PATH          the tune binary (default build/tune)
  --db FILE            the results store (default $TUNE_DB, else ROOT/history.sqlite)
  --threshold PCT      regression threshold of the window's verdict and of the previous-night
                       compare (default 3)
  --window N           comparable earlier nights a night is judged against (default 7)
  --allow-mismatch K   environment keys allowed to differ from the previous night in the
                       compare, comma-separated, or "all" or "none" (default kernels,tool; timed
                       nights: the compare is a detail, a refused one is noted, and the window
                       starts a new segment at an environment change)
  --param NAME         parameters whose fitted rules are compared (default: tune compare's)
  --from-results DIR   import results instead of running the GPU: DIR/raw.jsonl(.gz), else
                       DIR/<sweep>/raw.jsonl(.gz), else the latest DIR/<sweep>/<run>/ (test mode)
  --no-plots           skip scripts/plot.py
  --force              replace this night's folder of a sweep when it exists
exit status: 0 no regression, 1 a regression, 2 a sweep failed or could not be stored or judged
EOF
}

die() { echo "nightly: $*" >&2; exit 2; }
need() { [ $# -ge 2 ] && [ -n "$2" ] || { usage >&2; die "$1 expects a value"; }; }

config= root= date= tune= threshold= allow= params= from= plots= force=0 db= window=
sweeps=()
cli_sweeps=()
tune_args=()
while [ $# -gt 0 ]; do
    case $1 in
        -h|--help) usage; exit 0 ;;
        --config) need "$@"; config=$(from_caller "$2"); shift ;;
        --root) need "$@"; root=$(from_caller "$2"); shift ;;
        --date) need "$@"; date=$2; shift ;;
        --tune) need "$@"; tune=$(from_caller "$2"); shift ;;
        --threshold) need "$@"; threshold=$2; shift ;;
        --db) need "$@"; db=$(from_caller "$2"); shift ;;
        --window) need "$@"; window=$2; shift ;;
        --allow-mismatch) need "$@"; allow=$2; shift ;;
        --param) need "$@"; params="${params:+$params,}$2"; shift ;;
        --from-results) need "$@"; from=$(from_caller "$2"); shift ;;
        --no-plots) plots=no ;;
        --force) force=1 ;;
        -*) usage >&2; die "unknown option $1" ;;
        # a sweep file of the caller's; a name that is no file there (a sweep's id under
        # --from-results, a path of the checkout) stays as given
        *) if [ -f "$caller/$1" ] || [[ $1 == /* ]]; then cli_sweeps+=("$(from_caller "$1")")
           else cli_sweeps+=("$1"); fi ;;
    esac
    shift
done

# nightly.conf: "key = value" lines set what the options set (root, tune, threshold,
# allow_mismatch, params, plots = yes|no, tune_args = extra arguments of `tune run`); other
# non-empty lines name sweep files; # starts a comment. Options given on the command line win.
[ -z "$config" ] && [ -f nightly.conf ] && config=nightly.conf
if [ -n "$config" ]; then
    [ -f "$config" ] || die "no config file $config"
    while IFS= read -r line || [ -n "$line" ]; do
        line=${line%%#*}
        line=$(echo "$line" | sed 's/^[[:space:]]*//; s/[[:space:]]*$//')
        [ -z "$line" ] && continue
        if [[ $line =~ ^([a-z_]+)[[:space:]]*=[[:space:]]*(.*)$ ]]; then
            key=${BASH_REMATCH[1]} val=${BASH_REMATCH[2]}
            case $key in
                root) root=${root:-$val} ;;
                tune) tune=${tune:-$val} ;;
                threshold) threshold=${threshold:-$val} ;;
                db) db=${db:-$val} ;;
                window) window=${window:-$val} ;;
                allow_mismatch) allow=${allow:-$val} ;;
                params) params=${params:-$val} ;;
                plots) plots=${plots:-$val} ;;
                tune_args) read -r -a tune_args <<<"$val" ;;
                *) die "$config: unknown setting '$key'" ;;
            esac
        else
            sweeps+=("$line")
        fi
    done <"$config"
fi
[ ${#cli_sweeps[@]} -gt 0 ] && sweeps=("${cli_sweeps[@]}")
root=${root:-results}
date=${date:-$(date -u +%F)}
tune=${tune:-build/tune}
threshold=${threshold:-3}
window=${window:-7}
[ -n "${TUNE_DB:-}" ] && TUNE_DB=$(from_caller "$TUNE_DB") && export TUNE_DB
db=${db:-${TUNE_DB:-$root/history.sqlite}}
allow=${allow:-kernels,tool}
plots=${plots:-yes}
[[ $date =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]] && [ "$(date -u -d "$date" +%F 2>/dev/null)" = "$date" ] ||
    die "--date expects a date YYYY-MM-DD, got '$date'"
[[ $threshold =~ ^[0-9]{1,6}(\.[0-9]{1,6})?$ ]] || die "--threshold expects a percentage (digits, e.g. 5 or 2.5), got '$threshold'"
[[ $plots =~ ^(yes|no)$ ]] || die "plots expects yes or no, got '$plots'"
[[ $window =~ ^[0-9]{1,2}$ ]] && [ $((10#$window)) -ge 1 ] && [ $((10#$window)) -le 64 ] ||
    die "--window expects a number of nights from 1 to 64, got '$window'"
[ -n "$db" ] || die "--db expects a file, got an empty one"
[ -n "$root" ] || die "--root expects a folder, got an empty one"
[ ${#sweeps[@]} -gt 0 ] || { usage >&2; die "no sweeps: name sweep files or list them in a config"; }
[ -x "$tune" ] || die "no tune binary at $tune (build it, or --tune PATH)"

case $allow in
    none) allow_arg=() ;;
    all) allow_arg=(--allow-mismatch) ;;
    *) allow_arg=("--allow-mismatch=$allow") ;;
esac
param_arg=()
[ -n "$params" ] && param_arg=(--param "$params")

# python3 with matplotlib and pandas for the plots: $PYTHON, else python3, else Debian's
py=
if [ "$plots" = yes ]; then
    for p in ${PYTHON:-python3 /usr/bin/python3}; do
        if "$p" -c 'import matplotlib, pandas' >/dev/null 2>&1; then py=$p; break; fi
    done
fi

nightly=$root/nightly
night=$nightly/$date
mkdir -p "$night" || die "cannot create $night"

# A folder with rows: raw.jsonl, or raw.jsonl.gz (a committed run, gzipped).
has_rows() { [ -f "$1/raw.jsonl" ] || [ -f "$1/raw.jsonl.gz" ]; }

# The run folder to import for a sweep: DIR itself, DIR/<id>, or DIR/<id>'s latest run.
import_dir() {
    local id=$1 d
    if has_rows "$from"; then echo "$from"; return; fi
    if has_rows "$from/$id"; then echo "$from/$id"; return; fi
    d=$(ls -d "$from/$id"/*/ 2>/dev/null | sort | tail -n 1)
    [ -n "$d" ] && has_rows "$d" && echo "${d%/}"
}

# The latest night before this one whose run of the sweep completed.
previous_night() {
    local id=$1 d
    while IFS= read -r d; do
        [ "$(basename "$d")" \< "$date" ] || continue
        has_rows "$d/$id" || continue
        grep -qx 'status=failed' "$d/$id/nightly.txt" 2>/dev/null && continue
        echo "$d"
        return
    done < <(nights_newest_first)
}

# key of a nightly.txt
field() { sed -n "s/^$2=//p" "$1" 2>/dev/null | head -n 1; }

# Values read from files are data: checked against a pattern, never evaluated (no $(( )), no
# [[ -gt ]], no eval). A malformed one is an error of the night (exit 2), not a regression.
bad_data() { # file what value
    echo "nightly: $1: malformed $2 '$3' (this file was not written by nightly.sh, or was edited)" >&2
    worst=2
}
# dated folders of the nightly root, newest first; names that are not dates are not nights
nights_newest_first() {
    local d all=()
    for d in "$nightly"/*/; do
        d=${d%/}
        [[ $(basename "$d") =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]] && all+=("$d")
    done
    for ((i = ${#all[@]} - 1; i >= 0; i--)); do printf '%s\n' "${all[i]}"; done
}

record() { # dir status regressions baseline message [compare]
    printf 'status=%s\nregressions=%s\nbaseline=%s\nmessage=%s\ncompare=%s\n' "$2" "$3" "$4" "$5" "${6:-none}" >"$1/nightly.txt"
}

# A compile-only run has no timings: its night is judged by the previous-night compare alone.
compile_only() { grep -q '"compile_only"' "$1/meta.json" 2>/dev/null; }

worst=0
for sweep in "${sweeps[@]}"; do
    id=$(basename "$sweep" .json | tr -c 'A-Za-z0-9_.\n-' '_')
    out=$night/$id
    echo "nightly: $date $id"
    if [ -e "$out" ]; then
        [ $force -eq 1 ] || die "$out exists (this night already ran; --force replaces it)"
        rm -rf "$out"
    fi
    mkdir -p "$out"
    log=$out/nightly.log
    if [ -n "$from" ]; then
        src=$(import_dir "$id")
        if [ -z "$src" ]; then
            record "$out" failed 0 none "nothing to import for $id under $from"
            echo "nightly: $id: nothing to import under $from" >&2; worst=2; continue
        fi
        # tune reads the run first (rows, re-timings, meta.json; a .gz as tune reads it: one
        # truncated or corrupt is refused), into a folder apart: a reader never writes into a
        # folder it reads; then the data is copied, each .gz gunzipped whole or not at all (the
        # night's folder holds plain files, as a run writes them), and read again as imported
        echo "imported $src" >"$log"
        chk=$(mktemp -d)
        "$tune" report "$src" --out "$chk" --quiet >>"$log" 2>&1
        rc=$?
        for f in raw.jsonl meta.json retime.jsonl heuristics.json; do
            [ $rc -eq 0 ] || break
            [ -f "$src/$f" ] && cp "$src/$f" "$out/"
            # both: copied as they are, and tune refuses them
            if [ -f "$src/$f.gz" ] && [ -f "$src/$f" ]; then cp "$src/$f.gz" "$out/"
            elif [ -f "$src/$f.gz" ] && ! gzip -dc "$src/$f.gz" >"$out/$f" 2>>"$log"; then
                echo "nightly: $src/$f.gz: not a whole gzip file (truncated or corrupt): not imported" >>"$log"
                rm -f "$out/$f"
                rc=1
            fi
        done
        if [ $rc -eq 0 ]; then # the tables of the night, from the copy
            rm -f "$chk"/best.*
            "$tune" report "$out" --out "$chk" --quiet >>"$log" 2>&1
            rc=$?
        fi
        [ $rc -eq 0 ] && mv "$chk"/best.* "$out/"
        rm -rf "$chk"
        if [ $rc -ne 0 ]; then # nothing of a refused run stays in the night
            for f in raw.jsonl meta.json retime.jsonl heuristics.json; do rm -f "$out/$f" "$out/$f.gz"; done
        fi
    else
        [ -f "$sweep" ] || { record "$out" failed 0 none "no sweep file $sweep"; worst=2; continue; }
        "$tune" run "$sweep" --out "$out" --quiet --no-ingest "${tune_args[@]}" >"$log" 2>&1
        rc=$?
    fi
    if [ $rc -ne 0 ]; then
        msg=$(tail -n 1 "$log")
        record "$out" failed 0 none "${msg//$'\n'/ }"
        echo "nightly: $id: the run failed (exit $rc): $msg" >&2; worst=2; continue
    fi
    if [ -n "$py" ]; then
        MPLBACKEND=Agg "$py" scripts/plot.py "$out" >>"$log" 2>&1 ||
            echo "nightly: $id: plots failed (see $log)" >&2
    elif [ "$plots" = yes ]; then
        echo "plots skipped: no python3 with matplotlib and pandas" >>"$log"
    fi
    timed=1
    compile_only "$out" && timed=0
    # the store: tonight's run, then its verdict against the window of earlier nights
    if [ $timed -eq 1 ]; then
        if ! "$tune" ingest "$out" --db "$db" --date "$date" --quiet >>"$log" 2>"$out/ingest.err"; then
            msg=$(tail -n 1 "$out/ingest.err")
            cat "$out/ingest.err" >>"$log"; rm -f "$out/ingest.err"
            record "$out" error 0 none "not added to the store: ${msg//$'\n'/ }"
            echo "nightly: $id: not added to the store $db: $msg" >&2; worst=2; continue
        fi
        rm -f "$out/ingest.err"
        "$tune" history --db "$db" --run "$out" --threshold "$threshold" --window "$window" \
            >"$out/history.md" 2>"$out/history.err"
        hrc=$?
        cat "$out/history.err" >>"$log"
        counts=$(grep -m1 '^same [0-9]*, regression' "$out/history.md")
        read -r nr nm < <(sed -n 's/.*, regression \([0-9]\{1,9\}\),.*, missing \([0-9]\{1,9\}\)$/\1 \2/p' <<<"$counts")
        n=$((10#${nr:-0} + 10#${nm:-0}))
        runs=$(grep -m1 -o '[0-9]* runs in the store' "$out/history.md" | grep -o '^[0-9]*')
        seg=$(grep -m1 -o 'a new segment:.*' "$out/history.md" | sed 's/\.$//')
        wmsg="window: $counts${seg:+; $seg}"
        if [ $hrc -gt 1 ] || [ -z "$counts" ]; then
            record "$out" error 0 none "not judged: $(tail -n 1 "$out/history.err")"
            rm -f "$out/history.err"
            echo "nightly: $id: not judged (tune history exit $hrc)" >&2; worst=2; continue
        fi
        rm -f "$out/history.err"
        # the window's verdict is the night's status: first when the store had no earlier run
        wst=ok
        [ $hrc -eq 1 ] && wst=regression
        [ "${runs:-1}" -le 1 ] && wst=first
        [ $wst = regression ] && [ $worst -lt 1 ] && worst=1
    fi
    prev=$(previous_night "$id")
    if [ -z "$prev" ]; then
        if [ $timed -eq 1 ] && [ $wst != first ]; then
            record "$out" "$wst" "$n" none "$wmsg; no earlier night under $nightly to compare with"
        else
            record "$out" first 0 none "${wmsg:+$wmsg; }no earlier night to compare with"
        fi
        continue
    fi
    base=$(basename "$prev")
    # tune compare never writes into a folder it reads: its files are written apart, then moved
    # into tonight's folder
    cmpdir=$(mktemp -d)
    "$tune" compare "$prev/$id" "$out" --out "$cmpdir" --quiet --threshold "$threshold" \
        "${allow_arg[@]}" "${param_arg[@]}" >>"$log" 2>"$out/compare.err"
    rc=$?
    for f in compare.md compare.json; do [ -f "$cmpdir/$f" ] && mv "$cmpdir/$f" "$out/$f"; done
    rm -rf "$cmpdir"
    cat "$out/compare.err" >>"$log"
    msg=$(grep -m1 'tune compare' "$out/compare.err" | sed 's/^tune compare: //; s/; wrote .*//')
    cn=$(grep -o '"regressions": *[0-9]*' "$out/compare.json" 2>/dev/null | head -n 1 | grep -o '[0-9]*$')
    rm -f "$out/compare.err"
    case $rc in
        0) cst=ok ;;
        1) cst=regression ;;
        *) if [[ $msg == "not compared:"* ]]; then cst=mismatch; else cst=error; fi ;;
    esac
    if [ $timed -eq 1 ]; then
        # the window decides; the previous night's compare is a detail of the message
        record "$out" "$wst" "$n" "$base" "$wmsg; against $base: $msg" "$cst"
    else
        case $cst in
            ok) record "$out" ok "${cn:-0}" "$base" "$msg" ok ;;
            regression) record "$out" regression "${cn:-0}" "$base" "$msg" regression; [ $worst -lt 1 ] && worst=1 ;;
            *) record "$out" "$cst" 0 "$base" "$msg" "$cst"; worst=2 ;;
        esac
    fi
    echo "nightly: $id: $(field "$out/nightly.txt" status): $(field "$out/nightly.txt" message)"
done

# The night's summary.
{
    echo "# Nightly $date"
    echo
    echo "Each sweep is judged against the window of its $window previous comparable nights in the store $db (tune history; threshold $threshold %); the previous night's compare is a detail (allowed to differ from it: $allow)."
    echo
    echo "| sweep | status | regressions | compared with | details |"
    echo "|:--|:--|--:|:--|:--|"
    for d in "$night"/*/; do
        d=${d%/}; id=$(basename "$d")
        [ -f "$d/nightly.txt" ] || continue
        st=$(field "$d/nightly.txt" status)
        link="[run]($id/)"
        [ -f "$d/compare.md" ] && link="[compare.md]($id/compare.md), $link"
        [ -f "$d/history.md" ] && link="[history.md]($id/history.md), $link"
        [ -f "$d/best.md" ] && link="$link, [best.md]($id/best.md)"
        echo "| $id | $st | $(field "$d/nightly.txt" regressions) | $(field "$d/nightly.txt" baseline) | $link |"
    done
    echo
    for d in "$night"/*/; do
        d=${d%/}
        [ -f "$d/nightly.txt" ] || continue
        echo "- $(basename "$d"): $(field "$d/nightly.txt" message)"
        [ -f "$d/compare.md" ] && grep -m1 '^\*\*' "$d/compare.md" | sed 's/^/  /'
    done
    imgs=$(cd "$night" && ls */*.png 2>/dev/null)
    if [ -n "$imgs" ]; then
        echo
        echo "## Plots"
        echo
        for f in $imgs; do echo "- [$f]($f)"; done
    fi
} >"$night/summary.md"

# A night's status: the worst of its sweeps.
rank() {
    case $1 in
        failed | error | mismatch) echo 4 ;; regression) echo 3 ;; ok) echo 2 ;; first) echo 1 ;;
        *) echo 0 ;;
    esac
}

# The index of every night, newest first, rebuilt from the nights' nightly.txt files.
{
    echo "# Nightly runs"
    echo
    echo "| night | status | regressions | sweeps |"
    echo "|:--|:--|--:|:--|"
} >"$nightly/index.md.tmp"
printf '{\n  "nights": [' >"$nightly/index.json.tmp"
first_night=1
while IFS= read -r d; do
    day=$(basename "$d")
    status=none total=0 cells= items= sep=
    for s in "$d"/*/; do
        s=${s%/}; id=$(basename "$s")
        [ -f "$s/nightly.txt" ] || continue
        if ! [[ $id =~ ^[A-Za-z0-9_.-]+$ ]]; then bad_data "$s" "sweep folder name" "$id"; continue; fi
        # checked in this shell (not a subshell) so that bad_data's worst=2 sticks
        st=$(field "$s/nightly.txt" status) n=$(field "$s/nightly.txt" regressions)
        base=$(field "$s/nightly.txt" baseline)
        [[ $st =~ ^(ok|first|regression|failed|error|mismatch)$ ]] || { bad_data "$s/nightly.txt" status "$st"; st=error; }
        [[ $n =~ ^[0-9]{1,9}$ ]] || { bad_data "$s/nightly.txt" regressions "$n"; n=0; }
        [[ $base =~ ^([0-9]{4}-[0-9]{2}-[0-9]{2}|none)$ ]] || { bad_data "$s/nightly.txt" baseline "$base"; base=none; }
        n=$((10#$n))
        [ "$(rank "$st")" -gt "$(rank "$status")" ] && status=$st
        total=$((total + n))
        cells="$cells${cells:+, }[$id]($day/$id/) $st"
        items="$items$sep"$'\n'"        {\"sweep\": \"$id\", \"status\": \"$st\", \"regressions\": ${n:-0}, \"baseline\": \"$base\"}"
        sep=,
    done
    [ "$status" = none ] && continue
    echo "| [$day]($day/summary.md) | $status | $total | $cells |" >>"$nightly/index.md.tmp"
    [ $first_night -eq 1 ] || printf ',' >>"$nightly/index.json.tmp"
    first_night=0
    printf '\n    {"date": "%s", "status": "%s", "regressions": %d, "summary": "%s/summary.md",\n     "sweeps": [%s\n     ]}' \
        "$day" "$status" "$total" "$day" "$items" >>"$nightly/index.json.tmp"
done < <(nights_newest_first)
printf '\n  ]\n}\n' >>"$nightly/index.json.tmp"
mv "$nightly/index.md.tmp" "$nightly/index.md"
mv "$nightly/index.json.tmp" "$nightly/index.json"

# The dashboard of the store: a static site, rebuilt whole (tune dashboard)
if [ -f "$db" ]; then
    if "$tune" dashboard --db "$db" --out "$nightly/dashboard" >"$nightly/dashboard.log" 2>&1; then
        echo "nightly: dashboard $nightly/dashboard/index.html"
    else
        echo "nightly: the dashboard was not rebuilt (see $nightly/dashboard.log)" >&2
        worst=2
    fi
fi

echo "nightly: $night/summary.md, $nightly/index.md"
exit $worst
