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

from perfzoo import analytic, zoo
from perfzoo.datasets.dataset import Dataset
from perfzoo.evaluation.cross import BEST, cross_scores, cross_specs
from perfzoo.records.columns import row_keys

PAIRS = (("llm-h100", "llm-h200"), ("llm-h200", "llm-h100"))  # (fit on, score on)
COLUMNS = ("kendall", "mape", "mdape", "ratio_median", "coverage")  # what each row shows
STEP_BINS = (0.0, 0.1, 0.2, 0.4, 1.0, np.inf)  # the first card's step time (s) the paired configs are binned by


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
        raise ValueError(f"no config ran ok on both {first.name} and {second.name}: nothing to pair")
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
