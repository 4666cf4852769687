#!/usr/bin/env bash
# The device call behind results/w4a16_decode_tma: the A/B of the decode kernel's weight stream on
# sweeps/testing/w4a16_decode_tma.json ("new" = the kernel source as committed, one tensor-map box
# per stage; "old" = the same source with MG_DECODE_WTMA 0, one bulk copy per k16 row; run new,
# old, new, each with a cold kernel cache of its own), the decode kernel's correctness sweep
# (sweeps/testing/w4a16_decode_check.json), the wgmma_ws variants' check again (the launch's
# shared-memory opt-in mended), and the wgmma_ws kernel with bn = 64 (EXTRA sweep, if given).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT/logs" /tmp/kold
{ nvidia-smi; nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE; } >"$OUT/logs/nvidia-smi.txt" 2>&1
cp kernels_src/* /tmp/kold/ 2>/dev/null
sed -i '1i #define MG_DECODE_WTMA 0' /tmp/kold/mixed_gemm_decode.cu
R=/tmp/res
st() { zcat -f "$1" | grep -o '"status": *"[a-z_]*"' | sort | uniq -c | tr '\n' ' '; }
for v in new old new2; do
  kd=$PWD/kernels_src; [ $v = old ] && kd=/tmp/kold
  t0=$(date +%s)
  build/tune sweeps/testing/w4a16_decode_tma.json --kernels $kd --out $R/ab_$v --cache /tmp/c_$v --quiet >"$OUT/logs/ab_$v.log" 2>&1
  echo "ab_$v: exit $? in $(( $(date +%s) - t0 )) s: $(st $R/ab_$v/raw.jsonl)"
done
for s in sweeps/testing/w4a16_decode_check.json sweeps/testing/w4a16_wgmma_check.json ${EXTRA:-}; do
  n=$(basename $s .json); t0=$(date +%s)
  build/tune $s --out $R/$n --cache /tmp/c_new --quiet >"$OUT/logs/$n.log" 2>&1
  echo "$n: exit $? in $(( $(date +%s) - t0 )) s: $(st $R/$n/raw.jsonl)"
done
(cd $R && tar czf "$OUT/results.tgz" .)
python3 - "$R" <<'PY'
import json, sys, collections
R = sys.argv[1]
def best(folder):
    b = collections.defaultdict(dict)
    for l in open(folder + '/raw.jsonl'):
        r = json.loads(l)
        if r.get('status') != 'ok': continue
        key = (r['k'], r['n'], r['m']); meth = r['method']; t = r['time_median'] * 1e6
        if t < b[key].get(meth, (1e99,))[0]: b[key][meth] = (t, r.get('kernel', ''))
    return b
v = {x: best(f'{R}/ab_{x}') for x in ('new', 'old', 'new2')}
print('k n m | decode new | old | new2 | cublas | fp8 | stream | new/old | kernel new')
for key in sorted(v['new']):
    g = lambda x, m: v[x].get(key, {}).get(m, (float('nan'),))[0]
    print('%s %s %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.3f | %s' % (*key, g('new','decode'), g('old','decode'), g('new2','decode'), g('new','cublas'), g('new','fp8'), g('new','stream'), min(g('new','decode'), g('new2','decode')) / g('old','decode'), v['new'].get(key, {}).get('decode', (0, ''))[1]))
try:
    e = best(f'{R}/w4a16_ws_bn64')
    print('ws bn64:', ' '.join('%s/%s/%s=%.1f' % (*k, e[k]['wgmma_ws'][0]) for k in sorted(e) if 'wgmma_ws' in e[k]))
except Exception as x: print('no bn64 run', x)
PY
