#!/usr/bin/env bash
# One device call on an H200: the gather_matmul GPU tests with gm_dense_reg (the dense step-1
# kernel with B^T in registers; every kernel against the CPU reference), then sweeps/sparq_step1.json
# with it beside the kernels before it (a cold cache), then Nsight Compute on gm_dense_reg at
# g = 1024, k_pre = 128, k = 64, n = 16384 (chunk 256, reg_rows 8), clocks left as they are.
set -u
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
grep -q H200 $OUT/gpu.txt || { echo "not an H200: nothing run"; exit 3; }
mkdir -p $OUT/t
TUNE_TEST_FAMILIES=fault_test TUNE_CACHE_DIR=/tmp/c_t timeout 400 build/test_gather_matmul --verbose=0 -j8 > $OUT/t/test_gather_matmul.log 2>&1
echo "test_gather_matmul: exit $? $(grep -h Synthesis $OUT/t/test_gather_matmul.log | tail -1)"
build/tune sweeps/sparq_step1.json --out /tmp/s1 --cache /tmp/c_s > $OUT/t/sweep.log 2>&1
echo "sparq_step1: exit $?"
cp -r /tmp/s1 $OUT/t/sparq_step1
cat > /tmp/one.json <<'J'
{"name": "s1_reg_k64", "description": "gm_dense_reg for Nsight Compute", "family": "gather_matmul", "op": "gather_inner_bmv",
 "problem": {"g": 1024, "k_pre": 128, "k": 64, "n": 16384, "dtype": "float16", "transpose_B": true},
 "params": {"chunk": 256, "dense": true, "stages": 0, "reg_rows": 8}, "methods": ["custom"],
 "timing": {"warmup": 1, "reps": 3, "flush_l2": true, "fresh_indices": true}}
J
timeout 150 ncu --clock-control none --target-processes all -k regex:gm_dense_reg --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis --section SchedulerStats \
  --metrics dram__bytes_read.sum -o $OUT/t/reg_k64 -f build/tune /tmp/one.json --out /tmp/n1 --cache /tmp/c_s > $OUT/t/ncu.log 2>&1
ncu -i $OUT/t/reg_k64.ncu-rep --page details --print-details all > $OUT/t/details_reg_k64.txt 2>&1
rm -f $OUT/t/reg_k64.ncu-rep
grep -E '^ +(Duration|DRAM Throughput|L1/TEX Cache Throughput|Registers Per Thread|Achieved Occupancy|dram__bytes_read.sum)' $OUT/t/details_reg_k64.txt | tr -s ' '
cd $OUT && tar czf t.tgz t && rm -rf t
