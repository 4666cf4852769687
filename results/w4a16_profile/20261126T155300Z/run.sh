#!/usr/bin/env bash
# The device call behind results/w4a16_profile: Nsight Compute on the winners of
# results/w4a16/20261126T154830Z at k = n = 8192 (prof_m*.json: wgmma_ws at m = 16 to 256, gemv at
# m = 1; clocks left as they are), then sweeps/testing/w4a16_ws_large.json and
# sweeps/w4a16_groups.json into /tmp/res (tarred to $OUT).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export TUNE_CACHE_DIR=/tmp/tcache
mkdir -p $OUT/p /tmp/res
{ nvidia-smi; ncu --version; } > $OUT/p/tools.txt 2>&1
for m in 1 16 32 64 128 256; do
  timeout 120 ncu --clock-control none --target-processes all -k regex:'mg_wgmma_ws|mg_gemv' --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats \
    --section MemoryWorkloadAnalysis --section SchedulerStats \
    --metrics sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    -o $OUT/p/m$m -f build/tune results/w4a16_profile/20261126T155300Z/prof_m$m.json --out /tmp/r$m > $OUT/p/ncu_m$m.log 2>&1
  ncu -i $OUT/p/m$m.ncu-rep --page details --print-details all > $OUT/p/details_m$m.txt 2>&1
  echo "m=$m: tune $(grep -o '"time_median": *[0-9.e-]*' /tmp/r$m/raw.jsonl | head -1) | $(grep -E '^ +(Duration|DRAM Throughput|Achieved Occupancy|sm__pipe_tensor_cycles_active|Registers Per Thread)' $OUT/p/details_m$m.txt | tr -s ' ' | tr '\n' ';')"
done
for s in sweeps/testing/w4a16_ws_large.json sweeps/w4a16_groups.json; do
  n=$(basename $s .json); t0=$(date +%s)
  build/tune $s --results /tmp/res --cache /tmp/c_$n --quiet > $OUT/p/$n.log 2>&1
  echo "$n: exit $? in $(( $(date +%s) - t0 )) s"
done
(cd /tmp/res && tar czf $OUT/res.tgz .)
cd $OUT && tar czf prof.tgz p && rm -rf p
