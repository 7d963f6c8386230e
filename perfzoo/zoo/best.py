"""The leaderboard's best predictor per dataset: where it lives and how it is loaded.

``python -m perfzoo.bench`` writes ``best.json`` and the fitted artifacts into the leaderboard
folder (:func:`leaderboard_dir`); :func:`load_best` reads them back. It lives in the zoo, which
the evaluation package imports, so neither has to import the other to find a predictor.

>>> predictor = load_best("vtrain-a100")            # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Optional, Union

from perfzoo.console import InputError
from perfzoo.datasets.dataset import Dataset
from perfzoo.zoo.base import Predictor

LEADERBOARD_DIR_ENV = "PERFZOO_LEADERBOARD"


class NotShipped(InputError, KeyError):
    """The leaderboard ships no predictor for this dataset (or there is no leaderboard)."""

    def __str__(self) -> str:
        return str(self.args[0])


def leaderboard_dir(folder: Optional[Union[str, os.PathLike]] = None) -> Path:
    """``folder``, else ``$PERFZOO_LEADERBOARD``, else the checkout's ``leaderboard/``."""
    if folder is not None:
        return Path(folder)
    if os.environ.get(LEADERBOARD_DIR_ENV):
        return Path(os.environ[LEADERBOARD_DIR_ENV])
    return Path(__file__).resolve().parents[2] / "leaderboard"  # perfzoo/zoo/best.py -> the checkout


def best_entry(dataset: Union[str, Dataset], folder: Optional[Union[str, os.PathLike]] = None) -> dict:
    """The ``best.json`` entry of ``dataset`` (its name, or the Dataset) in :func:`leaderboard_dir`:
    the shipped member's ``name`` and ``params``, its scores, its ``artifact``."""
    best_file = leaderboard_dir(folder) / "best.json"
    if not best_file.exists():
        raise NotShipped(f"{best_file}: no leaderboard yet; run `python -m perfzoo.bench` (or pass the leaderboard folder)")
    entries = json.loads(best_file.read_text()).get("datasets", {})
    name = dataset if isinstance(dataset, str) else dataset.name
    if name not in entries:
        raise NotShipped(f"{name!r} has no best predictor in {best_file}; it has: {', '.join(sorted(entries)) or 'none'}")
    return entries[name]


def best_member(dataset: Union[str, Dataset], folder: Optional[Union[str, os.PathLike]] = None) -> tuple[str, dict]:
    """``(member name, parameters)`` of the shipped predictor of ``dataset``: what to fit afresh
    on other data (``bench --predictor best``, ``predict --calibrate``).

    >>> best_member("published-llm")                 # doctest: +SKIP
    ('roofline', {})
    """
    entry = best_entry(dataset, folder)
    return entry.get("name", entry["predictor"]), dict(entry.get("params") or {})


def anchor_member(dataset: Union[str, Dataset], folder: Optional[Union[str, os.PathLike]] = None) -> tuple[str, dict]:
    """``(member name, parameters)`` that ``--calibrate`` refits and anchors on the user's runs: the
    leaderboard's pick for anchoring (``best.json``'s ``calibrate``: the lowest 1-shot error leaving
    one source out), and where the dataset has no anchored scores (no published sources to leave
    out), its shipped member (:func:`best_member`).

    >>> anchor_member("published-llm")               # doctest: +SKIP
    ('analytic', {})
    """
    pick = best_entry(dataset, folder).get("calibrate")
    if pick:
        return pick["name"], dict(pick.get("params") or {})
    return best_member(dataset, folder)


def load_best(dataset: Union[str, Dataset], folder: Optional[Union[str, os.PathLike]] = None) -> Predictor:
    """The best predictor of ``dataset`` (its name, or the Dataset), fitted and ready to predict: a
    :class:`~perfzoo.zoo.interval.Interval` (the member with its interval) where its outputs are throughput.

    Reads ``best.json`` in :func:`leaderboard_dir` and loads the saved artifact; warns when the
    Dataset's content hash differs from the one the artifact was fitted on.
    """
    entry = best_entry(dataset, folder)
    name = dataset if isinstance(dataset, str) else dataset.name
    best_file = leaderboard_dir(folder) / "best.json"
    if not entry.get("artifact"):
        raise FileNotFoundError(f"{best_file}: {name!r} has no saved artifact ({entry.get('note', 'not fitted')})")
    if isinstance(dataset, Dataset) and entry.get("content_hash") and str(dataset.content_hash()) != entry["content_hash"]:
        warnings.warn(f"{name}: the dataset changed since its best predictor was fitted (content hash "
                      f"{entry['content_hash'][:12]}...); rerun python -m perfzoo.bench", stacklevel=2)
    return Predictor.load(leaderboard_dir(folder) / entry["artifact"])
