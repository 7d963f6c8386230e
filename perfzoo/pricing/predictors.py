"""The predictor a command asks for, resolved one way for every command.

``--predictor`` takes ``best`` (the leaderboard's shipped member for ``--dataset``), a zoo member's
name or import path (fitted on ``--dataset`` with its interval) or a folder a predictor was saved
to; ``--calibrate RUNS`` anchors it on the user's runs and refits it with them joined
(:func:`perfzoo.zoo.calibrate.calibrated`). A dataset the leaderboard ships no member for gets
:data:`FALLBACK` fitted on it, and the log says so: the same rule in ``predict``, ``plan``,
``search`` and ``tune``. The dataset is checked first, so an unknown ``--dataset`` is named as one.

The shipped member is loaded without loading its dataset (``plan`` with the shipped ``analytic``
reads no table to price); :attr:`Resolved.training` loads it the first time a step needs it.

>>> resolved = resolve("best", "published-llm")          # doctest: +SKIP
>>> resolved.note, resolved.per_device                     # doctest: +SKIP
("the leaderboard's best for published-llm (analytic)", True)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from perfzoo import zoo
from perfzoo.console import InputError
from perfzoo.datasets import EXTERNAL, knows, load_dataset
from perfzoo.datasets.dataset import Dataset
from perfzoo.zoo import calibrate
from perfzoo.zoo.best import NotShipped
from perfzoo.zoo.estimator import clone
from perfzoo.zoo.extrapolation import Seen

FALLBACK = "lightgbm"  # fitted on a dataset the leaderboard ships no member for
PUBLISHED = "published-llm"  # the shared published tables: the default training data


@dataclass
class Resolved:
    """A fitted predictor and the data behind it.

    ``predictor``: predicts (``predict``; ``predict_interval`` and ``relative`` where it was fitted
    with an interval); ``dataset``: the name of its training data; ``note``: one line saying what
    it is, for the log; ``runs``: the ``--calibrate`` path it was anchored on, if any; ``fallback``:
    ``best`` was asked for and :data:`FALLBACK` fitted.
    """

    predictor: Any
    dataset: str
    note: str
    runs: Optional[str] = None
    external_dir: Optional[str] = None
    _training: Optional[Dataset] = field(default=None, repr=False)
    fallback: bool = False  # 'best' asked for, and the leaderboard ships none: FALLBACK fitted (``note`` says so)

    @property
    def training(self) -> Dataset:
        """The training data, loaded the first time it is asked for."""
        if self._training is None:
            self._training = load_dataset(self.dataset, external_dir=self.external_dir)
        return self._training

    @cached_property
    def seen(self) -> Seen:
        """What the predictor saw, summarised once: its training data, with the user's runs where it was
        calibrated (what "beyond the training data" is measured against, :mod:`perfzoo.zoo.extrapolation`)."""
        return Seen.of(self.predictor.joined.dataset if isinstance(self.predictor, calibrate.Calibrated)
                       else self.training)

    @property
    def per_device(self) -> bool:
        """Whether predictions are per device (the published tables' tokens/s per GPU) or for the job."""
        target = getattr(self.predictor, "target_name_", None)  # recorded where it was fitted on a named target
        return (target if isinstance(target, str) else self.training.target).endswith("_per_device")

    @property
    def name(self) -> str:
        return getattr(self.predictor, "name", type(self.predictor).__name__)

    @classmethod
    def fitted(cls, predictor: Any, training: Dataset, note: str = "") -> "Resolved":
        """A predictor already fitted on ``training``, as :func:`resolve` returns one."""
        return cls(predictor, training.name, note or f"{getattr(predictor, 'name', '?')} fitted on {training.name}",
                   _training=training)


def check_dataset(dataset: str, external_dir: Optional[str] = None) -> None:
    """A :class:`InputError` unless ``dataset`` is a dataset's name or an existing path."""
    if knows(dataset, external_dir):
        return
    raise InputError(f"--dataset {dataset}: no such dataset or path; `perfzoo datasets` lists them (or give a "
                     "CSV file or a record-store folder)")


def check_spec(spec: str) -> None:
    """A :class:`InputError` unless ``spec`` is ``best``, a saved predictor's folder or a zoo member
    (a name of :func:`perfzoo.zoo.names`, an installed one or an import path)."""
    if spec == "best" or Path(spec).is_dir():
        return
    try:
        zoo.get(spec)
    except ValueError as exc:
        why = f" ({' '.join(str(exc).split())})" if ":" in spec else ""
        raise InputError(f"--predictor {spec}: not 'best', a saved predictor's folder or a zoo member{why}; the "
                         f"members: {', '.join(zoo.names())}, or an import path module:Class") from None


def resolve(spec: str = "best", dataset: Optional[str] = PUBLISHED, *, runs: Optional[str] = None,
            external_dir: Optional[str] = None, log: Optional[Callable[[str], Any]] = None,
            training: Optional[Dataset] = None, interval: bool = True) -> Resolved:
    """The predictor ``spec`` names for ``dataset`` (see the module docstring), anchored on ``runs``
    where given (``training``: ``dataset`` already loaded; ``interval``: fit a member with its
    interval, which a search does not need). Only a saved folder needs no ``dataset``. Every failure is a
    :class:`InputError` starting ``--predictor SPEC:`` (or ``--dataset`` / ``--calibrate`` where that is
    what is wrong)."""
    log = log or (lambda _msg: None)
    check_spec(spec)
    if dataset is None and (runs is not None or not Path(spec).is_dir()):
        raise InputError(f"--predictor {spec} needs --dataset: the data it is fitted on (or whose leaderboard "
                         "pick it is)" + (" and the runs are anchored against" if runs else ""))
    if training is None and dataset is not None:
        check_dataset(dataset, external_dir)
    if runs is not None and not Path(runs).exists():
        raise InputError(f"--calibrate {runs}: no such file or folder; give a runs CSV, a published-table CSV or "
                         "a record store")
    out = Resolved(predictor=None, dataset=dataset, note="", runs=runs, external_dir=external_dir, _training=training)
    if Path(spec).is_dir():
        out.predictor, out.note = _saved(spec), f"saved in {spec}"
    elif spec == "best" and runs is None:
        out.predictor, out.note = _shipped(out, log, interval)
    elif spec == "best":
        name, params = _anchor_member(_board_name(out))
        out.predictor, out.note = _fitted(out, name, params, log)
    else:
        out.predictor, out.note = _fitted(out, spec, {}, log, interval=interval)
    if runs is not None:
        t = time.perf_counter()
        out.predictor = calibrate.calibrated(out.predictor, out.training,
                                             load_dataset(runs, external_dir=external_dir), runs)
        out.note = f"{out.note}; {out.predictor.describe()}, in {time.perf_counter() - t:.1f} s"
    log(f"predictor: {out.note}")
    return out


def refit_without(resolved: Resolved, drop: Any, why: str) -> Resolved:
    """``resolved``'s member fitted again, with its interval, on its training data less the rows
    ``drop`` flags (``why``: which rows, said in the note); ``resolved`` itself where its predictor is
    not a member fitted on its dataset here (a saved or calibrated one) or ``drop`` flags none."""
    predictor = resolved.predictor
    drop = np.asarray(drop, dtype=bool)
    if resolved.runs is not None or getattr(predictor, "dataset_", None) != resolved.dataset or not drop.any():
        return resolved
    kept = resolved.training.subset(np.flatnonzero(~drop))
    refit = calibrate.fit_with_interval(clone(predictor), kept)
    note = f"{resolved.name} refitted without {why}"
    return Resolved(refit, resolved.dataset, note, external_dir=resolved.external_dir, _training=resolved.training)


def _saved(folder: str) -> Any:
    try:
        return zoo.load(folder)
    except (FileNotFoundError, TypeError, ValueError) as exc:
        raise InputError(f"--predictor {folder}: {' '.join(str(exc).split())}") from None


def _board_name(out: Resolved) -> str:
    """The name the leaderboard knows ``out``'s dataset by (a path's dataset is named after its file)."""
    return out.dataset if out.dataset in EXTERNAL or not Path(out.dataset).exists() else out.training.name


def _shipped(out: Resolved, log: Callable[[str], Any], interval: bool) -> tuple[Any, str]:
    """The leaderboard's member for ``out.dataset``; :data:`FALLBACK` fitted where it ships none."""
    try:
        model = zoo.load_best(_board_name(out))
    except NotShipped:
        out.fallback = True
        return _fitted(out, FALLBACK, {}, log, why=f"the leaderboard ships no predictor for {out.dataset}: ",
                       interval=interval)
    except (FileNotFoundError, ValueError) as exc:
        raise InputError(f"--predictor best: {' '.join(str(exc).split())}") from None
    return model, f"the leaderboard's best for {out.dataset} ({model.name})"


def shipped_member(dataset: str) -> tuple[str, dict, str]:
    """``(name, parameters, note)`` of the member the leaderboard ships for ``dataset``, to fit afresh
    (the closed loop refits it every round); :data:`FALLBACK` where it ships none, and the note says so
    (empty otherwise).

    >>> shipped_member("no-such-dataset")[0] == FALLBACK
    True
    """
    try:
        name, params = zoo.best_member(dataset)
    except NotShipped as exc:
        return FALLBACK, {}, f"the leaderboard ships no predictor for {dataset} ({' '.join(str(exc).split())}): {FALLBACK}"
    return name, params, ""


def _anchor_member(dataset: str) -> tuple[str, dict]:
    """The leaderboard's member for anchoring on ``dataset`` (:data:`FALLBACK` where it has none)."""
    try:
        return zoo.anchor_member(dataset)
    except NotShipped:
        return FALLBACK, {}
    except (FileNotFoundError, ValueError) as exc:
        raise InputError(f"--predictor best: {' '.join(str(exc).split())}") from None


def _fitted(out: Resolved, name: str, params: dict, log: Callable[[str], Any], why: str = "",
            interval: bool = True) -> tuple[Any, str]:
    """Member ``name`` fitted on ``out``'s training data (with its interval where ``interval``)."""
    t = time.perf_counter()
    training = out.training
    ok = training.labelled().ok()
    if not len(ok):
        raise InputError(f"--predictor {name}: {training.name} holds no finished job with a measured "
                         f"{training.target} to fit on; give a dataset with measurements")
    member = zoo.make(name, **params)
    model = calibrate.fit_with_interval(member, training) if interval else member.fit(ok.X, ok.y, dataset=training.name)
    return model, (f"{why}{name} fitted on the {len(ok):,} measured jobs of {training.name} "
                   f"in {time.perf_counter() - t:.1f} s")


__all__ = ["FALLBACK", "PUBLISHED", "Resolved", "check_dataset", "check_spec", "refit_without", "resolve", "shipped_member"]
