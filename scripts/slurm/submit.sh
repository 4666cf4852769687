#!/usr/bin/env bash
# Submits a sharded sweep to Slurm (docs/slurm.md): a job array with one shard per task
# (sweep_array.sbatch) and a merge-and-compare job that runs when every task succeeded
# (merge_compare.sbatch, --dependency=afterok). Prints the run folder and the two job ids.
#
#   scripts/slurm/submit.sh sweeps/sparq.json --shards 8 --results /shared/tune/results
#   scripts/slurm/submit.sh sweeps/sparq.json --shards 3 -- --compile-only   # no GPU
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: scripts/slurm/submit.sh SWEEP.json [options] [-- TUNE_OPTIONS...]
  --shards N          array tasks, one shard each (default 4)
  --results ROOT      results root on a filesystem every node sees (default: results)
  --run ID            run folder ROOT/<sweep>/ID (default: the UTC time, 20261122T101500Z)
  --time T            time limit of each shard task (default 02:00:00)
  --merge-time T      time limit of the merge job (default 00:30:00)
  --gres SPEC         GPUs of each task (default gpu:1; "none": no GPU request)
  --cpus N            CPUs of each task (default 4: NVRTC compiles in parallel)
  --partition P, --account A, --qos Q   passed to sbatch
  --max-parallel K    at most K shard tasks at a time (--array=0-(N-1)%K)
  --previous DIR      run to compare with (default: the latest earlier run beside the new one)
  --tune PATH         tune binary (default: $TUNE, else build/tune of this checkout, else tune)
  --dry-run           print the sbatch commands instead of running them
Options after -- go to every `tune` run, e.g. --compile-only, --seed 7, --watchdog 60.
Environment: TUNE_CACHE_DIR (kernel cache; default ~/.cache/tune), TUNE_MAX_REQUEUE (3),
TUNE_COMPARE_ARGS (default --allow-mismatch=pci_bus_id,kernels,tool).
USAGE
}

die() { echo "submit.sh: $*" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
sweep= shards=4 root=results run_id= time=02:00:00 merge_time=00:30:00 gres=gpu:1
partition= account= qos= maxpar= prev= tune=${TUNE:-} dry=0 cpus=4
tune_args=()
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --shards) shards=${2:?}; shift ;;
    --results) root=${2:?}; shift ;;
    --run) run_id=${2:?}; shift ;;
    --time) time=${2:?}; shift ;;
    --merge-time) merge_time=${2:?}; shift ;;
    --gres) gres=${2:?}; shift ;;
    --cpus) cpus=${2:?}; shift ;;
    --partition) partition=${2:?}; shift ;;
    --account) account=${2:?}; shift ;;
    --qos) qos=${2:?}; shift ;;
    --max-parallel) maxpar=${2:?}; shift ;;
    --previous) prev=${2:?}; shift ;;
    --tune) tune=${2:?}; shift ;;
    --dry-run) dry=1 ;;
    --) shift; tune_args=("$@"); break ;;
    -*) usage >&2; die "unknown option $1" ;;
    *) [ -z "$sweep" ] || die "one sweep file per submission ($sweep, $1)"; sweep=$1 ;;
  esac
  shift
done
[ -n "$sweep" ] || { usage >&2; die "name a sweep file"; }
[ -f "$sweep" ] || die "no sweep file $sweep"
[[ $shards =~ ^[1-9][0-9]*$ ]] || die "--shards expects a number >= 1, got '$shards'"
[ -z "$maxpar" ] || [[ $maxpar =~ ^[1-9][0-9]*$ ]] || die "--max-parallel expects a number >= 1"
if [ -z "$tune" ]; then
  if [ -x "$repo/build/tune" ]; then tune=$repo/build/tune; else tune=$(command -v tune || true); fi
fi
[ -n "$tune" ] && [ -x "$tune" ] || die "no tune binary (build it, or --tune PATH)"
tune=$(cd "$(dirname "$tune")" && pwd)/$(basename "$tune")
# the sweep must be valid before anything waits in a queue; tune reads it (the name, the counts
# and its own shard limit: `tune validate --json`, one line whose first key is the name)
info=$("$tune" validate --json "$sweep") || die "$sweep is not a valid sweep"
name=$(sed -n 's/^{"name":"\([A-Za-z0-9_.-]*\)",.*/\1/p' <<<"$info" | head -n 1)
max_shards=$(sed -n 's/.*"max_shards":\([0-9]\{1,9\}\)[,}].*/\1/p' <<<"$info" | head -n 1)
configs=$(sed -n 's/.*"configs":\([0-9]\{1,18\}\)[,}].*/\1/p' <<<"$info" | head -n 1)
[ -n "$name" ] && [ -n "$max_shards" ] && [ -n "$configs" ] ||
  die "cannot read the sweep's name and counts from '$tune validate --json' (a tune without --json? rebuild it)"
# the array is checked against tune's own limit before it is queued: a task tune refuses fails
# one by one on the cluster
[ ${#shards} -le 9 ] && [ "$shards" -le "$max_shards" ] ||
  die "--shards $shards: tune runs at most $max_shards shards of a sweep (--shard I/N, N <= $max_shards)"
[ "$shards" -le "$configs" ] ||
  echo "submit.sh: warning: $shards shards for $configs configurations: some shards have nothing to run" >&2

abspath() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
sweep=$(abspath "$sweep")
run_id=${run_id:-$(date -u +%Y%m%dT%H%M%SZ)}
# the run folder stays inside ROOT/<sweep>/
[[ $run_id =~ ^[A-Za-z0-9_.-]+$ ]] && [ "$run_id" != . ] && [ "$run_id" != .. ] ||
  die "--run expects a folder name ([A-Za-z0-9_.-]+, not . or ..), got '$run_id'"
run=$(abspath "$root")/$name/$run_id
if [ -n "$prev" ]; then
  prev=$(abspath "$prev")
  [ -f "$prev/raw.jsonl" ] || [ -f "$prev/raw.jsonl.gz" ] ||
    die "--previous $prev: no run there (no raw.jsonl or raw.jsonl.gz)"
fi

common=()
[ -n "$partition" ] && common+=(--partition="$partition")
[ -n "$account" ] && common+=(--account="$account")
[ -n "$qos" ] && common+=(--qos="$qos")
[[ $cpus =~ ^[1-9][0-9]*$ ]] || die "--cpus expects a number >= 1, got '$cpus'"
array=(--array="0-$((shards - 1))${maxpar:+%$maxpar}" --time="$time" --cpus-per-task="$cpus"
       --job-name="tune-$name"
       --output="$run/slurm/shard-%a.out" --export=ALL,TUNE="$tune")
if [ "$gres" = none ]; then array+=(--gres=none); else array+=(--gres="$gres"); fi
merge=(--time="$merge_time" --job-name="tune-$name-merge" --output="$run/slurm/merge.out"
       --export=ALL,TUNE="$tune" --kill-on-invalid-dep=yes)

if [ $dry -eq 1 ]; then
  echo sbatch --parsable ${common[@]+"${common[@]}"} "${array[@]}" "$here/sweep_array.sbatch" "$sweep" "$run" "$shards" ${tune_args[@]+"${tune_args[@]}"}
  echo sbatch --parsable ${common[@]+"${common[@]}"} "${merge[@]}" --dependency=afterok:ARRAY_JOB "$here/merge_compare.sbatch" "$run" "$shards" ${prev:+"$prev"}
  exit 0
fi
mkdir -p "$run/slurm"
array_job=$(sbatch --parsable ${common[@]+"${common[@]}"} "${array[@]}" "$here/sweep_array.sbatch" "$sweep" \
  "$run" "$shards" ${tune_args[@]+"${tune_args[@]}"})
array_job=${array_job%%;*}
merge_job=$(sbatch --parsable ${common[@]+"${common[@]}"} "${merge[@]}" --dependency="afterok:$array_job" \
  "$here/merge_compare.sbatch" "$run" "$shards" ${prev:+"$prev"})
merge_job=${merge_job%%;*}
echo "run=$run"
echo "array_job=$array_job"
echo "merge_job=$merge_job"
