"""The base class every zoo member shares: the estimator protocol, the contract, saving and loading.

Contract (scikit-learn's): the constructor stores its parameters and nothing else, so
``clone`` (:func:`perfzoo.zoo.estimator.clone`, and ``sklearn.base.clone``) works; ``fit(X, y)``
validates them, learns, and returns ``self``; ``predict(X)`` returns one float per row (higher =
faster); ``get_params`` / ``set_params`` come from :class:`perfzoo.zoo.estimator.Estimator`,
scikit-learn's protocol written without importing it, so that loading a member imports no
scikit-learn (a member that wraps scikit-learn, LightGBM, CatBoost or torch imports it in its own
module). ``X`` is a DataFrame of configs
(``dataset.X``: ``config.*`` / ``hardware.*`` columns; ``predict`` also takes
:class:`~perfzoo.records.columns.Columns`, the arrays a search scores); ``y`` the measured throughput
(``dataset.y``). Rows whose ``y`` is NaN (failed jobs) are left out of a throughput fit.

Class attributes every member declares
--------------------------------------
``name``      its registry name;
``encoding``  the :class:`perfzoo.zoo.features.FeatureEncoder` encoding it consumes (or None);
``floor``     True for the baselines (``constant``, ``analytic``) others must beat;
``output``    ``throughput`` (predictions are tokens/s or queries/s), ``score`` (a ranking
              score: only the order means anything) or ``probability`` (``failure``);
``has_std``   whether it offers ``predict_std``;
``fit_cost``  roughly how long a fit takes per training row, relative to ridge's 1 (the
              benchmark starts the costly fits first, so its pool does not end on one).

A member predicts; its uncertainty is a wrapper around it (:class:`perfzoo.zoo.interval.Interval`:
the 80% interval and the spread of offsets anchoring reads), as scikit-learn's meta-estimators wrap
an estimator.

Threads
-------
Members that take ``n_jobs`` use that many threads (default 1: the machines this runs on
are small and shared); fitting and predicting run under a BLAS / OpenMP limit of
``n_jobs`` (1 for the rest). Pass ``n_jobs=2`` or more to score large frames faster.

Saving
------
``save(path)`` writes a folder: ``model.joblib`` (the fitted predictor; torch weights are
kept as numpy arrays) and ``metadata.json`` (name, class, parameters, encoding, input
columns and encoded features, training dataset name and size, fit time, the saved layout's
:data:`FORMAT`, perfzoo and library versions, save time). ``Predictor.load(path)`` /
:func:`perfzoo.zoo.load` read it back, warning when the perfzoo version differs; a folder of an
older layout is a one-line error saying how to fit it again (:func:`outdated`).
"""

from __future__ import annotations

import contextlib
import json
import platform
import threading
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar, Optional, Union

import joblib
import numpy as np
import pandas as pd

import perfzoo
from harness.environment import library_versions
from perfzoo.console import DataError, InputError
from perfzoo.zoo.estimator import Estimator
from perfzoo.zoo.features import FeatureEncoder, as_columns, check_frame
from perfzoo.zoo.targets import TARGETS, TargetTransform

MODEL_FILE = "model.joblib"
METADATA_FILE = "metadata.json"
# the saved layout (metadata.json's "format"): 2 since a member's interval became a wrapper around it
# (perfzoo.zoo.interval.Interval); a folder of layout 1 pickles members with their interval inside
FORMAT = 2


class NotFittedError(RuntimeError, AttributeError):
    """``predict`` was called before ``fit``."""


def json_safe(value: Any) -> Any:
    """``value`` as JSON can hold it (numpy numbers as Python's, anything else as its repr).

    >>> json_safe({"n": np.int64(3), "pair": (1.5, None), "model": NotFittedError})
    {'n': 3, 'pair': [1.5, None], 'model': "<class 'perfzoo.zoo.base.NotFittedError'>"}
    """
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    return repr(value)


def _versions() -> dict[str, Optional[str]]:
    return {"perfzoo": perfzoo.__version__, "python": platform.python_version(), **library_versions()}


_POOLS: list = [None, -1]  # the ThreadpoolController, and len(sys.modules) when it was made
_LIMITS = {"depth": 0, "limiter": None}  # the limit in force, and how many predictions hold it
_LIMITS_LOCK = threading.Lock()


def _thread_pools():
    """A :class:`threadpoolctl.ThreadpoolController`, made again only after new imports (which
    may load another BLAS or OpenMP). A fresh scan of the loaded libraries costs about 3 ms, and
    the searcher predicts hundreds of times per round."""
    import sys

    from threadpoolctl import ThreadpoolController

    if _POOLS[0] is None or _POOLS[1] != len(sys.modules):
        _POOLS[:] = [ThreadpoolController(), len(sys.modules)]
    return _POOLS[0]


@contextlib.contextmanager
def _limited(n: int):
    """The thread-pool limit ``n`` while the block runs. Held once however many threads predict
    at the same time (a search scoring chunks in parallel): the first to enter sets it, the last
    to leave restores the pools as they were."""
    with _LIMITS_LOCK:
        if _LIMITS["depth"] == 0:
            _LIMITS["limiter"] = _thread_pools().limit(limits=n)
        _LIMITS["depth"] += 1
    try:
        yield
    finally:
        with _LIMITS_LOCK:
            _LIMITS["depth"] -= 1
            if _LIMITS["depth"] == 0:
                _LIMITS["limiter"].restore_original_limits()
                _LIMITS["limiter"] = None


def input_columns(model: Any) -> Optional[list[str]]:
    """The columns a fitted zoo predictor was trained on (its ``input_columns_``; None for a
    model without them, e.g. a :class:`~perfzoo.search.Formula`).

    >>> input_columns(object()) is None
    True
    """
    cols = getattr(model, "input_columns_", None)
    return None if cols is None else [str(c) for c in cols]


def outdated(path: Union[str, Path]) -> Optional[str]:
    """Why the predictor saved in folder ``path`` cannot be loaded by this perfzoo (one line saying
    how to fit it again), None where it can: a folder whose ``metadata.json`` says an older
    :data:`FORMAT` (layout 1 pickled a member with its interval inside).

    >>> outdated("no/such/folder") is None
    True
    """
    meta = Path(path) / METADATA_FILE
    if not meta.exists():
        return None
    saved = json.loads(meta.read_text()).get("format", 1)
    if saved >= FORMAT:
        return None
    return (f"{path} was saved by an older perfzoo (layout {saved}: the interval inside the member; now "
            "perfzoo.zoo.interval.Interval wraps it, CHANGELOG.md): fit it again and save it (python -m "
            "perfzoo.bench --refit-shipped refits the leaderboard's; perfzoo.zoo.calibrate.fit_with_interval "
            "a member of yours)")


class Predictor(Estimator):
    """Base class of the zoo members (see the module docstring)."""

    name: ClassVar[str] = "predictor"
    encoding: ClassVar[Optional[str]] = None
    floor: ClassVar[bool] = False
    output: ClassVar[str] = "throughput"
    has_std: ClassVar[bool] = False
    fit_cost: ClassVar[float] = 1.0

    # -- the contract ---------------------------------------------------------------------
    def fit(self, X: pd.DataFrame, y: Any, *, dataset: Optional[str] = None, groups: Any = None) -> "Predictor":
        """Learn from configs ``X`` and measured throughput ``y``; returns ``self``.

        ``dataset`` names the training data for the saved metadata (default:
        ``X.attrs['dataset']`` if set). ``groups`` (ranking members) labels comparable jobs.
        """
        X = check_frame(X)
        target = getattr(y, "name", None)  # a Series says what it measures (per device or for the job)
        y = self._check_y(y, len(X))
        self._validate_params()
        start = time.perf_counter()
        keep = self._rows_to_fit(y)
        if keep is not None and not keep.all():
            X, y = X.loc[keep], y[keep]
            groups = None if groups is None else np.asarray(groups)[keep]
        if len(X) == 0:
            raise DataError(f"{self.name}: no rows to fit on (every target is NaN: only failed jobs?)")
        with self._threads():
            self._fit(X, y, groups)
        self.fit_time_s_ = time.perf_counter() - start
        self.n_train_ = int(len(X))
        self.input_columns_ = [str(c) for c in X.columns]
        self.dataset_ = dataset if dataset is not None else X.attrs.get("dataset")
        self.target_name_ = target
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """One float per row of ``X`` (see ``output``): higher means faster. ``X``: a DataFrame of
        configs or :class:`~perfzoo.records.columns.Columns` (what a search scores: arrays, no frame)."""
        self._check_fitted()
        X = as_columns(X)  # features, target and analytic estimates read the same columns, once
        with self._threads():
            out = np.asarray(self._predict(X), dtype=float).reshape(-1)
        if len(out) != len(X):  # pragma: no cover - a member bug
            raise RuntimeError(f"{self.name} returned {len(out)} predictions for {len(X)} rows")
        return out

    def _threads(self):
        """Limit BLAS / OpenMP pools to ``n_jobs`` threads (1 for members without it).

        Thread pools that spin while waiting collapse when the cores are shared: small
        fits run 10x slower with 2 threads on a busy 2-core machine than with 1.
        """
        return _limited(int(getattr(self, "n_jobs", 1) or 1))

    # -- for subclasses -------------------------------------------------------------------
    def _validate_params(self) -> None:
        """Raise ValueError on a bad parameter (called at the start of ``fit``)."""

    def _rows_to_fit(self, y: np.ndarray) -> Optional[np.ndarray]:
        return np.isfinite(y)

    def _check_y(self, y: Any, n: int) -> np.ndarray:
        y = np.asarray(y, dtype=float).reshape(-1)
        if len(y) != n:
            raise ValueError(f"{self.name}: X has {n} rows but y has {len(y)} values")
        return y

    def _fit(self, X: pd.DataFrame, y: np.ndarray, groups: Any) -> None:
        raise NotImplementedError

    def _predict(self, X: pd.DataFrame) -> np.ndarray:
        raise NotImplementedError

    def _check_fitted(self) -> None:
        if not hasattr(self, "fit_time_s_"):
            raise NotFittedError(f"this {self.name} predictor is not fitted yet: call fit(X, y) first")

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "fit_time_s_")

    # -- metadata, save, load -------------------------------------------------------------
    def metadata(self) -> dict[str, Any]:
        """What ``save`` writes to ``metadata.json``."""
        self._check_fitted()
        enc = getattr(self, "encoder_", None)
        return {
            "name": self.name,
            "class": f"{type(self).__module__}.{type(self).__qualname__}",
            "params": json_safe(self.get_params(deep=False)),
            "output": self.output,
            "encoding": self.encoding,
            "input_columns": self.input_columns_,
            "features": list(enc.feature_names_) if enc is not None else [],
            "dataset": self.dataset_,
            "n_train": self.n_train_,
            "target_name": json_safe(self.target_name_),
            "fit_time_s": round(float(self.fit_time_s_), 6),
            "format": FORMAT,
            "perfzoo_version": perfzoo.__version__,
            "versions": _versions(),
            "saved_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }

    def save(self, path: Union[str, Path]) -> Path:
        """Write the fitted predictor to folder ``path`` (created): ``model.joblib`` + ``metadata.json``."""
        meta = self.metadata()
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        joblib.dump(self, path / MODEL_FILE)
        (path / METADATA_FILE).write_text(json.dumps(meta, indent=2) + "\n")
        return path

    @classmethod
    def load(cls, path: Union[str, Path]) -> "Predictor":
        """Read a predictor written by :meth:`save` (any member, or a wrapper such as
        :class:`~perfzoo.zoo.interval.Interval`, when called on the base class)."""
        path = Path(path)
        if not (path / MODEL_FILE).exists():
            raise FileNotFoundError(
                f"{path} holds no saved predictor (expected {MODEL_FILE} and {METADATA_FILE} "
                "written by Predictor.save)"
            )
        why = outdated(path)
        if why is not None:
            raise InputError(why)
        meta = json.loads((path / METADATA_FILE).read_text()) if (path / METADATA_FILE).exists() else {}
        saved = meta.get("perfzoo_version")
        if saved and saved != perfzoo.__version__:
            warnings.warn(f"{path} was saved by perfzoo {saved}; this is {perfzoo.__version__}", stacklevel=2)
        try:
            model = joblib.load(path / MODEL_FILE)
        except ModuleNotFoundError as exc:
            if not str(exc.name).startswith("perfzoo."):
                raise
            raise InputError(f"{path} was saved by an older perfzoo: its module {exc.name} has moved (CHANGELOG.md); "
                             "fit the predictor again and save it (perfzoo bench writes the leaderboard's)") from None
        if not isinstance(model, cls):
            raise TypeError(f"{path} holds a {type(model).__name__}, not a {cls.__name__}")
        return model


class EncodedPredictor(Predictor):
    """A member that fits one model on encoded features and a transformed target.

    Subclasses set ``encoding`` and implement ``_make_model()`` and, if the model needs
    more than ``model.fit(Z, z)``, ``_fit_model`` / ``_predict_model``. A constant
    (transformed) target is not handed to the model: the member then predicts that value.
    """

    def _encoder(self) -> FeatureEncoder:
        return FeatureEncoder(self.encoding)

    def _target(self) -> TargetTransform:
        return TargetTransform(getattr(self, "target", "log"), per_device=getattr(self, "per_device", None))

    def _validate_params(self) -> None:
        target = getattr(self, "target", "log")
        if target not in TARGETS:
            raise InputError(f"{self.name}: target={target!r} is not one of {TARGETS}")
        n_jobs = getattr(self, "n_jobs", 1)
        if n_jobs is not None and (not isinstance(n_jobs, (int, np.integer)) or n_jobs < 1):
            raise InputError(f"{self.name}: n_jobs must be a positive integer, got {n_jobs!r}")

    def _fit(self, X: pd.DataFrame, y: np.ndarray, groups: Any) -> None:
        self.encoder_ = self._encoder().fit(X)
        self.target_ = self._target().fit(y, X)
        z = self.target_.transform(y, X)
        Z = self.encoder_.transform(X)
        self.constant_ = float(z[0]) if np.ptp(z) == 0 else None
        if self.constant_ is None:
            self.model_ = self._make_model()
            self._fit_model(Z, z, X, groups)

    def _predict(self, X: pd.DataFrame) -> np.ndarray:
        if self.constant_ is not None:
            z = np.full(len(X), self.constant_)
        else:
            z = np.asarray(self._predict_model(self._features(X)), dtype=float).reshape(-1)
        return self._output(z, X)

    def _output(self, z: np.ndarray, X: pd.DataFrame) -> np.ndarray:
        return self.target_.inverse(z, X) if self.output == "throughput" else z

    # hooks
    def _make_model(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _features(self, X):
        """What the fitted model predicts from: the encoder's :meth:`~perfzoo.zoo.features.FeatureEncoder.transform`."""
        return self.encoder_.transform(X)

    def _fit_model(self, Z, z: np.ndarray, X: pd.DataFrame, groups: Any) -> None:
        self.model_.fit(Z, z)

    def _predict_model(self, Z) -> np.ndarray:
        return self.model_.predict(Z)
