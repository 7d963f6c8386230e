"""The predictor zoo: every family worth comparing behind one estimator interface.

>>> from perfzoo import zoo
>>> zoo.names()[:4]
['constant', 'analytic', 'roofline', 'ridge']
>>> model = zoo.make("lightgbm", n_estimators=50)
>>> model.get_params()["n_estimators"]
50

Every member follows the scikit-learn contract (``fit(X, y)`` returns self, ``predict(X)``,
``get_params`` / ``set_params``, ``clone``: :mod:`perfzoo.zoo.estimator`), takes a DataFrame of
configs (``dataset.X``), and saves / loads with its metadata (:meth:`Predictor.save`, :func:`load`).
Its uncertainty is a wrapper around it, as scikit-learn's meta-estimators wrap an estimator:
:class:`~perfzoo.zoo.interval.Interval` (the 80% interval, the spread of offsets), and around
that, anchoring on a user's runs (:class:`~perfzoo.zoo.anchor.Anchored`,
:class:`~perfzoo.zoo.calibrate.Calibrated`), each with one surface (``predict``,
``predict_interval``, ``relative``). The shipped predictors are Intervals (:func:`load_best`).

The registry is lazy: :data:`REGISTRY` maps each name to its class, whose module is imported when
the class is asked for (``importlib``, from :data:`MEMBERS`' ``module:Class``: a new member is its
class in its own module and one line there), so ``import perfzoo.zoo`` and loading the shipped
``analytic`` import neither scikit-learn, LightGBM, CatBoost nor torch.

Class attributes say what a member is: ``encoding`` (which :mod:`perfzoo.zoo.features`
encoding it consumes), ``floor`` (a baseline), ``output`` (``throughput``, ``score`` for
ranking members, ``probability`` for ``failure``), ``has_std`` (offers ``predict_std``) and
``fit_cost`` (fit time per row relative to ridge's). Evaluation reads these tags, never names.

Members (:func:`names`, in this order)
--------------------------------------
==================  ===================================================================
constant            training median (floor)
analytic            analytic throughput x one fitted efficiency (floor)
roofline            analytic step time, one fitted efficiency per term (floor)
ridge               ridge on standardised log / analytic features
knn                 distance-weighted k nearest neighbours
random_forest       random forest
gbr                 scikit-learn GradientBoostingRegressor (the paper's LLM predictor)
hist_gbr            HistGradientBoostingRegressor, native categoricals
lightgbm            LightGBM regressor, native categoricals
catboost            CatBoost regressor
lightgbm_rank       LightGBM LambdaRank over groups of comparable jobs (scores)
catboost_rank       CatBoost YetiRank over groups of comparable jobs (scores)
mlp_rank_ensemble   the paper's ads predictor: 10 one-hot MLPs, margin ranking loss (scores)
mlp                 MLP regressor on standardised features
gp                  Gaussian process, with ``predict_std``
hybrid              analytic estimate x LightGBM correction on the log-ratio
hybrid_roofline     calibrated roofline x LightGBM correction on the log-ratio
failure             P(job fails) classifier; ``predict`` = P(success)
==================  ===================================================================

Members from outside perfzoo (:mod:`perfzoo.zoo.plugin`): :func:`get` and :func:`make` also take
an import path, ``mypkg.models:MyPredictor`` (a ``Predictor`` subclass, a scikit-learn regressor
such as ``sklearn.ensemble:ExtraTreesRegressor``, or a factory), and the name an installed package
registers in the ``perfzoo.predictors`` entry-point group (:func:`installed`).

>>> make("sklearn.ensemble:ExtraTreesRegressor", n_estimators=50).estimator.n_estimators
50

Modules
-------
=====================  ==============================================================================
``estimator``          the estimator protocol (parameters, ``clone``), scikit-learn's without importing it
``base``               the contract (``Predictor``, ``EncodedPredictor``), saving and loading
``features``           feature encodings: the one place members get their inputs from
``analytic_features``  the analytic estimates as features, computed once per chunk of configs
``targets``            what members regress on, and the way back to throughput
``baselines``          the floors (constant, analytic, roofline)
``classic``            the scikit-learn members (ridge, knn, forest, gbr, hist_gbr, mlp, gp)
``boosting``           LightGBM and CatBoost members, their rankers, the hybrids
``neural``             the paper's MLP ranking ensemble
``failure``            the failure classifier
``plugin``             members from outside perfzoo: import paths, entry points, their problems
``best``               the leaderboard's shipped member per dataset
``conformal``          the interval's recipe: cross-conformal by source, each source weighed alike
``interval``           ``Interval``: any throughput member wrapped with its interval and spread of offsets
``extrapolation``      how far a config lies beyond the training data, the interval widened for it
``offsets``            a predictor's offsets as a Gaussian process: groups, clusters, their spread, the posterior
``anchor``             ``Anchored``: an Interval anchored on a user's runs, carried by layout similarity
``similarity``         how alike two layouts are, and the share of a run's offset that carries across (fitted)
``plausible``          a user's runs checked before they anchor: faster than the GPU, far off their prediction
``calibrate``          ``--calibrate``: the member anchored on your runs and refitted with them joined
=====================  ==============================================================================
"""

from __future__ import annotations

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Union

from perfzoo.console import InputError
from perfzoo.zoo.base import EncodedPredictor, NotFittedError, Predictor
from perfzoo.zoo.best import anchor_member, best_member, load_best
from perfzoo.zoo.estimator import build

# name -> module:Class under perfzoo.zoo, in the order names() lists them
MEMBERS = {
    "constant": "baselines:ConstantPredictor", "analytic": "baselines:AnalyticPredictor",
    "roofline": "baselines:RooflinePredictor", "ridge": "classic:RidgePredictor", "knn": "classic:KNNPredictor",
    "random_forest": "classic:RandomForestPredictor", "gbr": "classic:GBRPredictor",
    "hist_gbr": "classic:HistGBRPredictor", "lightgbm": "boosting:LightGBMPredictor",
    "catboost": "boosting:CatBoostPredictor", "lightgbm_rank": "boosting:LightGBMRankPredictor",
    "catboost_rank": "boosting:CatBoostRankPredictor", "mlp_rank_ensemble": "neural:MLPRankEnsemblePredictor",
    "mlp": "classic:MLPPredictor", "gp": "classic:GPPredictor", "hybrid": "boosting:HybridPredictor",
    "hybrid_roofline": "boosting:HybridRooflinePredictor", "failure": "failure:FailurePredictor",
}


def _attribute(path: str) -> Any:
    """``module:attr`` under perfzoo.zoo, its module imported now (importlib, not an import statement:
    a member's module imports the library it wraps, which only the members asked for should load)."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(f"perfzoo.zoo.{module}"), attr)


class Registry(Mapping):
    """The registered members, name -> class; a class's module is imported when it is asked for.

    >>> "gp" in REGISTRY, REGISTRY["analytic"].__name__, list(REGISTRY)[:3]
    (True, 'AnalyticPredictor', ['constant', 'analytic', 'roofline'])
    """

    def __init__(self, paths: dict[str, str]):
        self._paths = dict(paths)

    def __getitem__(self, name: str) -> type[Predictor]:
        return _attribute(self._paths[name])

    def __contains__(self, name: object) -> bool:
        return name in self._paths

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __repr__(self) -> str:
        return f"Registry({self._paths})"


REGISTRY = Registry(MEMBERS)
# the other names this package offers, each imported when first read (PEP 562: see __getattr__)
_LAZY = {path.partition(":")[2]: path for path in MEMBERS.values()} | {
    "SklearnRegressor": "plugin:SklearnRegressor", "GROUP": "plugin:GROUP", "failure_labels": "failure:failure_labels"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return _attribute(_LAZY[name])
    raise AttributeError(f"module 'perfzoo.zoo' has no attribute {name!r}")


def _plugin():
    """:mod:`perfzoo.zoo.plugin` (it imports scikit-learn: only members from outside perfzoo need it)."""
    return importlib.import_module("perfzoo.zoo.plugin")


def names(*, floors: bool = True, throughput_only: bool = False) -> list[str]:
    """Registered member names, in registry order.

    ``floors=False`` leaves out ``constant`` and ``analytic``; ``throughput_only=True``
    leaves out ``failure`` (the only member that does not rank throughput). Either imports the
    members' modules (their classes hold the tags).
    """
    if floors and not throughput_only:
        return list(REGISTRY)
    return [n for n, cls in REGISTRY.items()
            if (floors or not cls.floor) and not (throughput_only and cls.output == "probability")]


def installed() -> list[str]:
    """The names installed packages register in the ``perfzoo.predictors`` entry-point group."""
    return sorted(_plugin().installed())


def get(name: str) -> Any:
    """What ``name`` means: the class registered under it, else the class or factory an installed
    entry point or an import path ``module:attr`` names (:mod:`perfzoo.zoo.plugin`)."""
    if name in REGISTRY:
        return REGISTRY[name]
    plugin = _plugin()
    found = plugin.resolve(name)
    if found is None:
        extra = f"; installed ({plugin.GROUP}): {', '.join(installed())}" if installed() else ""
        raise InputError(f"no zoo member {name!r}; registered: {', '.join(REGISTRY)}{extra}; or give an import "
                         "path module:Class")
    return found


def make(name: str, **params) -> Predictor:
    """A new, unfitted member: ``make('lightgbm', n_estimators=100)``; a scikit-learn regressor
    named by its import path comes wrapped in :class:`~perfzoo.zoo.plugin.SklearnRegressor`.

    Unknown parameters raise ``ValueError`` naming the ones the member takes.
    """
    if name in REGISTRY:
        return build(REGISTRY[name], params, name)
    return _plugin().make_member(get(name), params, name)


def load(path: Union[str, Path]) -> Predictor:
    """A predictor saved with :meth:`Predictor.save` (any member, or an :class:`~perfzoo.zoo.interval.Interval`)."""
    return Predictor.load(path)


__all__ = [
    "MEMBERS", "REGISTRY", "Registry", "names", "installed", "get", "make", "load", "load_best", "best_member",
    "anchor_member", "Predictor", "EncodedPredictor", "NotFittedError", *_LAZY,
]
