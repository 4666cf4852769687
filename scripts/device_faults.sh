#!/usr/bin/env bash
# Fault tolerance on a GPU machine (a build carried from the development machine):
#  1. the fault sweep: every good configuration measured, every fault recorded with its kind;
#  2. SIGKILL in the middle of sweeps/sparq.json, then --resume: the full set, nothing twice.
# Logs and results go to $OUT (default /tmp/tune-out); a short summary is printed last.
set -u
source "$(dirname "$0")/device_env.sh"
export TUNE_CACHE_DIR=/tmp/tune-cache-faults
R=/tmp/tune-fault-results
rm -rf "$R"

start=$(date +%s)
# tune_test: tune with the fault_test family registered (docs/fault-tolerance.md)
build/tune_test sweeps/testing/faults.json --results "$R" --watchdog 5 >"$OUT/faults.md" 2>"$OUT/faults.log"
echo "fault sweep: exit $?, $(( $(date +%s) - start )) s"
python3 - "$R" <<'PY'
import json, glob, sys, collections
rows = [json.loads(l) for l in open(glob.glob(sys.argv[1] + "/faults/*/raw.jsonl")[0])]
by = collections.Counter((r["fault"], r["status"]) for r in rows)
for k in sorted(by): print("  fault=%-13s status=%-13s rows=%d" % (k[0], k[1], by[k]))
expect = {"none": "ok", "oob_write": "crashed", "trap": "crashed", "misaligned": "crashed",
          "hang": "timeout", "compile_error": "compile_error", "wrong_answer": "invalid"}
bad = [r for r in rows if r["status"] != expect[r["fault"]]]
print("fault sweep:", len(rows), "rows,", len(bad), "with an unexpected status")
for r in bad: print("  unexpected:", r["fault"], r["status"], (r.get("reason") or "")[:200])
PY

R2=/tmp/tune-resume-results
rm -rf "$R2"
build/tune sweeps/sparq.json --results "$R2" --quiet >"$OUT/kill.log" 2>&1 &
pid=$!
sleep "${KILL_AFTER:-12}"
kill -9 "$pid"
wait "$pid" 2>/dev/null
before=$(cat "$R2"/sparq/*/raw.jsonl | wc -l)
echo "SIGKILL after ${KILL_AFTER:-12} s: $before rows written"
build/tune sweeps/sparq.json --results "$R2" --resume --quiet >"$OUT/resume.log" 2>&1
echo "resume: exit $?"
grep -h "resuming" "$OUT/resume.log"
python3 - "$R2" <<'PY'
import json, glob, sys
rows = [json.loads(l) for l in open(glob.glob(sys.argv[1] + "/sparq/*/raw.jsonl")[0])]
keys = [json.dumps([r["method"]] + [r.get(a) for a in r["axes"] + r["params"]]) for r in rows]
print("after resume: %d rows, %d distinct configurations (sweep has 1368), %d measured twice"
      % (len(rows), len(set(keys)), len(keys) - len(set(keys))))
PY
tar czf "$OUT/fault-results.tgz" -C /tmp tune-fault-results tune-resume-results
