"""Which few layouts to measure next, and when to stop: the measure-and-replan loop (``plan --propose K``).

A plan's top layouts are often within the predictor's error of each other; a few runs settle the
order. The proposals come from what the plan believes after the runs so far (:class:`~perfzoo.plan.belief.Belief`:
the predictor as the mean, the anchoring's layout-similarity kernel as the covariance), in a batch
of ``k`` a cluster runs at once, each a different job for the launch command (two layouts it
cannot tell apart, :func:`launch_keys`, are one proposal; no proposal repeats a measured job):

* ``ei`` (default): the most expected improvement over the best measured (before any run, the best
  predicted), the batch chosen one at a time, each next one as if the last had measured its mean
  (its neighbours' uncertainty spent; :meth:`Belief.believed`);
* ``thompson``: each proposal the fastest layout of one draw from the posterior;
* ``topk``: the ``k`` best by the posterior mean (what re-planning and measuring the top does).

``python -m perfzoo.plan benchmark --loop K`` replays them on every published sweep
(:mod:`perfzoo.plan.loop_benchmark`). The loop::

    perfzoo plan ... --propose 4 --out runs/propose.jsonl      # the 4 layouts and their collect space
    perfzoo collect --space runs/propose.toml --configs runs/propose.jsonl --out runs/measured
    perfzoo plan ... --calibrate runs/measured --propose 4      # re-ranked on what ran; stop, or the next 4

>>> import pandas as pd
>>> from perfzoo.plan.belief import Belief
>>> X = pd.DataFrame({"config.tp": [1, 1, 2, 8], "config.n_gpus": 8, "hardware.accelerator": "H100"})
>>> b = Belief.of(np.log([1000.0, 1000.0, 980.0, 900.0]), X, variance=0.02)
>>> choose(b, 2, launch=np.array([0, 0, 1, 2])).tolist()   # rows 0 and 1 launch one job: one proposal
[0, 2]
>>> stop_rule(Belief.of(np.log([1000.0, 500.0]), X.head(2).assign(**{"config.tp": [1, 8]}), runs=[0],
...                     measured=[1000.0], variance=0.02), 0.02)[0]
True
"""

from __future__ import annotations

from string import Formatter
from typing import Optional

import numpy as np
import pandas as pd

from perfzoo import llmconfig
from perfzoo.console import InputError
from perfzoo.plan import shrinkage
from perfzoo.plan.belief import Z80, Belief, for_kind, spread_of
from perfzoo.plan.layouts import LAYOUT_KNOBS
from perfzoo.plan.report import COMMAND, layout_text
from perfzoo.zoo.calibrate import CALIBRATION_COLUMN
from perfzoo.zoo.offsets import keys

PROPOSERS = {"ei": "by expected improvement over the best measured, each run's neighbours' uncertainty spent "
                     "before the next is chosen",
             "thompson": "each the fastest layout of a draw from what the runs so far leave uncertain",
             "topk": "the best predicted"}
STOP_MARGIN = 0.02  # stop once no unmeasured layout's 80% upper bound beats the best measured by more than this
DRAWS = 256  # posterior draws per Thompson batch


def launch_keys(layouts: pd.DataFrame, command: Optional[str] = None) -> np.ndarray:
    """One integer per layout, equal where the launch ``command`` (a template with ``{knob}``
    fields; default the one ``--out`` writes, :data:`perfzoo.plan.report.COMMAND`) would start the
    same job: the layout knobs it carries. None of its fields a layout has: every knob counts.

    >>> launch_keys(pd.DataFrame({"tp": [1, 1, 2], "vp": [1, 2, 1]}), "run --tp {tp}").tolist()
    [0, 0, 1]
    """
    fields = {f for _, f, _, _ in Formatter().parse(command or COMMAND) if f}
    cols = [c for c in layouts.columns if c in fields] or list(layouts.columns)
    return pd.factorize(pd.Series(list(map(tuple, layouts[cols].astype(str).to_numpy()))))[0]


def expected_improvement(mean: np.ndarray, sd: np.ndarray, best: float) -> np.ndarray:
    """Each layout's expected gain in log throughput over ``best`` (log), its value normal with
    ``mean`` and ``sd``.

    >>> expected_improvement(np.array([0.0, -0.155]), np.array([0.155, 0.155]), 0.0).round(4).tolist()
    [0.0618, 0.0129]
    """
    from scipy.stats import norm  # 0.5 s to import: only where proposals are asked for, not every plan

    sd = np.maximum(sd, 1e-9)
    z = (mean - best) / sd
    return sd * norm.pdf(z) + (mean - best) * norm.cdf(z)


def choose(belief: Belief, k: int, launch: np.ndarray, proposer: str = "ei", seed: int = 0) -> np.ndarray:
    """Positions of up to ``k`` layouts of ``belief`` to measure next (module docstring), best
    first; fewer where fewer distinct unmeasured jobs are left (``launch``: :func:`launch_keys`)."""
    if k < 1:
        raise InputError(f"--propose {k}: give how many layouts to measure, 1 or more")
    if proposer not in PROPOSERS:
        raise InputError(f"--proposer {proposer}: one of {', '.join(PROPOSERS)}")
    open_ = ~np.isin(launch, launch[belief.measured])
    chosen: list[int] = []
    if proposer == "thompson":
        rng = np.random.default_rng(seed)
        on = np.flatnonzero(open_)
        if on.size:
            cov = belief.cov[np.ix_(on, on)]
            draws = rng.multivariate_normal(belief.mean[on], cov, size=DRAWS, method="eigh")
            for i in on[np.argmax(draws, axis=1)]:
                if len(chosen) < k and launch[i] not in launch[chosen]:
                    chosen.append(int(i))
        score = belief.mean  # draws that found fewer than k jobs: the rest by the mean
    best = belief.best_measured() if belief.measured.any() else float(np.max(belief.mean))
    current = belief
    while len(chosen) < k:
        free = open_ & ~np.isin(launch, launch[chosen])
        if not free.any():
            break
        if proposer == "ei":
            score = expected_improvement(current.mean, current.sd, best)
        elif proposer == "topk":
            score = belief.mean
        i = int(np.flatnonzero(free)[np.argmax(score[free])])
        chosen.append(i)
        if proposer == "ei":
            current, best = current.believed(i), max(best, float(current.mean[i]))
    return np.asarray(chosen, dtype=int)


def stop_rule(belief: Belief, margin: float = STOP_MARGIN, z: float = Z80, k: int = 1,
              launch: Optional[np.ndarray] = None, proposer: str = "ei") -> tuple[bool, np.ndarray]:
    """``(stop, next)``: stop when no unmeasured layout's upper bound (``z`` sds: 80%) exceeds the best
    measured by more than ``margin``; else the ``k`` to measure next (:func:`choose`)."""
    if not belief.measured.any():
        launch = np.arange(len(belief.mean)) if launch is None else launch
        return False, choose(belief, k, launch, proposer)
    upper = np.where(belief.measured, -np.inf, belief.upper(z))
    if np.max(upper) <= belief.best_measured() + np.log1p(margin):
        return True, np.zeros(0, dtype=int)
    return False, choose(belief, k, np.arange(len(belief.mean)) if launch is None else launch, proposer)


CANDIDATES = 2000  # the plan's best predicted layouts the loop weighs (and every layout that ran)


def _text(v) -> str:
    try:
        return f"{float(v):g}"
    except (TypeError, ValueError):
        return str(v).strip().lower()


def runs_of(predictor, per_device: bool) -> Optional[pd.DataFrame]:
    """The user's runs a calibrated predictor (:class:`~perfzoo.zoo.calibrate.Calibrated`) was
    given, config columns and ``measured`` tokens/s per GPU; None for any other predictor."""
    joined = getattr(predictor, "joined", None)
    if joined is None:
        return None
    ds = joined.dataset
    mine = ds.frame[CALIBRATION_COLUMN].fillna(False).astype(bool).to_numpy() if CALIBRATION_COLUMN in ds.frame else \
        np.zeros(len(ds.frame), dtype=bool)
    y = np.asarray(ds.y, dtype=float)
    if not per_device:
        y = y / pd.to_numeric(ds.frame["config.n_gpus"], errors="coerce").to_numpy(dtype=float)
    return ds.frame[mine].assign(measured=y[mine])[lambda f: np.isfinite(f["measured"]) & (f["measured"] > 0)]


def plan_belief(plan, runs: Optional[pd.DataFrame] = None) -> tuple[pd.DataFrame, Belief]:
    """The plan's best :data:`CANDIDATES` layouts and those of ``runs`` (:func:`runs_of`, matched on
    every layout knob), and their :class:`~perfzoo.plan.belief.Belief`: the plan's (anchored)
    predictions as the mean, the predictor's spread as the anchoring reads it, conditioned on the
    runs that anchor them."""
    lay = plan.layouts
    value = pd.Series(np.nan, index=lay.index)
    if runs is not None and len(runs):
        knobs = [k for k in LAYOUT_KNOBS if k in lay.columns and f"config.{k}" in runs.columns]
        mine = lay[knobs].map(_text).agg("|".join, axis=1)
        theirs = runs[[f"config.{k}" for k in knobs]].map(_text).agg("|".join, axis=1)
        ran = pd.Series(np.log(runs["measured"].to_numpy(dtype=float)), index=theirs.to_numpy()).groupby(level=0).median()
        value = mine.map(ran)
    rows = lay[(np.arange(len(lay)) < CANDIDATES) | value.notna().to_numpy()]
    X = pd.DataFrame([llmconfig.as_columns(c) for c in plan.configs(rows=rows)]).assign(**plan.cluster.hardware())
    X = X.reindex(columns=list(plan.scorer.columns or X.columns))
    predictor = plan.scorer.predictor
    anchored = getattr(predictor, "anchored", None)
    mean = np.log(rows["predicted_tokens_per_s_per_device"].to_numpy(dtype=float))
    q, measured = keys(X), value.loc[rows.index].to_numpy(dtype=float)
    kind = shrinkage.kind(plan.model)
    if anchored is None:
        return rows, Belief.given(mean, q, q.take(np.zeros(0, dtype=int)), np.zeros(0), spread_of(predictor, kind=kind),
                                  measured)
    return rows, Belief.given(mean, q, anchored.keys, anchored.offsets, for_kind(anchored.spread, kind), measured,
                              shifted=True)


def step(plan, k: Optional[int], proposer: str = "ei", margin: float = STOP_MARGIN) -> tuple[Optional[pd.DataFrame], Optional[str]]:
    """One turn of the loop on a plan: ``(proposed, verdict)``. ``proposed``: up to ``k`` rows of the
    plan's layouts to measure next, with ``expected_improvement`` (log) and ``upper_tokens_per_s_per_device``
    (None where ``k`` is None or the rule says stop); ``verdict``: the stopping rule's line once runs of
    the user's anchor the plan (None before any)."""
    runs = runs_of(plan.scorer.predictor, plan.scorer.per_device)
    rows, belief = plan_belief(plan, runs)
    anchored = getattr(plan.scorer.predictor, "anchored", None)  # its interval's upper end, as the table shows it
    z = Z80 if anchored is None else float(anchored.spread.quantiles(0.2, "group")[1])
    launch = launch_keys(rows)
    asked = k if k is not None else 3
    stop, chosen = stop_rule(belief, margin, z, asked, launch, proposer) if belief.measured.any() else \
        (False, choose(belief, asked, launch, proposer))
    verdict = None
    named = "; ".join(f"rank {int(r['rank'])} ({layout_text(r)})" for r in rows.iloc[chosen].to_dict("records"))
    if runs is not None:
        best = float(np.exp(belief.best_measured())) if belief.measured.any() else None
        upper = np.where(belief.measured, -np.inf, belief.upper(z))
        if best is None:
            verdict = (f"measure these {len(chosen)} next: none of your runs is one of this plan's layouts, so none is "
                       f"the best measured yet: {named}")
        elif stop:
            verdict = (f"stop: no unmeasured layout's 80% upper bound exceeds the best measured ({best:,.0f} tok/s/GPU, "
                       f"{int(belief.measured.sum())} of your runs among these layouts) by more than {margin:.0%} "
                       f"(the highest: {np.expm1(np.max(upper) - belief.best_measured()):+.1%})")
        else:
            verdict = (f"measure these {len(chosen)} next: {int((upper > belief.best_measured() + np.log1p(margin)).sum())} "
                       f"unmeasured layouts' 80% upper bound exceeds the best measured ({best:,.0f} tok/s/GPU) by more "
                       f"than {margin:.0%}: {named}")
    if k is None or stop:
        return None, verdict
    sd = belief.sd[chosen]
    ei = expected_improvement(belief.mean, belief.sd, belief.best_measured() if belief.measured.any()
                              else float(np.max(belief.mean)))[chosen]
    return rows.iloc[chosen].assign(expected_improvement=ei, upper_tokens_per_s_per_device=np.exp(
        belief.mean[chosen] + z * sd), proposer=PROPOSERS[proposer], distinct_jobs=int(len(np.unique(launch[~np.isin(launch, launch[belief.measured])])))), verdict


__all__ = ["CANDIDATES", "PROPOSERS", "STOP_MARGIN", "choose", "expected_improvement", "launch_keys", "plan_belief",
           "runs_of", "step", "stop_rule"]
