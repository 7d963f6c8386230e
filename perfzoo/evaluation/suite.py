"""Versioned benchmark tasks: what a number on the leaderboard was computed on.

A *benchmark task* is one split of one dataset as the benchmark runs it (many fits: one per
member, seed and fold, each a :class:`perfzoo.evaluation.tasks.Task`). It is defined by the
dataset's content hash (every row, and the metadata that changes what is fitted:
:meth:`~perfzoo.datasets.dataset.Dataset.content_hash`), the target, the split rule and its parameters,
the seeds, the rows of every partition, and the metrics with a hash of the code that defines them.
Its id, ``<dataset>/<split>/<8 hex digits>``, hashes all of that: the same data, split and seeds
give the same id in every process and checkout; a changed loader or dataset row, split rule, seed
list or metric definition gives a new id, so the numbers behind an old id never change.

Rows: a partition holds positions into ``dataset.frame`` (failed jobs included); throughput and
score members fit and are scored on its labelled rows (``status`` ok with a known target), the
``failure`` classifier on all of them. ``transfer`` (:mod:`perfzoo.evaluation.transfer`) is a task
too: its partitions are the cells of the matrix.

>>> from perfzoo.datasets import load_dataset
>>> task = define_tasks(load_dataset("llm-cpu"), ["scale"], seeds=range(5))[0]
>>> task.id.startswith("llm-cpu/scale/"), task.seeds, len(task.partitions())
(True, (0, 1, 2, 3, 4), 1)
"""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from perfzoo.console import InputError
from perfzoo.datasets.dataset import Dataset
from perfzoo.evaluation import metrics as M
from perfzoo.evaluation import transfer
from perfzoo.evaluation.splits import CURVE_SIZES, TEST_SIZE, TRANSFER_SPLITS, Split, SplitNotApplicable, make_splits

TASK_VERSION = 1  # bump when what a task means changes beyond its fields (e.g. which of its rows are scored)
ID_DIGITS = 8

# what each split kind does, in one sentence (the leaderboard and exported cards say it)
RULES: dict[str, str] = {
    "random": f"Group-aware random {1 - TEST_SIZE:.0%}/{TEST_SIZE:.0%} per seed (duplicate configurations on one "
              "side).",
    "temporal": "Oldest ~75% by time predicts the newest ~25%, cut between two timestamps.",
    "scale": "Train at or below the scale threshold, test above it.",
    "node": "Train on single-node jobs, test on multi-node jobs (the node boundary).",
    "group": "Leave one value of the column out, in turn.",
    "curve": "Random group-aware 75/25 split per seed; the training side is subsampled to n successful jobs "
             "(nested), the test side is fixed.",
    "transfer": "Fit on each source alone and score on each other; the diagonal is the scale split within the "
                "source; `all others` fits on every source but the test one.",
}


def _code_hash(path: Path) -> str:
    """A hash of a module's code without its comments, formatting and docstrings: editing how a
    metric is computed changes it, editing how it is described does not."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()[:16]


METRICS_CODE = _code_hash(Path(M.__file__))


@dataclass(frozen=True)
class BenchmarkTask:
    """One split of one dataset as the benchmark runs it (the module docstring); ``id`` names it.

    ``split`` is the split's name (``random``, ``group:source``, ``curve``, ``transfer``), ``kind``
    its kind; ``rule`` the parameters its rows were cut by; ``seeds`` the seeds each member runs
    with (``()`` where the folds are the held-out values or the matrix's cells); ``metrics`` what
    each fit reports; ``splits`` every partition, one per seed and fold (not part of equality: the
    ``rows`` hash stands for them).
    """

    dataset: str
    split: str
    kind: str
    content_hash: str
    target: str
    rule: dict[str, Any]
    seeds: tuple[int, ...]
    metrics: tuple[str, ...]
    splits: tuple[Split, ...] = field(compare=False, repr=False)

    @cached_property
    def rows(self) -> str:
        """A hash of every partition's training and test rows, in order."""
        h = hashlib.sha256()
        for sp in self.splits:
            h.update(f"{sp.key}|".encode())
            h.update(np.asarray(sp.train, dtype=np.int64).tobytes() + b"|")
            h.update(np.asarray(sp.test, dtype=np.int64).tobytes() + b"|")
        return h.hexdigest()[:16]

    @cached_property
    def id(self) -> str:
        """``<dataset>/<split>/<hash>``: the hash covers every field but the dataset's name."""
        body = {k: v for k, v in self.definition(with_id=False).items() if k != "dataset"}
        digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()
        return f"{self.dataset}/{self.split}/{digest[:ID_DIGITS]}"

    def definition(self, with_id: bool = True) -> dict[str, Any]:
        """What the task is, as JSON: every field its id hashes, and the id."""
        out = {"dataset": self.dataset, "content_hash": self.content_hash, "target": self.target,
               "split": self.split, "kind": self.kind, "rule": self.rule, "seeds": list(self.seeds),
               "partitions": len(self.partitions()), "rows": self.rows, "metrics": list(self.metrics),
               "metrics_code": METRICS_CODE, "version": TASK_VERSION}
        return {"id": self.id, **out} if with_id else out

    def partitions(self) -> list[Split]:
        """The distinct partitions (a deterministic split's seeds share one), in order."""
        seen, out = set(), []
        for sp in self.splits:
            key = (sp.fold, np.asarray(sp.train).tobytes(), np.asarray(sp.test).tobytes())
            if key not in seen:
                seen.add(key)
                out.append(sp)
        return out

    def label(self, sp: Split) -> str:
        """What tells a partition apart in an export: the seed, the held-out value, the cell."""
        if self.kind == "random":
            return f"seed {sp.seed}"
        if self.kind == "curve":
            return f"seed {sp.seed}, n={sp.fold}"
        if self.kind in ("group", "transfer"):
            return sp.fold
        return self.split


def define_tasks(
    dataset: Dataset,
    split_kinds: Sequence[str],
    seeds: Sequence[int],
    *,
    group_columns: Optional[Sequence[str]] = None,
    curve_sizes: Sequence[int] = CURVE_SIZES,
    curve_seeds: Optional[Sequence[int]] = None,
    skipped: Optional[list[dict[str, Any]]] = None,
) -> list[BenchmarkTask]:
    """The tasks of one dataset: one per split kind (``group``: one per held-out column, default
    the dataset's :attr:`~perfzoo.datasets.dataset.Dataset.holdout_columns`; ``curve``: ``curve_seeds``,
    default ``max(10, len(seeds))`` of them). A split the dataset cannot support is listed in
    ``skipped`` with the reason."""
    seeds = [int(s) for s in seeds]
    curve_seeds = [int(s) for s in curve_seeds] if curve_seeds is not None else list(range(max(10, len(seeds))))
    found: list[tuple[list[Split], tuple[int, ...]]] = []

    def attempt(name: str, make, task_seeds: Sequence[int]) -> None:
        try:
            found.append((make(), tuple(task_seeds)))
        except SplitNotApplicable as exc:
            if skipped is not None:
                skipped.append({"dataset": dataset.name, "split": name, "reason": str(exc)})

    for kind in split_kinds:
        if kind == "group":
            for col in group_columns or dataset.holdout_columns:
                attempt(f"group:{col}", lambda col=col: make_splits(dataset, "group", group_column=col), ())
        elif kind == "curve":
            attempt(kind, lambda: make_splits(dataset, "curve", curve_seeds, curve_sizes=curve_sizes), curve_seeds)
        elif kind == "transfer":
            attempt(kind, lambda: transfer.partitions(dataset), ())
        else:
            attempt(kind, lambda kind=kind: make_splits(dataset, kind, seeds), seeds)
    return [task_of(dataset, splits, task_seeds) for splits, task_seeds in found]


def task_of(dataset: Dataset, splits: Sequence[Split], seeds: Sequence[int]) -> BenchmarkTask:
    """The task whose partitions are ``splits`` (one split name) of ``dataset``, run with ``seeds``."""
    first = splits[0]
    kind = first.kind
    rule = {k: v for k, v in first.info.items() if all(sp.info.get(k) == v for sp in splits)}
    if kind == "curve":
        rule["sizes"] = sorted({int(sp.fold) for sp in splits})
    if kind == "random":
        rule["duplicate_key"] = dataset.duplicate_key
    if kind == "transfer":
        rule["min_rows"] = transfer.MIN_ROWS
        names = list(transfer.METRICS)
    else:
        names = list(M.THROUGHPUT_METRICS)
        if first.name in TRANSFER_SPLITS:
            names += M.INTERVAL_METRICS
        if kind != "curve" and dataset.failed.any():
            names.append("roc_auc")
    return BenchmarkTask(dataset=dataset.name, split=first.name, kind=kind, content_hash=dataset.content_hash(),
                         target=dataset.target, rule=_plain(rule), seeds=tuple(int(s) for s in seeds),
                         metrics=tuple(names), splits=tuple(splits))


def _plain(value: Any) -> Any:
    """``value`` with numpy scalars as Python ones, so that its JSON is the same in every process."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value.item() if hasattr(value, "item") else value


def parse_id(task_id: str) -> tuple[str, str]:
    """``(dataset, split)`` of a task id; a ``ValueError`` for text that is not one.

    >>> parse_id("vtrain-a100/group:config.model_name/075a128e")
    ('vtrain-a100', 'group:config.model_name')
    """
    parts = task_id.split("/")
    if len(parts) != 3 or not parts[0] or not parts[1] or len(parts[2]) != ID_DIGITS or \
            any(c not in "0123456789abcdef" for c in parts[2]):
        raise InputError(f"{task_id!r} is not a task id (<dataset>/<split>/<{ID_DIGITS} hex digits>, as "
                         "python -m perfzoo.bench --list-tasks prints)")
    return parts[0], parts[1]


def find_task(dataset: Dataset, task_id: str, settings: Sequence[dict[str, Any]]) -> BenchmarkTask:
    """The task of ``dataset`` whose id is ``task_id``, defined with the first of ``settings``
    (keyword arguments of :func:`define_tasks`: ``seeds``, ``curve_sizes``, ``curve_seeds``) that
    gives it. An id no setting gives is a ``ValueError`` naming the split's ids now: the data, its
    rows, the seeds or the metrics changed since the id was made, and an id never names other numbers."""
    name, split = parse_id(task_id)
    if name != dataset.name:
        raise InputError(f"task {task_id} is of dataset {name!r}, not {dataset.name!r}")
    kind = split.split(":")[0]
    if kind not in RULES:
        raise InputError(f"no task {task_id}: {kind!r} is no split kind (one of {', '.join(RULES)})")
    columns = [split.split(":", 1)[1]] if kind == "group" and ":" in split else None
    now: list[str] = []
    for kw in settings:
        for task in define_tasks(dataset, [kind], group_columns=columns, **kw):
            if task.id == task_id:
                return task
            if task.split == split:
                now.append(task.id + (f" ({len(task.seeds)} seeds)" if task.seeds else ""))
    if not now:
        raise InputError(f"no task {task_id}: {dataset.name} has no {split} split now")
    raise InputError(f"no task {task_id}: {dataset.name}'s {split} split is {' or '.join(dict.fromkeys(now))} now; "
                     "its data, rows, seeds or metrics changed since that id was made")
