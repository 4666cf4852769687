#!/usr/bin/env bash
# One device call. (1) The weight-layout probe: probe.patch (against kernels_src/mixed_gemm_wgmma.cu
# with the persistent grid) makes every launch after the first grid (tune's check, which runs the
# kernel as it is) a probe whose producer reads each unit's stage as one contiguous run of the
# same buffer (KS x 512 bytes per unit, as a unit-major layout would store it; the values are
# wrong, the bytes and their count are the kernel's), on the winners at k = n = 8192, m = 16 to
# 128; two rounds of kernel / probe. (2) The check sweep of every wgmma_ws variant, then
# sweeps/w4a16.json and sweeps/w4a16_groups.json with the kernels of this commit.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 3; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
P=results/w4a16_ws_layout/20261126T180300Z
R=/tmp/res; mkdir -p $R/lp
for round in a b; do for v in kernel probe; do for m in 16 32 64 128; do
  kd=$PWD/kernels_src; [ $v = probe ] && kd=$PWD/build/kernels_lp
  build/tune $P/probe_m$m.json --kernels $kd --out $R/lp/${round}_${v}_m$m --cache /tmp/c_$v --quiet > $R/lp/${round}_${v}_m$m.log 2>&1
done; done; done
python3 - <<'PY' | tee $R/lp/summary.txt
import json
for v in ('kernel', 'probe'):
    out = []
    for m in (16, 32, 64, 128):
        t = []
        for rd in 'ab':
            try:
                r = json.loads(open(f'/tmp/res/lp/{rd}_{v}_m{m}/raw.jsonl').readline())
                t.append('%.1f' % (r['time_median'] * 1e6) if r['status'] == 'ok' else r['status'])
            except Exception:
                t.append('none')
        out.append('m%d=%s' % (m, '/'.join(t)))
    print('%-8s' % v, ' '.join(out))
PY
run() { local n=$1 s=$2; shift 2; local t0=$(date +%s)
  build/tune $s --cache /tmp/c_$n --quiet "$@" > $R/$n.log 2>&1
  echo "$n: exit $? in $(( $(date +%s) - t0 )) s"; }
run check sweeps/testing/w4a16_wgmma_check.json --out $R/check
python3 -c "import json,collections;print('check:',dict(collections.Counter(json.loads(l)['status'] for l in open('$R/check/raw.jsonl'))))"
run w4a16 sweeps/w4a16.json --results $R
run w4a16_groups sweeps/w4a16_groups.json --results $R
(cd $R && tar czf $OUT/res.tgz .)
