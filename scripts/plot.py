#!/usr/bin/env python3
"""Plots of tune results folders (raw.jsonl + meta.json), PNG and SVG, headless.

    python3 scripts/plot.py RESULTS_DIR [RESULTS_DIR...] [--out DIR] [options]

Gather sweeps (family gather_matmul) get the SparQ benchmarks' figures:
  bw_vs_chunk   effective bandwidth vs the chunk parameter for one shape, with the baselines and
                the measured read bandwidth as horizontal lines
  bw_vs_bytes   best-config bandwidth vs bytes moved for every shape (log-log), coloured by the
                first shape axis, marker by the second, baselines as black markers
  best_<param>  heatmap of the best value of each tuned parameter that varies
  pct_read_bw   heatmap of the best config's % of the measured read bandwidth
GEMM sweeps (family mixed_gemm, or rows with a reference method) get:
  speedup_vs_m  speedup of the best tuned config over the reference vs m, one panel per shape,
                with the other baselines dashed and the roofline dotted
  best_<param>, speedup  heatmaps as above
Each method's role (tuned, reference, baseline, auxiliary) comes from the family, through
meta.json's sweep.methods: the best tuned config is the fastest of every tuned method, speedups
are over the reference, auxiliary steps (weight packing) are never drawn as competitors.
See docs/plots.md. Needs Python 3 with matplotlib and pandas only.
"""

import argparse
import json
import math
import numbers
import os
import sys

import matplotlib

matplotlib.use("Agg")  # headless, whatever MPLBACKEND says
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib import ticker  # noqa: E402
import pandas as pd  # noqa: E402

RESULT_KEYS = {
    "sweep", "family", "op", "method", "axes", "params", "status", "reason", "kernel",
    "time_median", "time_mean", "time_min", "time_max", "time_stdev", "time_stderr", "time_p10",
    "time_p90", "time_n", "bytes", "flops", "bandwidth", "flop_rate", "pct_read_bw", "read_bw",
    "error", "tolerance", "device", "timestamp", "roofline_time", "dram_bytes", "model_time",
}
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*", "p"]
BASELINE_MARKERS = ["+", "x", "1", "2", "3", "4", "|", "_"]
LINESTYLES = ["-", "-.", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 1))]
DPI = 110
matplotlib.rcParams["svg.hashsalt"] = "tune"  # stable SVG ids: re-running gives the same files


def warn(msg):
    print(f"plot.py: {msg}", file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# Loading


class Run:
    """One plotting unit: rows of one (family, op) from one or several folders, plus meta."""

    def __init__(self, df, meta, name, out_dir, prefix=""):
        self.df = df
        self.meta = meta or {}
        self.name = name
        self.out_dir = out_dir
        self.prefix = prefix
        self.axes = ordered_union(df["axes"]) if "axes" in df else []
        self.params = ordered_union(df["params"]) if "params" in df else []
        self.family = first_value(df, "family", self.meta.get("sweep", {}).get("family"))
        self.op = first_value(df, "op", self.meta.get("sweep", {}).get("op")) or "op"
        self.sweep = first_value(df, "sweep", self.meta.get("sweep", {}).get("name")) or name
        dev = self.meta.get("device", {}).get("name") if isinstance(self.meta.get("device"), dict) else None
        self.device = dev or first_value(df, "device", None) or "unknown device"
        bw = None
        rb = self.meta.get("read_bw")
        if isinstance(rb, dict) and is_num(rb.get("bytes_per_second")):
            bw = float(rb["bytes_per_second"])
        if bw is None and "read_bw" in df and df["read_bw"].notna().any():
            bw = float(df["read_bw"].dropna().median())
        self.read_bw = bw
        rep = self.meta.get("report") or {}
        self.report_rows = [a for a in (rep.get("rows") or []) if a in self.axes]
        self.report_cols = [a for a in (rep.get("cols") or []) if a in self.axes]


def ordered_union(series):
    out = []
    for v in series:
        if isinstance(v, (list, tuple)):
            for a in v:
                if a not in out:
                    out.append(a)
    return out


def first_value(df, col, default):
    if col in df and df[col].notna().any():
        return str(df[col].dropna().iloc[0])
    return default


def is_num(x):
    """A finite real number (numpy's included), not a bool."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(float(x))


def rows_file(folder):
    """The folder's raw.jsonl, or its raw.jsonl.gz (gzipped by hand), as tune reads them; None
    when it has neither; both are ambiguous, as for tune."""
    plain, gz = os.path.join(folder, "raw.jsonl"), os.path.join(folder, "raw.jsonl.gz")
    if os.path.exists(plain) and os.path.exists(gz):
        raise SystemExit(f"plot.py: {folder}: holds both raw.jsonl and raw.jsonl.gz: which one "
                         "holds the rows is ambiguous; keep one of them")
    return gz if os.path.exists(gz) else plain if os.path.exists(plain) else None


def read_run_dir(path):
    """(raw.jsonl path, meta dict or None) for a folder or a raw.jsonl(.gz) path."""
    if os.path.isdir(path):
        raw = rows_file(path) or os.path.join(path, "raw.jsonl")
        meta_path = os.path.join(path, "meta.json")
    else:
        raw = path
        meta_path = os.path.join(os.path.dirname(path) or ".", "meta.json")
    meta = None
    if os.path.exists(meta_path):
        try:
            with open(meta_path) as f:
                meta = json.load(f)
        except (OSError, ValueError) as e:
            warn(f"{meta_path}: {e}; using defaults")
    return raw, meta


def expand_dirs(paths):
    """Folders holding raw.jsonl; a folder without one stands for its run subfolders."""
    out = []
    for p in paths:
        if os.path.isdir(p) and not rows_file(p):
            subs = sorted(os.path.join(p, s) for s in os.listdir(p)
                          if os.path.isdir(os.path.join(p, s)) and rows_file(os.path.join(p, s)))
            if not subs:
                # one more level: results/ -> results/<sweep>/<stamp>/
                subs = sorted(os.path.join(p, s, t) for s in os.listdir(p)
                              if os.path.isdir(os.path.join(p, s))
                              for t in os.listdir(os.path.join(p, s))
                              if os.path.isdir(os.path.join(p, s, t))
                              and rows_file(os.path.join(p, s, t)))
            if not subs:
                raise SystemExit(f"plot.py: {p}: no raw.jsonl here or in its subfolders")
            out.extend(subs)
        else:
            out.append(p)
    return out


def load_rows(raw):
    if not os.path.exists(raw):
        raise SystemExit(f"plot.py: {raw}: no such file")
    if os.path.getsize(raw) == 0:
        return pd.DataFrame()
    # convert_dates=False: keep timestamps and axis values as written; a .gz is gunzipped
    try:
        return pd.read_json(raw, lines=True, convert_dates=False, dtype=False,
                            compression="gzip" if raw.endswith(".gz") else None)
    except (OSError, EOFError) as e:  # a corrupt or truncated .gz
        raise SystemExit(f"plot.py: {raw}: {e}")


def make_runs(dirs, out, merge):
    """List of Run to plot: one per folder (or one merged), split by (family, op)."""
    groups = []  # (name, out_dir, df, meta)
    if merge:
        frames, meta = [], None
        for d in dirs:
            raw, m = read_run_dir(d)
            frames.append(load_rows(raw))
            meta = meta or m
        name = os.path.basename(os.path.normpath(dirs[0]))
        groups.append((name, out or (dirs[0] if os.path.isdir(dirs[0]) else os.path.dirname(dirs[0])),
                       pd.concat(frames, ignore_index=True), meta))
    else:
        for d in dirs:
            raw, m = read_run_dir(d)
            run_dir = d if os.path.isdir(d) else (os.path.dirname(d) or ".")
            name = os.path.basename(os.path.normpath(run_dir))
            if out is None:
                od = run_dir
            elif len(dirs) == 1:
                od = out
            else:
                sweep = os.path.basename(os.path.dirname(os.path.normpath(run_dir)))
                od = os.path.join(out, f"{sweep}_{name}" if sweep else name)
            groups.append((name, od, load_rows(raw), m))
    runs = []
    for name, od, df, meta in groups:
        if df.empty or "method" not in df:
            warn(f"{name}: no rows; nothing to plot")
            continue
        for col in ("family", "op"):
            if col not in df:
                df[col] = None
        keys = df[["family", "op"]].fillna("").drop_duplicates().values.tolist()
        for fam, op in keys:
            sub = df[(df["family"].fillna("") == fam) & (df["op"].fillna("") == op)].copy()
            prefix = f"{op}_" if len(keys) > 1 and op else ""
            runs.append(Run(sub.reset_index(drop=True), meta, name, od, prefix))
    return runs


# ---------------------------------------------------------------------------------------------
# Row arithmetic


def prepare(run, time_col):
    df = run.df
    for c in ("status", "bandwidth", "bytes", "pct_read_bw", "roofline_time"):
        if c not in df:
            df[c] = None
    if time_col not in df:
        warn(f"{run.name}: rows have no {time_col}; using time_median")
        time_col = "time_median" if "time_median" in df else None
    df["_time"] = pd.to_numeric(df[time_col], errors="coerce") if time_col else float("nan")
    bw = pd.to_numeric(df["bandwidth"], errors="coerce")
    by = pd.to_numeric(df["bytes"], errors="coerce")
    derived = by / df["_time"]
    df["_bw"] = bw.where(bw.notna(), derived)
    df["_bytes"] = by
    pct = pd.to_numeric(df["pct_read_bw"], errors="coerce")
    if run.read_bw:
        pct = pct.where(pct.notna(), df["_bw"] / run.read_bw * 100.0)
    df["_pct"] = pct
    df["_roof"] = pd.to_numeric(df["roofline_time"], errors="coerce")
    df["_ok"] = (df["status"] == "ok") & df["_time"].notna() & (df["_time"] > 0)
    run.df = df


def status_note(df):
    bad = df[df["status"] != "ok"]
    if bad.empty:
        return ""
    counts = bad["status"].fillna("no status").value_counts()
    parts = ", ".join(f"{n} {s}" for s, n in counts.items())
    return f"{len(bad)} of {len(df)} rows not ok, ignored ({parts})"


def varying(df, cols):
    """Columns taking more than one value (a missing value counts as one)."""
    return [c for c in cols if c in df and df[c].astype(str).nunique(dropna=False) > 1]


def tuned_params(run, df):
    """Parameters taking more than one non-null value."""
    return [p for p in run.params if p in df and df[p].dropna().astype(str).nunique() > 1]


def fmt_val(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def shape_label(axes, key, sep=", "):
    return sep.join(f"{a}={fmt_val(v)}" for a, v in zip(axes, key))


def best_rows(df, keys):
    """Index of the fastest ok row per keys (rows with no time ignored)."""
    ok = df[df["_ok"]]
    if ok.empty:
        return ok
    if not keys:
        return ok.loc[[ok["_time"].idxmin()]]
    idx = ok.groupby(keys, dropna=False, sort=True)["_time"].idxmin()
    return ok.loc[idx.values]


def gb_formatter():
    def f(x, _):
        if x <= 0:
            return ""
        v = x / 1e9
        return f"{v:.0f} GB/s" if v >= 10 else f"{v:.2g} GB/s"
    return ticker.FuncFormatter(f)


def mib_formatter():
    def f(x, _):
        if x <= 0:
            return ""
        v = x / 2 ** 20
        return f"{v:.0f} MiB" if v >= 1 else f"{v:.2g} MiB"
    return ticker.FuncFormatter(f)


def log_bw_axis(axis, lo=None, hi=None):
    """GB/s labels on a log axis; denser labels when the data span less than ~2 decades."""
    subs = (1.0, 2.0, 5.0)
    if lo and hi and lo > 0 and hi / lo < 8:
        subs = tuple(float(i) for i in range(1, 10))
    axis.set_major_locator(ticker.LogLocator(base=10, subs=subs))
    axis.set_major_formatter(gb_formatter())
    axis.set_minor_locator(ticker.LogLocator(base=10, subs=tuple(range(1, 10))))
    axis.set_minor_formatter(ticker.NullFormatter())


def despine(ax):
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)


def save(fig, run, stem, written):
    os.makedirs(run.out_dir, exist_ok=True)
    for ext in ("png", "svg"):
        path = os.path.join(run.out_dir, f"{run.prefix}{stem}.{ext}")
        fig.savefig(path, dpi=DPI, bbox_inches="tight", metadata=svg_meta(ext))
        written.append(path)
    plt.close(fig)


def svg_meta(ext):
    # no creation date in the SVG so re-running gives the same file
    return {"Date": None} if ext == "svg" else {}


def title(run, what, detail=None, note=None):
    lines = [f"{run.op} ({run.sweep}) on {run.device}: {what}"]
    if detail:
        lines.append(detail)
    if note:
        lines.append(note)
    return "\n".join(lines)


def parse_shape(text):
    out = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise SystemExit(f"plot.py: --shape: '{part}' is not AXIS=VALUE")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def same_value(cell, text):
    try:
        return float(cell) == float(text)
    except (TypeError, ValueError):
        return str(cell) == text


# ---------------------------------------------------------------------------------------------
# Gather figures


def pick_shape(run, shapes, shape_axes, wanted, explicit):
    """The shape key for figure 1."""
    def matches(key, want):
        return all(a in shape_axes and same_value(key[shape_axes.index(a)], v) for a, v in want.items())

    if wanted:
        hit = [s for s in shapes if matches(s, wanted)]
        if hit:
            return hit[(len(hit) - 1) // 2]
        if explicit:
            warn(f"{run.name}: no shape matches --shape; using the middle shape")
    return shapes[len(shapes) // 2]


def fig_bw_vs_param(run, args, written):
    df = run.df
    custom = df[df["method"].isin(args.tuned)]
    if custom.empty:
        warn(f"{run.name}: no '{args.custom}' rows; skipping bw_vs_{args.x or 'chunk'}")
        return
    tuned = tuned_params(run, custom[custom["_ok"]]) or run.params
    x = args.x or ("chunk" if "chunk" in run.params else (tuned[0] if tuned else None))
    if x is None or x not in df:
        warn(f"{run.name}: no parameter to put on x; skipping bw_vs_param")
        return
    shape_axes = run.axes
    shapes = sorted({tuple(r) for r in custom[shape_axes].itertuples(index=False, name=None)},
                    key=lambda t: tuple(sort_key(v) for v in t))
    explicit = args.shape is not None
    wanted = parse_shape(args.shape) if explicit else {"g": "1024", "k_pre": "4096", "k": "64"}
    key = pick_shape(run, shapes, shape_axes, wanted, explicit)
    sel = pd.Series(True, index=df.index)
    for a, v in zip(shape_axes, key):
        sel &= df[a].astype(str) == str(v)
    d = df[sel]
    c = d[d["method"].isin(args.tuned)]
    cok = c[c["_ok"] & c["_bw"].notna() & c[x].notna()]

    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    if not cok.empty:
        many = len(cok) > 300
        if cok.groupby(x).size().max() > 1:  # only when there is more than the best per x
            ax.scatter(cok[x].astype(float), cok["_bw"], s=14, color="C0", alpha=0.25, linewidths=0,
                       label=f"{args.custom}: every config", rasterized=many, zorder=2)
        best = cok.loc[cok.groupby(x)["_time"].idxmin()].sort_values(x)
        others = [p for p in tuned_params(run, cok) if p != x]
        lab = f"{args.custom}: best per {x}" + (f" (over {', '.join(others)})" if others else "")
        ax.plot(best[x].astype(float), best["_bw"], "-o", color="C0", ms=5, label=lab, zorder=3)
        xs = sorted(cok[x].astype(float).unique())
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs)
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: fmt_val(float(v))))
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        if len(xs) == 1:
            ax.set_xlim(xs[0] / 2, xs[0] * 2)
        else:
            ax.set_xlim(xs[0] / 1.4, xs[-1] * 1.4)
    baselines = [m for m in d["method"].dropna().unique() if m in args.others]
    colors = iter([f"C{i}" for i in range(1, 10)])
    for m in baselines:
        b = d[(d["method"] == m) & d["_ok"] & d["_bw"].notna()]
        if b.empty:
            continue
        v = b.loc[b["_time"].idxmin(), "_bw"]
        ax.axhline(v, color=next(colors), lw=1.6, label=f"{m} (baseline): {v / 1e9:.0f} GB/s", zorder=1)
    if run.read_bw:
        ax.axhline(run.read_bw, color="k", ls="--", lw=1.2,
                   label=f"theoretical max = measured read bandwidth: {run.read_bw / 1e9:.0f} GB/s")
    ax.set_yscale("log")
    log_bw_axis(ax.yaxis, *ax.get_ylim())
    ax.set_xlabel(f"{x} (log2)")
    ax.set_ylabel("effective bandwidth (bytes moved / time)")
    ax.grid(True, which="major", axis="y", alpha=0.3)
    despine(ax)
    fixed = [a for a in shape_axes]
    ax.set_title(title(run, f"bandwidth vs {x}", shape_label(fixed, key), status_note(d) or None),
                 fontsize=10, loc="left")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False, fontsize=9)
    save(fig, run, f"bw_vs_{x}", written)


def legend_header(text):
    return Line2D([], [], linestyle="none", marker=None, label=text)


def value_colors(values):
    """Colour per sorted value, from a sequential colormap spaced by rank."""
    cmap = plt.get_cmap("plasma")
    n = len(values)
    return {v: cmap(0.1 + 0.75 * (i / (n - 1) if n > 1 else 0.5)) for i, v in enumerate(values)}


def sort_key(v):
    return (0, float(v), "") if is_num(v) else (1, 0.0, str(v))


def sort_vals(vals):
    return sorted(vals, key=sort_key)


def fig_bw_vs_bytes(run, args, written):
    df = run.df
    shape_axes = run.axes
    var = varying(df, shape_axes)
    hue = args.hue or (var[0] if var else None)
    style = args.style or (var[1] if len(var) > 1 else None)
    if hue == style:
        style = None
    custom = df[df["method"].isin(args.tuned)]
    best = best_rows(custom, shape_axes)
    best = best[best["_bw"].notna() & best["_bytes"].notna()]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    handles = []
    n_pts = 0
    if not best.empty:
        hv = sort_vals(best[hue].unique()) if hue else [None]
        sv = sort_vals(best[style].unique()) if style else [None]
        colors = value_colors(hv)
        markers = {v: MARKERS[i % len(MARKERS)] for i, v in enumerate(sv)}
        for (h, s), grp in best.groupby([hue or (lambda _: None), style or (lambda _: None)], dropna=False):
            ax.scatter(grp["_bytes"], grp["_bw"], color=colors.get(h, "C0"), marker=markers.get(s, "o"),
                       s=42, linewidths=0, zorder=3)
            n_pts += len(grp)
        if hue:
            handles.append(legend_header(f"{args.custom} best, {hue}:"))
            handles += [Line2D([], [], ls="none", marker="o", color=colors[v], label=fmt_val(v)) for v in hv]
        if style:
            handles.append(legend_header(f"{style}:"))
            handles += [Line2D([], [], ls="none", marker=markers[v], color="0.4", label=fmt_val(v))
                        for v in sv]
    baselines = [m for m in df["method"].dropna().unique() if m in args.others]
    first = True
    for i, m in enumerate(baselines):
        b = best_rows(df[df["method"] == m], shape_axes)
        b = b[b["_bw"].notna() & b["_bytes"].notna()]
        if b.empty:
            continue
        mk = BASELINE_MARKERS[i % len(BASELINE_MARKERS)]
        ax.scatter(b["_bytes"], b["_bw"], color="k", marker=mk, s=40, linewidths=1.1, zorder=2)
        if first:
            handles.append(legend_header("baselines:"))
            first = False
        handles.append(Line2D([], [], ls="none", marker=mk, color="k", label=m))
    if run.read_bw:
        ax.axhline(run.read_bw, color="k", ls="--", lw=1.0, zorder=1)
        handles.append(Line2D([], [], color="k", ls="--",
                              label=f"measured read bw\n({run.read_bw / 1e9:.0f} GB/s)"))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(mib_formatter())
    log_bw_axis(ax.yaxis, *ax.get_ylim())
    ax.set_xlabel("bytes moved per call (log2)")
    ax.set_ylabel("effective bandwidth (bytes moved / time)")
    ax.grid(True, which="major", alpha=0.3)
    despine(ax)
    fixed = [a for a in shape_axes if a not in var]
    detail = f"best {args.custom} config per shape ({n_pts} shapes)"
    if fixed and not df.empty:
        detail += "; all with " + shape_label(fixed, [df[a].iloc[0] for a in fixed])
    ax.set_title(title(run, "bandwidth vs bytes moved", detail, status_note(df) or None),
                 fontsize=10, loc="left")
    if handles:
        ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False,
                  fontsize=9)
    save(fig, run, "bw_vs_bytes", written)


# ---------------------------------------------------------------------------------------------
# Heatmaps


def pivot_axes(run, df):
    var = varying(df, run.axes)
    rows = [a for a in run.report_rows if a in var] or ([] if run.report_rows else var[:1])
    cols = [a for a in run.report_cols if a in var and a not in rows]
    if not run.report_rows and not run.report_cols:
        cols = var[1:]
    # varying axes the report does not mention: add to the columns so cells stay unique
    cols += [a for a in var if a not in rows and a not in cols]
    if not rows and cols:
        rows, cols = cols[:1], cols[1:]
    return rows, cols


def heatmap(run, table, rows, cols, values, stem, what, cbar_label, written, fmt, cmap="viridis",
            vmin=None, vmax=None, log=False, detail=None, note=None, ordinal=False):
    """table: best rows; values: column name holding the numbers to show."""
    if table.empty:
        return
    def keyof(r, ax_):  # NaN (axis absent from some merged rows) as None, so keys compare equal
        return tuple(None if (isinstance(r[a], float) and math.isnan(r[a])) else r[a] for a in ax_)
    rkeys = sorted({keyof(r, rows) for _, r in table.iterrows()},
                   key=lambda t: tuple(sort_key(v) for v in t))
    ckeys = sorted({keyof(r, cols) for _, r in table.iterrows()},
                   key=lambda t: tuple(sort_key(v) for v in t))
    grid = [[float("nan")] * len(ckeys) for _ in rkeys]
    raw = [[None] * len(ckeys) for _ in rkeys]
    ri = {k: i for i, k in enumerate(rkeys)}
    ci = {k: i for i, k in enumerate(ckeys)}
    for _, r in table.iterrows():
        v = r[values]
        i, j = ri[keyof(r, rows)], ci[keyof(r, cols)]
        raw[i][j] = v
        if is_num(v):
            grid[i][j] = math.log2(v) if log and v > 0 else (float("nan") if log else float(v))
    cats = None
    if ordinal or not any(is_num(v) for row in raw for v in row if v is not None):
        # one colour per distinct value, in order (parameter values)
        cats = sort_vals({v for row in raw for v in row
                          if v is not None and not (isinstance(v, float) and math.isnan(v))})
        pos = {fmt_val(v): i for i, v in enumerate(cats)}
        grid = [[pos[fmt_val(v)] if (v is not None and fmt_val(v) in pos) else float("nan") for v in row]
                for row in raw]
        base = plt.get_cmap(cmap)
        n = len(cats)
        cmap = matplotlib.colors.ListedColormap(
            [base(0.15 + 0.7 * (i / (n - 1) if n > 1 else 0.5)) for i in range(n)])
        vmin, vmax = -0.5, n - 0.5
    w = max(4.5, 0.62 * len(ckeys) + 2.6)
    h = max(2.6, 0.42 * len(rkeys) + 1.9)
    fig, ax = plt.subplots(figsize=(w, h))
    cm = (plt.get_cmap(cmap) if isinstance(cmap, str) else cmap).copy()
    cm.set_bad("0.92")
    im = ax.imshow(grid, aspect="auto", cmap=cm, vmin=vmin, vmax=vmax, interpolation="nearest")
    norm = im.norm
    for i in range(len(rkeys)):
        for j in range(len(ckeys)):
            v = raw[i][j]
            if v is None or (isinstance(v, float) and math.isnan(v)):
                continue
            g = grid[i][j]
            r_, g_, b_, _ = cm(norm(g)) if not math.isnan(g) else (0.92, 0.92, 0.92, 1)
            dark = 0.299 * r_ + 0.587 * g_ + 0.114 * b_ < 0.5
            ax.text(j, i, fmt(v), ha="center", va="center", fontsize=8,
                    color="white" if dark else "black")
    ax.set_xticks(range(len(ckeys)))
    ax.set_xticklabels(["/".join(fmt_val(v) for v in k) for k in ckeys],
                       rotation=45 if len(ckeys) > 6 else 0, ha="right" if len(ckeys) > 6 else "center",
                       fontsize=8)
    ax.set_yticks(range(len(rkeys)))
    ax.set_yticklabels(["/".join(fmt_val(v) for v in k) for k in rkeys], fontsize=8)
    ax.set_xlabel("/".join(cols) if cols else "")
    ax.set_ylabel("/".join(rows) if rows else "")
    for s in ax.spines.values():
        s.set_visible(False)
    cb = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.02)
    cb.set_label(cbar_label, fontsize=9)
    if cats is not None:
        cb.set_ticks(range(len(cats)))
        cb.set_ticklabels([fmt_val(v) for v in cats])
        cb.ax.tick_params(length=0)
    elif log:
        if vmax is not None and vmin is not None and vmax - vmin >= 2:
            cb.set_ticks([t for t in ticker.MaxNLocator(integer=True).tick_values(vmin, vmax)
                          if vmin <= t <= vmax])
        cb.ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _: fmt_val(float(2 ** x))))
    ax.set_title(title(run, what, detail, note), fontsize=9, loc="left")
    save(fig, run, stem, written)


def fixed_detail(run, df, var):
    fixed = [a for a in run.axes if a not in var and a in df]
    if not fixed or df.empty:
        return None
    return "all shapes: " + shape_label(fixed, [df[a].iloc[0] for a in fixed])


def param_heatmaps(run, args, written):
    df = run.df
    custom = df[df["method"].isin(args.tuned)]
    best = best_rows(custom, run.axes)
    if best.empty:
        warn(f"{run.name}: no ok '{args.custom}' rows; skipping heatmaps")
        return None
    rows, cols = pivot_axes(run, df)
    if not rows and not cols:
        return best
    note = status_note(df) or None
    detail = fixed_detail(run, df, rows + cols)
    for p in tuned_params(run, custom[custom["_ok"]]):
        heatmap(run, best, rows, cols, p, f"best_{p}", f"best {p} (fastest {args.custom} config per shape)",
                f"best {p}", written, fmt_val, cmap="viridis", detail=detail, note=note, ordinal=True)
    return best


def gather_heatmaps(run, args, written):
    best = param_heatmaps(run, args, written)
    if best is None:
        return
    rows, cols = pivot_axes(run, run.df)
    if not rows and not cols or not best["_pct"].notna().any():
        return
    vmax = max(100.0, float(best["_pct"].max()))
    rb = f" ({run.read_bw / 1e9:.0f} GB/s)" if run.read_bw else ""
    detail = fixed_detail(run, run.df, rows + cols)
    heatmap(run, best, rows, cols, "_pct", "pct_read_bw",
            f"% of measured read bandwidth{rb}, best {args.custom} config", "% of read bandwidth",
            written, lambda v: f"{v:.0f}" if is_num(v) else "-", cmap="magma", vmin=0, vmax=vmax,
            detail=detail, note=status_note(run.df) or None)


# ---------------------------------------------------------------------------------------------
# GEMM figures


def gemm_table(run, args):
    """Per shape: best custom time, baseline times, roofline; speedups over the reference."""
    df = run.df
    axes = run.axes
    best = best_rows(df[df["method"].isin(args.tuned)], axes)
    if best.empty:
        return None, []
    tab = best.set_index(axes, drop=False).copy()
    tab["_t_custom"] = tab["_time"]
    # roofline of the custom method: its smallest roofline_time per shape
    c = df[df["method"].isin(args.tuned)]
    if c["_roof"].notna().any():
        roof = c.groupby(axes, dropna=False)["_roof"].min()
        tab["_t_roof"] = roof.reindex(tab.index).values
    else:
        tab["_t_roof"] = float("nan")
    others = [m for m in df["method"].dropna().unique() if m in args.others]
    for m in others:
        b = best_rows(df[df["method"] == m], axes)
        t = b.set_index(axes)["_time"] if not b.empty else pd.Series(dtype=float)
        tab[f"_t_{m}"] = t.reindex(tab.index).values if not b.empty else float("nan")
    ref = f"_t_{args.reference}"
    if ref not in tab:
        return tab, others
    tab["_speedup"] = tab[ref] / tab["_t_custom"]
    for m in others:
        tab[f"_s_{m}"] = tab[ref] / tab[f"_t_{m}"]
    tab["_s_roof"] = tab[ref] / tab["_t_roof"]
    return tab.reset_index(drop=True), others


def fig_speedup_vs_m(run, args, written):
    tab, others = gemm_table(run, args)
    if tab is None:
        warn(f"{run.name}: no ok '{args.custom}' rows; skipping speedup_vs_m")
        return
    if "_speedup" not in tab:
        what = f"ok '{args.reference}' rows" if args.reference else "reference method (--reference)"
        warn(f"{run.name}: no {what}; skipping speedup_vs_m")
        return
    m = args.m_axis
    if m not in run.axes:
        warn(f"{run.name}: no axis '{m}'; skipping speedup_vs_m")
        return
    panel_axes = [a for a in varying(tab, run.axes) if a != m]
    panels = (sorted({tuple(r) for r in tab[panel_axes].itertuples(index=False, name=None)},
                     key=lambda t: tuple(sort_key(v) for v in t))
              if panel_axes else [()])
    n = len(panels)
    ncol = min(n, args.columns)
    nrow = math.ceil(n / ncol)
    fig, axs = plt.subplots(nrow, ncol, figsize=(3.3 * ncol + 0.4, 2.6 * nrow + 0.3), squeeze=False,
                            sharex=True, sharey=True)
    ms = sort_vals(tab[m].unique())
    styles = {}
    others_plot = [o for o in others if o != args.reference]
    dash = {args.dashed: "--"} if args.dashed else {}
    for i, o in enumerate(x for x in others_plot if x not in dash):
        styles[o] = LINESTYLES[(i + 1) % len(LINESTYLES)]
    styles.update(dash)
    colors = {o: f"C{i + 1}" for i, o in enumerate(others_plot)}
    has_roof = tab["_s_roof"].notna().any()
    for idx, key in enumerate(panels):
        ax = axs[idx // ncol][idx % ncol]
        sel = pd.Series(True, index=tab.index)
        for a, v in zip(panel_axes, key):
            sel &= tab[a].astype(str) == str(v)
        t = tab[sel].sort_values(m)
        ax.axhline(1.0, color="0.5", lw=0.8)
        if has_roof and t["_s_roof"].notna().any():
            ax.plot(t[m].astype(float), t["_s_roof"], ":", color="k", lw=1.4)
        for o in others_plot:
            col = f"_s_{o}"
            if col in t and t[col].notna().any():
                ax.plot(t[m].astype(float), t[col], linestyle=styles[o], color=colors[o], lw=1.3)
        ax.plot(t[m].astype(float), t["_speedup"], "-o", color="C0", ms=4, lw=1.8)
        ax.set_xscale("log", base=2)
        ax.set_xticks([float(v) for v in ms])
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: fmt_val(float(v))))
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.tick_params(axis="x", labelsize=7, rotation=45 if len(ms) > 6 else 0)
        ax.set_title(shape_label(panel_axes, key) if panel_axes else "", fontsize=9)
        ax.grid(True, alpha=0.3)
        despine(ax)
    for idx in range(n, nrow * ncol):
        axs[idx // ncol][idx % ncol].set_visible(False)
    for r in range(nrow):
        axs[r][0].set_ylabel(f"speedup over\n{args.reference}")
    for c in range(ncol):
        bottom = min(nrow - 1, (n - 1 - c) // ncol) if n > c else nrow - 1
        axs[bottom][c].set_xlabel(f"{m} (log2)")
        axs[bottom][c].xaxis.set_tick_params(labelbottom=True)
    handles = [Line2D([], [], color="C0", marker="o", ms=4, lw=1.8, label=f"{args.custom} (best tuned config)")]
    for o in others_plot:
        if tab[f"_s_{o}"].notna().any():
            handles.append(Line2D([], [], color=colors[o], ls=styles[o], lw=1.3, label=o))
    if has_roof:
        handles.append(Line2D([], [], color="k", ls=":", lw=1.4, label=f"roofline of {args.custom}"))
    handles.append(Line2D([], [], color="0.5", lw=0.8, label=f"{args.reference} (= 1)"))
    fixed = fixed_detail(run, tab, panel_axes + [m])
    note = status_note(run.df)
    fig.tight_layout()
    fig.suptitle(title(run, f"speedup over {args.reference} vs {m}", fixed, note or None),
                 fontsize=10, x=0.02, ha="left", y=1.0, va="bottom")
    fig.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False, fontsize=9)
    save(fig, run, f"speedup_vs_{m}", written)


def gemm_heatmaps(run, args, written):
    param_heatmaps(run, args, written)
    tab, _ = gemm_table(run, args)
    if tab is None or "_speedup" not in tab or not tab["_speedup"].notna().any():
        return
    rows, cols = pivot_axes(run, run.df)
    if not rows and not cols:
        return
    hi = float(tab["_speedup"].max())
    lo = float(tab["_speedup"].min())
    span = max(abs(math.log2(hi)) if hi > 0 else 1, abs(math.log2(lo)) if lo > 0 else 1, 0.25)
    tab["_log_speedup"] = tab["_speedup"]
    detail = f"best {args.custom} config vs {args.reference} (>1: faster)"
    fd = fixed_detail(run, run.df, rows + cols)
    if fd:
        detail += "; " + fd
    heatmap(run, tab, rows, cols, "_speedup", "speedup", f"speedup over {args.reference}",
            f"speedup over {args.reference} (log2 colour)", written,
            lambda v: f"{v:.2f}" if is_num(v) else "-", cmap="RdBu", vmin=-span, vmax=span, log=True,
            detail=detail, note=status_note(run.df) or None)


# ---------------------------------------------------------------------------------------------


# Roles of the methods of folders written before tune recorded them (meta.json sweep.methods).
# Anything else is derived from the rows: a method with parameter values is tuned, the rest are
# baselines (no reference: speedup figures need --reference then).
LEGACY_ROLES = {
    "gather_matmul": {"custom": "tuned", "gather": "reference", "slice": "baseline"},
    "mixed_gemm": {"fused": "tuned", "dequant": "tuned", "decode": "tuned", "cublas": "reference",
                   "fp8": "baseline", "pack": "auxiliary", "stream": "auxiliary"},
}
ROLES = ("tuned", "reference", "baseline", "auxiliary")


def method_roles(run):
    """{method: role} of the run's methods: meta.json, else the legacy table, else the rows."""
    sweep = run.meta.get("sweep") if isinstance(run.meta.get("sweep"), dict) else {}
    declared = sweep.get("methods") if isinstance(sweep.get("methods"), dict) else {}
    legacy = LEGACY_ROLES.get(run.family or "", {})
    df = run.df
    params = [p for p in run.params if p in df]
    roles = {}
    for m in df["method"].dropna().unique():
        role = declared.get(m) or legacy.get(m)
        if role not in ROLES:
            rows = df[df["method"] == m]
            role = "tuned" if params and rows[params].notna().any().any() else "baseline"
        roles[m] = role
    return roles


def resolve_roles(run, args):
    """A copy of args with this run's methods: tuned (list), others (baselines and reference),
    reference, dashed, and custom as the tuned methods' label."""
    r = argparse.Namespace(**vars(args))
    roles = method_roles(run)
    order = list(roles)
    if args.custom:
        r.tuned = [args.custom]
    else:
        r.tuned = [m for m in order if roles[m] == "tuned"]
    r.custom = "/".join(r.tuned) if r.tuned else (args.custom or "tuned")
    refs = [m for m in order if roles[m] == "reference" and m not in r.tuned]
    r.reference = args.reference or (refs[0] if refs else None)
    r.others = [m for m in order if m not in r.tuned and
                (roles[m] in ("reference", "baseline") or m == r.reference)]
    baselines = [m for m in r.others if m != r.reference]
    r.dashed = args.dashed or (baselines[0] if baselines else None)
    skipped = [m for m in order if roles[m] == "auxiliary" and m not in r.tuned and m != r.reference]
    if skipped:
        warn(f"{run.name}: not drawn as competitors (auxiliary): {', '.join(skipped)}")
    return r


def kind_of(run, args):
    if args.kind != "auto":
        return args.kind
    fam = (run.family or "").lower()
    if "gemm" in fam or "matmul" in fam and "gather" not in fam:
        return "gemm"
    if "gather" in fam:
        return "gather"
    if args.reference and (run.df["method"] == args.reference).any() and "gather" not in fam:
        return "gemm"
    return "gather"


def positive_int(text):
    """An integer in [1, 64], written whole (argparse turns the error into exit 2)."""
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"expects an integer in [1, 64], got '{text}'")
    return int(text)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Every plot of one or more tune results folders, as PNG and SVG.")
    ap.add_argument("dirs", nargs="+", metavar="RESULTS_DIR",
                    help="results folder (holding raw.jsonl or raw.jsonl.gz, optionally "
                         "meta.json), or such a file; a folder without one stands for every "
                         "run folder under it")
    ap.add_argument("--out", help="write plots here instead of into each results folder "
                                  "(several folders: one subfolder each)")
    ap.add_argument("--merge", action="store_true",
                    help="plot the rows of all folders together (into --out, else the first folder)")
    ap.add_argument("--kind", choices=["auto", "gather", "gemm"], default="auto",
                    help="which figures (default: from the rows' family)")
    ap.add_argument("--time", default="time_median", help="time column for best choices (default time_median)")
    ap.add_argument("--custom", help="the tuned method (default: every method whose role is tuned, "
                                     "from meta.json's sweep.methods)")
    g = ap.add_argument_group("gather figures")
    g.add_argument("--shape", help="shape of the bandwidth-vs-chunk figure, e.g. g=1024,k_pre=4096,k=64 "
                                   "(default: that one when present, else the middle shape)")
    g.add_argument("--x", help="parameter on the x axis of that figure (default chunk)")
    g.add_argument("--hue", help="axis that colours bw_vs_bytes (default: first axis that varies)")
    g.add_argument("--style", help="axis that picks the marker in bw_vs_bytes (default: second)")
    m = ap.add_argument_group("GEMM figures")
    m.add_argument("--reference", help="method speedups are over (default: the method whose role is "
                                       "reference)")
    m.add_argument("--dashed", help="baseline drawn dashed (default: the first baseline); other "
                                    "baselines get other line styles")
    m.add_argument("--m-axis", default="m", help="axis on x (default m)")
    m.add_argument("--columns", type=positive_int, default=4, help="panels per row, 1 to 64 (default 4)")
    args = ap.parse_args(argv)

    dirs = expand_dirs(args.dirs)
    runs = make_runs(dirs, args.out, args.merge)
    written = []
    for run in runs:
        prepare(run, args.time)
        rargs = resolve_roles(run, args)
        if not rargs.tuned:
            warn(f"{run.name}: no tuned method (meta.json sweep.methods, or --custom); nothing to plot")
            continue
        kind = kind_of(run, rargs)
        if kind == "gather":
            fig_bw_vs_param(run, rargs, written)
            fig_bw_vs_bytes(run, rargs, written)
            gather_heatmaps(run, rargs, written)
        else:
            fig_speedup_vs_m(run, rargs, written)
            gemm_heatmaps(run, rargs, written)
    for p in written:
        print(p)
    if not written:
        warn("no plots written")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
