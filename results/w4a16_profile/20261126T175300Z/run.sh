#!/usr/bin/env bash
# The device call behind this folder: Nsight Compute on the large-m winners of
# results/w4a16/20261126T163227Z at k = n = 8192 (wgmma_ws at m = 1024 and 4096, the dequantize
# path at m = 8192: its dequantization kernel and its cuBLAS GEMM), cuBLAS fp16 at m = 1024 and
# 8192, and the m = 64 winners of results/w4a16_groups/20261126T163353Z at k = n = 4096 (group 128
# symmetric, group 32 and 128 with zero points, and group 128 with zero points on the symmetric
# winner's tile); clocks left as they are. tune's own timing of each file (50 reps) comes first.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 3; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
D=results/w4a16_profile/20261126T175300Z
mkdir -p $OUT/p
{ nvidia-smi; ncu --version; } > $OUT/p/tools.txt 2>&1
prof() { # name kernel-regex launch-skip
  timeout 150 ncu --clock-control none --target-processes all -k regex:"$2" --launch-skip $3 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats \
    --section MemoryWorkloadAnalysis --section SchedulerStats --section ComputeWorkloadAnalysis \
    --metrics sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed \
    -o $OUT/p/$1 -f build/tune $D/$4.json --out /tmp/n_$1 --cache /tmp/tc > $OUT/p/ncu_$1.log 2>&1
  ncu -i $OUT/p/$1.ncu-rep --page details --print-details all > $OUT/p/details_$1.txt 2>&1
  echo "$1: $(grep -E '^ +(Duration|DRAM Throughput|L2 Cache Throughput|Achieved Occupancy|sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active|Registers Per Thread|Executed Ipc Active)' $OUT/p/details_$1.txt | tr -s ' ' | tr '\n' ';')"
}
# tune's timer first (warm-up 10, 50 reps as the sweeps)
for f in $D/prof_*.json; do
  n=$(basename $f .json)
  sed 's/"warmup": 1, *"reps": 3/"warmup": 10, "reps": 50/; s/"reps": 3/"reps": 50/; s/"warmup": 1/"warmup": 10/' $f > /tmp/t_$n.json
  build/tune /tmp/t_$n.json --out /tmp/t_$n --cache /tmp/tc --quiet > $OUT/p/time_$n.log 2>&1
  echo "$n: $(python3 -c "import json;r=[json.loads(l) for l in open('/tmp/t_$n/raw.jsonl')];print(['%s %s %.1f us'%(x['method'],x['status'],(x['time_median'] or 0)*1e6) for x in r])")"
done | tee $OUT/p/times.txt
prof m1024 'mg_wgmma_ws' 1 prof_m1024
prof m4096 'mg_wgmma_ws' 1 prof_m4096
prof m8192_dequant 'mg_dequant' 1 prof_m8192
prof m8192_gemm 'gemm|nvjet|xmma|cutlass' 1 prof_m8192
prof cublas_m1024 'gemm|nvjet|xmma|cutlass' 1 prof_cublas_m1024
prof cublas_m8192 'gemm|nvjet|xmma|cutlass' 1 prof_cublas_m8192
prof g128_m64 'mg_wgmma_ws' 1 prof_g128_m64
prof g32zp_m64 'mg_wgmma_ws' 1 prof_g32zp_m64
prof g128zp_m64 'mg_wgmma_ws' 1 prof_g128zp_m64
prof g128zpbk256_m64 'mg_wgmma_ws' 1 prof_g128zpbk256_m64
cd $OUT && tar czf prof.tgz p && rm -rf p
