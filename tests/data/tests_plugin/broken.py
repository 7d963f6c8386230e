"""Predictors that break perfzoo's contract, each in its own ways (tests/test_plugins.py)."""

import numpy as np

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
