#!/usr/bin/env bash
# Device call (one H200, CUDA 13; build/tune, build/test_search_run, build/test_worker and their
# .so files carried): the GPU tests of searched runs (now measured by one worker for the whole
# run), then sweeps/w4a16.json exhaustive, searched with --search model --budget 10% (seeds 1, 2
# and 3), and searched as before the session (TUNE_SEARCH_SESSION=0: one or two workers a round,
# seed 1), each with a cold kernel cache of its own; tune compare of each searched run with the
# exhaustive one. At most 8 files under $OUT (the rest in pack.tgz); a table printed last.
set -u
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then nvidia-smi --query-gpu=name --format=csv,noheader; echo "not an H200: nothing run"; exit 3; fi
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
L=/tmp/logs; mkdir -p $L /tmp/pack
rm -rf /tmp/ex /tmp/sr* /tmp/c_* /tmp/cmp*
for t in test_search_run test_worker; do
    if [ -x build/$t ]; then
        TUNE_TEST_FAMILIES=fault_test TUNE_CACHE_DIR=/tmp/c_t timeout 200 build/$t --verbose=0 -j4 > $L/$t.log 2>&1
        echo "$t: exit $? $(grep -h Synthesis $L/$t.log | tail -1)"
    else
        echo "$t: not carried, not run"
    fi
done
wall() { awk "BEGIN{printf \"%.2f\", $2 - $1}"; }
t0=$(date +%s.%N); timeout 180 build/tune sweeps/w4a16.json --results /tmp/ex --cache /tmp/c_ex --quiet > $L/exhaustive.log 2>&1; rc=$?; t1=$(date +%s.%N)
W_EX=$(wall $t0 $t1); echo "exhaustive: exit $rc, wall $W_EX s"
run_search() { # name seed env...
    local name=$1 seed=$2; shift 2
    local t0=$(date +%s.%N)
    env "$@" timeout 90 build/tune sweeps/w4a16.json --search model --budget 10% --search-seed $seed --results /tmp/sr_$name --cache /tmp/c_$name > $L/$name.log 2>&1
    local rc=$? t1=$(date +%s.%N)
    echo "$name $(wall $t0 $t1)" >> $L/walls.txt
    echo "$name: exit $rc, wall $(wall $t0 $t1) s"
}
: > $L/walls.txt
run_search session_s1 1 TUNE_SEARCH_SESSION=1
run_search perround_s1 1 TUNE_SEARCH_SESSION=0
run_search session_s2 2 TUNE_SEARCH_SESSION=1
run_search session_s3 3 TUNE_SEARCH_SESSION=1
ex=$(ls -d /tmp/ex/w4a16/*/)
for n in session_s1 perround_s1 session_s2 session_s3; do
    d=$(ls -d /tmp/sr_$n/w4a16/*/ 2>/dev/null | head -1)
    [ -n "$d" ] || continue
    build/tune compare $ex $d --out /tmp/cmp_$n > $L/compare_$n.md 2>&1 || echo "compare $n: exit $?"
    cp -r $d /tmp/pack/$n; cp -r /tmp/cmp_$n /tmp/pack/compare_$n
done
cp -r $ex /tmp/pack/exhaustive
cp $L/* /tmp/pack/
(cd /tmp/pack && tar czf $OUT/pack.tgz .)
cp $L/walls.txt $L/test_search_run.log $L/session_s1.log $OUT/ 2>/dev/null
python3 - "$W_EX" <<'PY' | tee $OUT/summary.txt
import json, statistics, sys, os
ex = float(sys.argv[1])
walls = dict(l.split() for l in open('/tmp/logs/walls.txt'))
print('exhaustive wall %.2f s' % ex)
print('%-12s %7s %6s %8s %7s %6s %7s %5s %8s  %s' % ('run', 'wall s', '% ex', 'within3', 'median', 'worst', 'workers', 'rnds', 'kernels', 'rounds: configs/kernels/compile s/wall s'))
for n in ['session_s1', 'perround_s1', 'session_s2', 'session_s3']:
    try:
        c = json.load(open('/tmp/cmp_%s/compare.json' % n))
        d = [x for x in os.listdir('/tmp/sr_%s/w4a16' % n)][0]
        m = json.load(open('/tmp/sr_%s/w4a16/%s/meta.json' % (n, d)))
    except Exception as e:
        print('%-12s missing (%s)' % (n, e)); continue
    r = [s['best_base']['time_us'] / s['best_new']['time_us'] for s in c['shapes']]
    s = m['search']; tl = s.get('timeline', {})
    rounds = ' | '.join('%d/%d/%.1f/%.1f' % (x['configurations'], x['kernels'], x['compile_s'], x['wall_s']) for x in tl.get('rounds', []))
    w = float(walls.get(n, 'nan'))
    print('%-12s %7.2f %5.1f%% %5d/%-2d %6.2f%% %5.1f%% %7s %5d %4d/%d  %s; search %.2f s, retime pass %.2f s' % (n, w, 100 * w / ex, sum(x >= 1 / 1.03 for x in r), len(r), 100 * statistics.median(r), 100 * min(r), tl.get('workers', '?'), s['rounds'], s['kernels']['compiled'], s['kernels']['space'], rounds, tl.get('search_s', 0), tl.get('retime_s', 0)))
PY
