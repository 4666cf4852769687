#!/usr/bin/env python3
"""A synthetic history tree (the tree of `tune history`, docs/dashboard.md) for the dashboard's
load-time check: RUNS nightly runs of one sweep on one GPU, SERIES series (half of the shapes
with a tuned method and a baseline), noise, two driver changes, a few steps up and down.

    tests/dashboard_synth.py [--runs 365] [--series 250] [--seed 1] > history.json
"""
import argparse
import datetime
import json
import random
import statistics
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=365)
    ap.add_argument("--series", type=int, default=250)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    day0 = datetime.date(2025, 11, 27)
    drivers = [(0, "570.86"), (a.runs // 3, "575.51.03"), (2 * a.runs // 3, "580.159.04")]
    runs = []
    for i in range(a.runs):
        night = (day0 + datetime.timedelta(days=i)).isoformat()
        seg = sum(1 for start, _ in drivers[1:] if i >= start)
        changes = [f"driver {drivers[seg - 1][1]} → {drivers[seg][1]}"] if seg and i == drivers[seg][0] else []
        runs.append({"id": 1000 + i, "night": night, "start": night + "T02:00:00Z", "host": "node1",
                     "driver": drivers[seg][1], "runtime": 13000, "tool_rev": "3b11778f276",
                     "kernels_hash": "ce6da16321a35cb8", "sweep_hash": "3678566d8b0f8d8e",
                     "source_dir": f"/srv/tune/results/sparq/{night}", "segment": seg, "changes": changes})
    seg_starts = [start for start, _ in drivers]
    window, min_runs, thr, k = 7, 3, 3.0, 3.0
    series, counts = [], dict.fromkeys(["regression", "improvement", "same", "unstable", "insufficient"], 0)
    for s in range(a.series):
        shape = f"g={256 << (s // 2 % 4)} k={32 << (s // 8 % 4)} n={4096 << (s // 32)}"
        method = "custom" if s % 2 == 0 else "torch"
        base = rnd.uniform(5, 80)
        step_at, step = rnd.randrange(a.runs), rnd.choice([1.0, 1.0, 1.08, 0.93])
        pts, times = [], []
        for i, r in enumerate(runs):
            t = base * (step if i >= step_at else 1.0) * (1 + rnd.gauss(0, 0.008))
            times.append(t)
            prev = times[max(seg_starts[r["segment"]], i - window):i]
            winner = "" if method == "torch" else f"chunk={64 << (1 if i >= step_at else 0)} threads=256"
            p = {"run": r["id"], "time": t * 1e-6, "winner": winner}
            if len(prev) < min_runs:
                p.update(verdict="insufficient", baseline=None, lo=None, hi=None, change_pct=None)
            else:
                b = statistics.median(prev)
                mad = statistics.median(abs(x - b) for x in prev) * 1.4826 or 1e-9
                pct = (t - b) / b * 100
                v = "same" if abs(pct) <= thr or abs(t - b) <= k * mad else (
                    "regression" if pct > 0 else "improvement")
                p.update(verdict=v, baseline=b * 1e-6, lo=min(prev) * 1e-6, hi=max(prev) * 1e-6,
                         change_pct=round(pct, 2))
            pts.append(p)
        last = pts[-1]
        counts[last["verdict"]] += 1
        series.append({"shape": shape, "method": method, "points": pts,
                       "verdict": {"status": last["verdict"], "change_pct": last["change_pct"],
                                   "baseline": last["baseline"], "reason": "synthetic"}})
    h = {"tune_history": 1, "store": "/srv/tune/results/history.sqlite",
         "generated": (day0 + datetime.timedelta(days=a.runs)).isoformat() + "T00:00:00Z",
         "rule": {"window": window, "min_runs": min_runs, "threshold_pct": thr, "k_mad": k,
                  "consecutive": 1, "segment_on": ["sweep", "driver", "runtime", "tool", "kernels"]},
         "groups": [{"sweep": "sparq", "device": "NVIDIA H200", "runs": runs,
                     "newest": {"run": runs[-1]["id"], "counts": counts}, "series": series}]}
    json.dump(h, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
