"""Fit time and prediction throughput of every zoo member on a dataset (default ``vtrain-a100``).

Each member is fitted with its default parameters on all successful rows of the dataset
(features = ``dataset.X`` plus the constant columns the analytic estimates need), then scores
a frame of ``--rows`` configurations (default 1,000,000: the dataset's rows resampled, so the
values are realistic), feature encoding included, as a searcher would. Members too slow to
score a million rows in ``--budget`` seconds are timed on fewer rows and the rate is
extrapolated (marked ``~``). The target: tree models score >= 1,000,000 configs in <= 10 s.

Usage::

    python scripts/zoo_speed.py                     # every member, 1M rows, 1 thread
    python scripts/zoo_speed.py --n-jobs 2         # 2 threads (an idle 2-core machine)
    python scripts/zoo_speed.py --members lightgbm,catboost --rows 200000 --n-jobs 1
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

TREE_MEMBERS = ("random_forest", "gbr", "hist_gbr", "lightgbm", "catboost", "lightgbm_rank", "catboost_rank",
                "hybrid", "failure")
TARGET_ROWS, TARGET_SECONDS = 1_000_000, 10.0


def main(argv=None) -> int:
    from perfzoo import zoo
    from perfzoo.datasets import load_dataset
    
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="vtrain-a100")
    ap.add_argument("--members", default=",".join(zoo.names()), help="comma-separated (default: all)")
    ap.add_argument("--rows", type=int, default=TARGET_ROWS, help="configurations to score")
    ap.add_argument("--n-jobs", type=int, default=1,
                    help="threads for members that take n_jobs (2 on an idle 2-core machine; 1 when shared)")
    ap.add_argument("--budget", type=float, default=60.0,
                    help="seconds a member may take to score --rows; slower ones are extrapolated")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    ds = load_dataset(args.dataset).ok()
    X, y = ds.X, ds.y
    big = X.sample(args.rows, replace=True, random_state=args.seed).reset_index(drop=True)
    probe = big.iloc[:10_000]
    print(f"# zoo speed on {ds.name}: fit on {len(X)} rows, score {args.rows:,} rows; "
          f"n_jobs={args.n_jobs}; {platform.node()}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}; python {platform.python_version()}", flush=True)
    header = f"| {'member':18s} | {'encoding':8s} | {'fit s':>7s} | {'score s':>9s} | {'configs/s':>11s} | {'encode s':>8s} | target |"
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|", flush=True)
    for name in args.members.split(","):
        model = zoo.make(name)
        if "n_jobs" in model.get_params():
            model.set_params(n_jobs=args.n_jobs)
        target = y if name != "failure" else np.where(y < np.quantile(y, 0.25), np.nan, y)
        start = time.perf_counter()
        model.fit(X, target, dataset=ds.name)
        fit_s = time.perf_counter() - start

        start = time.perf_counter()
        model.predict(probe)
        probe_s = time.perf_counter() - start
        projected = probe_s * args.rows / len(probe)
        rows = args.rows if projected <= args.budget else max(len(probe), int(args.rows * args.budget / projected / 4))
        frame = big if rows == args.rows else big.iloc[:rows]
        start = time.perf_counter()
        model.predict(frame)
        score_s = time.perf_counter() - start
        rate = rows / score_s
        full_s = args.rows / rate
        enc = getattr(model, "encoder_", None)
        encode_s = float("nan")
        if enc is not None:
            start = time.perf_counter()
            enc.transform(frame)
            encode_s = (time.perf_counter() - start) * args.rows / rows
        mark = "" if rows == args.rows else "~"
        if name in TREE_MEMBERS:
            verdict = "pass" if full_s * TARGET_ROWS / args.rows <= TARGET_SECONDS else "FAIL"
        else:
            verdict = "-"
        print(f"| {name:18s} | {str(model.encoding or '-'):8s} | {fit_s:7.2f} | {mark + format(full_s, '.2f'):>9s} | "
              f"{rate:11,.0f} | {mark + format(encode_s, '.2f'):>8s} | {verdict:6s} |", flush=True)
    print(f"\n(score s: seconds to score {args.rows:,} configs, feature encoding included; "
          f"~ = timed on fewer rows and extrapolated; target: tree models <= {TARGET_SECONDS:g} s per "
          f"{TARGET_ROWS:,}; load average at the end {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
