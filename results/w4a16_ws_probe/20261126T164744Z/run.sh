#!/usr/bin/env bash
# Device call: how much the dequantization costs the wgmma_ws winners at k = n = 8192. probe.patch
# (against kernels_src/mixed_gemm_wgmma.cu as committed) makes every launch after the first grid
# (tune's check, which runs in full) a probe: MG_WS_PROBE 1 keeps only the 4 lop3 of a word's 13
# dequantization instructions, 2 skips the dequantization and its scale loads, 3 skips the weight,
# scale and zero-point loads (and the waits for them), 4 the loads of X; 0 is the kernel.
set -u
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then nvidia-smi --query-gpu=name --format=csv,noheader; echo "not an H200: nothing run"; exit 3; fi
P=results/w4a16_ws_probe/20261126T164744Z
for v in 2 3 4; do mkdir -p /tmp/kp$v; cp -r kernels_src/. /tmp/kp$v/; patch -s -o /tmp/kp$v/mixed_gemm_wgmma.cu kernels_src/mixed_gemm_wgmma.cu $P/probe.patch; sed -i "1i #define MG_WS_PROBE $v" /tmp/kp$v/mixed_gemm_wgmma.cu; done
mkdir -p /tmp/pr
for round in a b; do for v in 0 2 3 4; do for m in 16 32 64 128; do
  kd=$PWD/kernels_src; [ $v != 0 ] && kd=/tmp/kp$v
  build/tune $P/probe_m$m.json --kernels $kd --out /tmp/pr/${round}_p${v}_m$m --cache /tmp/c_p$v --quiet > /tmp/pr/${round}_p${v}_m$m.log 2>&1
done; done; done
(cd /tmp && tar czf $OUT/pr.tgz pr)
python3 - <<'PY'
import json
names = {0: 'full kernel', 2: 'no dequantization', 3: 'no weight loads', 4: 'no X loads'}
for v in (0, 2, 3, 4):
    out = []
    for m in (16, 32, 64, 128):
        t = []
        for rd in 'ab':
            try:
                r = json.loads(open(f'/tmp/pr/{rd}_p{v}_m{m}/raw.jsonl').readline())
                t.append('%.1f' % (r['time_median'] * 1e6) if r['status'] == 'ok' else r['status'])
            except Exception as e: t.append('none')
        out.append('m%d=%s' % (m, '/'.join(t)))
    print('%-22s' % names[v], ' '.join(out))
PY
