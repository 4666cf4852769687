#!/usr/bin/env bash
# The command line of every command (no GPU needed): numeric options parsed whole and range-checked,
# empty paths refused, unknown options named, `CMD --help` for every command, `tune help` listing
# every command's options, `tune --version`, usage errors exiting 2, a broken sweep refused before
# the GPU is looked for, --compile-only exiting as `tune compile` does, a compile error naming its
# configuration, NVRTC's warnings on request (--warnings), and validate --json.
# usage: tests/test_cli.sh path/to/tune path/to/tune_test (tune with the fault-injection family).
# Exit 0 pass, 1 fail.
set -u
cd "$(dirname "$0")/.."
tune=$(realpath "${1:?usage: tests/test_cli.sh path/to/tune path/to/tune_test}")
tune_test=$(realpath "${2:?usage: tests/test_cli.sh path/to/tune path/to/tune_test}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TUNE_CACHE_DIR=$tmp/cache
fail=0
# every command runs in $tmp (a broken build must not write into the repository): absolute inputs,
# and a copy of a committed run
SWEEP=$PWD/tests/data/valid/minimal.json
FAULTS=$PWD/sweeps/testing/faults.json
mkdir -p "$tmp/work"
cp -r tests/data/runs/sparq_h200 "$tmp/run"
RESULTS=$tmp/run

# expect STATUS PATTERN args...: tune args exits STATUS and its stderr (or stdout) matches PATTERN
expect() {
    local want=$1 pattern=$2; shift 2
    (cd "$tmp/work" && "$tune" "$@") >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -ne "$want" ]; then
        echo "FAIL: tune $* exited $rc, expected $want"; sed 's/^/  /' "$tmp/err" | head -5; fail=1
    elif [ -n "$pattern" ] && ! grep -qE -- "$pattern" "$tmp/err" "$tmp/out"; then
        echo "FAIL: tune $*: no '$pattern' in its output:"; sed 's/^/  /' "$tmp/err" | head -5; fail=1
    fi
}

# ---- numbers parsed whole and range-checked, for every numeric option of every command ----
for bad in abc nan inf -inf '' ' 1' 1x 0x10 1e3 -1 1024 99999999999999999999; do
    expect 2 "tune run: --device expects an integer in \[0, 1023\], got '$bad'" "$SWEEP" --device "$bad"
    expect 2 "tune calibrate: --device expects an integer" calibrate --device "$bad"
done
for bad in abc nan -1 '' 1.5 ' 7' 7x 0xZZ 18446744073709551616; do
    expect 2 "tune run: --seed expects an unsigned 64-bit integer" "$SWEEP" --seed "$bad"
done
for bad in nan inf -inf 0 -5 abc '' 1e9 5s; do
    expect 2 "tune run: --watchdog expects a number in \(0, 86400\] \(seconds\), got '$bad'" "$SWEEP" --watchdog "$bad"
    expect 2 "tune run: --read-bw expects a number in \(0, 1e\+06\] \(GB/s\)" "$SWEEP" --read-bw "$bad"
done
for bad in -5 abc 101 1.5 ''; do
    expect 2 "tune run: --retake-throttled expects an integer in \[0, 100\]" "$SWEEP" --retake-throttled "$bad"
done
for bad in sm_99999999999 sm_ sm_9 sm_90x sm_-90 90 sm_256 sm_0x5a ''; do
    expect 2 "--arch expects sm_NN with NN in \[50, 255\]" compile "$SWEEP" --arch "$bad"
    expect 2 "tune run: --arch expects sm_NN" "$SWEEP" --compile-only --arch "$bad"
done
for bad in 0,0 '' , 0, ,1 a 1,b 1024 -1 '0 1'; do
    expect 2 "tune run: --gpus expects 'all' or a list" "$SWEEP" --gpus "$bad"
done
for bad in 1/0 2/2 a/b 1 -1/2 ''; do
    expect 2 "tune run: --shard: " "$SWEEP" --shard "$bad"
done
for bad in abc nan inf -1 '' 5%% 1e7 '5 '; do
    expect 2 "tune compare: --threshold expects a number in \[0, 1e\+06\]" compare "$RESULTS" "$RESULTS" --threshold "$bad"
done
for bad in nan 0 1.5 abc '' -0.5; do
    expect 2 "tune fit: --target expects a number in \(0, 1\]" fit "$RESULTS" --param chunk --target "$bad"
done

# ---- empty paths are usage errors, never "/" ----
for opt in --results --out --cache --kernels; do
    expect 2 "tune run: $opt expects a path, got an empty one" "$SWEEP" "$opt" ''
done
expect 2 "tune compile: --cache expects a path" compile "$SWEEP" --cache ''
for opt in --out --header; do
    expect 2 "tune fit: $opt expects a path" fit "$RESULTS" --param chunk "$opt" ''
done
expect 2 "tune dispatch: --out expects a path" dispatch "$RESULTS" --out ''
expect 2 "tune compare: --out expects a path" compare "$RESULTS" "$RESULTS" --out ''
for opt in --out --results --cache --kernels --specs; do
    expect 2 "tune calibrate: $opt expects a path" calibrate "$opt" ''
done
for opt in --calibration --results --specs; do
    expect 2 "tune roofline: $opt expects a path" roofline "$RESULTS" "$opt" ''
done
expect 2 "an empty argument is not a file name" validate ''
expect 2 "an empty argument is not a file name" ''

# ---- help, version, unknown options and commands ----
for cmd in run validate compile report merge devices fit dispatch roofline compare calibrate replay ingest history dashboard; do
    expect 0 "usage: tune" "$cmd" --help
    expect 0 "usage: tune" "$cmd" -h
    expect 0 "usage: tune" help "$cmd"
    expect 2 "unknown option --no-such-option" "$cmd" --no-such-option
done
expect 0 "" help
for cmd in run validate compile report merge devices fit dispatch roofline compare calibrate replay ingest history dashboard; do
    grep -q "usage: tune.*$cmd\|usage: tune \[run\]" "$tmp/out" || { echo "FAIL: tune help lacks $cmd"; fail=1; }
done
for opt in --results --device --seed --watchdog --retake-throttled --read-bw --arch --shard --gpus \
           --compile-only --rows --cols --threshold --allow-mismatch --target --rule --calibration \
           --specs; do
    grep -q -- "$opt" "$tmp/out" || { echo "FAIL: tune help does not list $opt"; fail=1; }
done
grep -q "exit status" "$tmp/out" || { echo "FAIL: tune help does not document the exit status"; fail=1; }
expect 0 "^tune [0-9]+\.[0-9]+\.[0-9]+ \(git [0-9a-f]+" --version
expect 2 "unknown command 'reprot'" reprot "$RESULTS"
expect 2 "unknown command" help reprot
expect 2 "usage: tune" # no arguments
expect 2 "tune compile: unknown option --shard \(an option of tune run\)" compile "$SWEEP" --shard 0/2
expect 2 "tune validate: unknown option --seed" validate "$SWEEP" --seed 1
# validate --json: one line per sweep file, the name first (what scripts/slurm/submit.sh reads)
expect 0 '^\{"name":"minimal","file":"[^"]*minimal.json","ok":true,.*"configs":[0-9]+,.*"max_shards":4096' \
    validate --json "$SWEEP"
expect 1 '^\{"file":"[^"]*bad_name.json","ok":false,"error":".*expected a name matching' \
    validate --json "$PWD/tests/data/invalid/bad_name.json"
expect 2 "tune report: option --rows needs a value" report "$RESULTS" --rows
expect 2 "tune devices: takes no arguments" devices extra
expect 2 "tune calibrate: unknown argument extra" calibrate extra

# ---- usage errors exit 2 in every command ----
expect 2 "name at least one sweep file" validate
expect 2 "name at least one results folder" report
expect 2 "name the merged folder" merge "$tmp/m"
expect 2 "name exactly one sweep file" run
expect 2 "name at least one results folder" fit --param chunk
# replay: options checked, bad folders refused (exit 1), an --out inside a folder replayed (exit 2)
REPLAY=$PWD/tests/data/replay/run
expect 2 "name at least one results folder" replay --seeds 2
for bad in 0 -1 abc 10001 ''; do
    expect 2 "tune replay: --seeds expects an integer" replay "$REPLAY" --seeds "$bad"
done
for bad in 0 101 5,5 x 5, ''; do
    expect 2 "tune replay: --budgets expects" replay "$REPLAY" --budgets "$bad"
done
expect 2 "tune replay: --strategy expects" replay "$REPLAY" --strategy bayes
expect 2 "tune replay: --out expects a path" replay "$REPLAY" --out ''
expect 2 "tune replay: --prior expects a path" replay "$REPLAY" --prior ''
expect 2 "tune replay: --rule expects PARAM=EXPR" replay "$REPLAY" --rule bn
expect 1 "rule 'bn=1\+'" replay "$REPLAY" --seeds 1 --rule 'bn=1+'
expect 1 "zz is not a parameter" replay "$REPLAY" --seeds 1 --rule 'zz=1'
expect 1 "no raw.jsonl" replay "$REPLAY" --seeds 1 --prior "$tmp/work"
expect 1 "raw.jsonl.*no raw.jsonl" replay "$tmp/work"
expect 2 "a folder read" replay "$REPLAY" --seeds 1 --strategy random --budgets 10 --out "$REPLAY/x"
[ ! -e "$REPLAY/x" ] || { echo "FAIL: tune replay wrote inside the folder replayed"; fail=1; }
expect 0 "\| random \|" replay "$REPLAY" --seeds 1 --strategy random --budgets 10 --out "$tmp/replay"
for f in replay.md replay.csv replay.json meta.json; do
    [ -s "$tmp/replay/$f" ] || { echo "FAIL: tune replay --out wrote no $f"; fail=1; }
done
# a folder without one measured row is not replayed (no table of nan); a malformed --feature is
# a usage error; a --prior of another family and op is refused, naming both
mkdir -p "$tmp/unmeasured"; cp "$REPLAY/meta.json" "$tmp/unmeasured/"
gunzip -c "$REPLAY/raw.jsonl.gz" | sed 's/"status":"ok"/"status":"crashed"/; s/"status": "ok"/"status": "crashed"/' >"$tmp/unmeasured/raw.jsonl"
expect 1 "no shape with a measured row" replay "$tmp/unmeasured" --seeds 1
for bad in 'x=1+' 'x=' '=1' '1x=2' 'x==1' 'a b=1'; do
    expect 2 "tune replay: --feature expects NAME=EXPR" replay "$REPLAY" --feature "$bad"
done
SPARQ=$PWD/tests/data/runs/sparq_h200
expect 1 "a run of mixed_gemm/w4a16, and .* is a run of gather_matmul/gather_inner_matrix_only_bmv" \
    replay "$SPARQ" --seeds 1 --prior "$REPLAY"
expect 1 "cannot warm-start from it: a run of family mixed_gemm, op w4a16 .* this run is of family gather_matmul" \
    validate "$PWD/tests/data/search/sparq_small.json" --warm-start "$PWD/tests/data/w4a16_legacy"
expect 2 "tune --version: takes no arguments, got 'extra'" --version extra
expect 2 "tune version: takes no arguments" version extra
expect 2 "--param is required" fit "$RESULTS"
# dispatch: usage errors exit 2, refused inputs 1, nothing written inside a folder read
DISPATCH=$PWD/tests/data/dispatch
expect 2 "name at least one results folder" dispatch --methods custom
for bad in nan -0.1 1.5 abc ''; do
    expect 2 "tune dispatch: --tolerance expects a number in \[0, 1\]" dispatch "$RESULTS" --tolerance "$bad"
done
for bad in 1x a-b '' 'a b'; do
    expect 2 "tune dispatch: --name expects a C identifier, got '$bad'" dispatch "$RESULTS" --name "$bad"
done
for bad in '' , a,, ,a; do
    expect 2 "tune dispatch: --methods expects a comma-separated list" dispatch "$RESULTS" --methods "$bad"
done
expect 2 "tune dispatch: option --axis needs a value" dispatch "$RESULTS" --axis
expect 1 "--axis 'q' is not a problem axis \(g, k_pre, k, n, dtype, transpose_B, indices\)" dispatch "$RESULTS" --axis q
expect 1 "--axis 'dtype' is not an integer axis" dispatch "$RESULTS" --axis dtype
expect 1 "'gather' is not a method|no ok row" dispatch "$DISPATCH/run" --methods gather
expect 1 "'aux' is an auxiliary method" dispatch "$DISPATCH/run" --methods aux
expect 1 "no ok row of the methods fast, slow" dispatch "$DISPATCH/failed"
expect 1 "rows of two sweeps \(toy, other\)" dispatch "$DISPATCH/mixed"
expect 2 "a folder read" dispatch "$RESULTS" --out "$RESULTS/rule"
[ ! -e "$RESULTS/rule" ] || { echo "FAIL: tune dispatch wrote inside the folder read"; fail=1; }
expect 0 "leave-one-k-out" dispatch "$RESULTS" --out "$tmp/dispatch" --name sparq_rule
for f in dispatch.json dispatch.h dispatch.md; do
    [ -s "$tmp/dispatch/$f" ] || { echo "FAIL: tune dispatch --out wrote no $f"; fail=1; }
done
expect 2 "name at least one results folder" roofline
expect 2 "expected two results folders" compare "$RESULTS"

# ---- inputs are regular files of bounded size: a FIFO or a device never hangs or fills memory ----
mkfifo "$tmp/fifo.json"
for f in "$tmp/fifo.json" /dev/zero /dev/urandom "$tmp"; do
    timeout 20 "$tune" validate "$f" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 1 ] && grep -q "not a regular file" "$tmp/err" ||
        { echo "FAIL: tune validate $f exited $rc:"; cat "$tmp/err"; fail=1; }
    timeout 20 "$tune" "$f" --out "$tmp/r3" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 1 ] && grep -q "not a regular file" "$tmp/err" ||
        { echo "FAIL: tune $f exited $rc:"; cat "$tmp/err"; fail=1; }
done
head -c $((17 << 20)) /dev/zero | tr '\0' ' ' >"$tmp/huge.json"
expect 1 "huge.json: too large" validate "$tmp/huge.json"

# ---- the sweep is checked before the GPU is looked for ----
python3 - "$SWEEP" "$tmp/div0.json" <<'PY' || { echo "FAIL: python3"; fail=1; }
import json, sys
s = json.load(open(sys.argv[1]))
s["skip_if"] = "chunk / (g - g) > 1"
json.dump(s, open(sys.argv[2], "w"), indent=2)
PY
expect 1 "div0.json: skip_if\[0\]: cannot evaluate .*division by zero" validate "$tmp/div0.json"
expect 1 "div0.json: skip_if\[0\]: cannot evaluate .*division by zero" "$tmp/div0.json" --out "$tmp/r"
expect 1 "div0.json: skip_if\[0\]" run "$tmp/div0.json" --compile-only --out "$tmp/r2"

# ---- an unusually large sweep is announced ----
cat >"$tmp/large.json" <<'JSON'
{"name": "large", "family": "gather_matmul", "op": "gather_inner_bmv",
 "problem": {"g": {"range": [1, 60000]}, "k_pre": 128, "k": 16, "n": 4096}, "methods": ["custom"]}
JSON
expect 0 "warning: .*large.json enumerates 60000 configurations \(more than 50000\)" validate "$tmp/large.json"
expect 0 "" validate "$SWEEP"
grep -q warning "$tmp/err" && { echo "FAIL: a small sweep warned"; fail=1; }

# ---- the search options: parsed whole, validate counts what a searched run measures ----
for bad in bayes '' Random; do
    expect 2 "tune run: --search expects exhaustive, random or model, got '$bad'" "$SWEEP" --search "$bad"
done
for bad in 0 0% 101% -5 abc 1.5 '' 10%% ' 3' 10%/run /shape; do
    expect 2 "tune run: --budget expects a count \(an integer >= 1\) or a percentage" "$SWEEP" --budget "$bad"
    expect 2 "tune validate: --budget expects a count" validate "$SWEEP" --budget "$bad"
done
for bad in 0 -1 nan abc ''; do
    expect 2 "tune run: --time-limit expects a number in \(0, 3.16224e\+07\] \(seconds\)" "$SWEEP" --time-limit "$bad"
done
expect 2 "tune run: --search-seed expects an unsigned 64-bit integer" "$SWEEP" --search-seed -3
expect 2 "tune run: --warm-start expects a path, got an empty one" "$SWEEP" --warm-start ''
expect 2 "unknown option --budget \(an option of tune run, tune validate, tune compile\)" report "$RESULTS" --budget 3
SEARCH=$PWD/tests/data/search/sparq_small.json
expect 0 "searched: random, budget 3/shape: 10 of 20 configurations measured \(4 baselines, 6 of 16 candidates\)" validate "$SEARCH"
expect 0 "searched: random, budget 50%: 12 of 20 configurations measured" validate "$SEARCH" --budget 50%
expect 0 "searched: exhaustive, budget 1/shape: 6 of 20" validate "$SEARCH" --search exhaustive --budget 1/shape
expect 0 "searched: exhaustive, budget 1: 5 of 20" validate "$SEARCH" --search exhaustive --budget 1
expect 0 "searched: model, budget 25%: 8 of 20" validate "$SEARCH" --search model --budget 25%
expect 0 "" validate "$SWEEP" --search exhaustive
grep -q searched "$tmp/out" && { echo "FAIL: exhaustive without a budget said searched"; fail=1; }
expect 1 "--warm-start: a warm start applies to a searched run" validate "$SWEEP" --warm-start "$RESULTS"
for o in --search --budget --time-limit --search-seed --warm-start; do
    "$tune" help run | grep -q -- "$o" || { echo "FAIL: tune help run does not list $o"; fail=1; }
done

# ---- --compile-only exits as tune compile: 1 when a kernel does not compile ----
python3 - "$FAULTS" "$tmp/compile_error.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["problem"]["n"] = [1048576]
s["params"] = {"fault": ["none", "compile_error"], "block": [128]}
json.dump(s, open(sys.argv[2], "w"), indent=2)
PY
# the fault-injection family is the test build's alone (tune_test): tune does not know it
expect 1 "unknown family 'fault_test'" validate "$tmp/compile_error.json"
tune=$tune_test expect 1 "tune compile: .* [1-9][0-9]* compile errors" compile "$tmp/compile_error.json"
tune=$tune_test expect 1 "1 compile errors" "$tmp/compile_error.json" --compile-only --out "$tmp/co" --quiet
# the kernel that does not compile is named with the configuration that needs it
tune=$tune_test expect 1 "\(configuration fault=compile_error block=128\) failed to compile" \
    compile "$tmp/compile_error.json" --no-cache

# ---- NVRTC's warnings of kernels that compiled: shown with --warnings only ----
cat >"$tmp/warn.cu" <<'CU'
extern "C" __global__ void fill(float *y, int n)
{
#if LOUD
    int unused_here = 1;
#endif
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 1.0f;
}
CU
cat >"$tmp/warn.json" <<'JSON'
{"name": "warn", "family": "kernel", "op": "fill",
 "kernel": {"source": "warn.cu", "entry": "fill", "defines": {"LOUD": "{loud}"},
   "args": [{"name": "y", "type": "float32", "count": "n", "role": "out"},
            {"name": "n", "type": "int32", "value": "n"}],
   "grid": "(n + 127) / 128", "block": 128,
   "reference": {"entry": "fill", "defines": {"LOUD": "0"}, "grid": "(n + 127) / 128", "block": 128}},
 "problem": {"n": [1000]}, "params": {"loud": [0, 1]}, "methods": ["kernel"]}
JSON
expect 0 "fill \(configuration loud=1\) compiled with warnings:" compile "$tmp/warn.json" --warnings
grep -q "unused_here" "$tmp/err" || { echo "FAIL: --warnings did not print NVRTC's log"; fail=1; }
grep -q "loud=0" "$tmp/err" && { echo "FAIL: --warnings named a kernel without warnings"; fail=1; }
expect 0 "0 compile errors" compile "$tmp/warn.json"
grep -q "warning" "$tmp/err" && { echo "FAIL: a warning printed without --warnings"; fail=1; }

# the run's meta.json says what each method is for (plots read it)
python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))["sweep"]["methods"]; assert m == {"custom": "tuned"}, m' \
    "$tmp/co/meta.json" || { echo "FAIL: meta.json has no sweep.methods roles"; fail=1; }

# ---- the results store: tune ingest and tune history ----
DB=$tmp/h.sqlite
expect 2 "name at least one run folder" ingest --db "$DB"
expect 2 "tune ingest: --db expects a path" ingest "$RESULTS" --db ''
expect 2 "tune ingest: --date expects a date YYYY-MM-DD, got '2026-02-30'" ingest "$RESULTS" --db "$DB" --date 2026-02-30
expect 2 "tune ingest: unknown option --bogus" ingest "$RESULTS" --bogus
expect 2 "tune history: takes no folders" history "$RESULTS"
expect 2 "tune history: --window expects an integer in \[1, 64\], got '0'" history --db "$DB" --window 0
expect 2 "tune history: --threshold expects" history --db "$DB" --threshold -1
expect 2 "tune history: --since expects a date" history --db "$DB" --since yesterday
expect 2 "tune history: --segment-on expects keys" history --db "$DB" --segment-on gpu
expect 2 "must not exceed --window" history --db "$DB" --window 2 --min-runs 3
expect 1 "no results store here" history --db "$DB"
test ! -e "$DB" || { echo "FAIL: tune history created the store"; fail=1; }
expect 1 "no meta.json" ingest "$tmp/work" --db "$DB"
expect 0 "added \(night 2026-11-22, 1368 rows" ingest "$RESULTS" --db "$DB"
expect 0 "already in the store" ingest "$RESULTS" --db "$DB"
expect 0 "added \(night 2026-11-23" ingest "$RESULTS" --db "$DB" --date 2026-11-23
TUNE_DB=$DB expect 0 "## sparq on NVIDIA H200" history
expect 0 '"tune_history": 1' history --db "$DB" --json
expect 2 "--run expects a path" history --db "$DB" --run ''
for c in ingest history; do
    "$tune" help "$c" | grep -q "usage: tune $c" || { echo "FAIL: tune help $c"; fail=1; }
done

# ---- the shipped kernels are found from the binary, never from the working directory ----
# a folder with its own kernels_src/ (and data/) does not replace tune's: a copy of the binary
# outside the build runs from it and compiles tune's own sources
mkdir -p "$tmp/evil/kernels_src" "$tmp/bin"
for f in kernels_src/*.cu kernels_src/*.cuh; do echo '#error not the shipped kernel' >"$tmp/evil/$f"; done
cp "$tune" "$tmp/bin/tune"
(cd "$tmp/evil" && "$tmp/bin/tune" compile "$SWEEP" --no-cache \
    >"$tmp/out" 2>"$tmp/err")
rc=$?
[ $rc -eq 0 ] && ! grep -q "not the shipped kernel" "$tmp/err" ||
    { echo "FAIL: tune compile in a folder with its own kernels_src exited $rc:"; cat "$tmp/err"; fail=1; }

[ $fail -eq 0 ] && echo "test_cli: ok"
exit $fail
