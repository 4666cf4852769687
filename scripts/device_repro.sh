#!/usr/bin/env bash
# Reproducibility and timer agreement on a GPU machine, after a run of
# sweeps/sparq.json under results/ (scripts/device_check.sh): runs the sweep a second time, then
# compares the best chunk per shape (or a tie) and the best times of the two runs, and times the
# `slice` baseline's cuBLAS call with an independent program (tools/timer_check.cu, plain events)
# on every shape above 20 us, against the first run's slice medians. Needs build/timer_check.
set -u
source "$(dirname "$0")/device_env.sh"
export TUNE_CACHE_DIR=/tmp/tune-cache-repro
first=$(ls -d results/sparq/*/ | tail -1)
build/tune sweeps/sparq.json --results /tmp/tune-repro --quiet >"$OUT/repro.log" 2>&1
second=$(ls -d /tmp/tune-repro/sparq/*/ | tail -1)
python3 - "$first" "$second" >"$OUT/repro.txt" <<'PY'
import json, sys, statistics
def best(d):
    rows = [json.loads(l) for l in open(d + "/raw.jsonl")]
    b, slc = {}, {}
    for r in rows:
        if r["status"] != "ok": continue
        k = (r["g"], r["k_pre"], r["k"])
        if r["method"] == "custom" and (k not in b or r["time_median"] < b[k]["time_median"]): b[k] = r
        if r["method"] == "slice": slc[k] = r["time_median"]
    ties = {}
    try:
        for l in open(d + "/retime.jsonl"):
            t = json.loads(l); s = t["shape"]
            ties[(s["g"], s["k_pre"], s["k"])] = t
    except OSError: pass
    return b, slc, ties
b1, s1, t1 = best(sys.argv[1]); b2, s2, t2 = best(sys.argv[2])
same = tie = 0; diffs = []
for k in b1:
    c1, c2 = b1[k]["chunk"], b2[k]["chunk"]
    diffs.append(abs(b2[k]["time_median"] / b1[k]["time_median"] - 1))
    if c1 == c2: same += 1
    elif any(t.get("tie") and {c1, c2} <= {t["winner"]["chunk"], t["runner_up"]["chunk"]} for t in (t1.get(k, {}), t2.get(k, {}))): tie += 1
print("shapes %d: same best chunk %d, different but a tie %d, different %d" % (len(b1), same, tie, len(b1) - same - tie))
print("best time, relative difference between the runs: median %.2f %%, max %.2f %%" % (100 * statistics.median(diffs), 100 * max(diffs)))
print("retime ties: run 1 %d, run 2 %d" % (sum(t["tie"] for t in t1.values()), sum(t["tie"] for t in t2.values())))
for k in sorted(s1):
    if s1[k] > 20e-6: print("SLICE", *k, "%.3f" % (s1[k] * 1e6))
PY
grep -v ^SLICE "$OUT/repro.txt"
echo "timer agreement (slice shapes above 20 us): g k_pre k tune_us independent_us diff"
grep ^SLICE "$OUT/repro.txt" | while read -r _ g kp k us; do
  ind=$(build/timer_check "$g" "$kp" "$k" 128 | awk '{print $5}')
  awk -v g="$g" -v kp="$kp" -v k="$k" -v a="$us" -v b="$ind" 'BEGIN{printf "%s %s %s %s %s %+.1f%%\n", g, kp, k, a, b, 100*(b-a)/a}'
done | tee "$OUT/timer_agreement.txt"
