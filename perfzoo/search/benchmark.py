"""The surrogate benchmark: which searcher finds a fast config with the fewest jobs?

``python -m perfzoo.search benchmark`` (or ``python -m perfzoo.search.benchmark``). A
*surrogate* stands in for the machine: a model fitted on every record of a measured dataset
(``fsdp-cpu`` by default) gives each config of the space (``fsdp-ads-v3``) a throughput, and
the ``failure`` classifier says which configs fail (P(fail) > 0.5). Both are evaluated once on
the whole grid, so the optimum is known exactly. Two surrogate families, so that a tree-based
searcher's predictor is not only tested on a tree-shaped world:

``lightgbm``  the geometric mean of a bag of LightGBM regressors (different seeds, subsampled);
``mlp``       the geometric mean of an ensemble of MLP regressors (smooth, not tree-shaped).

Each searcher launches jobs "on the surrogate"; its own predictor (``lightgbm`` + ``failure``,
refitted every round on the space's knobs) sees only the jobs it launched:

``random``           N + R x k distinct random configs;
``reinforce``        N random, then R rounds of the top k by REINFORCE (the paper: lr 0.01);
``reinforce-lr0.1``  the same with Adam lr 0.1;
``exhaustive``       the same rounds, by scoring every config with the predictor;
``tpe``              the same rounds, by Optuna TPE on the predictor.

Reported per family and searcher (mean over seeds): final regret ``(optimum - best) /
optimum``, the jobs needed to come within 2% and 5% of the optimum as a ratio to random
search's expectation (``1 / p``, ``p`` the share of configs within 2% / 5%: exact, no
censoring), how many seeds got there within the budget, failed jobs and duplicates.

>>> main(["--seeds", "1", "--families", "lightgbm", "--n-random", "20", "--rounds", "1",
...       "--top-k", "5", "--methods", "random,reinforce"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo import zoo
from perfzoo.console import InputError, guarded
from perfzoo.datasets import load_dataset
from perfzoo.datasets.dataset import Dataset
from perfzoo.search import make
from perfzoo.search.objective import Objective
from perfzoo.search.treegrid import grid_values
from perfzoo.spaces import get
from perfzoo.spaces.codec import SpaceCodec

# each searched arm: a registered searcher and its settings (``random``: random jobs, no searcher)
ARMS = {"reinforce": ("reinforce", {}), "reinforce-lr0.1": ("reinforce", {"lr": 0.1}),
        "exhaustive": ("exhaustive", {}), "tpe": ("tpe", {})}
METHODS = ("random", *ARMS)
FAMILIES = ("lightgbm", "mlp")
THRESHOLDS = (0.02, 0.05)
CHUNK = 2 ** 18


def _grid(model, codec: SpaceCodec, kind: str = "predict") -> np.ndarray:
    """The model on every config of the space: tree by tree when it can, else chunk by chunk."""
    obj = Objective(codec, model, n_reference=10)
    fast = grid_values(model, codec, lambda idx: obj.frame(idx, obj.columns), kind)
    if fast is not None:
        return fast
    out = np.empty(codec.size)
    for start in range(0, codec.size, CHUNK):
        X = obj.frame(codec.all_indices(start, start + CHUNK), obj.columns)
        out[start:start + len(X)] = (1.0 - model.predict_failure(X)) if kind == "success" else model.predict(X)
    return out


@dataclass
class Surrogate:
    """A stand-in machine: throughput and failure of every config of ``codec``'s space."""

    family: str
    codec: SpaceCodec
    qps: np.ndarray
    fails: np.ndarray
    seconds: float

    @classmethod
    def fit(cls, family: str, dataset: Dataset, codec: SpaceCodec, members: int) -> "Surrogate":
        """Fit the ``family``'s ensemble and the failure classifier on every record of ``dataset``."""
        t = time.perf_counter()
        cols = [f"config.{n}" for n in codec.names]
        X, y = dataset.frame[cols].reset_index(drop=True), dataset.y
        ok = np.isfinite(y) & (dataset.frame["status"] == "ok").to_numpy()
        logq = np.zeros(codec.size)
        for m in range(members):
            model = (zoo.make("lightgbm", random_state=m, subsample=0.8, colsample_bytree=0.8) if family == "lightgbm"
                     else zoo.make("mlp", random_state=m))
            model.fit(X[ok].reset_index(drop=True), y[ok])
            logq += np.log(np.maximum(_grid(model, codec), 1e-9))
        failed = ~ok
        p_fail = (1.0 - _grid(zoo.make("failure").fit(X, failed), codec, "success")) if failed.any() \
            else np.zeros(codec.size)
        return cls(family, codec, np.exp(logq / members), p_fail > 0.5, time.perf_counter() - t)

    @property
    def optimum(self) -> float:
        return float(np.max(np.where(self.fails, -np.inf, self.qps)))

    def share_within(self, regret: float) -> float:
        """The share of all configs that run and come within ``regret`` of the optimum."""
        return float(np.mean(~self.fails & (self.qps >= (1 - regret) * self.optimum)))

    def measure(self, keys: np.ndarray) -> np.ndarray:
        """Throughput of launched configs (NaN where the job fails)."""
        keys = np.asarray(keys, dtype=np.int64)
        return np.where(self.fails[keys], np.nan, self.qps[keys])


def _fit(codec: SpaceCodec, keys: list, vals: np.ndarray):
    X = codec.frame(codec.decode(np.array(keys)), columns=[f"config.{n}" for n in codec.names], categorical=False)
    ok = np.isfinite(vals)
    model = zoo.make("lightgbm").fit(X[ok].reset_index(drop=True), vals[ok])
    failure = zoo.make("failure").fit(X, ~ok) if (~ok).any() else None
    return model, failure


def run(method: str, sur: Surrogate, random_keys: np.ndarray, n_random: int, rounds: int, top_k: int, seed: int,
        tpe_samples: int) -> dict:
    """One searcher on the surrogate for one seed: regret after each job, failures, duplicates
    (``tpe_samples``: the TPE arm's ``n_samples``)."""
    codec = sur.codec
    total = n_random + rounds * top_k
    if method == "random":
        more = codec.keys(codec.sample(total - len(random_keys), seed=np.random.default_rng([seed, 99]),
                                       unique=True, exclude=random_keys))
        keys = list(random_keys) + list(more)
    else:
        keys = list(random_keys)
        for r in range(rounds):
            model, failure = _fit(codec, keys, sur.measure(np.array(keys)))
            obj = Objective(codec, model, failure, seed=seed)
            name, settings = ARMS[method]
            if name == "tpe":
                settings = {**settings, "n_samples": tpe_samples}
            res = make(name, seed=seed * 100 + r, **settings).propose(obj, top_k, np.unique(keys))
            keys += [int(k) for k in res.keys]
    keys_arr = np.array(keys[:total], dtype=np.int64)
    vals = sur.measure(keys_arr)
    best = np.maximum.accumulate(np.where(np.isfinite(vals), vals, 0.0))
    regret = (sur.optimum - best) / sur.optimum
    searched = slice(0, total) if method == "random" else slice(n_random, total)
    _, counts = np.unique(keys_arr, return_counts=True)
    reached = {f"jobs_to_{int(t * 100)}pct": (int(np.argmax(regret <= t)) + 1 if (regret <= t).any() else None)
               for t in THRESHOLDS}
    return {"family": sur.family, "method": method, "seed": seed, "final_regret": float(regret[-1]),
            "failed_rate": float(np.mean(~np.isfinite(vals[searched]))),
            "duplicate_rate": float((counts - 1).sum() / len(keys_arr)), **reached, "regret": regret.tolist()}


def summarise(results: list[dict], surrogates: dict, args) -> str:
    """The markdown report (``surrogate.md``)."""
    df = pd.DataFrame(results)
    budget = args.n_random + args.rounds * args.top_k
    lines = ["# Searcher benchmark on surrogates of fsdp-cpu", "",
             f"Space `{args.space}` ({next(iter(surrogates.values())).codec.size:,} configs), surrogates fitted on "
             f"every record of `{args.dataset}`; failure = the `failure` classifier, P(fail) > 0.5. Budget: "
             f"{args.n_random} random jobs + {args.rounds} rounds x {args.top_k} = {budget} jobs; {args.seeds} seeds "
             "(the random phase is shared within a seed). Each searcher's predictor (`lightgbm` + `failure` on the "
             "space's knobs) sees only the jobs it launched. Jobs to 2% / 5%: the first job within 2% / 5% of the "
             "optimum, mean over the seeds that got there, as a ratio to random search's exact expectation 1/p "
             "(p = the share of configs within 2% / 5%); 'reached' counts those seeds. Everything is the "
             "*surrogate's* throughput, not a measurement.", ""]
    for family, sur in surrogates.items():
        p = {t: sur.share_within(t) for t in THRESHOLDS}
        lines += [f"## {family} surrogate", "",
                  f"Fitted in {sur.seconds:.0f} s; optimum {sur.optimum:,.1f}; {100 * sur.fails.mean():.1f}% of configs "
                  f"fail; within 2%: {p[0.02]:.2e} of configs (random search needs {1 / p[0.02]:,.0f} jobs on average), "
                  f"within 5%: {p[0.05]:.2e} ({1 / p[0.05]:,.0f} jobs).", "",
                  "| searcher | final regret (mean +- sd) | jobs to 2% / random | reached 2% | jobs to 5% / random | "
                  "reached 5% | failed jobs (searched) | duplicates |", "|---|---|---|---|---|---|---|---|"]
        d_family = df[df.family == family]
        for m in [x for x in METHODS if x in set(d_family.method)]:
            d = d_family[d_family.method == m]
            cells = []
            for t in THRESHOLDS:
                col = d[f"jobs_to_{int(t * 100)}pct"].dropna()
                ratio = f"{col.mean() * p[t]:.1e} ({col.mean():,.0f} jobs)" if len(col) else f"not within {budget}"
                cells += [ratio, f"{len(col)}/{len(d)}"]
            lines.append(f"| {m} | {d.final_regret.mean():.4f} +- {d.final_regret.std(ddof=0):.4f} | "
                         f"{' | '.join(cells)} | {100 * d.failed_rate.mean():.1f}% | {100 * d.duplicate_rate.mean():.1f}% |")
        lines.append("")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m perfzoo.search benchmark", description=__doc__.split("\n\n")[0])
    p.add_argument("--space", default="fsdp-ads-v3", help="the space searched (default fsdp-ads-v3)")
    p.add_argument("--dataset", default="fsdp-cpu", help="the measured records the surrogates are fitted on")
    p.add_argument("--families", default=",".join(FAMILIES), help=f"surrogate families ({', '.join(FAMILIES)})")
    p.add_argument("--methods", default=",".join(METHODS), help=f"searchers ({', '.join(METHODS)})")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--members", type=int, default=3, help="models per surrogate ensemble (default 3)")
    p.add_argument("--n-random", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--top-k", type=int, default=20)
    p.add_argument("--tpe-samples", type=int, default=300, help="TPE trials per round on the predictor")
    p.add_argument("--out", default="docs/studies/search", help="folder for surrogate.md and surrogate.json")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.command = "python -m perfzoo.search benchmark " + " ".join(argv)
    return guarded("perfzoo.search benchmark", lambda: _run(args))


def _run(args) -> int:
    families = [f for f in args.families.split(",") if f]
    methods = [m for m in args.methods.split(",") if m]
    bad = [x for x in families if x not in FAMILIES] + [x for x in methods if x not in METHODS]
    if bad:
        raise InputError(f"unknown family or method {bad[0]!r}; families: {', '.join(FAMILIES)}; methods: "
                         f"{', '.join(METHODS)}")
    for flag in ("seeds", "members", "n_random", "top_k", "tpe_samples"):
        if getattr(args, flag) < 1:
            raise InputError(f"--{flag.replace('_', '-')} must be at least 1")
    codec = SpaceCodec(get(args.space))
    dataset = load_dataset(args.dataset)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    surrogates, results = {}, []
    for family in families:
        sur = surrogates[family] = Surrogate.fit(family, dataset, codec, args.members)
        print(f"{family} surrogate: optimum {sur.optimum:,.1f}, {100 * sur.fails.mean():.1f}% fail, "
              f"{sur.seconds:.0f} s", file=sys.stderr, flush=True)
        for seed in range(args.seeds):
            random_keys = codec.keys(codec.sample(args.n_random, seed=np.random.default_rng([seed, 1]), unique=True))
            for m in methods:
                t = time.perf_counter()
                res = run(m, sur, random_keys, args.n_random, args.rounds, args.top_k, seed, args.tpe_samples)
                results.append(res)
                print(f"{family} seed {seed} {m}: final regret {res['final_regret']:.4f} "
                      f"({time.perf_counter() - t:.0f} s)", file=sys.stderr, flush=True)
            shares = {f: {str(t): sur_.share_within(t) for t in THRESHOLDS} for f, sur_ in surrogates.items()}
            (out / "surrogate.json").write_text(json.dumps({"args": vars(args), "shares_within": shares,
                                                            "results": results}))
    text = summarise(results, surrogates, args)
    (out / "surrogate.md").write_text(text + f"\nProduced by `{args.command}`.\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
