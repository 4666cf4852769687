#!/usr/bin/env bash
# on the device, in the repo root: profile the wgmma_ws winners with source-level stall sampling
set -u
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64 TUNE_KERNELS_DIR=$PWD/kernels_src
export TUNE_CACHE_DIR=/tmp/tcache
mkdir -p $OUT/p
which ncu cuobjdump nvdisasm > $OUT/p/tools.txt 2>&1
ncu --version >> $OUT/p/tools.txt 2>&1
for m in ${MS:-64 32 128 256 16}; do
  timeout 150 ncu --target-processes all -k regex:mg_wgmma_ws --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SourceCounters --section Occupancy \
    --section LaunchStats --section MemoryWorkloadAnalysis --section SchedulerStats \
    --metrics sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active \
    -o $OUT/p/m$m -f build/tune .pkg/prof/prof_m$m.json --out /tmp/r$m > $OUT/p/ncu_m$m.log 2>&1
  ncu -i $OUT/p/m$m.ncu-rep --page details --print-details all > $OUT/p/details_m$m.txt 2>&1
  ncu -i $OUT/p/m$m.ncu-rep --page source --csv --print-source sass > $OUT/p/sass_m$m.csv 2>&1
  echo "m=$m: $(grep -E 'Duration|pipe_tensor_cycles' $OUT/p/details_m$m.txt | tr -s ' ' | tr '\n' ' ')"
done
# the cubins, disassembled
for f in $(grep -rl mg_wgmma_ws /tmp/tcache 2>/dev/null | head -5); do cuobjdump -sass $f > $OUT/p/sass_$(basename $f).txt 2>&1; done
ls /tmp/tcache | head > $OUT/p/cache_ls.txt
cd $OUT && tar czf prof.tgz p && rm -rf p
