#!/usr/bin/env bash
# The device call behind results/w4a16_ws_scales: the A/B of the warp-specialized wgmma kernel's
# scale and zero-point stream on sweeps/testing/w4a16_ws_scales.json ("new" = the kernel source as
# committed, one tensor-map box per stage for the scales and one for the zero points; "old" = the
# same source with MG_WS_STMA 0, one bulk copy per row; new, old, new, each with a cold kernel
# cache), then the variants' check (sweeps/testing/w4a16_wgmma_check.json) with the new source.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT/logs" /tmp/kold
{ nvidia-smi; nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE; } >"$OUT/logs/nvidia-smi.txt" 2>&1
cp kernels_src/* /tmp/kold/ 2>/dev/null
sed -i '1i #define MG_WS_STMA 0' /tmp/kold/mixed_gemm_wgmma.cu
R=/tmp/res
st() { zcat -f "$1" | grep -o '"status": *"[a-z_]*"' | sort | uniq -c | tr '\n' ' '; }
for v in new old new2; do
  kd=$PWD/kernels_src; [ $v = old ] && kd=/tmp/kold
  t0=$(date +%s)
  build/tune sweeps/testing/w4a16_ws_scales.json --kernels $kd --out $R/ab_$v --cache /tmp/c_$v --quiet >"$OUT/logs/ab_$v.log" 2>&1
  echo "ab_$v: exit $? in $(( $(date +%s) - t0 )) s: $(st $R/ab_$v/raw.jsonl)"
done
t0=$(date +%s)
build/tune sweeps/testing/w4a16_wgmma_check.json --out $R/check --cache /tmp/c_new --quiet >"$OUT/logs/check.log" 2>&1
echo "check: exit $? in $(( $(date +%s) - t0 )) s: $(st $R/check/raw.jsonl)"
(cd $R && tar czf "$OUT/results.tgz" .)
python3 - "$R" <<'PY'
import json, sys, collections
R = sys.argv[1]
def best(folder):
    b = collections.defaultdict(dict)
    for l in open(folder + '/raw.jsonl'):
        r = json.loads(l)
        if r.get('status') != 'ok': continue
        key = (r['k'], r['m'], r['group'], r['zero_point'], r['dtype'][:4]); meth = r['method']; t = r['time_median'] * 1e6
        if t < b[key].get(meth, (1e99,))[0]: b[key][meth] = (t, r.get('kernel', ''))
    return b
v = {x: best(f'{R}/ab_{x}') for x in ('new', 'old', 'new2')}
print('k m group zp dtype | ws new | old | new2 | cublas | new/old')
for key in sorted(v['new']):
    g = lambda x, m: v[x].get(key, {}).get(m, (float('nan'),))[0]
    print('%s %s %s %s %s | %.1f | %.1f | %.1f | %.1f | %.3f' % (*key, g('new','wgmma_ws'), g('old','wgmma_ws'), g('new2','wgmma_ws'), g('new','cublas'), min(g('new','wgmma_ws'), g('new2','wgmma_ws')) / g('old','wgmma_ws')))
PY
