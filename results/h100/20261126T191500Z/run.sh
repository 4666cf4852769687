#!/usr/bin/env bash
# One device call: the GPU tests of the gather_matmul family (gm_dense_async and gm_cols_async on
# awkward sizes against the reference), then sweeps/testing/sparq_step1_pipe.json (gm_dense and
# gm_dense_async on every step-1 shape) with a per-shape comparison of the two kernels.
set -u
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
grep -q -E "H200|H100" $OUT/gpu.txt || { echo "not an H100 or H200: nothing run"; exit 3; }
TUNE_TEST_FAMILIES=fault_test TUNE_CACHE_DIR=/tmp/c_t timeout 300 build/test_gather_matmul --verbose=0 -j4 > $OUT/test_gather_matmul.log 2>&1
echo "test_gather_matmul: exit $? $(grep -h Synthesis $OUT/test_gather_matmul.log | tail -1)"
grep -E "FAIL|Assert" $OUT/test_gather_matmul.log | head -5
R=/tmp/res; mkdir -p $R
t0=$(date +%s)
timeout 300 build/tune sweeps/testing/sparq_step1_pipe.json --results $R --cache /tmp/c_p --quiet > $R/sparq_step1_pipe.log 2>&1
echo "sparq_step1_pipe: exit $? in $(( $(date +%s) - t0 )) s"
(cd $R && tar czf $OUT/res.tgz .)
python3 - <<'PY'
import json, glob, collections, math
rows = [json.loads(l) for f in glob.glob('/tmp/res/sparq_step1_pipe/*/raw.jsonl') for l in open(f)]
print(collections.Counter(r['status'] for r in rows))
best = collections.defaultdict(dict)
for r in rows:
    if r['status'] != 'ok': continue
    key = (r['g'], r['k'], r['n'])
    kind = 'async' if 'gm_dense_async' in (r['kernel'] or '') else 'dense'
    t = r['time_median'] * 1e6
    best[key][kind] = min(best[key].get(kind, 1e9), t)
l = [math.log(v['dense'] / v['async']) for v in best.values() if 'dense' in v and 'async' in v]
print('shapes', len(l), 'geomean dense/async %.3f' % math.exp(sum(l) / len(l)), 'async faster on', sum(x > 0 for x in l))
for key in sorted(best): print(key, {k: round(v, 1) for k, v in best[key].items()})
PY
