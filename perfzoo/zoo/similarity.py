"""How alike two configs' layouts are, and how much of one run's offset carries to the other.

A config's place in layout space (:func:`layout`): log2 of its GPU count, nodes, tensor, pipeline,
context, expert and virtual-pipeline sizes, micro-batch, global batch and sequence length, and its
activation checkpointing (none 0, selective 1, full 2). The distance between two configs
(:func:`distance`) sums the absolute differences: doubling any one of them is 1. A parallel size a
config leaves out is 1 (not used); another coordinate it leaves out counts 1 against a config that
states it, 0 against one that does not.

How much of one run's log offset (measured / predicted) carries to a config of the same model at
distance ``d`` (:class:`Similarity`): ``rho(d) = share * exp(-d / length)``, fitted on the shared
tables (:func:`fit`, :data:`FITTED`). Two layouts of one model a few doublings apart share most of
their offset; far apart, little: the cost model's error is a function of the layout as much as of
the model or the stack (:mod:`perfzoo.zoo.anchor` uses it for the point and the interval).

>>> X = pd.DataFrame({"config.n_gpus": [8, 8, 64], "hardware.nodes": [1, 1, 8], "config.tp": [1, 2, 2]})
>>> distance(layout(X), layout(X))[0].tolist()   # tp 1 -> 2; then also 8x the GPUs and the nodes
[0.0, 1.0, 7.0]
>>> [round(float(FITTED(d)), 3) for d in (0, 1, 7)]
[0.898, 0.765, 0.292]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from perfzoo.console import DataError

# (column, its value where a config leaves it out: None = unknown)
COORDINATES = (("config.n_gpus", None), ("hardware.nodes", None), ("config.tp", 1.0), ("config.pp", 1.0),
               ("config.cp", 1.0), ("config.ep", 1.0), ("config.vp", 1.0), ("config.micro_batch_size", None),
               ("config.global_batch_size", None), ("config.seq_len", None))
RECOMPUTE = {"none": 0.0, "selective": 1.0, "full": 2.0}  # config.activation_checkpointing, one step a level
UNKNOWN = 1.0  # a coordinate one config states and the other does not


@dataclass(frozen=True)
class Similarity:
    """``rho(d) = share * exp(-d / length)``: the share of one run's log offset a config at layout
    distance ``d`` of the same model shares (``share`` < 1: two runs of one layout differ too).

    >>> Similarity(share=0.9, length=5.0)(np.array([0.0, 5.0])).round(3).tolist()
    [0.9, 0.331]
    """

    share: float
    length: float

    def __call__(self, d: np.ndarray) -> np.ndarray:
        return self.share * np.exp(-np.asarray(d, dtype=float) / self.length)


# fitted by `python docs/studies/anchor-similarity-1129/similarity.py` (fit() on the out-of-source residuals
# of the anchoring member, analytic, on the six published-llm sources and vtrain-a100, each source alike;
# 2026-11-29; refitted 2026-12-07 after the MoE dispatch and FSDP ring physics): docs/studies/anchor-similarity-1129/README.md
FITTED = Similarity(share=0.898, length=6.24)


def layout(X: pd.DataFrame) -> np.ndarray:
    """Each row's coordinates (:data:`COORDINATES`, then activation checkpointing), NaN where unknown."""
    cols = []
    for column, missing in COORDINATES:
        v = pd.to_numeric(X[column], errors="coerce").to_numpy(dtype=float, na_value=np.nan) if column in X.columns \
            else np.full(len(X), np.nan)
        if missing is not None:
            v = np.where(np.isnan(v), missing, v)
        with np.errstate(divide="ignore", invalid="ignore"):
            cols.append(np.where(v > 0, np.log2(np.where(v > 0, v, 1.0)), np.nan))
    ckpt = X["config.activation_checkpointing"] if "config.activation_checkpointing" in X.columns else \
        pd.Series(np.nan, index=X.index)
    cols.append(ckpt.astype("string").str.strip().str.lower().map(RECOMPUTE).to_numpy(dtype=float, na_value=np.nan))
    return np.column_stack(cols)


def distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(len(a), len(b))`` layout distances between the rows of two :func:`layout` arrays."""
    A, B = a[:, None, :], b[None, :, :]
    na, nb = np.isnan(A), np.isnan(B)
    with np.errstate(invalid="ignore"):
        d = np.where(na & nb, 0.0, np.where(na | nb, UNKNOWN, np.abs(A - B)))
    return d.sum(axis=-1)


def pairs(residuals: np.ndarray, coords: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(first, second, d)``: every pair of rows with one label (one model on one cluster and release),
    as row indices and their layout distance."""
    first, second, dist = [], [], []
    for rows in pd.Series(np.arange(len(residuals))).groupby(np.asarray(labels)).indices.values():
        if len(rows) < 2:
            continue
        i, j = np.triu_indices(len(rows), 1)
        first.append(rows[i])
        second.append(rows[j])
        dist.append(distance(coords[rows], coords[rows])[i, j])
    if not first:
        return np.zeros(0, dtype=int), np.zeros(0, dtype=int), np.zeros(0)
    return np.concatenate(first), np.concatenate(second), np.concatenate(dist)


def fit(residuals: np.ndarray, coords: np.ndarray, labels: np.ndarray, sources: np.ndarray) -> Similarity:
    """The :class:`Similarity` that best carries one run's log residual to another's, over every pair
    of rows with one label (``r_j ~ rho(d) r_i`` both ways, least squares), each source's pairs
    weighing alike. ``residuals``: out-of-source log(measured / predicted); ``coords``: :func:`layout`.

    >>> rng = np.random.default_rng(0)
    >>> x = np.arange(40.0)[:, None]                         # 40 layouts of a model, one doubling apart
    >>> r = rng.multivariate_normal(np.zeros(40), 0.04 * 0.8 * np.exp(-np.abs(x - x.T) / 3) + 0.008 * np.eye(40), 50)
    >>> coords = np.column_stack([np.tile(x, (50, 1)), np.zeros((2000, 10))])
    >>> s = fit(r.reshape(-1), coords, np.repeat(np.arange(50), 40), np.zeros(2000))   # 50 models
    >>> round(s.share, 1), round(s.length)
    (0.8, 3)
    """
    from scipy.optimize import minimize  # the study's fit only: anchoring with FITTED imports no scipy

    r = np.asarray(residuals, dtype=float)
    i, j, d = pairs(r, coords, labels)
    if i.size == 0:
        raise DataError("no two rows share a label: nothing to fit a similarity on")
    src = np.asarray(sources, dtype=object)[i]
    w = 1.0 / pd.Series(src).map(pd.Series(src).value_counts()).to_numpy(dtype=float)

    def unpack(theta: np.ndarray) -> Similarity:
        return Similarity(share=float(1 / (1 + np.exp(-theta[0]))), length=float(np.exp(theta[1])))

    def loss(theta: np.ndarray) -> float:
        rho = unpack(theta)(d)
        return float(np.sum(w * ((r[j] - rho * r[i]) ** 2 + (r[i] - rho * r[j]) ** 2)))

    best = minimize(loss, np.array([1.0, 1.0]), method="Nelder-Mead", options={"xatol": 1e-4, "fatol": 1e-10})
    found = unpack(best.x)
    return Similarity(share=round(found.share, 3), length=round(found.length, 2))


__all__ = ["FITTED", "Similarity", "distance", "fit", "layout", "pairs"]
