"""Summary of the A/B runs of run.sh: the check's statuses, then per shape the best time of each
run (wgmma_ws) and cuBLAS."""
import collections, json, os, sys

R = sys.argv[1]


def rows(name):
    p = os.path.join(R, name, "raw.jsonl")
    return [json.loads(l) for l in open(p)] if os.path.exists(p) else []


c = collections.Counter(r["status"] for r in rows("check"))
print("check:", dict(c), "max error/tolerance:",
      max((r["error"] / r["tolerance"] for r in rows("check") if r["status"] == "ok"), default=None))
for a in (("p_new1", "p_old", "p_new2"), ("z_new1", "z_old", "z_new2")):
    best = collections.defaultdict(dict)
    for n in a:
        for r in rows(n):
            if r["status"] != "ok":
                continue
            key = (r["k"], r["n"], r["m"], r["group"], r["zero_point"], r["dtype"][:4], r["method"])
            t = r["time_median"] * 1e6
            best[key][n] = min(best[key].get(n, 1e30), t)
            if r["error"] > r["tolerance"]:
                print("over tolerance", n, key)
    print("%-44s %s" % ("k n m group zp dtype method", " ".join("%9s" % n for n in a)))
    for key in sorted(best):
        print("%-44s %s" % (" ".join(map(str, key)),
                            " ".join("%9.1f" % best[key].get(n, float("nan")) for n in a)))
