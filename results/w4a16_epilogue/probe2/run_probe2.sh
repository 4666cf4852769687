#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64
mkdir -p $OUT/pr2
for P in 1 4 5 6; do mkdir -p /tmp/kp$P && cp kernels_src/*.cu* /tmp/kp$P/ && patch -s -o /tmp/kp$P/mixed_gemm_wgmma.cu kernels_src/mixed_gemm_wgmma.cu results/w4a16_epilogue/probe2/probe_lanes.patch && sed -i "1i #define MG_WS_PROBE $P" /tmp/kp$P/mixed_gemm_wgmma.cu; done
for P in 0 1 4 5 6; do for m in 32 64 128 32_s2 64_s2; do
  kd=/tmp/kp$P; [ $P = 0 ] && kd=$PWD/kernels_src
  TUNE_KERNELS_DIR=$kd TUNE_CACHE_DIR=/tmp/c_p$P timeout 60 build/tune .pkg/prof/prof_m$m.json --out $OUT/pr2/p${P}_m$m > $OUT/pr2/p${P}_m$m.log 2>&1
done; done
python3 - <<'PY'
import json,glob,os
O=os.environ['OUT']+'/pr2'
names={0:'full',1:'loads only',4:'neither',5:'W loads only',6:'X loads only'}
for P in (0,1,4,5,6):
    out=[]
    for m in ('32','64','128','32_s2','64_s2'):
        fs=glob.glob(f'{O}/p{P}_m{m}/**/raw.jsonl',recursive=True)
        r=[json.loads(l) for f in fs for l in open(f)]
        out.append('m%s=%s'%(m,'%.1f'%(r[0]['time_median']*1e6) if r and r[0]['status']=='ok' else (r[0]['status'] if r else 'none')))
    print('%-14s'%names[P],' '.join(out))
PY
cd $OUT && tar czf pr2.tgz pr2 && rm -rf pr2
