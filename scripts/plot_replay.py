#!/usr/bin/env python3
"""The figure of a search replay (`tune replay ... --out DIR`), PNG and SVG, headless.

    python3 scripts/plot_replay.py REPLAY_DIR [--out DIR]

Reads REPLAY_DIR/replay.csv and writes replay.png and replay.svg (into REPLAY_DIR unless --out):
evaluations (as a % of each shape's candidates) vs the % of the shape's best time reached
(100 x best / best found so far), the median over every shape and seed and the band between
the 25th and 75th percentiles, one line per strategy, one panel per sweep. replay.csv holds a row
where the best so far improved and one at the last evaluation; the value holds until the next
row (before the first row nothing ran ok: 0 %). See docs/search.md and docs/plots.md. Needs
Python 3 with matplotlib, pandas and numpy only.
"""

import argparse
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")  # headless, whatever MPLBACKEND says
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

matplotlib.rcParams["svg.hashsalt"] = "tune"  # stable SVG ids
GRID = np.arange(0, 101)  # % of the shape's candidates evaluated
COLORS = {"random": "tab:gray", "model": "tab:blue", "exhaustive": "tab:orange"}


def curves(df):
    """Per strategy: an array (runs x len(GRID)) of the % of best after GRID % of evaluations."""
    out = {}
    for (strategy, _shape, _seed), g in df.groupby(["strategy", "shape", "seed"], sort=False):
        cands = int(g["candidates"].iloc[0])
        evals = g["evaluations"].to_numpy()
        pct = 100.0 / g["best_ratio"].to_numpy()
        # evaluations done at each grid point, then the last row at or before it
        done = np.ceil(GRID / 100.0 * cands).astype(int)
        idx = np.searchsorted(evals, done, side="right") - 1
        out.setdefault(strategy, []).append(np.where(idx >= 0, pct[np.maximum(idx, 0)], 0.0))
    return {k: np.array(v) for k, v in out.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("replay_dir", help="a folder written by tune replay --out")
    ap.add_argument("--out", help="folder for replay.png and replay.svg (default: REPLAY_DIR)")
    args = ap.parse_args()
    path = os.path.join(args.replay_dir, "replay.csv")
    if not os.path.exists(path):
        sys.exit(f"plot_replay.py: {path}: no such file (run tune replay ... --out DIR first)")
    df = pd.read_csv(path)
    need = {"sweep", "shape", "candidates", "strategy", "seed", "evaluations", "best_ratio"}
    if not need <= set(df.columns):
        sys.exit(f"plot_replay.py: {path}: expected the columns {sorted(need)}")
    sweeps = list(dict.fromkeys(df["sweep"]))
    cols = min(len(sweeps), 3)
    rows = math.ceil(len(sweeps) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.0 * rows), squeeze=False)
    for ax, sweep in zip(axes.flat, sweeps):
        sub = df[df["sweep"] == sweep]
        n_shapes = sub["shape"].nunique()
        for strategy, runs in curves(sub).items():
            lo, med, hi = np.percentile(runs, [25, 50, 75], axis=0)
            color = COLORS.get(strategy)
            ax.plot(GRID, med, color=color, label=f"{strategy} (median)")
            ax.fill_between(GRID, lo, hi, color=color, alpha=0.2, linewidth=0)
        seeds = sub["seed"].nunique()
        ax.set_title(f"{sweep}: {n_shapes} shapes, {seeds} seeds", fontsize=10)
        ax.set_xlabel("evaluations (% of the shape's candidates)")
        ax.set_ylabel("% of the best time reached")
        ax.set_xlim(0, 50)  # the budgets of interest; every strategy ends at 100 %
        ax.set_ylim(40, 101)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    for ax in list(axes.flat)[len(sweeps):]:
        ax.set_visible(False)
    fig.suptitle("Search replay: median and interquartile band over shapes and seeds", fontsize=11)
    fig.tight_layout()
    out = args.out or args.replay_dir
    os.makedirs(out, exist_ok=True)
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(out, f"replay.{ext}"), dpi=110,
                    metadata={"Date": None} if ext == "svg" else {"Software": None})
    print(f"wrote {os.path.join(out, 'replay.png')} and replay.svg")


if __name__ == "__main__":
    main()
