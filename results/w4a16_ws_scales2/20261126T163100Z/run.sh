#!/usr/bin/env bash
# Device call: the GPU test of the mixed GEMM and the wgmma_ws variants' check with the host's
# single tensor-map encoder, then the scale boxes with their descriptors prefetched, from 4 rows
# per stage ("r4", the source as committed) against from 2 rows ("r2": MG_WS_STMA_ROWS 2), on
# sweeps/testing/w4a16_ws_scales.json, r4, r2, r4, each with a cold kernel cache.
set -u
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p $OUT/logs /tmp/k2; nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/logs/gpu.txt
cp kernels_src/* /tmp/k2/; sed -i '1i #define MG_WS_STMA_ROWS 2' /tmp/k2/mixed_gemm_wgmma.cu
R=/tmp/res
st() { grep -o '"status": *"[a-z_]*"' "$1" | sort | uniq -c | tr '\n' ' '; }
TUNE_TEST_FAMILIES=fault_test TUNE_CACHE_DIR=/tmp/c_t timeout 300 build/test_mixed_gemm --verbose=0 -j4 > $OUT/logs/test_mixed_gemm.log 2>&1
echo "test_mixed_gemm: exit $? $(grep -h Synthesis $OUT/logs/test_mixed_gemm.log | tail -1)"
build/tune sweeps/testing/w4a16_wgmma_check.json --out $R/check --cache /tmp/c_r4 --quiet > $OUT/logs/check.log 2>&1
echo "check: exit $? $(st $R/check/raw.jsonl)"
for v in r4 r2 r4b; do
  kd=$PWD/kernels_src; [ $v = r2 ] && kd=/tmp/k2
  build/tune sweeps/testing/w4a16_ws_scales.json --kernels $kd --out $R/ab_$v --cache /tmp/c_$v --quiet > $OUT/logs/ab_$v.log 2>&1
  echo "ab_$v: exit $? $(st $R/ab_$v/raw.jsonl)"
done
(cd $R && tar czf $OUT/results.tgz .); (cd $OUT && tar czf /tmp/logs.tgz logs && rm -rf logs && mv /tmp/logs.tgz .)
python3 - "$R" <<'PY'
import json, sys, collections
R = sys.argv[1]
def best(f):
    b = collections.defaultdict(lambda: 1e9)
    for l in open(f + '/raw.jsonl'):
        r = json.loads(l)
        if r['status'] == 'ok' and r['method'] == 'wgmma_ws':
            k = (r['k'], r['m'], r['group'], r['zero_point'], r['dtype'][:4]); b[k] = min(b[k], r['time_median'] * 1e6)
    return b
a, b, c = (best(f'{R}/ab_{v}') for v in ('r4', 'r2', 'r4b'))
print('k m group zp dtype | r4 | r2 | r4 again | r2/r4')
for k in sorted(a): print('%s %s %s %s %s | %.1f | %.1f | %.1f | %.3f' % (*k, a[k], b[k], c[k], b[k] / min(a[k], c[k])))
PY
