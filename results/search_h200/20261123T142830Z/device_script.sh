#!/usr/bin/env bash
# on the device, repo root: GPU tests touched this session, the two w4a16 sweeps, a budgeted run, compare
set -u
export LD_LIBRARY_PATH=$PWD/build/devlibs:/usr/local/cuda/lib64 TUNE_KERNELS_DIR=$PWD/kernels_src TUNE_BIN=$PWD/build/tune
L=$OUT/logs; mkdir -p $L
nvidia-smi > $L/nvidia-smi.txt 2>&1
for t in test_mixed_gemm test_search_run; do
  TUNE_TEST_FAMILIES=fault_test TUNE_CACHE_DIR=/tmp/ct_$t timeout 240 build/$t --verbose=0 -j4 > $L/$t.log 2>&1
  echo "$t: exit $? $(grep -h Synthesis $L/$t.log | tail -1)" | tee -a $L/summary.txt
done
run() { # name cache args...
  local name=$1; shift; local s=$(date +%s.%N)
  TUNE_CACHE_DIR=/tmp/cache-$name build/tune "$@" > $L/$name.log 2>&1; local rc=$?
  echo "$name: exit $rc wall $(echo "$(date +%s.%N) - $s" | bc) s: $(grep -o 'results in [^ ]*' $L/$name.log | tail -1)" | tee -a $L/summary.txt
}
run exhaustive sweeps/w4a16.json
run model10 sweeps/w4a16.json --search model --budget 10% --search-seed 1
run groups sweeps/w4a16_groups.json
ex=$(ls -d results/w4a16/2*/ | sort | head -n -1 | tail -1); se=$(ls -d results/w4a16/2*/ | sort | tail -1)
build/tune compare $ex $se --threshold 3 > $L/compare_model10.md 2>&1; echo "compare $ex $se exit $?" | tee -a $L/summary.txt
for d in $(git status --porcelain --untracked-files=all results | awk '{print $2}' | cut -d/ -f1-3 | sort -u); do echo $d; done > $L/new_folders.txt
tar czf $OUT/results.tgz $(cat $L/new_folders.txt)
tar czf $OUT/logs.tgz -C $OUT logs
cat $L/summary.txt; tail -25 $L/compare_model10.md
