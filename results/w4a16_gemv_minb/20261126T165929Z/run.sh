#!/usr/bin/env bash
# Device call: the warp-streaming kernel (gemv) with a minimum of 5 or 6 blocks per multiprocessor
# in its launch bounds (ptxas: 96 registers with 76 bytes of spills, 80 with 252, against 118 and
# none) against the kernel as committed, on sweeps/testing/w4a16_gemv_minb.json: base, b5, b6,
# base again, each with a cold kernel cache. Only on an H200.
set -u
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { nvidia-smi --query-gpu=name --format=csv,noheader; echo "not an H200: nothing run"; exit 3; }
for b in 5 6; do mkdir -p /tmp/kb$b; cp -r kernels_src/. /tmp/kb$b/; sed -i "s/__launch_bounds__(WN \*WK \* 32)/__launch_bounds__(WN *WK * 32, $b)/" /tmp/kb$b/mixed_gemm_decode.cu; grep -c "WK \* 32, $b)" /tmp/kb$b/mixed_gemm_decode.cu; done
for v in base b5 b6 base2; do
  kd=$PWD/kernels_src; case $v in b5) kd=/tmp/kb5;; b6) kd=/tmp/kb6;; esac
  build/tune sweeps/testing/w4a16_gemv_minb.json --kernels $kd --out /tmp/g/$v --cache /tmp/c_$v --quiet > /tmp/g_$v.log 2>&1
  echo "$v: exit $? $(grep -o '"status": *"[a-z_]*"' /tmp/g/$v/raw.jsonl | sort | uniq -c | tr '\n' ' ')"; cp /tmp/g_$v.log /tmp/g/$v/tune.log
done
(cd /tmp && tar czf $OUT/g.tgz g)
python3 - <<'PY'
import json, collections
def best(v):
    b = collections.defaultdict(lambda: 1e9)
    for l in open(f'/tmp/g/{v}/raw.jsonl'):
        r = json.loads(l)
        if r['status'] == 'ok': k = (r['k'], r['n'], r['m'], r['method']); b[k] = min(b[k], r['time_median'] * 1e6)
    return b
B = {v: best(v) for v in ('base', 'b5', 'b6', 'base2')}
print('k n m | gemv base | 5 blocks | 6 blocks | base again | stream')
for k in sorted(x for x in B['base'] if x[3] == 'gemv'):
    print('%s %s %s | %.1f | %.1f | %.1f | %.1f | %.1f' % (k[0], k[1], k[2], B['base'][k], B['b5'][k], B['b6'][k], B['base2'][k], B['base'][(k[0], k[1], k[2], 'stream')]))
PY
