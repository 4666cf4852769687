#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64
mkdir -p $OUT/pr
for P in 1 2 3 4; do mkdir -p /tmp/kp$P && cp kernels_src/*.cu* /tmp/kp$P/ && patch -s -o /tmp/kp$P/mixed_gemm_wgmma.cu kernels_src/mixed_gemm_wgmma.cu results/w4a16_epilogue/probe/probe.patch && sed -i "1i #define MG_WS_PROBE $P" /tmp/kp$P/mixed_gemm_wgmma.cu; done
if [ -z "${SKIP_TEST:-}" ]; then
TUNE_KERNELS_DIR=$PWD/kernels_src TUNE_CACHE_DIR=/tmp/c_t timeout 300 build/test_mixed_gemm --verbose=0 -j4 > $OUT/pr/test_mixed_gemm.log 2>&1; echo "test_mixed_gemm exit $? $(tail -1 $OUT/pr/test_mixed_gemm.log)"
fi
for P in 0 1 2 3 4; do for m in ${MS:-16 32 64 128 256}; do
  kd=/tmp/kp$P; [ $P = 0 ] && kd=$PWD/kernels_src
  TUNE_KERNELS_DIR=$kd TUNE_CACHE_DIR=/tmp/c_p$P timeout 60 build/tune .pkg/prof/prof_m$m.json --out $OUT/pr/p${P}_m$m > $OUT/pr/p${P}_m$m.log 2>&1
done; done
python3 - <<'PY'
import json,glob,os
O=os.environ['OUT']+'/pr'
names={0:'full',1:'loads only',2:'dequant+mma only',3:'loads+dequant',4:'neither'}
for P in range(5):
    out=[]
    for m in (16,32,64,128,256):
        fs=glob.glob(f'{O}/p{P}_m{m}/**/raw.jsonl',recursive=True)
        r=[json.loads(l) for f in fs for l in open(f)]
        out.append('m%d=%s'%(m,'%.1f'%(r[0]['time_median']*1e6) if r and r[0]['status']=='ok' else (r[0]['status'] if r else 'none')))
    print('%-18s'%names[P],' '.join(out))
PY
cd $OUT && tar czf pr.tgz pr && rm -rf pr
