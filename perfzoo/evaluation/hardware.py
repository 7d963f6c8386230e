"""Held-out hardware: fit on the jobs of one card, score on another card's.

perfzoo's own GPU datasets measure one space under one protocol on two cards (``llm-h100``,
``llm-h200``). Each pair of :data:`PAIRS` fits every member on the first (all its labelled jobs)
and scores it on the second, the way a user prices a card they have no jobs on
(:func:`perfzoo.evaluation.cross.cross_scores`): Kendall tau, MAPE and the 80% interval's
coverage on the other card. The training card's shipped pick (its ``best.json`` member) is
marked, and so are the members best by Kendall and by MAPE. Beside the scores,
:func:`paired_ratios` sets the configs that ran on both cards side by side: how much faster the
second card ran them, by the first card's step time, against what the analytic model says. A full
bench run writes ``hardware.md`` and ``hardware.csv`` beside the leaderboard (:func:`write`).

:func:`held_out` replays the published tables with one accelerator (or one family) left out at a
time: how much wider the shipped member's 80% interval must be on hardware it never saw
(``scripts/hardware_widening.py``; :data:`perfzoo.zoo.extrapolation.UNSEEN_ACCELERATOR_WIDENING`), or one
software stack (a framework, a year's release generation): what a vendor's stack no row measured costs
(:data:`perfzoo.zoo.extrapolation.UNSEEN_STACK_WIDENING`).

>>> from perfzoo.datasets import load_dataset
>>> rows = pair_scores(load_dataset("llm-h100"), load_dataset("llm-h200"), ["analytic"])   # doctest: +SKIP
>>> rows[0]["predictor"], rows[0]["n_test"]                                                 # doctest: +SKIP
('analytic', 114)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np
import pandas as pd

from perfzoo.console import DataError
from perfzoo import analytic, zoo
from perfzoo.datasets.dataset import Dataset
from perfzoo.evaluation.cross import BEST, cross_scores, cross_specs
from perfzoo.records.columns import row_keys
from perfzoo.zoo.calibrate import fit_with_interval
from perfzoo.zoo.extrapolation import accelerator_identity

PAIRS = (("llm-h100", "llm-h200"), ("llm-h200", "llm-h100"))  # (fit on, score on)
COLUMNS = ("kendall", "mape", "mdape", "ratio_median", "coverage")  # what each row shows
STEP_BINS = (0.0, 0.1, 0.2, 0.4, 1.0, np.inf)  # the first card's step time (s) the paired configs are binned by
MIN_JOBS = 20  # a held-out group with fewer ok jobs is not scored: its coverage says little
LEVEL = 0.8  # the shipped interval's level: the coverage a held-out group's widening restores


def pair_scores(train: Dataset, test: Dataset, members: Sequence[str],
                leaderboard: Optional[Union[str, os.PathLike]] = None) -> list[dict]:
    """One row per member (``best``: the training card's shipped pick in ``leaderboard``, labelled
    ``<member> (best)``, which then stands for that member), fitted on ``train`` and scored on ``test``."""
    return cross_scores(train, test, cross_specs(list(members), train.name, leaderboard))


def paired_jobs(first: Dataset, second: Dataset) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The first ok job of every config that ran ok on both cards: two frames, row by row the same
    config (indexed by its :func:`~perfzoo.records.columns.row_keys` key)."""
    def ok_by_config(ds: Dataset) -> pd.DataFrame:
        frame = ds.frame[ds.frame["status"] == "ok"]
        keys = row_keys(frame[sorted(c for c in frame.columns if c.startswith("config."))])
        return frame.assign(_key=keys).drop_duplicates("_key").set_index("_key")

    a, b = ok_by_config(first), ok_by_config(second)
    both = a.index.intersection(b.index)
    if both.empty:
        raise DataError(f"no config ran ok on both {first.name} and {second.name}: nothing to pair")
    return a.loc[both], b.loc[both]


def paired_ratios(first: Dataset, second: Dataset) -> pd.DataFrame:
    """The configs that ran ok on both cards (:func:`paired_jobs`), binned by the first card's
    median step time: ``configs``, the measured ``second / first`` tokens/s (median,
    ``measured``) and the analytic model's (``analytic``), and a last row ``all``.

    >>> from perfzoo.datasets import load_dataset
    >>> paired_ratios(load_dataset("llm-h100"), load_dataset("llm-h200"))["configs"].iloc[-1]   # doctest: +SKIP
    158
    """
    a, b = paired_jobs(first, second)
    target = first.target
    pairs = pd.DataFrame({
        "step_s": a["metrics.step_time_p50_s"].astype(float).to_numpy(),
        "measured": b[target].astype(float).to_numpy() / a[target].astype(float).to_numpy(),
        "analytic": np.asarray(analytic.estimate(b)["throughput"]) / np.asarray(analytic.estimate(a)["throughput"]),
    })
    edges = pd.cut(pairs["step_s"], STEP_BINS, right=False)
    rows = [{"step_s": str(interval), "configs": len(g), "measured": g["measured"].median(), "analytic": g["analytic"].median()}
            for interval, g in pairs.groupby(edges, observed=True)]
    rows.append({"step_s": "all", "configs": len(pairs), "measured": pairs["measured"].median(),
                 "analytic": pairs["analytic"].median()})
    return pd.DataFrame(rows)


STACKS = ("framework", "year")  # the software a row ran, as held_out groups it beside its accelerator


def group_of(frame: pd.DataFrame, by: str) -> pd.Series:
    """Each row's group for :func:`held_out`: its accelerator table row or ``family``
    (:func:`~perfzoo.zoo.extrapolation.accelerator_identity`), or its software stack (:data:`STACKS`):
    the ``framework`` that ran it, or the ``year`` its figures were published (a release generation).

    >>> group_of(pd.DataFrame({"started_at": pd.to_datetime(["2024-05-01", None], utc=True)}), "year").tolist()
    ['2024', '?']
    """
    if by == "framework":
        return frame["config.framework"].fillna("?").astype(str)
    if by == "year":
        return pd.to_datetime(frame["started_at"], utc=True).dt.year.map(lambda y: "?" if pd.isna(y) else str(int(y)))
    return frame["hardware.accelerator"].map(lambda a: accelerator_identity(a, by))


def held_out(dataset: Dataset, member: str, params: dict, by: str = "accelerator") -> pd.DataFrame:
    """``dataset`` replayed with each accelerator (``by``: a row of the accelerator table, or its
    ``family``) or software stack (``framework``, ``year``: :func:`group_of`) of at least :data:`MIN_JOBS`
    ok jobs left out in turn: ``member`` (with ``params``)
    fitted with its 80% interval on the rest (:func:`perfzoo.zoo.calibrate.fit_with_interval`)
    and scored on the group's ok jobs, ``r = log(measured / predicted)``. One row per group:
    ``jobs``, ``median_r``, the 80th percentile of ``|r|`` held out (``p80_unseen``) and fitted
    with the group (``p80_seen``), the interval's median log half-width (``half_width``), its
    ``coverage`` and ``widening``: the log throughput each end must move out to cover 80% of the group."""
    labelled = dataset.labelled()
    groups = group_of(labelled.frame, by).to_numpy()
    ok = labelled.ok()
    seen = zoo.make(member, **params).fit(labelled.X, labelled.y)  # scored with each group: no interval needed
    ok_groups = group_of(ok.frame, by)
    rows = []
    for group, jobs in ok_groups.value_counts().items():
        if jobs < MIN_JOBS or group == "?":
            continue
        test = ok.subset((ok_groups == group).to_numpy())
        model = fit_with_interval(zoo.make(member, **params), labelled.subset(groups != group))
        pred, (low, high), y = model.predict(test.X), model.predict_interval(test.X), test.y
        r = np.log(y / pred)
        need = np.maximum.reduce([np.zeros(len(y)), np.log(low / y), np.log(y / high)])
        rows.append({"group": group, "jobs": int(jobs), "median_r": float(np.median(r)),
                     "p80_unseen": float(np.quantile(np.abs(r), LEVEL)),
                     "p80_seen": float(np.quantile(np.abs(np.log(y / seen.predict(test.X))), LEVEL)),
                     "half_width": float(np.median(np.log(high / pred))), "coverage": float(np.mean(need <= 0)),
                     "widening": float(np.quantile(need, LEVEL))})
    return pd.DataFrame(rows)


def to_markdown(rows: pd.DataFrame) -> str:
    """One pair's table, best Kendall first, with the shipped pick and the best members named."""
    train, test = rows["train"].iloc[0], rows["test"].iloc[0]
    rows = rows.sort_values("kendall", ascending=False)
    lines = [f"## fit on {train}, score on {test}", "",
             f"{int(rows['n_train'].iloc[0])} jobs fitted, {int(rows['n_test'].iloc[0])} scored.", ""]
    shipped = rows[rows["predictor"].str.endswith("(best)")]
    if len(shipped):
        r = shipped.iloc[0]
        lines.append(f"Shipped pick of {train}: **{r['predictor']}**, Kendall {r['kendall']:.3f}, MAPE {r['mape']:.1f}%.")
    for label, best in (("Kendall", rows.loc[rows["kendall"].idxmax()]), ("MAPE", rows.loc[rows["mape"].idxmin()])):
        lines.append(f"Best member by {label}: **{best['predictor']}** "
                     f"(Kendall {best['kendall']:.3f}, MAPE {best['mape']:.1f}%).")
    lines += ["", "| member | Kendall | MAPE % | MdAPE % | pred/meas median | coverage |", "|---|---|---|---|---|---|"]
    for _, r in rows.iterrows():
        cells = [f"{r[c]:.3f}" if c in ("kendall", "ratio_median", "coverage") else f"{r[c]:.1f}" for c in COLUMNS]
        lines.append(f"| {r['predictor']} | " + " | ".join(c.replace("nan", "-") for c in cells) + " |")
    return "\n".join(lines)


def write(datasets: Sequence[Dataset], members: Sequence[str], out: Path) -> list[Path]:
    """``out/hardware.md`` and ``out/hardware.csv`` for every pair of :data:`PAIRS` whose two
    datasets are among ``datasets``, with the run's throughput members (those fitted once per
    pair whatever their cost) and ``best`` from ``out/best.json``; nothing when no pair is there."""
    by_name = {ds.name: ds for ds in datasets}
    pairs = [(a, b) for a, b in PAIRS if a in by_name and b in by_name]
    throughput = [m for m in members if getattr(zoo.get(m), "output", "throughput") == "throughput"]
    if not pairs or not throughput:
        return []
    frames = []
    for a, b in pairs:
        try:
            zoo.best_member(a, out)
            best = [BEST]
        except (FileNotFoundError, KeyError):
            print(f"perfzoo bench: {a} has no shipped pick in {out}; the hardware table goes without it", file=sys.stderr)
            best = []
        frames.append(pd.DataFrame(pair_scores(by_name[a], by_name[b], best + throughput, out)))
    table = pd.concat(frames, ignore_index=True)
    text = ["# perfzoo on held-out hardware", "",
            "Written by `python -m perfzoo.bench` (the full run); do not edit by hand. Every member fitted on "
            "all the jobs of one card and scored on the other card's (same space, same protocol).", ""]
    for _, rows in table.groupby(["train", "test"], sort=False):
        text += [to_markdown(rows), ""]
    first, second = (by_name[n] for n in pairs[0])
    ratios = paired_ratios(first, second)
    text += ["## The same configs on both cards", "",
             f"Configs that ran ok on both, by {first.name}'s median step time: {second.name} / {first.name} "
             "tokens/s, measured (median) and as the analytic model prices the two cards.", "",
             f"| {first.name} step (s) | configs | measured | analytic |", "|---|---|---|---|"]
    text += [f"| {r.step_s} | {r.configs} | {r.measured:.3f} | {r.analytic:.3f} |" for r in ratios.itertuples()]
    text.append("")
    md, csv = out / "hardware.md", out / "hardware.csv"
    md.write_text("\n".join(text))
    table.to_csv(csv, index=False, float_format="%.6g")
    return [md, csv]
