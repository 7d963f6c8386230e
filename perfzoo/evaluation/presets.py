"""What a benchmark run covers unless told otherwise: the full run (:data:`FULL`, ``python -m
perfzoo.bench``) and the CI-sized one (:data:`QUICK`, ``--quick``), the members too slow for every
seed (:data:`HEAVY`), and the predictor specs a run's member names become (:func:`member_specs`).

>>> [s.name for s in member_specs(["ridge", "mlp_rank_ensemble"], FULL)]
['ridge', 'mlp_rank_ensemble']
>>> member_specs(["mlp_rank_ensemble"], FULL)[0].kinds  # capped in the full run ...
('random',)
>>> member_specs(["mlp_rank_ensemble"], FULL, explicit=True)[0].kinds is None  # ... unless named
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from perfzoo import zoo
from perfzoo.evaluation.tasks import DEFAULT_CACHE_DIR, PredictorSpec
from perfzoo.zoo import plugin
from perfzoo.zoo.plugin import ContractError


@dataclass(frozen=True)
class BenchPreset:
    """What a run covers unless its :class:`BenchConfig` says otherwise (:data:`FULL`,
    :data:`QUICK`). ``heavy`` caps the seeds of slow members and keeps them out of the learning
    curves; ``curve_predictors`` are the members drawn in learning curves."""

    datasets: Optional[list[str]]  # None: every dataset perfzoo lists
    predictors: Optional[list[str]]  # None: every zoo member
    splits: list[str]
    seeds: int
    curve_sizes: tuple[int, ...]
    curve_seeds: int
    curve_datasets: Optional[list[str]]
    curve_predictors: Optional[list[str]]
    heavy: dict[str, "Heavy"] = field(default_factory=dict)
    out: str = "leaderboard"
    max_rows_for_all: Optional[int] = None  # quick: skip datasets larger than this


@dataclass(frozen=True)
class Heavy:
    """A member too slow for every seed of every split on 2 cores: at most ``seeds`` seeds,
    only the split ``kinds`` named, only the ``datasets`` named (None: all); never in curves."""

    seeds: int
    kinds: tuple[str, ...] = ("random", "temporal", "scale")
    datasets: Optional[tuple[str, ...]] = None


HEAVY = {
    # the paper's ads predictor exactly (10 x 1600-wide MLPs, 200 epochs, pairwise loss): about
    # 2 s per epoch per model on 1,000 rows on one shared core, i.e. tens of minutes per fit on
    # the large datasets; it runs once, on the random split, where its paper numbers apply
    "mlp_rank_ensemble": Heavy(1, ("random",), ("fsdp-cpu", "llm-cpu", "published-torchtitan")),
}

FULL = BenchPreset(
    datasets=None,
    predictors=None,
    splits=["random", "temporal", "scale", "node", "group", "curve", "transfer"],
    seeds=5,
    curve_sizes=(25, 50, 100, 150, 200, 300, 500, 750, 1000),
    curve_seeds=10,
    curve_datasets=["vtrain-a100", "published-llm", "fsdp-cpu", "llm-cpu"],
    curve_predictors=["ridge", "gbr", "lightgbm", "catboost", "hybrid", "gp"],
    heavy=HEAVY,
    out="leaderboard",
)

QUICK = BenchPreset(
    datasets=["vtrain-a100", "published-torchtitan", "published-llm", "fsdp-cpu", "llm-cpu"],
    predictors=["constant", "analytic", "ridge", "knn", "lightgbm", "failure"],
    splits=["random", "temporal", "scale", "curve"],
    seeds=3,
    curve_sizes=(25, 50, 100, 200),
    curve_seeds=3,
    curve_datasets=["vtrain-a100"],
    curve_predictors=["ridge", "lightgbm"],
    heavy={},
    out=str(Path(DEFAULT_CACHE_DIR) / "leaderboard-quick"),
    max_rows_for_all=5000,
)


def member_specs(names: Sequence[str], preset: BenchPreset, explicit: bool = False) -> list[PredictorSpec]:
    """Specs for ``names`` (zoo members, import paths, installed members); the preset's caps on
    heavy members apply unless the user named the members explicitly (then they run everywhere
    they were asked to). A member from outside the zoo that breaks the contract raises
    :class:`~perfzoo.zoo.plugin.ContractError`, one line per problem."""
    found = [p for n in names if n not in zoo.REGISTRY for p in plugin.problems(zoo.get(n), n)]
    if found:
        raise ContractError(found)
    curve = set(preset.curve_predictors) if preset.curve_predictors is not None and not explicit else None
    specs = []
    for n in names:
        heavy = None if explicit else preset.heavy.get(n)
        specs.append(PredictorSpec(
            n, max_seeds=heavy.seeds if heavy else None,
            curve=(curve is None or n in curve) and heavy is None,
            kinds=heavy.kinds if heavy else None, datasets=heavy.datasets if heavy else None))
    return specs
