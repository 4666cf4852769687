#!/usr/bin/env bash
# The device call behind this folder: (1) what DRAM traffic a read of one 32-byte sector in every
# 32/64/128/256 bytes causes, at the default L2 fetch granularity and with the hint set to 32, 64
# and 128 bytes (fetch.cu, nvcc -O3 -arch=sm_90, carried as build/probe/fetch), timed by events and
# by Nsight Compute's dram__bytes_read; (2) Nsight Compute on SparQ step 1's best kernels at
# g = 1024, k_pre = 128, n = 16384 (gm_cols at k = 16, gm_dense_async at k = 16 and 64) and its
# cuBLAS slice, and on step 3's cuBLAS slice at g = 4096, k = 64 and 128 and g = 1024, k = 64
# (k_pre = 1024); clocks left as they are.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 3; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
D=results/sparq_profile/20261126T204500Z
mkdir -p $OUT/p
{ nvidia-smi; ncu --version; } > $OUT/p/tools.txt 2>&1
build/probe/fetch | tee $OUT/p/fetch_events.txt
timeout 120 ncu --clock-control none -k regex:strided --metrics dram__bytes_read.sum,gpu__time_duration.sum,lts__t_sectors_srcunit_tex_op_read.sum build/probe/fetch > $OUT/p/fetch_ncu.txt 2>&1
grep -E "dram__bytes_read.sum|gpu__time_duration.sum|lts__t_sectors_srcunit_tex_op_read.sum" $OUT/p/fetch_ncu.txt | tr -s ' ' | paste - - - | head -20
prof() { # name kernel-regex
  timeout 150 ncu --clock-control none --target-processes all -k regex:"$2" --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats \
    --section MemoryWorkloadAnalysis --section SchedulerStats \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    -o $OUT/p/$1 -f build/tune $D/$1.json --out /tmp/n_$1 --cache /tmp/tc > $OUT/p/ncu_$1.log 2>&1
  ncu -i $OUT/p/$1.ncu-rep --page details --print-details all > $OUT/p/details_$1.txt 2>&1
  echo "$1: $(grep -E '^ +(Duration|DRAM Throughput|dram__bytes_read.sum|dram__bytes_write.sum|lts__t_sectors_srcunit_tex_op_read.sum|lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum|Achieved Occupancy|Registers Per Thread|Grid Size|Block Size)' $OUT/p/details_$1.txt | tr -s ' ' | tr '\n' ';')"
  grep -E '^  [a-zA-Z_0-9]+.*\(' $OUT/p/details_$1.txt | head -1
}
for n in s1_cols_k16 s1_dense_k16 s1_dense_k64 s1_dense4_k64; do prof $n 'gm_cols|gm_dense'; done
for n in s1_slice_k64 s1_slice_k16 s3_slice_g4096_k64 s3_slice_g4096_k128 s3_slice_g1024_k64; do prof $n 'gemv|gemm|nvjet|xmma|cutlass|sm90|Kernel'; done
cd $OUT && tar czf prof.tgz p && rm -rf p
