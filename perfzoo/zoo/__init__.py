"""The predictor zoo: every family worth comparing behind one estimator interface.

>>> from perfzoo import zoo
>>> zoo.names()[:4]
['constant', 'analytic', 'roofline', 'ridge']
>>> model = zoo.make("lightgbm", n_estimators=50)
>>> model.get_params()["n_estimators"]
50

Every member follows the scikit-learn contract (``fit(X, y)`` returns self, ``predict(X)``,
``get_params`` / ``set_params``, ``sklearn.base.clone``), takes a DataFrame of configs
(``dataset.X``), and saves / loads with its metadata (:meth:`Predictor.save`, :func:`load`).
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
``interval``           prediction intervals: cross-conformal by source
``extrapolation``      how far a config lies beyond the training data, the interval widened for it
``anchor``             anchoring on a user's runs: per-group and per-cluster offsets, carried by layout similarity
``similarity``         how alike two layouts are, and the share of a run's offset that carries across (fitted)
``plausible``          a user's runs checked before they anchor: faster than the GPU, far off their prediction
``calibrate``          ``--calibrate``: the member anchored on your runs and refitted with them joined
=====================  ==============================================================================
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Union

from perfzoo.zoo import plugin
from perfzoo.zoo.base import EncodedPredictor, NotFittedError, Predictor
from perfzoo.zoo.baselines import AnalyticPredictor, ConstantPredictor, RooflinePredictor
from perfzoo.zoo.best import anchor_member, best_member, load_best
from perfzoo.zoo.boosting import (CatBoostPredictor, CatBoostRankPredictor, HybridPredictor, HybridRooflinePredictor,
                                  LightGBMPredictor, LightGBMRankPredictor)
from perfzoo.zoo.classic import (GBRPredictor, GPPredictor, HistGBRPredictor, KNNPredictor, MLPPredictor,
                                 RandomForestPredictor, RidgePredictor)
from perfzoo.zoo.failure import FailurePredictor, failure_labels
from perfzoo.zoo.neural import MLPRankEnsemblePredictor
from perfzoo.zoo.plugin import GROUP, SklearnRegressor

REGISTRY: dict[str, type[Predictor]] = {
    cls.name: cls
    for cls in (
        ConstantPredictor, AnalyticPredictor, RooflinePredictor, RidgePredictor, KNNPredictor, RandomForestPredictor, GBRPredictor,
        HistGBRPredictor, LightGBMPredictor, CatBoostPredictor, LightGBMRankPredictor, CatBoostRankPredictor,
        MLPRankEnsemblePredictor, MLPPredictor, GPPredictor, HybridPredictor, HybridRooflinePredictor,
        FailurePredictor,
    )
}


def names(*, floors: bool = True, throughput_only: bool = False) -> list[str]:
    """Registered member names, in registry order.

    ``floors=False`` leaves out ``constant`` and ``analytic``; ``throughput_only=True``
    leaves out ``failure`` (the only member that does not rank throughput).
    """
    return [n for n, cls in REGISTRY.items()
            if (floors or not cls.floor) and not (throughput_only and cls.output == "probability")]


def installed() -> list[str]:
    """The names installed packages register in the ``perfzoo.predictors`` entry-point group."""
    return sorted(plugin.installed())


def get(name: str) -> Any:
    """What ``name`` means: the class registered under it, else the class or factory an installed
    entry point or an import path ``module:attr`` names (:mod:`perfzoo.zoo.plugin`)."""
    if name in REGISTRY:
        return REGISTRY[name]
    found = plugin.resolve(name)
    if found is None:
        extra = f"; installed ({GROUP}): {', '.join(installed())}" if installed() else ""
        raise ValueError(f"no zoo member {name!r}; registered: {', '.join(REGISTRY)}{extra}; or give an import "
                         "path module:Class")
    return found


def make(name: str, **params) -> Predictor:
    """A new, unfitted member: ``make('lightgbm', n_estimators=100)``; a scikit-learn regressor
    named by its import path comes wrapped in :class:`~perfzoo.zoo.plugin.SklearnRegressor`.

    Unknown parameters raise ``ValueError`` naming the ones the member takes.
    """
    return plugin.make_member(get(name), params, name)


def load(path: Union[str, Path]) -> Predictor:
    """A predictor saved with :meth:`Predictor.save` (any member)."""
    return Predictor.load(path)


__all__ = [
    "REGISTRY", "names", "installed", "get", "make", "SklearnRegressor", "load", "load_best", "best_member", "anchor_member", "Predictor", "EncodedPredictor", "NotFittedError",
    "failure_labels", *[cls.__name__ for cls in REGISTRY.values()],
]
