#!/usr/bin/env bash
# The device call behind results/w4a16_ws_tma: correctness of the wgmma_ws variants on awkward sizes
# (sweeps/testing/w4a16_wgmma_check.json), then the A/B of its weight stream on the tile space of
# sweeps/testing/w4a16_ws_tma.json: "new" = the kernel source as committed (one tensor-map box per
# weight stage), "old" = the same source with MG_WS_WTMA 0 (one bulk copy per k16 row, the kernel
# before), run new, old, new on one machine, each with a cold kernel cache of its own.
# Then, if FULL=1, sweeps/w4a16.json. Logs and result folders under $OUT.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT/logs" /tmp/kold
{ nvidia-smi; nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE; } >"$OUT/logs/nvidia-smi.txt" 2>&1
cp kernels_src/* /tmp/kold/ 2>/dev/null
sed -i '1i #define MG_WS_WTMA 0' /tmp/kold/mixed_gemm_wgmma.cu
R=/tmp/res
t0=$(date +%s)
build/tune sweeps/testing/w4a16_wgmma_check.json --results $R --cache /tmp/c_check --quiet >"$OUT/logs/check.log" 2>&1
echo "check: exit $? in $(( $(date +%s) - t0 )) s: $(zcat -f $R/w4a16_wgmma_check/*/raw.jsonl* | grep -o '"status": *"[a-z_]*"' | sort | uniq -c | tr '\n' ' ')"
for v in new old new2; do
  kd=$PWD/kernels_src; [ $v = old ] && kd=/tmp/kold
  t0=$(date +%s)
  build/tune sweeps/testing/w4a16_ws_tma.json --kernels $kd --out $R/ab_$v --cache /tmp/c_$v --quiet >"$OUT/logs/ab_$v.log" 2>&1
  echo "ab_$v: exit $? in $(( $(date +%s) - t0 )) s: $(grep -o '"status": *"[a-z_]*"' $R/ab_$v/raw.jsonl | sort | uniq -c | tr '\n' ' ')"
done
if [ -n "${FULL:-}" ]; then
  t0=$(date +%s)
  build/tune sweeps/w4a16.json --results $R --cache /tmp/c_full --quiet >"$OUT/logs/w4a16.log" 2>&1
  echo "w4a16: exit $? in $(( $(date +%s) - t0 )) s"
fi
(cd $R && tar czf "$OUT/results.tgz" .)
python3 - "$R" <<'PY'
import json, sys, glob, collections
R = sys.argv[1]
def best(folder):
    b = collections.defaultdict(dict)
    for l in open(folder + '/raw.jsonl'):
        r = json.loads(l)
        if r.get('status') != 'ok': continue
        p = r['problem'] if 'problem' in r else r
        key = (p.get('k'), p.get('n'), p.get('m'))
        meth = r.get('method') or r.get('params', {}).get('method')
        t = r['time_median'] * 1e6
        if t < b[key].get(meth, (1e99,))[0]: b[key][meth] = (t, r.get('kernel', ''))
    return b
v = {x: best(f'{R}/ab_{x}') for x in ('new', 'old', 'new2')}
print('k n m | ws new | ws old | ws new2 | cublas | fp8 | stream | new/old')
for key in sorted(v['new']):
    g = lambda x, m: v[x].get(key, {}).get(m, (float('nan'),))[0]
    print('%s %s %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.3f' % (*key, g('new','wgmma_ws'), g('old','wgmma_ws'), g('new2','wgmma_ws'), g('new','cublas'), g('new','fp8'), g('new','stream'), min(g('new','wgmma_ws'), g('new2','wgmma_ws')) / g('old','wgmma_ws')))
PY
