#!/usr/bin/env python3
"""Writes tests/data/plots/gemm/{raw.jsonl,meta.json}: a SYNTHETIC mixed_gemm results folder.

Every number here comes from the toy formulas below, not from a GPU. It exists only so
tests/test_plots.sh can exercise scripts/plot.py's GEMM figures before a real mixed_gemm run
exists. The device is named "SYNTHETIC (not a measurement)" so any plot made from it says so.
Re-run after changing the formulas: python3 tests/data/plots/make_gemm_fixture.py
"""
import json
import os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gemm")
DEVICE = "SYNTHETIC (not a measurement)"
BW = 4.0e12          # toy bandwidth, B/s
RATE16 = 700e12      # toy fp16 FLOP/s
RATE8 = 1400e12      # toy fp8 FLOP/s
LAUNCH = 4e-6        # toy launch overhead, s
AXES = ["m", "n", "k", "group"]
PARAMS = ["tile_m", "split_k"]
KEYS_TIME = ["time_median", "time_mean", "time_min", "time_max", "time_stdev", "time_stderr",
             "time_p10", "time_p90", "time_n"]


def row(shape, method, params, status, t, bytes_, flops, roof=None, reason=None):
    r = {"sweep": "w4a16_synthetic", "family": "mixed_gemm", "op": "w4a16_gemm", "method": method}
    r.update(shape)
    for p in PARAMS:
        r[p] = params.get(p) if params else None
    r.update({"axes": AXES, "params": PARAMS, "status": status, "reason": reason,
              "kernel": None})
    if t is None:
        r.update({k: None for k in KEYS_TIME})
    else:
        r.update({"time_median": t, "time_mean": t * 1.01, "time_min": t * 0.97, "time_max": t * 1.1,
                  "time_stdev": t * 0.02, "time_stderr": t * 0.002, "time_p10": t * 0.98,
                  "time_p90": t * 1.03, "time_n": 100})
    r.update({"bytes": bytes_, "flops": flops,
              "bandwidth": bytes_ / t if t else None, "flop_rate": flops / t if t else None,
              "pct_read_bw": None, "read_bw": None, "error": 0.001 if t else None, "tolerance": 0.01,
              "device": DEVICE, "timestamp": "2000-01-01T00:00:00Z", "roofline_time": roof})
    return r


def main():
    rows = []
    for n, k in [(4096, 4096), (8192, 4096), (4096, 14336)]:
        for m in [1, 4, 16, 64, 256, 1024]:
            shape = {"m": m, "n": n, "k": k, "group": 128}
            flops = 2.0 * m * n * k
            act = 2.0 * m * k + 2.0 * m * n
            b16 = 2.0 * n * k + act
            b4 = 0.5 * n * k + 2.0 * n * k / 128 + act
            b8 = 1.0 * n * k + act
            t16 = max(b16 / BW, flops / RATE16) + LAUNCH
            rows.append(row(shape, "cublas_fp16", None, "ok", t16, b16, flops))
            if m == 1 and n == 4096 and k == 14336:
                rows.append(row(shape, "cublaslt_fp8", None, "skipped", None, b8, flops,
                                reason="synthetic: fp8 baseline left out to test a missing baseline"))
            else:
                rows.append(row(shape, "cublaslt_fp8", None, "ok",
                                max(b8 / BW, flops / RATE8) * 1.1 + LAUNCH, b8, flops))
            rows.append(row(shape, "dequant_cublas", None, "ok", t16 + b4 / BW * 1.5 + LAUNCH, b4, flops))
            roof = max(b4 / BW, flops / RATE16, LAUNCH)
            for tile_m in [16, 64]:
                for split_k in [1, 4]:
                    p = {"tile_m": tile_m, "split_k": split_k}
                    if tile_m == 64 and split_k == 4 and m == 1024:
                        rows.append(row(shape, "custom", p, "compile_error", None, b4, flops, roof,
                                        reason="synthetic: failure row to test that it is ignored"))
                        continue
                    small = 1.0 if (tile_m == 16) == (m <= 16) else 1.35
                    split = 0.9 if split_k == 4 and m <= 16 else (1.0 if split_k == 1 else 1.2)
                    t = max(b4 / BW * 1.25 * small * split, flops / (RATE16 * 0.8)) + LAUNCH
                    rows.append(row(shape, "custom", p, "ok", t, b4, flops, roof))
    os.makedirs(HERE, exist_ok=True)
    with open(os.path.join(HERE, "raw.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    meta = {"schema_version": 1, "note": "SYNTHETIC fixture made by tests/data/plots/make_gemm_fixture.py; "
                                         "not a measurement",
            "sweep": {"name": "w4a16_synthetic", "family": "mixed_gemm", "op": "w4a16_gemm",
                      "methods": {"custom": "tuned", "cublas_fp16": "reference",
                                  "cublaslt_fp8": "baseline", "dequant_cublas": "baseline"}},
            "report": {"rows": ["m"], "cols": ["n", "k"]},
            "device": {"name": DEVICE}}
    with open(os.path.join(HERE, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
