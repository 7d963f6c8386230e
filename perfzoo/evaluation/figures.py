"""The leaderboard's figures, as the CubicML paper draws them: predicted vs measured per split
(Figure 3) and rank correlation vs training examples (Figure 4 right).

:func:`scatter_figure` draws the ★ of each split (:func:`~perfzoo.evaluation.ranking.pick_best`);
:func:`curve_figure` every member of a dataset's learning curve. Both return the path written,
or None when there is nothing to draw.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from perfzoo.console import pyplot
from perfzoo.evaluation.ranking import pick_best
from perfzoo.evaluation.runner import Results


def scatter_figure(results: Results, summary: pd.DataFrame, dataset: str, path: Path) -> Optional[Path]:
    """Predicted vs measured throughput, one panel per split, best predictor of each split
    (first seed), both axes divided by the largest measured value as in the paper."""
    panels = []
    for split in ("random", "temporal", "scale"):
        best = pick_best(summary, dataset, split)
        if best is None:
            continue
        keys = sorted(k for k in results.predictions if k[0] == dataset and k[1] == best["predictor"] and k[2] == split)
        if not keys:
            continue
        panels.append((split, best, results.predictions[keys[0]]))
    if not panels:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.0), squeeze=False)
    for ax, (split, best, pr) in zip(axes[0], panels):
        t = np.asarray(pr["y_true"], dtype=float)
        p = np.asarray([np.nan if v is None else v for v in pr["y_pred"]], dtype=float)
        scale = np.nanmax(t) if np.nanmax(t) > 0 else 1.0
        pscale = np.nanmax(np.abs(p)) if np.isfinite(p).any() and np.nanmax(np.abs(p)) > 0 else 1.0
        x, yv = t / scale, p / pscale
        ax.scatter(x, yv, s=10, alpha=0.6, color="tab:blue", edgecolors="none")
        lo = min(np.nanmin(x), np.nanmin(yv))
        if lo > 0 and 1 / lo > 50:  # a wide range (many models and scales): log axes
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.plot([lo, 1], [lo, 1], color="gray", lw=0.8, ls="--")
        ax.set_xlabel("measured throughput (normalised)")
        ax.set_ylabel("predicted (normalised)")
        ax.set_title(f"{split}: {best['predictor']}\nτ={best['kendall_mean']:.3f}  ρ={best['spearman_mean']:.3f}  "
                     f"r={best['pearson_mean']:.3f}", fontsize=9)
        ax.grid(alpha=0.3)
    fig.suptitle(f"{dataset}: predicted vs measured (test side, first seed)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def curve_figure(summary: pd.DataFrame, dataset: str, path: Path) -> Optional[Path]:
    """Kendall / Spearman / Pearson vs training examples, mean and ±2 std band per predictor."""
    s = summary[(summary["dataset"] == dataset) & (summary["kind"] == "curve")]
    if s.empty:
        return None
    plt = pyplot()
    metrics = [("kendall", "Kendall τ"), ("spearman", "Spearman ρ"), ("pearson", "Pearson r")]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=True)
    for ax, (m, label) in zip(axes, metrics):
        for pred, grp in s.groupby("predictor", sort=True):
            grp = grp.sort_values("curve_n")
            n = grp["curve_n"].to_numpy(float)
            mu = grp[f"{m}_mean"].to_numpy(float)
            sd = grp[f"{m}_std"].to_numpy(float)
            (line,) = ax.plot(n, mu, marker="o", ms=3, label=pred)
            ax.fill_between(n, mu - 2 * sd, np.minimum(mu + 2 * sd, 1.0), color=line.get_color(), alpha=0.15)
        ax.axhline(0.9, color="gray", lw=0.8, ls="--")
        ax.set_xscale("log")
        sizes = sorted(s["curve_n"].dropna().unique())
        ax.set_xticks(sizes, [str(int(v)) for v in sizes], fontsize=7)
        ax.minorticks_off()
        ax.set_xlabel("training examples")
        ax.set_title(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("correlation on the test side")
    axes[0].set_ylim(bottom=max(-0.2, float(np.nanmin(s["kendall_mean"] - 2 * s["kendall_std"])) - 0.05), top=1.01)
    axes[-1].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"{dataset}: learning curve (random split, mean ± 2 std over seeds)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
