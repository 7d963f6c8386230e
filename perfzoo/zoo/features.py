"""Feature encoding: the one place predictors get their inputs from.

A predictor declares an *encoding* (its ``encoding`` class attribute) and a *target*
(its ``target`` parameter); :class:`FeatureEncoder` and :class:`perfzoo.zoo.targets.TargetTransform`
do the rest. Both are fitted on the training frame and remember what they saw (columns, kinds,
categories, medians, bin edges), so predicting on a new frame, one row, or a frame that
lacks an optional column gives the same encoding as in training.

Encodings (:data:`ENCODINGS`)
-----------------------------
``native``   numeric columns as is, plus ``log2`` of size-like ones (``log.<column>``), plus
             the analytic estimates (``analytic.*``); categoricals as pandas ``category``
             with the fitted categories (unseen -> missing). A DataFrame, for LightGBM,
             CatBoost and HistGradientBoosting, which split on categories natively.
``numeric``  the same numbers (missing -> the training median) with categoricals one-hot
             (unseen -> all zeros): a float matrix, for scikit-learn GBR / random forest.
``scaled``   ``numeric``, standardised (training mean and standard deviation): for ridge,
             k-NN, MLP, Gaussian process.
``onehot``   every config column one-hot, numbers included (a value is a category; columns
             with more than ``max_onehot`` distinct values are cut at training quantiles);
             no analytic columns: the CubicML paper's ads-predictor input.

Every encoding reads its input as :class:`~perfzoo.records.columns.Columns` (a DataFrame is wrapped,
not copied; a search hands the codec's arrays over directly, constants held once): one
function from configs to features for fitting, benchmarking, searching and planning. Beside
``transform``, :meth:`FeatureEncoder.matrix` gives every encoding as one float matrix (what
LightGBM reads) and :meth:`FeatureEncoder.linear` a linear model's output without the matrix;
:mod:`perfzoo.zoo.analytic_features` computes a chunk's analytic estimates once for features, targets and models.

Which columns: the ``config.*`` and ``hardware.*`` columns of the frame (all columns when it
has none of those); columns with no value in training are dropped. A column is numeric when
all its values are numbers (booleans are categorical, as in the paper).

Missing columns at predict time: an *optional* column (every ``hardware.*`` column, the
optional keys of the registered workloads' vocabularies, :func:`optional_keys`, and any column that had
missing values in training) is treated as unknown; a missing required column raises
``ValueError`` naming it.

Example
-------
>>> import pandas as pd
>>> X = pd.DataFrame({"config.n_layers": [2, 4, 8], "config.precision": ["bf16", "fp32", "bf16"]})
>>> enc = FeatureEncoder("native").fit(X)
>>> enc.transform(X.iloc[[1]])["config.precision"].tolist()
['fp32']
>>> enc.transform(pd.DataFrame({"config.n_layers": [4], "config.precision": ["fp8"]}))["config.precision"].isna().tolist()
[True]
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np
import pandas as pd

from perfzoo.console import InputError
from perfzoo import workloads
from perfzoo.records.columns import Columns, repeat_to
from perfzoo.zoo.analytic_features import ANALYTIC_FEATURES, analytic_features

ENCODINGS = ("native", "numeric", "scaled", "onehot")

# size-like hardware keys, whatever the workload: also given as log2 (trees do not care, linear
# models and distances do)
HARDWARE_SIZE_KEYS = frozenset({"accelerator_count", "accelerator_memory_gib", "nodes", "cpu_cores", "ram_gib"})


def size_keys() -> frozenset[str]:
    """Size-like keys, given as ``log2`` too: every registered workload's ``size_keys``
    (:mod:`perfzoo.workloads`) and :data:`HARDWARE_SIZE_KEYS`."""
    return HARDWARE_SIZE_KEYS.union(*(spec.size_keys for spec in workloads.specs()))


def optional_keys() -> frozenset[str]:
    """Config keys a config may leave out: every registered workload's ``optional_keys``
    (``docs/architecture.md``); every ``hardware.*`` column is optional too."""
    return frozenset().union(*(spec.optional_keys for spec in workloads.specs()))


def base_key(column: str) -> str:
    """``'config.hidden_dim'`` -> ``'hidden_dim'``."""
    return column.split(".", 1)[1] if column.startswith(("config.", "hardware.")) else column


def is_optional(column: str) -> bool:
    """Whether a predictor may be asked to predict on a frame without this column."""
    return column.startswith("hardware.") or base_key(column) in optional_keys()


# ----------------------------------------------------------------------------------------
# value helpers
# ----------------------------------------------------------------------------------------


def _is_missing(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v))


def _cat_str(v: Any) -> Optional[str]:
    """A category's canonical text (``True`` -> ``'True'``, ``2.0`` -> ``'2'``); None if missing."""
    if _is_missing(v):
        return None
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _column_kind(col: pd.Series) -> str:
    """``numeric`` or ``categorical`` (booleans and text are categorical)."""
    if pd.api.types.is_bool_dtype(col):
        return "categorical"
    if pd.api.types.is_numeric_dtype(col):
        return "numeric"
    values = col.dropna().unique()
    if len(values) and all(_is_number(v) for v in values):
        return "numeric"
    return "categorical"


def _to_float(values: Any) -> np.ndarray:
    """A column's values (as :meth:`Columns.values` holds them; None: absent) as floats, text
    that is no number as NaN; the length it had (1 for a constant)."""
    if values is None:
        return np.full(1, np.nan)
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf":
        return values.astype(float)
    col = values if isinstance(values, pd.Series) else pd.Series(values, copy=False)
    if pd.api.types.is_bool_dtype(col):
        return col.to_numpy(dtype=float)
    return pd.to_numeric(col, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _codes(values: Any, categories: Sequence[str]) -> np.ndarray:
    """Index of each value in the fitted ``categories`` (-1: missing, unseen or absent)."""
    codes, table = _category_table(values, categories)
    return table[codes]


def _category_table(values: Any, categories: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, table)``: ``table[codes]`` is each value's index in the fitted ``categories``
    (-1: missing, unseen or absent; ``codes`` -1 picks the table's last entry, -1). A
    Categorical brings its codes: only its few categories are looked up, not its rows."""
    if values is None:
        return np.full(1, -1, dtype=np.int64), np.array([-1], dtype=np.int64)
    lookup = {c: i for i, c in enumerate(categories)}
    if isinstance(values, pd.Categorical):
        codes, uniques = values.codes, values.categories
    else:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
    return codes, np.array([lookup.get(_cat_str(u), -1) for u in uniques] + [-1], dtype=np.int64)


def _log2(v: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(v > 0, np.log2(np.where(v > 0, v, 1.0)), np.nan)


# ----------------------------------------------------------------------------------------
# the encoder
# ----------------------------------------------------------------------------------------


class FeatureEncoder:
    """Turns a frame of configs into what one family of predictors consumes.

    Parameters
    ----------
    encoding : one of :data:`ENCODINGS`
    analytic : bool
        Add the analytic estimates (:func:`analytic_features`); ignored by ``onehot``.
    log_sizes : bool
        Add ``log2`` of size-like numeric columns (names in :func:`size_keys`, or positive
        columns spanning a factor of 16 or more).
    max_onehot : int
        ``onehot`` only: numeric columns with more distinct values are cut into this many
        quantile bins.
    exclude_analytic : analytic features (:data:`~perfzoo.zoo.analytic_features.ANALYTIC_FEATURES`)
        to leave out; ``hybrid`` leaves out the memory estimates
        (:data:`~perfzoo.zoo.analytic_features.MEMORY_FEATURES`).

    Attributes (after ``fit``)
    --------------------------
    input_columns_ : the frame columns used; ``kinds_``: column -> numeric / categorical;
    categories_ : column -> fitted categories; ``feature_names_``: the output columns;
    optional_ : the input columns that may be missing at predict time.
    """

    def __init__(self, encoding: str = "native", analytic: bool = True, log_sizes: bool = True, max_onehot: int = 32,
                 exclude_analytic: Sequence[str] = ()):
        if encoding not in ENCODINGS:
            raise InputError(f"unknown encoding {encoding!r}; choose one of {ENCODINGS}")
        unknown = sorted(set(exclude_analytic) - set(ANALYTIC_FEATURES))
        if unknown:
            raise InputError(f"exclude_analytic: {unknown} are not analytic features; choose from {ANALYTIC_FEATURES}")
        self.encoding = encoding
        self.analytic = analytic
        self.log_sizes = log_sizes
        self.max_onehot = max_onehot
        self.exclude_analytic = tuple(exclude_analytic)

    # -- fitting --------------------------------------------------------------------------
    def fit(self, X: pd.DataFrame) -> "FeatureEncoder":
        X = check_frame(X)
        cols = [c for c in X.columns if str(c).startswith(("config.", "hardware."))] or list(X.columns)
        cols = [c for c in cols if X[c].notna().any()]
        self.input_columns_ = cols
        self.kinds_ = {c: _column_kind(X[c]) for c in cols}
        self.optional_ = {c for c in cols if is_optional(c) or X[c].isna().any()}
        data = Columns.of(X)
        self.categories_: dict[str, list[str]] = {}
        self.bins_: dict[str, np.ndarray] = {}
        self.log_columns_: list[str] = []
        onehot = self.encoding == "onehot"
        sizes = size_keys()
        for c in cols:
            if self.kinds_[c] == "categorical" or onehot:
                if self.kinds_[c] == "numeric":
                    v = _to_float(data.values(c))
                    distinct = np.unique(v[~np.isnan(v)])
                    if len(distinct) > self.max_onehot:
                        qs = np.quantile(v[~np.isnan(v)], np.linspace(0, 1, self.max_onehot + 1)[1:-1])
                        self.bins_[c] = np.unique(qs)
                        self.categories_[c] = [str(i) for i in range(len(self.bins_[c]) + 1)]
                        continue
                    self.categories_[c] = [_cat_str(x) for x in distinct]
                else:
                    uniques = pd.unique(X[c].dropna())
                    self.categories_[c] = sorted({_cat_str(u) for u in uniques})
            elif self.log_sizes:
                v = _to_float(data.values(c))
                pos = v[~np.isnan(v)]
                if len(pos) and pos.min() > 0 and (base_key(c) in sizes or pos.max() / pos.min() >= 16):
                    self.log_columns_.append(c)
        self.use_analytic_ = bool(self.analytic) and not onehot
        an = analytic_features(data) if self.use_analytic_ else {}
        self.analytic_columns_: list[str] = [c for c, v in an.items()
                                             if np.isfinite(v).any() and c not in self.exclude_analytic]
        num = self._numeric_block(data)
        if self.encoding in ("numeric", "scaled"):
            self.medians_ = {k: (float(np.nanmedian(v)) if np.isfinite(v).any() else 0.0) for k, v in num.items()}
        if self.encoding == "scaled":
            mat = self._dense(data, num, scale=False)
            self.mean_ = mat.mean(axis=0)
            std = mat.std(axis=0)
            # a column constant in training says nothing; held at that value wherever it is
            # predicted (z = 0), it cannot move a prediction: a card or width never seen is not
            # 60 standard deviations of nothing (a GP's kernel would vanish there)
            self.scale_ = np.where(std > 1e-12, std, np.inf)
        self.feature_names_ = self._names()
        return self

    def _names(self) -> list[str]:
        if self.encoding == "onehot":
            return [f"{c}={v}" for c in self.input_columns_ for v in self.categories_[c]]
        numeric = [c for c in self.input_columns_ if self.kinds_[c] == "numeric"]
        numeric += [f"log.{c}" for c in self.log_columns_] + list(self.analytic_columns_)
        cats = [c for c in self.input_columns_ if self.kinds_[c] == "categorical"]
        if self.encoding == "native":
            return numeric + cats
        return numeric + [f"{c}={v}" for c in cats for v in self.categories_[c]]

    # -- transforming ---------------------------------------------------------------------
    def _columns(self, X) -> Columns:
        """``X`` (a frame, a config, or :class:`~perfzoo.records.columns.Columns`) as Columns, checked
        for the columns the encoder needs."""
        if not hasattr(self, "feature_names_"):
            raise RuntimeError("FeatureEncoder is not fitted yet: call fit(X) first")
        data = as_columns(X)
        missing = [c for c in self.input_columns_ if c not in data]
        required = [c for c in missing if c not in self.optional_]
        if required:
            raise InputError(
                f"the frame lacks column(s) {required} that the predictor was fitted on and that "
                "are not optional; add them (e.g. pass dataset.X) or refit without them"
            )
        return data

    def _numeric_block(self, data: Columns) -> dict[str, np.ndarray]:
        """Numeric, log-size and analytic columns, each of length ``len(data)`` or 1 (a constant)."""
        out: dict[str, np.ndarray] = {}
        for c in self.input_columns_:
            if self.kinds_[c] == "numeric":
                out[c] = _to_float(data.get(c))
        for c in self.log_columns_:
            out[f"log.{c}"] = _log2(out[c])
        if self.use_analytic_ and self.analytic_columns_:
            out.update(analytic_features(data, self.analytic_columns_))
        return out

    def _dense(self, data: Columns, num: dict[str, np.ndarray], scale: bool = True) -> np.ndarray:
        """numeric (median-filled) + one-hot categoricals, as a float matrix (float32 for
        ``numeric``: what scikit-learn trees use anyway), standardised for ``scaled`` (unless
        ``scale=False``: while fitting the scale)."""
        n = len(data)
        cats = self.categorical_features_
        width = len(num) + sum(len(self.categories_[c]) for c in cats)
        mat = np.empty((n, width), dtype=np.float32 if self.encoding == "numeric" else np.float64, order="F")
        scale = scale and self.encoding == "scaled"
        j = 0
        for k, v in num.items():
            v = np.where(np.isfinite(v), v, self.medians_.get(k, 0.0))
            mat[:, j] = (v - self.mean_[j]) / self.scale_[j] if scale else v
            j += 1
        for c in cats:
            codes = _codes(data.get(c), self.categories_[c])
            for k in range(len(self.categories_[c])):
                on, off = ((1.0 - self.mean_[j]) / self.scale_[j], (0.0 - self.mean_[j]) / self.scale_[j]) if scale \
                    else (1.0, 0.0)
                mat[:, j] = np.where(codes == k, on, off)
                j += 1
        return mat

    def _onehot(self, data: Columns) -> np.ndarray:
        mat = np.zeros((len(data), len(self.feature_names_)), dtype=np.float32)
        start = 0
        for c in self.input_columns_:
            cats = self.categories_[c]
            if c in self.bins_:
                v = _to_float(data.get(c))
                codes = np.where(np.isnan(v), -1, np.searchsorted(self.bins_[c], v, side="right"))
            elif self.kinds_[c] == "numeric":
                codes = _codes(_to_float(data.get(c)), cats)
            else:
                codes = _codes(data.get(c), cats)
            for k in range(len(cats)):
                mat[:, start + k] = codes == k
            start += len(cats)
        return mat

    def transform(self, X):
        """The encoded features of ``X`` (a DataFrame of configs, or
        :class:`~perfzoo.records.columns.Columns`): a DataFrame for ``native``, a float matrix otherwise."""
        data = self._columns(X)
        if self.encoding == "onehot":
            return self._onehot(data)
        num = self._numeric_block(data)
        if self.encoding == "native":
            n = len(data)
            out = {k: repeat_to(v, n) for k, v in num.items()}
            for c in self.categorical_features_:
                codes = repeat_to(_codes(data.get(c), self.categories_[c]), n)
                out[c] = pd.Categorical.from_codes(codes, categories=self.categories_[c])
            return pd.DataFrame({k: out[k] for k in self.feature_names_}, index=data.index, copy=False)
        return self._dense(data, num)

    def matrix(self, X) -> np.ndarray:
        """The encoded features as one float64 matrix, each column contiguous (Fortran order: a
        feature is written in one pass, and LightGBM reads either order without a copy), for
        every encoding: ``native`` categoricals as their index in the fitted categories (NaN:
        missing or unseen), which is what LightGBM reads from a frame of pandas categoricals; the
        others as :meth:`transform`.

        >>> X = pd.DataFrame({"config.n_layers": [2, 4], "config.precision": ["bf16", "fp8"]})
        >>> FeatureEncoder("native", analytic=False).fit(X).matrix(X).tolist()
        [[2.0, 1.0, 0.0], [4.0, 2.0, 1.0]]
        """
        data = self._columns(X)
        if self.encoding != "native":
            return np.asfortranarray(self.transform(data), dtype=np.float64)
        num = self._numeric_block(data)
        mat = np.empty((len(data), len(self.feature_names_)), dtype=np.float64, order="F")
        for j, name in enumerate(self.feature_names_):
            if name in num:
                mat[:, j] = num[name]
            else:
                codes = _codes(data.get(name), self.categories_[name])
                mat[:, j] = np.where(codes >= 0, codes, np.nan)
        return mat

    def linear(self, X, coef: Any, intercept: float = 0.0) -> np.ndarray:
        """``transform(X) @ coef + intercept`` for the ``numeric`` and ``scaled`` encodings (equal up
        to rounding; in float64, where ``numeric``'s matrix is float32), summed feature by feature
        without the matrix: the standardisation folded into
        the weights, a constant feature added once, a one-hot group as one lookup of its weights by
        category. How a linear model scores millions of configs.

        >>> X = pd.DataFrame({"config.n_layers": [2, 4, 8], "config.precision": ["bf16", "fp8", "bf16"]})
        >>> enc = FeatureEncoder("scaled", analytic=False, log_sizes=False).fit(X)
        >>> w = np.array([1.0, 2.0, -1.0])
        >>> bool(np.allclose(enc.linear(X, w, 0.5), enc.transform(X) @ w + 0.5))
        True
        """
        if self.encoding not in ("numeric", "scaled"):
            raise ValueError(f"linear: the {self.encoding!r} encoding has no linear form; use transform(X)")
        data = self._columns(X)
        num = self._numeric_block(data)
        w = np.asarray(coef, dtype=float).reshape(-1)
        const = float(intercept)
        if self.encoding == "scaled":
            w = w / self.scale_
            const -= float(np.dot(w, self.mean_))
        acc = np.zeros(len(data))
        varying = []
        j = 0
        for k, v in num.items():
            median = self.medians_.get(k, 0.0)
            if len(v) == 1:
                const += w[j] * (float(v[0]) if np.isfinite(v[0]) else median)
            else:
                acc += w[j] * v  # a missing value (NaN, inf) leaves the row's sum non-finite: redone below
                varying.append((w[j], v, median))
            j += 1
        redo = ~np.isfinite(acc)
        if redo.any():  # those rows again, in the same order, each missing value as its training median
            acc[redo] = 0.0
            for wj, v, median in varying:
                part = v[redo]
                acc[redo] += wj * np.where(np.isfinite(part), part, median)
        for c in self.categorical_features_:
            width = len(self.categories_[c])
            codes, table = _category_table(data.get(c), self.categories_[c])
            weights = np.append(w[j:j + width], 0.0)[table]  # per value; -1 (missing, unseen): no weight
            if len(codes) == 1:
                const += float(weights[codes[0]])
            else:
                acc += weights[codes]
            j += width
        return acc + const

    def fit_transform(self, X: pd.DataFrame):
        return self.fit(X).transform(X)

    @property
    def categorical_features_(self) -> list[str]:
        """Names of the categorical input columns (the ``native`` encoding's categorical outputs)."""
        return [c for c in self.input_columns_ if self.kinds_[c] == "categorical"]


def check_frame(X: Any) -> Union[pd.DataFrame, Columns]:
    """``X`` as a DataFrame of configs: a DataFrame (or :class:`~perfzoo.records.columns.Columns`) as
    is, one config (a dict or a Series) as one row, a list of dicts as rows; anything else
    raises ``TypeError`` saying what to pass."""
    if isinstance(X, (pd.DataFrame, Columns)):
        return X
    if isinstance(X, pd.Series):
        return X.to_frame().T
    if isinstance(X, dict):
        return pd.DataFrame([X])
    if isinstance(X, list) and X and isinstance(X[0], dict):
        return pd.DataFrame(X)
    raise TypeError(
        f"predictors take a DataFrame of configs (e.g. dataset.X), got {type(X).__name__}; "
        "wrap one config as pd.DataFrame([config])"
    )


def as_columns(X: Any) -> Columns:
    """``X`` (anything :func:`check_frame` takes) as :class:`~perfzoo.records.columns.Columns`: what
    features, targets and models read, so each chunk's analytic estimates are computed once."""
    X = check_frame(X)
    return X if isinstance(X, Columns) else Columns.of(X)
