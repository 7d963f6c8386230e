"""The searcher benchmarks: the surrogate benchmark and the speed figures.

Surrogate benchmark (``--surrogate``)
    The *surrogate* stands in for the real machine: an ensemble of LightGBM regressors
    (different seeds, bagged) fitted on ALL successful records of ``fsdp-cpu`` gives each
    config's throughput (geometric mean of the members), and a ``failure`` classifier fitted
    on all records says whether it fails (P(fail) > 0.5). Both are evaluated once on every
    config of ``fsdp-ads``, so the surrogate's true optimum is known exactly. Each searcher
    launches jobs "on the surrogate" and its own predictor (``lightgbm`` + ``failure``,
    refitted every round) sees only the jobs it launched:

    ``random``       N + R x k distinct random jobs;
    ``reinforce``    N random jobs, then R rounds of the top k by REINFORCE on the predictor
                     (the paper's settings: 3 restarts x 2,000 samples, batch 30, Adam lr 0.01);
    ``reinforce-lr0.1``  the same with Adam lr 0.1 (67 steps per restart are too few for lr 0.01
                     to move far from the uniform policy);
    ``exhaustive``   the same rounds, by scoring every config with the predictor;
    ``tpe``          the same rounds, by Optuna TPE on the predictor;
    ``tpe-direct``   Optuna TPE on the surrogate itself, N + R x k sequential jobs (no predictor).

    The random phase is shared by every searcher within a seed. Reported: best-so-far
    regret ``(optimum - best found) / optimum`` against jobs launched (a figure), final
    regret, failed-job rate, duplicate rate, and how close REINFORCE gets to its own
    predictor's optimum (the exhaustive maximum of the same reward).

Speed figures (``--speed``)
    One REINFORCE round (2,000 samples x 3 restarts) with a LightGBM predictor (and the
    failure classifier) fitted on ``fsdp-cpu``; exhaustive scoring of all of ``fsdp-ads``
    with the same models (the exact tree-by-tree path, and the chunk-by-chunk path
    extrapolated from one chunk).

Usage::

    python scripts/search_benchmark.py --surrogate --seeds 10 --speed
    python scripts/search_benchmark.py --surrogate --seeds 2 --n-random 30 --rounds 2 --top-k 10  # quick

Writes ``leaderboard/search/`` (``surrogate.md``, ``surrogate.json``, ``surrogate-regret.png``,
``speed.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from perfzoo import zoo  # noqa: E402
from perfzoo.datasets import load_dataset  # noqa: E402
from perfzoo.search import SpaceCodec, exhaustive, reinforce, tpe  # noqa: E402
from perfzoo.search.objective import Objective  # noqa: E402
from perfzoo.search.treegrid import grid_values  # noqa: E402

OUT = ROOT / "leaderboard" / "search"
METHODS = ("random", "reinforce", "reinforce-lr0.1", "exhaustive", "tpe", "tpe-direct")


def log(msg: str) -> None:
    print(f"[{datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def context(command: str) -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = "?"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"`{command}` at commit {commit or '?'} on {platform.node()} ({os.cpu_count()} CPUs, "
            f"load average {load:.1f} at the end), {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}")


# --- the surrogate ----------------------------------------------------------------------------

def full_grid(model, codec: SpaceCodec, kind: str = "predict", chunk: int = 2 ** 18) -> np.ndarray:
    """The model on every config of the space (exact tree path if possible, else chunks)."""
    obj = Objective(codec, model, n_reference=10)
    g = grid_values(model, codec, lambda idx: obj.frame(idx, obj.columns), kind)
    if g is not None:
        return g
    out = np.empty(codec.size)
    for s in range(0, codec.size, chunk):
        X = obj.frame(codec.all_indices(s, s + chunk), obj.columns)
        out[s:s + len(X)] = (1.0 - model.predict_failure(X)) if kind == "success" else model.predict(X)
    return out


class Surrogate:
    """Throughput and failure of every fsdp-ads config, from models fitted on all of fsdp-cpu."""

    def __init__(self, dataset, codec: SpaceCodec, members: int = 5):
        self.codec = codec
        cols = [f"config.{n}" for n in codec.names]
        frame = dataset.frame
        X = frame[cols].reset_index(drop=True)
        y = dataset.y
        ok = np.isfinite(y) & (frame["status"] == "ok").to_numpy()
        self.n_records, self.n_ok = len(frame), int(ok.sum())
        t = time.perf_counter()
        logq = np.zeros(codec.size)
        for m in range(members):
            model = zoo.make("lightgbm", random_state=m, subsample=0.8, colsample_bytree=0.8)
            model.fit(X[ok].reset_index(drop=True), y[ok])
            logq += np.log(np.maximum(full_grid(model, codec), 1e-9))
        self.qps = np.exp(logq / members)
        failed = (frame["status"] != "ok").to_numpy()
        self.n_failed = int(failed.sum())
        if failed.any():
            fmodel = zoo.make("failure").fit(X, failed)
            self.failure_kind = fmodel.kind_
            self.p_fail = 1.0 - full_grid(fmodel, codec, "success")
        else:
            self.failure_kind = "none"
            self.p_fail = np.zeros(codec.size)
        self.fails = self.p_fail > 0.5
        good = np.where(self.fails, -np.inf, self.qps)
        self.opt_key = int(np.argmax(good))
        self.optimum = float(good[self.opt_key])
        self.seconds = time.perf_counter() - t

    def measure(self, keys: np.ndarray) -> np.ndarray:
        """Throughput of launched configs (NaN where the job fails)."""
        keys = np.asarray(keys, dtype=np.int64)
        return np.where(self.fails[keys], np.nan, self.qps[keys])


# --- one searcher on the surrogate ------------------------------------------------------------

def _fit(codec: SpaceCodec, keys: list, vals: list):
    idx = codec.decode(np.array(keys))
    X = codec.frame(idx, columns=[f"config.{n}" for n in codec.names], categorical=False)
    y = np.array(vals, dtype=float)
    ok = np.isfinite(y)
    model = zoo.make("lightgbm").fit(X[ok].reset_index(drop=True), y[ok])
    failure = zoo.make("failure").fit(X, ~ok) if (~ok).any() else None
    return model, failure


def run_method(method: str, sur: Surrogate, random_keys: np.ndarray, args, seed: int) -> dict:
    codec = sur.codec
    total = args.n_random + args.rounds * args.top_k
    extra: dict = {"rl_vs_own_optimum": [], "search_seconds": []}
    if method == "random":
        more = codec.keys(codec.sample(total - len(random_keys), seed=np.random.default_rng([seed, 99]),
                                       unique=True, exclude=random_keys))
        keys = list(random_keys) + list(more)
    elif method == "tpe-direct":
        keys = _tpe_direct(sur, total, seed)
    else:
        keys = list(random_keys)
        for r in range(args.rounds):
            vals = list(sur.measure(np.array(keys)))
            model, failure = _fit(codec, keys, vals)
            t = time.perf_counter()
            obj = Objective(codec, model, failure, seed=seed)
            if method.startswith("reinforce"):
                lr = 0.1 if method == "reinforce-lr0.1" else 0.01
                res = reinforce(codec, None, args.top_k, objective=obj, exclude=np.array(keys), seed=seed * 100 + r,
                                lr=lr)
                if args.own_optimum:
                    grid = obj.grid()
                    if grid is not None:
                        extra["rl_vs_own_optimum"].append(float(res.reward[0] / obj.reward(*grid).max()))
            elif method == "exhaustive":
                res = exhaustive(codec, None, args.top_k, objective=obj, exclude=np.array(keys))
            elif method == "tpe":
                res = tpe(codec, None, args.top_k, objective=obj, exclude=np.array(keys), seed=seed * 100 + r,
                          n_samples=args.tpe_samples)
            else:
                raise ValueError(method)
            extra["search_seconds"].append(time.perf_counter() - t)
            keys += [int(k) for k in res.keys]
    keys = np.array(keys[:total], dtype=np.int64)
    vals = sur.measure(keys)
    best = np.maximum.accumulate(np.where(np.isfinite(vals), vals, 0.0))
    regret = (sur.optimum - best) / sur.optimum
    searched = slice(args.n_random, total) if method not in ("random", "tpe-direct") else slice(0, total)
    _, counts = np.unique(keys, return_counts=True)
    return {"method": method, "seed": seed, "regret": regret.tolist(), "final_regret": float(regret[-1]),
            "regret_at_random": float(regret[args.n_random - 1]),
            "failed_rate": float(np.mean(~np.isfinite(vals[searched]))),
            "failed_rate_all": float(np.mean(~np.isfinite(vals))),
            "duplicate_rate": float((counts - 1).sum() / len(keys)),
            "found_optimum": bool((keys == sur.opt_key).any()),
            "rl_vs_own_optimum": extra["rl_vs_own_optimum"], "search_seconds": extra["search_seconds"]}


def _tpe_direct(sur: Surrogate, total: int, seed: int) -> list:
    import optuna

    codec = sur.codec
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    dists = {n: optuna.distributions.CategoricalDistribution(tuple(range(len(v))))
             for n, v in zip(codec.names, codec.values)}
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(
            seed=seed, n_startup_trials=20, multivariate=True))
        keys = []
        for _ in range(total):
            t = study.ask(dists)
            k = int(codec.keys(np.array([[t.params[n] for n in codec.names]]))[0])
            v = sur.measure(np.array([k]))[0]
            study.tell(t, float(v) if np.isfinite(v) else 0.0)
            keys.append(k)
    return keys


# --- reporting --------------------------------------------------------------------------------

def summarise(results: list, sur: Surrogate, args, command: str) -> str:
    df = pd.DataFrame(results)
    lines = ["# Searcher benchmark on the fsdp-cpu surrogate", "",
             f"Surrogate: geometric mean of {args.members} bagged LightGBM regressors fitted on all "
             f"{sur.n_ok} successful records of `fsdp-cpu` ({sur.n_records} records, {sur.n_failed} failed); "
             f"failure = the `failure` classifier ({sur.failure_kind}) fitted on all records, P(fail) > 0.5. "
             f"Evaluated on all {sur.codec.size:,} configs of `fsdp-ads`: "
             f"{int(sur.fails.sum()):,} fail ({100 * sur.fails.mean():.1f}%); optimum {sur.optimum:,.1f} queries/s. "
             "Everything here is the *surrogate's* throughput, not a measurement.", "",
             f"Budget: {args.n_random} random jobs + {args.rounds} rounds x {args.top_k} "
             f"({args.n_random + args.rounds * args.top_k} jobs); {args.seeds} seeds (the random phase is shared "
             "within a seed). Each searcher's predictor (`lightgbm` + `failure`) sees only the jobs it launched. "
             f"REINFORCE: paper settings (3 restarts x 2,000 samples, batch 30, Adam lr 0.01); TPE on the predictor: "
             f"{args.tpe_samples} trials per round; tpe-direct: Optuna TPE on the surrogate itself.", "",
             "| searcher | final regret (mean +- sd) | median | regret after random phase | found optimum "
             "| failed jobs (searched) | failed jobs (all) | duplicates | search s/round |",
             "|---|---|---|---|---|---|---|---|---|"]
    for m in [x for x in METHODS if x in set(df.method)]:
        d = df[df.method == m]
        secs = [s for lst in d.search_seconds for s in lst]
        lines.append(f"| {m} | {d.final_regret.mean():.4f} +- {d.final_regret.std(ddof=0):.4f} | "
                     f"{d.final_regret.median():.4f} | {d.regret_at_random.mean():.4f} | "
                     f"{int(d.found_optimum.sum())}/{len(d)} | {100 * d.failed_rate.mean():.1f}% | "
                     f"{100 * d.failed_rate_all.mean():.1f}% | {100 * d.duplicate_rate.mean():.1f}% | "
                     f"{(np.mean(secs) if secs else float('nan')):.1f} |")
    for m in ("reinforce", "reinforce-lr0.1"):
        rl = [v for lst in df[df.method == m].rl_vs_own_optimum for v in lst]
        if rl:
            lines += ["", f"{m} vs its own predictor's optimum (best reward found / exhaustive maximum of the "
                          f"same reward, per round): mean {np.mean(rl):.4f}, min {np.min(rl):.4f}, "
                          f"reached it in {sum(v >= 1 - 1e-9 for v in rl)} of {len(rl)} rounds."]
    lines += ["", "Failed jobs (searched): share of the jobs a searcher chose (after the random phase; for random "
              "and tpe-direct all jobs) that fail on the surrogate. Duplicates: launched jobs repeating an "
              "earlier config.", "", "![regret](surrogate-regret.png)", "", f"Produced by {context(command)}."]
    return "\n".join(lines) + "\n"


def regret_figure(results: list, args, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = pd.DataFrame(results)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for m in [x for x in METHODS if x in set(df.method)]:
        R = np.array(df[df.method == m].regret.tolist())
        x = np.arange(1, R.shape[1] + 1)
        mean = R.mean(axis=0)
        ax.plot(x, mean, label=f"{m} (final {mean[-1]:.3f})", linewidth=2 if m == "reinforce" else 1.2)
        ax.fill_between(x, np.quantile(R, 0.25, axis=0), np.quantile(R, 0.75, axis=0), alpha=0.12)
    ax.axvline(args.n_random, color="k", linestyle=":", linewidth=1)
    for r in range(1, args.rounds):
        ax.axvline(args.n_random + r * args.top_k, color="grey", linestyle=":", linewidth=0.6)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("jobs launched")
    ax.set_ylabel("best-so-far regret (surrogate)")
    ax.set_title(f"fsdp-ads on the fsdp-cpu surrogate: mean over {args.seeds} seeds (band: quartiles)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --- speed --------------------------------------------------------------------------------------

def speed(args, command: str) -> str:
    """REINFORCE and exhaustive wall times on ``fsdp-ads-v2``, with models fitted two ways: as
    ``python -m perfzoo.search`` fits them (every feature column of the dataset, so the zoo adds
    its analytic features, each of which depends on many knobs) and on the space's knobs alone."""
    from perfzoo.search.cli import fixed_columns

    ds = load_dataset("fsdp-cpu")
    codec = SpaceCodec("fsdp-ads-v2")
    ok = ds.labelled().ok()
    failed = ds.failed
    knob_cols = [f"config.{n}" for n in codec.names]
    variants = [("as the search command fits them", list(ds.feature_columns)), ("on the knobs alone", knob_cols)]
    rows = []
    for how, cols in variants:
        model = zoo.make("lightgbm").fit(ok.X[cols], ok.y)
        failure = zoo.make("failure").fit(ds.frame[cols], failed) if failed.any() else None
        fixed = fixed_columns(ds, codec.knob_columns(), [])
        for label, fail in ((f"lightgbm, {how}", None), (f"lightgbm + failure, {how}", failure)):
            if how.startswith("as"):
                times = []
                for rep in range(args.speed_repeats):
                    t = time.perf_counter()
                    r = reinforce(codec, model, 50, failure=fail, exclude=ds, seed=rep, fixed=fixed)
                    times.append(time.perf_counter() - t)
                rows.append(("REINFORCE round (3 restarts x 2,000 samples, top 50)", label,
                             f"{np.median(times):.2f} s (median of {len(times)}; {r.stats['distinct']:,} distinct "
                             "configs)", ""))
            t = time.perf_counter()
            e = exhaustive(codec, model, 50, failure=fail, exclude=ds, fixed=fixed)
            rows.append((f"exhaustive fsdp-ads-v2 ({e.stats['valid']:,} configs)", label,
                         f"{time.perf_counter() - t:.2f} s", e.stats["path"] + (
                             f": {e.stats['path_reason']}" if e.stats.get("path_reason") else "")))
            log(f"{rows[-1]}")
    lines = ["# Searcher speed", "",
             f"Models fitted on `fsdp-cpu` ({len(ds)} records, {len(ok)} ok): `lightgbm` (zoo defaults: 400 trees, "
             "31 leaves) and the `failure` classifier, in two ways: as `python -m perfzoo.search` fits them (every "
             "feature column of the dataset, so the zoo adds its analytic features) and on the space's knobs alone.",
             "", "| what | models | wall time | exhaustive path |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    lines += ["", "The tree-grid fast path scores the grid tree by tree when every feature depends on one knob; "
              "the analytic features (memory, communication) depend on every sharding knob at once, so with them "
              "exhaustive scores the grid chunk by chunk and says so (`stats['path_reason']`, and a log line in "
              "`python -m perfzoo.search`).", "",
              f"Produced by {context(command)}."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--surrogate", action="store_true", help="run the surrogate benchmark")
    p.add_argument("--speed", action="store_true", help="measure the speed figures")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--n-random", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--top-k", type=int, default=20)
    p.add_argument("--members", type=int, default=5, help="LightGBM members of the surrogate")
    p.add_argument("--tpe-samples", type=int, default=600, help="TPE trials per round on the predictor")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--no-own-optimum", dest="own_optimum", action="store_false",
                   help="skip the REINFORCE-vs-exhaustive comparison on each round's predictor")
    p.add_argument("--speed-repeats", type=int, default=3)
    p.add_argument("--max-records", type=int, help="use only the first N records of fsdp-cpu (reproducible "
                                                   "while the dataset grows)")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--replot", action="store_true", help="redraw the regret figure from <out>/surrogate.json")
    args = p.parse_args(argv)
    command = "python scripts/search_benchmark.py " + " ".join(argv if argv is not None else sys.argv[1:])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.replot:
        saved = json.loads((out / "surrogate.json").read_text())
        regret_figure(saved["results"], argparse.Namespace(**saved["args"]), out / "surrogate-regret.png")
    if args.surrogate:
        ds = load_dataset("fsdp-cpu")
        if args.max_records and len(ds) > args.max_records:
            ds = ds.subset(np.arange(args.max_records))  # the first N records, in store order
        codec = SpaceCodec("fsdp-ads")
        log(f"fitting the surrogate on {len(ds)} fsdp-cpu records")
        sur = Surrogate(ds, codec, members=args.members)
        log(f"surrogate ready in {sur.seconds:.0f} s: optimum {sur.optimum:,.1f}, {100 * sur.fails.mean():.1f}% fail")
        methods = [m for m in args.methods.split(",") if m]
        results = []
        for seed in range(args.seeds):
            random_keys = codec.keys(codec.sample(args.n_random, seed=np.random.default_rng([seed, 1]), unique=True))
            for m in methods:
                t = time.perf_counter()
                res = run_method(m, sur, random_keys, args, seed)
                results.append(res)
                log(f"seed {seed} {m}: final regret {res['final_regret']:.4f}, failed {res['failed_rate']:.2f} "
                    f"({time.perf_counter() - t:.0f} s)")
            (out / "surrogate.json").write_text(json.dumps({"args": vars(args), "optimum": sur.optimum,
                                                            "results": results}, indent=0))
        regret_figure(results, args, out / "surrogate-regret.png")
        text = summarise(results, sur, args, command)
        (out / "surrogate.md").write_text(text)
        print(text)
    if args.speed:
        text = speed(args, command)
        (out / "speed.md").write_text(text)
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
