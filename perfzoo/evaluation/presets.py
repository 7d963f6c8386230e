"""What a benchmark run covers: unless told otherwise, the full run (:data:`FULL`, ``python -m
perfzoo.bench``) or the CI-sized one (:data:`QUICK`, ``--quick``), the members too slow for every
seed (:data:`HEAVY`); the predictor specs a run's member names become (:func:`member_specs`); its
datasets and benchmark tasks (:func:`covered`), a task found by its id (:func:`find_task`), and
what it covered in words, for the leaderboard's header (:func:`notes`).

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
from typing import Any, Optional, Sequence

from perfzoo import zoo
from perfzoo.console import InputError
from perfzoo.datasets import list_datasets, load_dataset
from perfzoo.datasets.dataset import Dataset
from perfzoo.evaluation import suite
from perfzoo.evaluation.suite import BenchmarkTask, define_tasks, parse_id
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

    def settings(self, seeds: Optional[int] = None, curve_seeds: Optional[int] = None,
                 curve_sizes: Optional[Sequence[int]] = None) -> dict[str, Any]:
        """What defines a run's tasks besides the data and the split (keyword arguments of
        :func:`perfzoo.evaluation.suite.define_tasks`): the preset's, but for what is given.

        >>> QUICK.settings(seeds=2)
        {'seeds': [0, 1], 'curve_seeds': [0, 1, 2], 'curve_sizes': (25, 50, 100, 200)}
        """
        return {"seeds": list(range(seeds if seeds is not None else self.seeds)),
                "curve_seeds": list(range(curve_seeds if curve_seeds is not None else self.curve_seeds)),
                "curve_sizes": tuple(curve_sizes or self.curve_sizes)}


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


def find_task(dataset: Dataset, task_id: str, settings: Optional[dict[str, Any]] = None) -> BenchmarkTask:
    """The task ``task_id`` of ``dataset`` as a run of ``settings`` (:meth:`BenchPreset.settings`;
    default none), the full run or ``--quick`` defines it; a ``InputError`` names the split's ids
    now when none does."""
    tried = [settings] if settings is not None else []
    try:
        return suite.find_task(dataset, task_id, [*tried, FULL.settings(), QUICK.settings()])
    except ValueError as exc:
        raise InputError(str(exc)) from None


def covered(preset: BenchPreset, settings: dict[str, Any], datasets: Optional[Sequence[str]] = None,
            splits: Optional[Sequence[str]] = None, task: Optional[str] = None, external_dir: Optional[str] = None,
            ) -> tuple[list[Dataset], list[tuple[Dataset, BenchmarkTask]], list[dict[str, Any]]]:
    """The datasets a run covers, its benchmark tasks (each with its dataset) and the splits left
    out: ``task`` alone where given (of ``datasets``' dataset of its name, else loaded by it), else
    ``splits`` (default the preset's) of ``datasets`` (names or paths; default the preset's that
    are available, or every one), defined with ``settings`` (:meth:`BenchPreset.settings`)."""
    def load(names: Sequence[str]) -> list[Dataset]:
        return [load_dataset(name, external_dir=external_dir or None) for name in names]

    if task:
        name, _ = parse_id(task)
        found = [d for d in load(datasets) if d.name == name] if datasets else load([name])
        if not found:
            raise InputError(f"--task {task}: --datasets holds no dataset named {name!r}")
        return found, [(found[0], find_task(found[0], task, settings))], []
    if datasets:
        names = list(datasets)
    elif preset.datasets is not None:
        available = set(list_datasets(external_dir or None))
        names = [n for n in preset.datasets if n in available]
    else:
        names = list(list_datasets(external_dir or None))
    loaded = load(names)
    if preset.max_rows_for_all and not datasets:
        loaded = [d for d in loaded if len(d) <= preset.max_rows_for_all]
    if not loaded:
        raise InputError("no dataset to benchmark")
    skipped: list[dict[str, Any]] = []
    defined = []
    for ds in loaded:
        kinds = [k for k in splits or preset.splits
                 if k != "curve" or preset.curve_datasets is None or ds.name in preset.curve_datasets]
        defined += [(ds, bt) for bt in define_tasks(ds, kinds, skipped=skipped, **settings)]
    return loaded, defined, skipped


def notes(specs: Sequence[PredictorSpec], splits: Sequence[str], settings: dict[str, Any],
          preset: BenchPreset) -> list[str]:
    """What a run covered, in words, for the leaderboard's header: its splits and seeds, where
    intervals are scored, its learning curves, and the members the preset trimmed."""
    seeds, curve_sizes, curve_seeds = settings["seeds"], settings["curve_sizes"], settings["curve_seeds"]
    out = [f"splits {', '.join(splits)}; {len(seeds)} seeds per split (temporal and scale splits are "
           "deterministic: there the seed varies only the predictor's random state)"]
    if "node" in splits or "group" in splits:
        out.append("coverage of the 80% interval (each throughput member's cross-conformal interval, calibrated "
                   "on the training side) on the transfer splits: every held-out source and the first seed of "
                   "the node split")
    if "curve" in splits:
        who = [s.display for s in specs if s.curve]
        where = ", ".join(preset.curve_datasets) if preset.curve_datasets else "every dataset"
        out.append(f"learning curves on {where}: sizes {', '.join(map(str, curve_sizes))}, "
                   f"{len(curve_seeds)} seeds, predictors {', '.join(who)}")
    for s in specs:
        if s.max_seeds is not None or s.kinds is not None or s.datasets is not None:
            parts = []
            if s.max_seeds is not None:
                parts.append(f"{s.max_seeds} seed(s)")
            if s.kinds is not None:
                parts.append("splits " + "/".join(s.kinds))
            if s.datasets is not None:
                parts.append("datasets " + ", ".join(s.datasets))
            out.append(f"`{s.display}` trimmed to keep the full run under an hour on 2 cores: "
                       + "; ".join(parts) + "; no learning curve")
    return out
