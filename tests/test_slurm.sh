#!/usr/bin/env bash
# A real Slurm on this machine (docs/slurm.md): starts munged, slurmctld and slurmd on loopback
# with their own configuration, key, ports and state in a temporary folder (SLURM_CONF; nothing of
# /etc is touched), submits a sharded compile-only sweep with scripts/slurm/submit.sh (a job array
# of 3 shard tasks with --gres=gpu:1 on fake GPUs, and the merge job, afterok), and checks:
#   - the merged rows equal a single-process compile-only run (same configurations, statuses and
#     kernels), every configuration once;
#   - a shard whose folder holds a partial earlier attempt resumes it;
#   - a task sent SIGTERM as at its time limit (--signal=B:TERM) stops tune, requeues itself and
#     completes on its second attempt;
#   - a second submission's merge job compares the run with the first (tune compare).
# Slurm and munge are installed with apt-get when missing, as scripts/test.sh installs its
# dependencies (as root, or with sudo). The daemons run as root (directly or through sudo -n);
# jobs run as the current user. Everything is stopped and removed on exit.
#
#   tests/test_slurm.sh [TUNE_BINARY]      (ctest passes the tune it built; default build/tune)
#
# Exit 0: pass; 1: fail; 77: skipped (Slurm cannot be installed or started here: the reason is
# printed).
set -u
cd "$(dirname "$0")/.."
repo=$PWD
tune=${1:-${TUNE:-build/tune}}
case $tune in /*) ;; *) tune=$repo/$tune ;; esac
sweep=$repo/${TUNE_SLURM_SWEEP:-sweeps/sparq_step1.json}
shards=3
start_time=$(date +%s)

# a skip of the cluster part never hides a failure of the checks that need no cluster
skip() { echo "skipped: $*"; [ $failed -eq 0 ] || exit 1; exit 77; }
fail() { echo "FAIL: $*"; failed=1; }
failed=0

[ -x "$tune" ] || { echo "FAIL: no tune binary at $tune (give its path)"; exit 1; }
command -v python3 >/dev/null || skip "python3 is needed to compare the rows"

# ---- without a cluster: submit.sh's checks (a fake sbatch on PATH) and merge_compare.sbatch ----
N=$(mktemp -d /tmp/tune-slurm-scripts.XXXXXX) || { echo "FAIL: mktemp"; exit 1; }
mkdir -p "$N/bin"
printf '#!/bin/bash\nprintf "%%s\\n" "$*" >>"%s/sbatch.log"\necho 4242\n' "$N" >"$N/bin/sbatch"
chmod +x "$N/bin/sbatch"
# a sweep whose first "name" line is an argument's: its name is tune's to read, not a grep's
python3 -c '
import json, os, sys
s = json.load(open(sys.argv[1]))
k = s.pop("kernel")
k["source"] = os.path.normpath(os.path.join(os.path.dirname(sys.argv[1]), k["source"]))
out = {"kernel": k}
out.update(s)
json.dump(out, open(sys.argv[2], "w"), indent=2)
' "$repo/tests/data/valid/declared_kernel.json" "$N/decl.json" || fail "cannot write $N/decl.json"
nosub() { # what expected-exit args... : submit.sh with the fake sbatch; nothing queued unless 0
    local what=$1 want=$2
    shift 2
    rm -f "$N/sbatch.log"
    PATH=$N/bin:$PATH scripts/slurm/submit.sh "$@" >"$N/out" 2>&1
    local rc=$?
    [ $rc -eq "$want" ] || fail "submit.sh $what: exit $rc, expected $want: $(tr '\n' ' ' <"$N/out")"
    [ "$want" -eq 0 ] || [ ! -e "$N/sbatch.log" ] ||
        fail "submit.sh $what: queued a job: $(cat "$N/sbatch.log")"
}
nosub "(an argument's name first)" 0 "$N/decl.json" --shards 2 --results "$N/re sults" --run R1 \
    --tune "$tune" -- --compile-only
grep -q -- "--job-name=tune-decl " "$N/sbatch.log" 2>/dev/null &&
    grep -qF -- "--output=$N/re sults/decl/R1/slurm/shard-%a.out" "$N/sbatch.log" ||
    fail "submit.sh did not name the run after the sweep (decl): $(cat "$N/sbatch.log" 2>/dev/null)"
nosub "--shards 5000" 2 "$N/decl.json" --shards 5000 --tune "$tune"
grep -q "at most 4096 shards" "$N/out" || fail "submit.sh --shards 5000 does not name tune's limit: $(cat "$N/out")"
for bad in 0 abc -1 99999999999999999999 4097; do
    nosub "--shards $bad" 2 "$N/decl.json" --shards "$bad" --tune "$tune"
done
nosub "--shards 4096 (tune's limit)" 0 "$N/decl.json" --shards 4096 --tune "$tune" --dry-run
nosub "--previous without a run" 2 "$N/decl.json" --previous "$N/nothing" --tune "$tune"
nosub "(an invalid sweep)" 2 "$repo/tests/data/invalid/bad_name.json" --tune "$tune"
# merge_compare.sbatch by hand, in a results root with a space: the first run finds nothing to
# compare with; gzipped as committed runs are, it is the second run's previous one
mini=$repo/tests/data/valid/minimal.json
for r in 20260101T000000Z 20260102T000000Z; do
    for i in 0 1; do
        TUNE_CACHE_DIR=$N/cache "$tune" "$mini" --compile-only --shard $i/2 --quiet \
            --out "$N/re sults/minimal/$r/shards/$i" >"$N/shard.log" 2>&1 ||
            fail "shard $i/2 of $r: $(tail -n 1 "$N/shard.log")"
    done
    TUNE=$tune bash scripts/slurm/merge_compare.sbatch "$N/re sults/minimal/$r" 2 >"$N/merge-$r.out" 2>&1 ||
        fail "merge_compare.sbatch $r: exit $?: $(tail -n 3 "$N/merge-$r.out" | tr '\n' ' ')"
    [ -f "$N/re sults/minimal/$r/raw.jsonl" ] && gzip -9n "$N/re sults/minimal/$r/raw.jsonl"
done
grep -q "no earlier run" "$N/merge-20260101T000000Z.out" ||
    fail "the first merge found something to compare with: $(tr '\n' ' ' <"$N/merge-20260101T000000Z.out")"
grep -qF "tune compare: $N/re sults/minimal/20260101T000000Z -> $N/re sults/minimal/20260102T000000Z" \
    "$N/merge-20260102T000000Z.out" && [ -f "$N/re sults/minimal/20260102T000000Z.compare/compare.json" ] ||
    fail "the second merge did not compare with the first (gzipped) run in a root with a space: $(tr '\n' ' ' <"$N/merge-20260102T000000Z.out")"
rm -rf "$N"
echo "test_slurm: the scripts without a cluster: $([ $failed -eq 0 ] && echo ok || echo FAILED)"

# ---- privileges: the daemons need root (slurmd starts jobs as their user) ----
if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
else
    skip "starting slurmd needs root or passwordless sudo"
fi

# ---- Slurm and munge, installed like scripts/test.sh installs its dependencies ----
have_slurm() {
    [ -x /usr/sbin/slurmctld ] && [ -x /usr/sbin/slurmd ] && [ -x /usr/sbin/munged ] &&
        command -v sbatch >/dev/null && command -v munge >/dev/null
}
if ! have_slurm; then
    out=$(
        set +u
        source scripts/quickstart.sh
        need slurmctld test -x /usr/sbin/slurmctld
        need slurmd test -x /usr/sbin/slurmd
        need slurm-client command -v sbatch
        need munge test -x /usr/sbin/munged
        install_missing
    ) 2>&1 || true
    have_slurm || skip "Slurm and munge are not installed and could not be: $(echo "$out" | tail -n 2 | tr '\n' ' ')"
fi

# ---- a cluster of one node on loopback ----
T=$(mktemp -d /tmp/tune-slurm.XXXXXX)
chmod 755 "$T"
mkdir -p "$T/state" "$T/spool" "$T/log" "$T/results"
pids=()
cleanup() {
    local rc=$?
    if [ -f "$T/slurm.conf" ]; then
        export SLURM_CONF=$T/slurm.conf
        scancel --user="$(id -un)" >/dev/null 2>&1
        for _ in $(seq 1 20); do # jobs end before their slurmd
            [ -z "$(squeue -h 2>/dev/null)" ] && break
            sleep 0.5
        done
    fi
    for f in slurmd slurmctld munged; do
        [ -f "$T/$f.pid" ] && "${SUDO[@]}" kill "$(cat "$T/$f.pid")" 2>/dev/null
    done
    for p in "${pids[@]}"; do
        for _ in $(seq 1 20); do "${SUDO[@]}" kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
        "${SUDO[@]}" kill -9 "$p" 2>/dev/null
    done
    if [ $failed -ne 0 ] || [ $rc -ne 0 ]; then
        for f in "$T"/log/*.log; do echo "---- $f"; tail -n 15 "$f"; done
    fi
    "${SUDO[@]}" rm -rf "$T"
    echo "test_slurm: $(($(date +%s) - start_time)) s"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ports nobody listens on
free_port() {
    local p
    for _ in $(seq 1 50); do
        p=$((20000 + RANDOM % 30000))
        (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }
    done
    echo 0
}
ctld_port=$(free_port)
slurmd_port=$(free_port)
[ "$slurmd_port" != "$ctld_port" ] || slurmd_port=$((ctld_port + 1))

"${SUDO[@]}" sh -c "dd if=/dev/urandom of='$T/munge.key' bs=1024 count=1 2>/dev/null && chmod 400 '$T/munge.key'"
"${SUDO[@]}" /usr/sbin/munged --force --socket="$T/munge.sock" --key-file="$T/munge.key" \
    --log-file="$T/log/munged.log" --pid-file="$T/munged.pid" --seed-file="$T/munged.seed" 2>>"$T/log/munged.stderr.log" ||
    skip "munged does not start: $(tail -n 1 "$T/log/munged.log" 2>/dev/null)"
for _ in $(seq 1 20); do [ -S "$T/munge.sock" ] && break; sleep 0.25; done
[ -f "$T/munged.pid" ] && pids+=("$(cat "$T/munged.pid")")
munge -n -S "$T/munge.sock" | unmunge -S "$T/munge.sock" >/dev/null 2>&1 ||
    skip "munge does not answer on $T/munge.sock"

slurm_user=root
cpus=$(nproc)
cat >"$T/slurm.conf" <<EOF
ClusterName=tunetest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
# cred_expire: a requeued job may start again after this many seconds (default 120)
AuthInfo=socket=$T/munge.sock,cred_expire=5
SlurmUser=$slurm_user
SlurmdUser=root
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
GresTypes=gpu
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=600
KillWait=5
NodeName=tunenode NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=1000 Gres=gpu:3 State=UNKNOWN
PartitionName=test Nodes=tunenode Default=YES MaxTime=INFINITE State=UP
EOF
# three "GPUs": any character devices do (AutoDetect off, no cgroup device constraint)
cat >"$T/gres.conf" <<EOF
AutoDetect=off
NodeName=tunenode Name=gpu File=/dev/null
NodeName=tunenode Name=gpu File=/dev/zero
NodeName=tunenode Name=gpu File=/dev/full
EOF
export SLURM_CONF=$T/slurm.conf
"${SUDO[@]}" env SLURM_CONF="$SLURM_CONF" /usr/sbin/slurmctld -i ||
    skip "slurmctld does not start: $(tail -n 2 "$T/log/slurmctld.log" 2>/dev/null)"
for _ in $(seq 1 20); do [ -s "$T/slurmctld.pid" ] && break; sleep 0.25; done
[ -s "$T/slurmctld.pid" ] && pids+=("$(cat "$T/slurmctld.pid")")
"${SUDO[@]}" env SLURM_CONF="$SLURM_CONF" /usr/sbin/slurmd -N tunenode ||
    skip "slurmd does not start: $(tail -n 2 "$T/log/slurmd.log" 2>/dev/null)"
for _ in $(seq 1 20); do [ -s "$T/slurmd.pid" ] && break; sleep 0.25; done
[ -s "$T/slurmd.pid" ] && pids+=("$(cat "$T/slurmd.pid")")
state=
for _ in $(seq 1 60); do
    state=$(sinfo -h -n tunenode -o %T 2>/dev/null)
    case $state in
        idle*) break ;;
        down* | drain* | inval*) "${SUDO[@]}" env SLURM_CONF="$SLURM_CONF" scontrol update nodename=tunenode state=resume >/dev/null 2>&1 ;;
    esac
    sleep 0.5
done
[[ $state == idle* ]] || skip "the Slurm node does not come up (state '$state'): $(tail -n 3 "$T/log/slurmctld.log" | tr '\n' ' ')"
echo "test_slurm: cluster up (slurmctld :$ctld_port, slurmd :$slurmd_port), $(($(date +%s) - start_time)) s"

# ---- the reference: one process, compile-only ----
export TUNE_CACHE_DIR=$T/cache # the jobs inherit it (sbatch --export=ALL)
"$tune" "$sweep" --compile-only --out "$T/single" --quiet >"$T/log/single.log" 2>&1 ||
    { fail "single compile-only run: $(tail -n 1 "$T/log/single.log")"; exit 1; }

# tune for the jobs: task 2's first attempt waits as if its shard took longer than the time
# limit, until the SIGTERM that --signal=B:TERM@120 would send; then tune itself
cat >"$T/tune-wrapper" <<EOF
#!/bin/bash
if [[ "\$*" == *"$T/results/"*"/20260101T000000Z/shards/2 "* ]] && [ "\${SLURM_RESTART_COUNT:-0}" = 0 ]; then
    trap 'kill \$s 2>/dev/null; exit 143' TERM
    touch "$T/task2-started"
    sleep 300 & s=\$!
    wait \$s
    exit 1
fi
exec "$tune" "\$@"
EOF
chmod +x "$T/tune-wrapper"

name=$(sed -n 's/^[[:space:]]*"name"[[:space:]]*:[[:space:]]*"\([A-Za-z0-9_.-]*\)".*/\1/p' "$sweep" | head -n 1)
run1=$T/results/$name/20260101T000000Z
run2=$T/results/$name/20260102T000000Z
# shard 1 was interrupted before (preempted): its folder holds part of its rows
"$tune" "$sweep" --compile-only --shard 1/$shards --out "$run1/shards/1" --quiet >"$T/log/partial.log" 2>&1 ||
    fail "partial shard 1: $(tail -n 1 "$T/log/partial.log")"
rows1=$(wc -l <"$run1/shards/1/raw.jsonl")
head -n $((rows1 / 2)) "$run1/shards/1/raw.jsonl" >"$T/half" && cp "$T/half" "$run1/shards/1/raw.jsonl"

submit() { # run_id -> prints the job ids
    scripts/slurm/submit.sh "$sweep" --shards $shards --results "$T/results" --run "$1" \
        --time 10 --merge-time 5 --cpus 1 --tune "$T/tune-wrapper" -- --compile-only
}
sub=$(submit 20260101T000000Z 2>&1) || { fail "submit.sh: $sub"; exit 1; }
array_job=$(echo "$sub" | sed -n 's/^array_job=//p')
merge_job=$(echo "$sub" | sed -n 's/^merge_job=//p')
echo "test_slurm: submitted array $array_job (3 shards) and merge $merge_job (afterok)"

job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1; }
# wait for task 2's first attempt, then SIGTERM its batch script as at the time limit
for _ in $(seq 1 120); do [ -f "$T/task2-started" ] && break; sleep 0.5; done
if [ -f "$T/task2-started" ]; then
    scancel --batch --signal=TERM "${array_job}_2" || fail "scancel --signal=TERM ${array_job}_2"
else
    fail "task 2 did not start"
fi

wait_done() { # job timeout_s -> final state
    local s=
    for _ in $(seq 1 $(($2 * 2))); do
        s=$(job_state "$1")
        case $s in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | PREEMPTED) break ;; esac
        sleep 0.5
    done
    echo "$s"
}
st=$(wait_done "$merge_job" 240)
echo "test_slurm: merge job $st, $(($(date +%s) - start_time)) s"
[ "$st" = COMPLETED ] || fail "merge job $merge_job: $st (expected COMPLETED)"
for i in 0 1 2; do
    s=$(job_state "${array_job}_$i")
    [ "$s" = COMPLETED ] || fail "task $i: $s"
done

# ---- checks ----
compare_rows() { # a b -> "ok" or what differs
    python3 - "$1/raw.jsonl" "$2/raw.jsonl" <<'PY'
import json, sys
def rows(path):
    out, twice = {}, []
    for line in open(path):
        r = json.loads(line)
        key = (r["method"],) + tuple((a, r[a]) for a in r["axes"] + r["params"])
        if key in out:
            twice.append(key)
        out[key] = (r["status"], r.get("kernel"))
    return out, twice
a, ta = rows(sys.argv[1])
b, tb = rows(sys.argv[2])
problems = []
if ta or tb:
    problems.append("configurations with two rows: %d, %d" % (len(ta), len(tb)))
if set(a) != set(b):
    problems.append("%d configurations only in the single run, %d only in the merged one"
                    % (len(set(a) - set(b)), len(set(b) - set(a))))
diff = [k for k in set(a) & set(b) if a[k] != b[k]]
if diff:
    problems.append("%d configurations with another status or kernel, e.g. %s: %s vs %s"
                    % (len(diff), diff[0], a[diff[0]], b[diff[0]]))
statuses = {}
for s, _ in a.values():
    statuses[s] = statuses.get(s, 0) + 1
print("; ".join(problems) if problems else "ok: %d rows (%s)" % (
    len(a), ", ".join("%d %s" % (n, s) for s, n in sorted(statuses.items()))))
PY
}
if [ -f "$run1/raw.jsonl" ]; then
    res=$(compare_rows "$T/single" "$run1")
    echo "test_slurm: merged vs single run: $res"
    [[ $res == ok:* ]] || fail "merged rows differ from the single run: $res"
else
    fail "no merged raw.jsonl in $run1"
fi
grep -q '"merged": true' "$run1/meta.json" 2>/dev/null || fail "$run1/meta.json is not a merged meta.json"
[ -f "$run1/best.md" ] || fail "no best.md in $run1"
grep -q 'resuming' "$run1/slurm/shard-1.out" 2>/dev/null || fail "task 1 did not resume its partial shard"
grep -q 'requeued' "$run1/slurm/shard-2.out" 2>/dev/null && grep -q 'attempt 2' "$run1/slurm/shard-2.out" ||
    fail "task 2 was not requeued and run again: $(cat "$run1/slurm/shard-2.out" 2>/dev/null | tr '\n' ' ')"
grep -q 'no earlier run' "$run1/slurm/merge.out" 2>/dev/null || fail "merge job 1 should find nothing to compare with"

# ---- a second night: its merge job compares with the first ----
sub=$(submit 20260102T000000Z 2>&1) || fail "second submit.sh: $sub"
merge2=$(echo "$sub" | sed -n 's/^merge_job=//p')
st=$(wait_done "$merge2" 180)
[ "$st" = COMPLETED ] || fail "second merge job: $st: $(tail -n 5 "$run2/slurm/merge.out" 2>/dev/null | tr '\n' ' ')"
if "$tune" compare --help >/dev/null 2>&1; then
    [ -f "$run2.compare/compare.json" ] || fail "the second merge job wrote no compare.json"
    grep -q "tune compare: $run1 -> $run2" "$run2/slurm/merge.out" 2>/dev/null ||
        fail "the second merge job did not compare with the first run"
fi
res=$(compare_rows "$T/single" "$run2")
[[ $res == ok:* ]] || fail "second run: $res"

if [ $failed -ne 0 ]; then
    echo "---- slurm outputs"
    tail -n 20 "$run1"/slurm/*.out "$run2"/slurm/*.out 2>/dev/null
    exit 1
fi
echo "ok: 2 sharded compile-only runs through Slurm (3-task arrays, requeue, resume, merge, compare)"
