#!/usr/bin/env bash
# Multi-GPU check on a machine with two (or more) GPUs, with a build carried from the development
# machine (as scripts/device_check.sh): runs `tune SWEEP --gpus all` (default sweeps/sparq.json)
# into $OUT/multi while nvidia-smi samples every GPU, then checks that
#   - every GPU ran its shard: the shards' meta.json name distinct devices (ordinal, PCI bus id),
#     each with every row of its shard;
#   - every GPU was busy: nvidia-smi saw utilization and memory in use on each during the run;
#   - the merged run is complete: every configuration of the sweep exactly once (the count of
#     `tune validate`), and the same configurations as a one-GPU run of the sweep (skipped with
#     SKIP_SINGLE=1), whose wall time gives the speed-up;
# and prints a short table last. Logs, nvidia-smi samples and a tarball of the results go to $OUT
# (default /tmp/tune-out). Exit status 0 when every check passes.
#   scripts/device_multigpu.sh [SWEEP.json]        GPUS=0,1 to choose the devices (default all)
# (TUNE=path and TUNE_ARGS="--compile-only" let the script's mechanics be tried without a GPU.)
set -u
source "$(dirname "$0")/device_env.sh"
export TUNE_CACHE_DIR=/tmp/tune-cache-multigpu-$$ # cold: both runs compile as a first run does
sweep=${1:-sweeps/sparq.json}
gpus=${GPUS:-all}
tune=${TUNE:-build/tune}
read -r -a extra <<<"${TUNE_ARGS:-}"
multi=$OUT/multi
single=$OUT/single
rm -rf "$multi" "$single"

"$tune" devices 2>&1 | tee "$OUT/devices.txt"
n_dev=$(grep -c '^[0-9][0-9]*:' "$OUT/devices.txt")
[ "$n_dev" -ge 2 ] || echo "WARNING: $n_dev CUDA device(s): this check needs two"
"$tune" validate "$sweep" | tee "$OUT/validate.txt"
configs=$(sed -n 's/.* \([0-9][0-9]*\) configs .*/\1/p' "$OUT/validate.txt")

# nvidia-smi every 200 ms while the sweep runs
nvidia-smi --query-gpu=timestamp,index,pci.bus_id,utilization.gpu,memory.used \
    --format=csv,noheader,nounits -lms 200 >"$OUT/smi.csv" 2>"$OUT/smi.err" &
smi=$!
sleep 1 # a baseline sample before the run
start=$(date +%s.%N)
"$tune" "$sweep" --gpus "$gpus" --out "$multi" ${extra[@]+"${extra[@]}"} >"$OUT/multi.md" 2>"$OUT/multi.log"
rc=$?
end=$(date +%s.%N)
kill "$smi" 2>/dev/null
wait "$smi" 2>/dev/null
multi_s=$(awk "BEGIN{printf \"%.1f\", $end - $start}")
echo "tune $sweep --gpus $gpus: exit $rc, wall $multi_s s (cold kernel cache)"
tail -n 3 "$OUT/multi.log"

single_s=
if [ -z "${SKIP_SINGLE:-}" ]; then
    export TUNE_CACHE_DIR=/tmp/tune-cache-multigpu-single-$$
    start=$(date +%s.%N)
    "$tune" "$sweep" --out "$single" --quiet ${extra[@]+"${extra[@]}"} >"$OUT/single.log" 2>&1
    src=$?
    end=$(date +%s.%N)
    single_s=$(awk "BEGIN{printf \"%.1f\", $end - $start}")
    echo "tune $sweep (one GPU): exit $src, wall $single_s s (cold kernel cache)"
fi
rm -rf /tmp/tune-cache-multigpu-$$ /tmp/tune-cache-multigpu-single-$$

python3 - "$multi" "$OUT/smi.csv" "$configs" "$single" "$multi_s" "$single_s" "$rc" \
    >"$OUT/multigpu.txt" <<'PY'
import collections, csv, json, os, sys
multi, smi_path, configs, single, multi_s, single_s, rc = sys.argv[1:8]
configs = int(configs or 0)
fail = []
if rc != "0":
    fail.append("tune --gpus exited %s" % rc)

def rows(d):
    out = []
    try:
        with open(os.path.join(d, "raw.jsonl")) as f:
            out = [json.loads(l) for l in f]
    except OSError:
        pass
    return out

def ident(r):
    return (r["method"],) + tuple((a, r[a]) for a in r["axes"] + r["params"])

def bus(b):  # "0000:00:06.0" (CUDA) and "00000000:00:06.0" (nvidia-smi) -> "00:06.0"
    return ":".join(b.lower().split(":")[-2:])

shards = []
d = os.path.join(multi, "shards")
for name in sorted(os.listdir(d) if os.path.isdir(d) else [], key=lambda s: int(s) if s.isdigit() else 0):
    try:
        meta = json.load(open(os.path.join(d, name, "meta.json")))
    except (OSError, ValueError):
        fail.append("shard folder %s has no meta.json" % name)
        continue
    sh, dev = meta.get("shard", {}), meta.get("device", {})
    r = rows(os.path.join(d, name))
    shards.append(dict(index=sh.get("index"), count=sh.get("count"), configs=sh.get("configs"),
                       est=sh.get("estimated_seconds", 0), wall=meta.get("summary", {}).get("wall_seconds", 0),
                       ordinal=dev.get("ordinal"), bus=dev.get("pci_bus_id", ""), name=dev.get("name", ""),
                       rows=len(r), ok=sum(x["status"] == "ok" for x in r)))
if len(shards) < 2:
    fail.append("%d shard(s): expected one per GPU, at least 2" % len(shards))
if len({s["bus"] for s in shards}) != len(shards):
    fail.append("shards share a GPU: %s" % [s["bus"] for s in shards])
for s in shards:
    if s["rows"] != s["configs"]:
        fail.append("shard %s has %d of its %s rows" % (s["index"], s["rows"], s["configs"]))

# nvidia-smi: the busiest sample of each GPU during the run, and memory above its first sample
util, mem, mem0 = collections.defaultdict(int), collections.defaultdict(int), {}
try:
    for rec in csv.reader(open(smi_path)):
        if len(rec) < 5:
            continue
        try:
            b, u, m = bus(rec[2].strip()), int(rec[3]), int(rec[4])
        except ValueError:
            continue
        mem0.setdefault(b, m)
        util[b] = max(util[b], u)
        mem[b] = max(mem[b], m - mem0[b])
except OSError:
    pass
for s in shards:
    b = bus(s["bus"])
    s["util"], s["mem"] = util.get(b), mem.get(b)
    if not util.get(b):
        fail.append("nvidia-smi never saw GPU %s (%s) busy" % (s["ordinal"], s["bus"]))
    if not mem.get(b) or mem[b] < 256:
        fail.append("nvidia-smi saw no memory in use on GPU %s (%s)" % (s["ordinal"], s["bus"]))

merged = rows(multi)
ids = collections.Counter(ident(r) for r in merged)
twice = sum(1 for k, n in ids.items() if n > 1)
if twice:
    fail.append("%d configurations have more than one row in the merged run" % twice)
if configs and len(ids) != configs:
    fail.append("the merged run has %d configurations, the sweep %d" % (len(ids), configs))
statuses = collections.Counter(r["status"] for r in merged)
try:
    mm = json.load(open(os.path.join(multi, "meta.json")))
    if not mm.get("shard", {}).get("merged"):
        fail.append("the run folder's meta.json is not a merged one")
except (OSError, ValueError):
    fail.append("the run folder has no meta.json")
single_ids = None
if single:
    sr = rows(single)
    if sr:
        single_ids = {ident(r) for r in sr}
        if single_ids != set(ids):
            fail.append("the one-GPU run measured other configurations (%d vs %d, %d in common)"
                        % (len(single_ids), len(ids), len(single_ids & set(ids))))

print("| GPU | PCI bus id | shard | configurations | rows | ok | estimated s | wall s | max util % | max memory MiB |")
print("|--:|:--|:--|--:|--:|--:|--:|--:|--:|--:|")
for s in shards:
    print("| %s | %s | %s/%s | %s | %d | %d | %.1f | %.1f | %s | %s |" % (
        s["ordinal"], s["bus"], s["index"], s["count"], s["configs"], s["rows"], s["ok"], s["est"],
        s["wall"], s["util"], s["mem"]))
print()
print("merged: %d rows, %d distinct configurations of %d, %d twice; %s" % (
    len(merged), len(ids), configs, twice, ", ".join("%d %s" % (n, k) for k, n in sorted(statuses.items()))))
line = "wall: %s s on %d GPUs" % (multi_s, len(shards))
if single_s:
    line += ", %s s on one GPU (speed-up %.2fx)" % (single_s, float(single_s) / float(multi_s))
print(line)
print("RESULT: " + ("PASS" if not fail else "FAIL: " + "; ".join(fail)))
PY
tar czf "$OUT/multigpu-results.tgz" -C "$OUT" multi $( [ -d "$single" ] && echo single ) 2>/dev/null
cat "$OUT/multigpu.txt"
grep -q '^RESULT: PASS' "$OUT/multigpu.txt"
