"""Which few layouts to measure: the measure-and-replan loop's first step (``plan --propose K``).

A plan's top layouts are often within the predictor's error of each other; measuring a few of
them settles the order. :func:`propose` picks ``k`` layouts by their expected improvement over the
best expected throughput (:mod:`perfzoo.plan.shrinkage`: each layout's true log throughput taken
as normal about its expected one with the layout-to-layout error :data:`~perfzoo.plan.shrinkage.RESIDUAL_SD`),
greedily, each of a parallel structure (``tp pp vp cp ep`` and sharding) none chosen before has, so
the measurements split the tie set rather than price one structure k times. The loop::

    perfzoo plan ... --propose 4 --out runs/propose.jsonl      # the 4 layouts and their collect space
    perfzoo collect --space runs/propose.toml --configs runs/propose.jsonl --out runs/measured
    perfzoo plan ... --calibrate runs/measured                 # re-ranked on what ran

>>> import pandas as pd
>>> layouts = pd.DataFrame({"tp": [1, 1, 2, 4], "pp": 1, "vp": 1, "cp": 1, "ep": 1, "fsdp": "zero1",
...                         "expected_tokens_per_s_per_device": [1000.0, 990.0, 980.0, 500.0]})
>>> propose(layouts, 2)["tp"].tolist()   # the second tp1 is as promising, but tp2 is another structure
[1, 2]
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfzoo.console import InputError
from perfzoo.plan.shrinkage import RESIDUAL_SD

STRUCTURE = ("tp", "pp", "vp", "cp", "ep", "fsdp")  # what makes two layouts different experiments


def expected_improvement(expected: np.ndarray, sd: float = RESIDUAL_SD) -> np.ndarray:
    """Each layout's expected gain in log throughput over the best of ``expected`` (tokens/s), its
    true value normal about the expected one with ``sd``.

    >>> expected_improvement(np.array([100.0, 100.0 * np.exp(-0.155)])).round(4).tolist()
    [0.0618, 0.0129]
    """
    from scipy.stats import norm  # 0.5 s to import: only where proposals are asked for, not every plan

    mu = np.log(np.asarray(expected, dtype=float))
    z = (mu - np.nanmax(mu)) / sd
    return sd * norm.pdf(z) + (mu - np.nanmax(mu)) * norm.cdf(z)


def propose(layouts: pd.DataFrame, k: int) -> pd.DataFrame:
    """``k`` rows of ``layouts`` (a plan's ranked layouts) worth measuring, by expected improvement,
    a new parallel structure each while there are any (module docstring); column
    ``expected_improvement`` (log) added."""
    if k < 1:
        raise InputError(f"--propose {k}: give how many layouts to measure, 1 or more")
    ei = expected_improvement(layouts["expected_tokens_per_s_per_device"].to_numpy(dtype=float))
    order = np.argsort(-ei, kind="stable")
    keys = [tuple(row) for row in layouts[list(STRUCTURE)].astype(str).to_numpy()]
    chosen, seen = [], set()
    for i in order:  # a new structure each
        if keys[i] not in seen:
            chosen.append(i)
            seen.add(keys[i])
        if len(chosen) == k:
            break
    for i in order:  # fewer structures than k: the next best of any
        if len(chosen) == k:
            break
        if i not in chosen:
            chosen.append(i)
    return layouts.iloc[chosen].assign(expected_improvement=ei[chosen])


__all__ = ["STRUCTURE", "expected_improvement", "propose"]
