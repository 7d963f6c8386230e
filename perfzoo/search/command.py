"""The search command as a library: :class:`SearchConfig` and :func:`run`, what
``python -m perfzoo.search`` (:mod:`perfzoo.search.cli`) does with a parsed command line: the
predictor resolved (:func:`perfzoo.pricing.resolve`: the leaderboard's best, a zoo member fitted on
the dataset, or a saved one),
the failure classifier, the predictor's inputs outside the space, the searcher's proposals, ties
at the cut broken by a second predictor.

Python API
----------
Five proposals for ``llm-small`` from ridge fitted on the bundled ``llm-cpu`` jobs::

    from perfzoo.search.command import SearchConfig, run
    result = run(SearchConfig(space="llm-small", dataset="llm-cpu", predictor="ridge", searcher="random",
                              n_samples=500, top_k=5))
    result.to_frame()
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from perfzoo import llmconfig, pricing, zoo
from perfzoo.console import InputError, assignments, check_choice, check_writable
from perfzoo.datasets import load_dataset
from perfzoo.datasets.dataset import Dataset
from perfzoo.search import NO_KEYS, SEARCHERS, Objective, SearchResult, Searcher, make_searcher
from perfzoo.search.objective import check_inputs
from perfzoo.spaces import SpaceError, get
from perfzoo.spaces.codec import SpaceCodec

# the flags that set a searcher's settings (each applies to the searchers that have the setting)
SETTING_FLAGS = ("n_samples", "restarts", "batch_size", "lr", "n_jobs")
SMALL_DATA = 20  # measured jobs under which a search's proposals carry a caveat


@dataclass(frozen=True)
class SearchConfig:
    """One search, as :func:`run` takes it; ``python -m perfzoo.search`` translates its flags onto
    it field for field (``--set`` is ``fixed``).

    >>> SearchConfig(space="llm-small", top_k=0)
    Traceback (most recent call last):
    ...
    perfzoo.console.InputError: --top-k must be at least 1
    """

    space: str  # a space name or a .toml space file
    dataset: Optional[str] = None  # fits the predictor / names the best one; its measured configs are excluded
    predictor: str = "best"  # 'best' (the leaderboard's for dataset), a zoo member fitted on dataset, or a saved folder
    failure: str = "auto"  # 'auto' (fitted on dataset when it has failures), 'none', or a saved failure predictor
    searcher: str = "reinforce"  # a name in perfzoo.search.SEARCHERS
    top_k: int = 50  # configurations to propose
    out: Optional[str] = None  # write the proposals here ({"config": ...} lines)
    n_samples: Optional[int] = None  # sampled configs (default: the searcher's)
    restarts: Optional[int] = None  # REINFORCE restarts pooled (default: its own)
    batch_size: Optional[int] = None  # REINFORCE batch (default: its own)
    lr: Optional[float] = None  # REINFORCE Adam learning rate (default: its own)
    n_jobs: Optional[int] = None  # exhaustive: chunks scored at once, one thread each (default: its own)
    seed: int = 0  # the searcher's seed
    include_measured: bool = False  # keep the configs dataset has measured
    fixed: list[str] = field(default_factory=list)  # COLUMN=VALUE predictor inputs outside the space
    calibrate: Optional[str] = None  # your measured runs anchor the predictor (perfzoo.zoo.calibrate.calibrated)
    progress: bool = False  # a progress bar, where the searcher has one

    def __post_init__(self):
        if self.top_k < 1:
            raise InputError("--top-k must be at least 1")
        check_choice("--searcher", self.searcher, SEARCHERS)
        self.make_searcher()
        assignments(self.fixed, "--set", "COLUMN")
        if self.out:
            folder = Path(self.out).resolve().parent
            if not folder.is_dir() or not os.access(folder, os.W_OK):
                raise InputError(f"--out {self.out}: cannot write there ({folder} is not a writable folder)")
            check_writable("--out", self.out)

    def make_searcher(self) -> Searcher:
        """The searcher this search runs, with its settings."""
        return make_searcher(self.searcher, self.seed, {flag: getattr(self, flag) for flag in SETTING_FLAGS},
                             self.progress)


def measured_configs(dataset: Dataset) -> list[dict]:
    """The configs ``dataset`` holds (its ``config.*`` columns; NaN read as None)."""
    cols = [c for c in dataset.frame.columns if str(c).startswith("config.")]
    frame = dataset.frame[cols].rename(columns={c: c[len("config."):] for c in cols})
    return [{k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}
            for row in frame.to_dict("records")]


def resolve_failure(spec: str, dataset: Optional[Dataset], log=print) -> Any:
    """A fitted failure classifier from ``auto`` / ``none`` / a saved folder (see the CLI help)."""
    if spec == "none":
        return None
    if spec != "auto":
        return zoo.load(spec)
    if dataset is None:
        return None
    failed = dataset.failed
    if not failed.any():
        log(f"failure: {dataset.name} has no failed jobs; reward = predicted throughput")
        return None
    model = zoo.make("failure").fit(dataset.frame[list(dataset.feature_columns)], failed)
    log(f"failure: classifier fitted on {len(failed)} jobs of {dataset.name} ({int(failed.sum())} failed)")
    return model


def fixed_columns(dataset: Optional[Dataset], space_columns: Sequence[str], overrides: Sequence[str]) -> dict:
    """Predictor inputs outside the space: the dataset's most common value, then ``--set``."""
    fixed: dict = {}
    if dataset is not None:
        for c in dataset.feature_columns:
            if c not in space_columns:
                col = dataset.frame[c].dropna()
                if len(col):
                    fixed[c] = col.mode().iloc[0]
                    v = fixed[c]
                    fixed[c] = v.item() if isinstance(v, np.generic) else v
    fixed.update(assignments(overrides, "--set", "COLUMN"))
    return fixed


TIE_POOL = 5  # proposals searched per proposal asked for, to break ties at the cut


def break_ties(result: SearchResult, k: int, dataset: Optional[Dataset], objective: Objective, log) -> SearchResult:
    """The top ``k`` of ``result``; where the predictor ties, a ridge fit (a smooth model of another
    family) on ``dataset`` orders the tied configs, and the log says so."""
    distinct = result.tied(k)
    if distinct == min(k, len(result)):
        return result.break_ties(np.zeros(len(result)), k)
    if dataset is None:
        log(f"ties: the top {k} proposals have only {distinct} distinct scores (within 0.1%) and no --dataset to "
            "break them; their order is arbitrary")
        return result.break_ties(np.zeros(len(result)), k)
    ok = dataset.labelled().ok()
    cols = [c for c in (objective.columns or ok.feature_columns) if c in ok.X.columns]
    second = zoo.make("ridge").fit(ok.X[cols], ok.y)
    scores = second.predict(objective.codec.frame(objective.codec.decode(result.keys), columns=cols,
                                                  fixed=objective.fixed))
    log(f"ties: the top {k} proposals had only {distinct} distinct scores (within 0.1%); ties broken by a ridge "
        f"fit on {dataset.name} over the best {len(result)}")
    return result.break_ties(scores, k)


def run(config: SearchConfig) -> SearchResult:
    """The ``top_k`` configurations of ``config.space`` the predictor ranks highest, not yet
    measured, best first (written to ``config.out`` where given). Its ``stats`` also hold the
    ``dataset``, the target ``unit`` and the ``best_measured`` value there. Progress goes to stderr."""
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    try:
        space = get(config.space)
    except SpaceError as exc:
        raise InputError(str(exc)) from None
    searcher = config.make_searcher()
    if space.workload == "llm":  # the LLM front door: unknown keys, types and ranges of what --set fixes
        llmconfig.check(assignments(config.fixed, "--set", "COLUMN"), require=False)
    dataset = load_dataset(config.dataset) if config.dataset else None
    if dataset is not None and "workload" in dataset.frame:
        workloads = sorted(set(dataset.frame["workload"].dropna()))
        if workloads and space.workload not in workloads:
            raise InputError(f"--dataset {dataset.name} holds jobs of the {', '.join(workloads)} workload, --space "
                             f"{space.name} configs of the {space.workload} workload: a predictor fitted on one "
                             "cannot rank the other; give a dataset measured in this space")
    codec = SpaceCodec(space)
    predictor = pricing.resolve(config.predictor, config.dataset, runs=config.calibrate, log=log, training=dataset,
                                interval=False).predictor
    caveat = small_data_caveat(config.predictor, dataset)
    if caveat:
        log(f"caveat: {caveat}")
    failure = resolve_failure(config.failure, dataset, log)
    fixed = fixed_columns(dataset, codec.knob_columns(), config.fixed)
    exclude = NO_KEYS if dataset is None or config.include_measured else codec.keys_of(measured_configs(dataset))
    objective = Objective(codec, predictor, failure, fixed=fixed, seed=config.seed)
    unread = check_inputs(codec, objective.columns)
    if unread:
        log(f"note: the predictor does not read {', '.join(c[7:] for c in unread)}: those knobs cannot move its "
            "predictions")
    t = time.perf_counter()
    pool = config.top_k * TIE_POOL  # more than k, so that ties at the cut can be broken
    result = searcher.propose(objective, pool, exclude)
    secs = time.perf_counter() - t
    result = break_ties(result, config.top_k, dataset, objective, log)
    unit = dataset.target_unit if dataset is not None else ""
    if result.stats.get("path") == "chunked":
        log(f"exhaustive: scored chunk by chunk, not on the tree-grid fast path, because "
            f"{result.stats.get('path_reason')}")
    n_excl = result.stats.get("excluded_known", 0)
    log(f"{config.searcher}: {len(result)} proposals for {space.name} ({space.size():,} grid points) in {secs:.1f} s; "
        f"{n_excl} measured configs excluded")
    if config.out:
        path = result.write_jsonl(config.out)
        log(f"wrote {path} (run them: python -m perfzoo.collect --space {space.ref} --configs {path} --out DIR)")
    best = float(np.nanmax(dataset.ok().y)) if dataset is not None and len(dataset.ok()) else None
    result.stats.update(dataset=dataset.name if dataset is not None else None, unit=unit, best_measured=best,
                        caveat=caveat)
    return result


def small_data_caveat(predictor: str, dataset: Optional[Dataset]) -> Optional[str]:
    """What to say when the predictor learned from fewer than :data:`SMALL_DATA` measured jobs
    (a zoo member or the leaderboard's pick fitted on ``dataset``); None otherwise."""
    if dataset is None or Path(predictor).is_dir():
        return None
    n = len(dataset.ok())
    if n >= SMALL_DATA:
        return None
    return (f"the predictor learned from {n} measured job{'s' * (n != 1)} of {dataset.name} (under {SMALL_DATA}): "
            "its ranking and any gain over the best measured are a guess until measured; collect the proposals "
            "and search again")
