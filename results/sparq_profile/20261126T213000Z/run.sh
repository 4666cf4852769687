#!/usr/bin/env bash
# One device call on an H200: the `slice` baseline's batched GEMV by three cuBLAS calls on the
# shapes of the three SparQ sweeps (slice.cu, nvcc -O2 -arch=sm_90 -lcublas, carried as
# build/probe/slice): cublasGemmStridedBatchedEx with n = 1 (what tune calls), the same product as
# a row (m = 1), cublasHSHgemvStridedBatched.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
grep -q H200 $OUT/gpu.txt || { echo "not an H200: nothing run"; exit 3; }
build/probe/slice | tee $OUT/slice.txt
