#!/usr/bin/env python3
"""Synthetic nights for testing and measuring `tune history` (docs/history.md).

  synth_nights.py noise RUN_A RUN_B > noise.json
      the relative difference of each (shape, method)'s best time between two real runs of one
      sweep on one GPU (same kernels): the noise between nights, as measured.
  synth_nights.py make BASE_RUN OUT --nights N [--first 2026-01-01] [--noise noise.json |
                  --noise-pct 1.0] [--noise-floor-pct 0.25] [--seed 1] [--step NIGHT:PCT[:FRACTION]]...
                  [--drift NIGHT:PCT[:FRACTION]] [--driver NIGHT:VERSION]
      OUT/<YYYY-MM-DD>/ run folders (meta.json, raw.jsonl.gz) made from a real run: each night
      every (shape, method) series is scaled by a normal noise factor whose deviation follows the
      series' own measured difference (or --noise-pct), every row by a small independent factor (near-ties change
      winners), plus the planted events: a step of PCT % from NIGHT on a FRACTION of the series
      (default all), a drift of PCT % a night from NIGHT, a driver change at NIGHT (a step of
      --driver-step PCT % with it, default 5). OUT/truth.json lists the events and the series they
      hit. Nights are numbered from 0; ingest them with `tune ingest OUT/*/`.
  synth_nights.py judge HISTORY_JSON TRUTH_JSON
      reads `tune history --json` of a store of such nights and prints, as JSON: false alarms on
      series and nights no event touched (regression or improvement verdicts), the nights a step
      took to be flagged, the drift reached when first flagged, and flags at or after a driver
      change (which must be annotated, not flagged).
Python's standard library only.
"""
import argparse
import datetime
import gzip
import json
import math
import os
import random
import sys


def rows_of(run):
    path = os.path.join(run, "raw.jsonl")
    f = open(path) if os.path.exists(path) else gzip.open(path + ".gz", "rt")
    with f:
        return [json.loads(line) for line in f if line.strip()]


def shape_text(row):
    """The shape as tune formats it: "name=value ..." over the row's axes, in order."""
    def fmt(v):
        if isinstance(v, bool):
            return "1" if v else "0"
        if isinstance(v, float):
            return "%g" % v
        return str(v)
    return " ".join("%s=%s" % (a, fmt(row[a])) for a in row["axes"])


def bests(rows):
    b = {}
    for r in rows:
        if r["status"] != "ok" or r.get("time_median") is None:
            continue
        k = (shape_text(r), r["method"])
        b[k] = min(b.get(k, math.inf), r["time_median"])
    return b


def cmd_noise(a):
    x, y = bests(rows_of(a.run_a)), bests(rows_of(a.run_b))
    d = {"%s|%s" % k: (y[k] - x[k]) / x[k] for k in sorted(x) if k in y}
    json.dump({"from": [a.run_a, a.run_b], "series": d}, sys.stdout, indent=0)
    print()


def parse_event(text, what, with_fraction=True):
    parts = text.split(":")
    if len(parts) not in ((2, 3) if with_fraction else (2,)):
        sys.exit("synth_nights: %s expects NIGHT:VALUE%s, got %r" % (what, "[:FRACTION]" if with_fraction else "", text))
    night = int(parts[0])
    value = parts[1] if not with_fraction else float(parts[1])
    frac = float(parts[2]) if len(parts) == 3 else 1.0
    return night, value, frac


def cmd_make(a):
    rnd = random.Random(a.seed)
    base = rows_of(a.base)
    with open(os.path.join(a.base, "meta.json")) as f:
        meta = json.load(f)
    series = sorted({(shape_text(r), r["method"]) for r in base})
    # each series' noise: normal, its deviation from the series' own measured difference
    # between two real runs (E|d| = sqrt(2) sigma sqrt(2 / pi) for the difference d of two
    # nights), or from a difference drawn from all of them for a series the file does not have;
    # at least --noise-floor-pct
    sigma = {}
    if a.noise:
        with open(a.noise) as f:
            measured = json.load(f)["series"]
        pool = sorted(measured.values())
        for s in series:
            d = measured.get("%s|%s" % s)
            if d is None:
                d = rnd.choice(pool)
            sigma[s] = max(abs(d) * math.sqrt(math.pi) / 2.0, a.noise_floor_pct / 100.0)
    else:
        sigma = {s: a.noise_pct / 100.0 for s in series}
    steps = [parse_event(s, "--step") for s in a.step]
    drift = parse_event(a.drift, "--drift") if a.drift else None
    driver = parse_event(a.driver, "--driver", with_fraction=False) if a.driver else None
    truth = {"nights": a.nights, "first": a.first, "series": len(series), "steps": [], "drift": None,
             "driver": None}
    for night, pct, frac in steps:
        hit = sorted(rnd.sample(series, int(round(frac * len(series)))))
        truth["steps"].append({"night": night, "pct": pct, "series": ["%s|%s" % s for s in hit]})
    if drift:
        night, pct, frac = drift
        hit = sorted(rnd.sample(series, int(round(frac * len(series)))))
        truth["drift"] = {"night": night, "pct_per_night": pct, "series": ["%s|%s" % s for s in hit]}
    if driver:
        truth["driver"] = {"night": driver[0], "version": driver[1], "step_pct": a.driver_step}
    hits = {}
    for e in truth["steps"]:
        for s in e["series"]:
            hits.setdefault(s, []).append(("step", e["night"], e["pct"]))
    if truth["drift"]:
        for s in truth["drift"]["series"]:
            hits.setdefault(s, []).append(("drift", truth["drift"]["night"], truth["drift"]["pct_per_night"]))
    first = datetime.date.fromisoformat(a.first)
    os.makedirs(a.out, exist_ok=True)
    for n in range(a.nights):
        day = first + datetime.timedelta(days=n)
        factor = {}
        for s in series:
            f = 1.0 + rnd.gauss(0.0, sigma[s])
            for kind, night, pct in hits.get("%s|%s" % s, []):
                if n >= night:
                    f *= (1.0 + pct / 100.0) if kind == "step" else (1.0 + pct / 100.0 * (n - night + 1))
            if driver and n >= driver[0]:
                f *= 1.0 + a.driver_step / 100.0
            factor[s] = max(f, 0.05)
        d = os.path.join(a.out, day.isoformat())
        os.makedirs(d, exist_ok=True)
        m = json.loads(json.dumps(meta))
        start = datetime.datetime(day.year, day.month, day.day, 2, 0, 0)
        m["start"] = start.strftime("%Y-%m-%dT%H:%M:%SZ")
        m["end"] = (start + datetime.timedelta(minutes=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
        if driver and n >= driver[0]:
            m.setdefault("versions", {})["driver"] = driver[1]
            m.setdefault("key", {})["driver"] = driver[1]
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(m, f, indent=1)
        with gzip.open(os.path.join(d, "raw.jsonl.gz"), "wt", compresslevel=1) as f:
            for r in base:
                r2 = dict(r)
                if r2.get("time_median") is not None and r2["status"] == "ok":
                    g = factor[(shape_text(r), r["method"])] * (1.0 + rnd.gauss(0.0, a.row_noise_pct / 100.0))
                    for k in ("time_median", "time_mean", "time_min", "time_max", "time_p10", "time_p90"):
                        if r2.get(k) is not None:
                            r2[k] = r2[k] * g
                r2["timestamp"] = m["start"]
                f.write(json.dumps(r2, separators=(",", ":")) + "\n")
    with open(os.path.join(a.out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)


def cmd_judge(a):
    with open(a.history) as f:
        h = json.load(f)
    with open(a.truth) as f:
        t = json.load(f)
    first = datetime.date.fromisoformat(t["first"])
    touched = {}
    for e in t["steps"]:
        for s in e["series"]:
            touched[s] = min(touched.get(s, 1 << 30), e["night"])
    if t["drift"]:
        for s in t["drift"]["series"]:
            touched[s] = min(touched.get(s, 1 << 30), t["drift"]["night"])
    driver_night = t["driver"]["night"] if t["driver"] else None
    clean = flags = 0
    step_delay = {}
    drift_at = {}
    driver_flags = 0
    annotated = False
    for g in h["groups"]:
        for r in g["runs"]:
            if driver_night is not None and r["night"] == (first + datetime.timedelta(days=driver_night)).isoformat():
                annotated = any(c.startswith("driver ") for c in r["changes"])
        night_of = {r["id"]: (datetime.date.fromisoformat(r["night"]) - first).days for r in g["runs"]}
        for s in g["series"]:
            key = "%s|%s" % (s["shape"], s["method"])
            for p in s["points"]:
                n = night_of[p["run"]]
                flagged = p["verdict"] in ("regression", "improvement")
                if (driver_night is not None and driver_night <= n < driver_night + 7 and flagged
                        and n < touched.get(key, 1 << 30)):
                    driver_flags += 1
                if n < touched.get(key, 1 << 30) and (driver_night is None or n < driver_night):
                    clean += 1
                    flags += flagged
            for e in t["steps"]:
                if key in e["series"]:
                    late = [night_of[p["run"]] - e["night"] for p in s["points"]
                            if night_of[p["run"]] >= e["night"] and p["verdict"] == "regression"]
                    step_delay[key] = min(late) + 1 if late else None
            if t["drift"] and key in t["drift"]["series"]:
                late = [night_of[p["run"]] - t["drift"]["night"] + 1 for p in s["points"]
                        if night_of[p["run"]] >= t["drift"]["night"] and p["verdict"] == "regression"]
                drift_at[key] = min(late) * t["drift"]["pct_per_night"] if late else None
    out = {"shape_nights_clean": clean, "false_alarms": flags,
           "false_alarm_pct": 100.0 * flags / clean if clean else None}
    if step_delay:
        d = list(step_delay.values())
        out["step_series"] = len(d)
        out["step_flagged_within_2_nights_pct"] = 100.0 * sum(1 for x in d if x is not None and x <= 2) / len(d)
        out["step_never_flagged"] = sum(1 for x in d if x is None)
    if drift_at:
        d = [x for x in drift_at.values() if x is not None]
        out["drift_series"] = len(drift_at)
        out["drift_never_flagged"] = len(drift_at) - len(d)
        out["drift_pct_when_flagged_max"] = max(d) if d else None
        out["drift_pct_when_flagged_median"] = sorted(d)[len(d) // 2] if d else None
        out["drift_flagged_before_10pct_pct"] = 100.0 * sum(1 for x in d if x < 10) / len(drift_at)
    if driver_night is not None:
        out["driver_change_annotated"] = annotated
        out["flags_in_the_7_nights_after_the_driver_change"] = driver_flags
    json.dump(out, sys.stdout, indent=1)
    print()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    n = sub.add_parser("noise")
    n.add_argument("run_a")
    n.add_argument("run_b")
    m = sub.add_parser("make")
    m.add_argument("base")
    m.add_argument("out")
    m.add_argument("--nights", type=int, required=True)
    m.add_argument("--first", default="2026-01-01")
    m.add_argument("--noise")
    m.add_argument("--noise-pct", type=float, default=1.0)
    m.add_argument("--noise-floor-pct", type=float, default=0.25)
    m.add_argument("--row-noise-pct", type=float, default=0.3)
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--step", action="append", default=[])
    m.add_argument("--drift")
    m.add_argument("--driver")
    m.add_argument("--driver-step", type=float, default=5.0)
    j = sub.add_parser("judge")
    j.add_argument("history")
    j.add_argument("truth")
    a = p.parse_args()
    {"noise": cmd_noise, "make": cmd_make, "judge": cmd_judge}[a.cmd](a)


if __name__ == "__main__":
    main()
