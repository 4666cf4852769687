#!/usr/bin/env bash
# One device call: the GPU tests of the gather_matmul family (gm_cols_async on awkward sizes
# against the reference), then sweeps/testing/sparq_step2_pipe.json (gm_cols and gm_cols_async on
# every step-2 shape with B transposed) and sweeps/sparq_step2.json with the new knob.
set -u
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
grep -q -E "H200|H100" $OUT/gpu.txt || { echo "not an H100 or H200: nothing run"; exit 3; }
TUNE_TEST_FAMILIES=fault_test TUNE_CACHE_DIR=/tmp/c_t timeout 300 build/test_gather_matmul --verbose=0 -j4 > $OUT/test_gather_matmul.log 2>&1
echo "test_gather_matmul: exit $? $(grep -h Synthesis $OUT/test_gather_matmul.log | tail -1)"
grep -E "FAIL|Assert" $OUT/test_gather_matmul.log | head -5
R=/tmp/res; mkdir -p $R
for s in sweeps/testing/sparq_step2_pipe.json sweeps/sparq_step2.json; do
  n=$(basename $s .json); t0=$(date +%s)
  timeout 240 build/tune $s --results $R --cache /tmp/c_$n --quiet > $R/$n.log 2>&1
  echo "$n: exit $? in $(( $(date +%s) - t0 )) s $(cat $R/$n/*/raw.jsonl | grep -o '"status": *"[a-z_]*"' | sort | uniq -c | tr '\n' ' ')"
done
(cd $R && tar czf $OUT/res.tgz .)
python3 - <<'PY'
import json, glob, collections
rows = [json.loads(l) for f in glob.glob('/tmp/res/sparq_step2_pipe/*/raw.jsonl') for l in open(f)]
best = collections.defaultdict(dict)
for r in rows:
    if r['status'] != 'ok': continue
    key = (r['g'], r['k'], r['n_pre'], r['n'])
    kind = 'async' if 'gm_cols_async' in (r['kernel'] or '') else 'cols'
    t = r['time_median'] * 1e6
    best[key][kind] = min(best[key].get(kind, 1e9), t)
import math
l = [math.log(v['cols'] / v['async']) for v in best.values() if 'cols' in v and 'async' in v]
print('shapes', len(l), 'geomean cols/async %.3f' % math.exp(sum(l) / len(l)), 'async wins on', sum(x > 0 for x in l))
for key in sorted(best)[-8:]: print(key, {k: round(v, 1) for k, v in best[key].items()})
PY
