#!/usr/bin/env bash
# One device call: the check sweep of every wgmma_ws variant with the new kernels (persistent grid
# without splits, zero points folded), then A/B pairs in one session: the persistent grid
# (build/tune) against one block per tile (build_np/tune, -DMG_WS_PERSISTENT=0) on
# sweeps/testing/w4a16_ws_persist.json, new / old / new; and the zero-point fold (kernels_src)
# against the kernels before it (build/kernels_zf0: MG_WG_ZFOLD 0) on
# sweeps/testing/w4a16_ws_zfold.json, new / old / new.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 3; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=/tmp/res; mkdir -p $R $OUT
nvidia-smi > $R/nvidia-smi.txt 2>&1
run() { # name binary sweep [args]
  local n=$1 b=$2 s=$3; shift 3; local t0=$(date +%s)
  $b $s --out $R/$n --cache /tmp/cache --quiet "$@" > $R/$n.log 2>&1
  echo "$n: exit $? in $(( $(date +%s) - t0 )) s"
}
run check build/tune sweeps/testing/w4a16_wgmma_check.json
run p_new1 build/tune sweeps/testing/w4a16_ws_persist.json
run p_old build_np/tune sweeps/testing/w4a16_ws_persist.json
run p_new2 build/tune sweeps/testing/w4a16_ws_persist.json
run z_new1 build/tune sweeps/testing/w4a16_ws_zfold.json
run z_old build/tune sweeps/testing/w4a16_ws_zfold.json --kernels build/kernels_zf0
run z_new2 build/tune sweeps/testing/w4a16_ws_zfold.json
(cd $R && tar czf $OUT/res.tgz .)
python3 results/w4a16_ws_persist/pending/summary.py $R
