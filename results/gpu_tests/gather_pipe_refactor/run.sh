#!/usr/bin/env bash
# The gather_matmul GPU tests with gm_cols_async and gm_dense_async sharing one pipeline
# (gm_row_pipe), then sweeps/sparq_step1.json and sparq_step2.json with the kernels before the
# refactor (build/kernels_gmold) and after, in one session: the best custom times must not move.
set -u
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
grep -q -E "H200|H100" $OUT/gpu.txt || { echo "not an H100 or H200"; exit 3; }
TUNE_TEST_FAMILIES=fault_test TUNE_CACHE_DIR=/tmp/c_t timeout 300 build/test_gather_matmul --verbose=0 -j4 > $OUT/test_gather_matmul.log 2>&1
echo "test_gather_matmul: exit $? $(grep -h Synthesis $OUT/test_gather_matmul.log | tail -1)"
for s in sparq_step1 sparq_step2; do for v in old new; do
  kd=$PWD/kernels_src; [ $v = old ] && kd=$PWD/build/kernels_gmold; rm -rf /tmp/r_${s}_$v
  timeout 200 build/tune sweeps/$s.json --kernels $kd --out /tmp/r_${s}_$v --cache /tmp/c_${s}_$v --quiet > /dev/null 2>&1
  echo "$s $v: exit $?"
done; done
python3 - <<'PY' | tee $OUT/summary.txt
import json, math
for s in ('sparq_step1', 'sparq_step2'):
    b = {}
    for v in ('old', 'new'):
        for l in open(f'/tmp/r_{s}_{v}/raw.jsonl'):
            r = json.loads(l)
            if r['status'] != 'ok' or r['method'] != 'custom' or 'async' not in r['kernel']: continue
            key = (r['kernel'], r['g'], r['k'], r.get('k_pre'), r.get('n_pre'), r['n'])
            b.setdefault(key, {})[v] = r['time_median']
    l = [math.log(x['old'] / x['new']) for x in b.values() if len(x) == 2]
    print(s, 'async configurations', len(l), 'geomean old/new %.4f' % math.exp(sum(l) / len(l)))
PY
