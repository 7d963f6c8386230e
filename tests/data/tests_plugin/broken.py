"""Predictors that break perfzoo's contract, each in its own ways (tests/test_plugins.py)."""

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

from perfzoo.zoo import Predictor
from tests_plugin.model import Mine


class Broken(Predictor):
    """No name, an output perfzoo does not know, no ``_predict``, and a constructor that stores its
    parameter under another name."""

    output = "tokens"

    def __init__(self, depth: int = 3):
        self.max_depth = depth

    def _fit(self, X, y, groups):
        self.mean_ = float(np.mean(y))


class Sloppy(Mine):
    """Keeps the contract on paper, not on data: ``fit`` returns nothing and the predictions carry
    unseeded noise."""

    name = "sloppy"

    def fit(self, X, y, **kwargs):
        super().fit(X, y, **kwargs)

    def _predict(self, X):
        return super()._predict(X) * np.random.default_rng().uniform(0.5, 1.5, len(X))


class MixinLast(BaseEstimator, RegressorMixin):
    """A scikit-learn regressor written with its mixin after ``BaseEstimator``: scikit-learn >= 1.6
    does not tag it as a regressor."""

    def fit(self, X, y):
        self.mean_ = float(np.mean(y))
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)


class Raises(RegressorMixin, BaseEstimator):
    """A regressor whose fit always raises: the bench says the real error."""

    def fit(self, X, y):
        raise RuntimeError("the fit failed for real")

    def predict(self, X):
        return np.zeros(len(X))
