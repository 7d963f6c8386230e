"""scikit-learn regressors: ``ridge``, ``knn``, ``random_forest``, ``gbr``, ``hist_gbr``,
``mlp`` and ``gp``.

Each regresses the transformed target (``target``, default ``log``: log throughput) on its
encoding (see :mod:`perfzoo.zoo.features`) and maps predictions back to throughput.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import Optional

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingRegressor, RandomForestRegressor
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.linear_model import Ridge
from sklearn.neighbors import KNeighborsRegressor
from sklearn.neural_network import MLPRegressor

from perfzoo.zoo.base import EncodedPredictor
from perfzoo.zoo.features import as_columns


class RidgePredictor(EncodedPredictor):
    """Ridge regression of log throughput on standardised numeric, log-size and analytic
    features (a power law in the config: a linear model in logs).

    >>> from perfzoo.zoo import make
    >>> make("ridge", alpha=3.0).alpha
    3.0
    """

    name = "ridge"
    encoding = "scaled"

    def __init__(self, alpha: float = 1.0, target: str = "log"):
        self.alpha = alpha
        self.target = target

    def _make_model(self):
        return Ridge(alpha=self.alpha)

    def _features(self, X):
        return X  # no matrix: the model sums the encoder's features itself (FeatureEncoder.linear)

    def _predict_model(self, X) -> np.ndarray:
        return self.encoder_.linear(X, self.model_.coef_, self.model_.intercept_)


class KNNPredictor(EncodedPredictor):
    """k nearest neighbours (distance-weighted) in the standardised feature space."""

    name = "knn"
    encoding = "scaled"

    def __init__(self, n_neighbors: int = 5, weights: str = "distance", target: str = "log", n_jobs: int = 1):
        self.n_neighbors = n_neighbors
        self.weights = weights
        self.target = target
        self.n_jobs = n_jobs

    def _make_model(self):
        return KNeighborsRegressor(n_neighbors=self.n_neighbors, weights=self.weights, n_jobs=self.n_jobs)

    def _fit_model(self, Z, z, X, groups) -> None:
        self.model_.set_params(n_neighbors=min(self.n_neighbors, len(z)))
        self.model_.fit(Z, z)


class RandomForestPredictor(EncodedPredictor):
    """Random forest on numeric + log + analytic features, categoricals one-hot."""

    name = "random_forest"
    encoding = "numeric"
    fit_cost = 2.0

    def __init__(self, n_estimators: int = 100, max_depth: Optional[int] = 12, min_samples_leaf: int = 1,
                 max_features: float = 0.5, target: str = "log", n_jobs: int = 1, random_state: int = 0):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.max_features = max_features
        self.target = target
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _make_model(self):
        return RandomForestRegressor(
            n_estimators=self.n_estimators, max_depth=self.max_depth, min_samples_leaf=self.min_samples_leaf,
            max_features=self.max_features, n_jobs=self.n_jobs, random_state=self.random_state)

    def _predict_model(self, Z) -> np.ndarray:
        # the encoder's matrix is column-major; the forest predicts faster on rows
        return self.model_.predict(np.ascontiguousarray(Z))


class GBRPredictor(EncodedPredictor):
    """The CubicML paper's LLM predictor: scikit-learn ``GradientBoostingRegressor`` on numeric
    features (as is, plus log sizes and analytic estimates) and one-hot categoricals.

    Defaults are scikit-learn's (100 trees of depth 3, learning rate 0.1) as in the paper,
    except the target: log throughput (``target='raw'`` regresses throughput itself).
    """

    name = "gbr"
    encoding = "numeric"
    fit_cost = 2.0

    def __init__(self, n_estimators: int = 100, learning_rate: float = 0.1, max_depth: int = 3,
                 subsample: float = 1.0, target: str = "log", random_state: int = 0):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.subsample = subsample
        self.target = target
        self.random_state = random_state

    def _make_model(self):
        return GradientBoostingRegressor(
            n_estimators=self.n_estimators, learning_rate=self.learning_rate, max_depth=self.max_depth,
            subsample=self.subsample, random_state=self.random_state)


class HistGBRPredictor(EncodedPredictor):
    """scikit-learn ``HistGradientBoostingRegressor`` with native categorical splits."""

    name = "hist_gbr"
    encoding = "native"

    def __init__(self, max_iter: int = 150, learning_rate: float = 0.1, max_leaf_nodes: int = 31,
                 min_samples_leaf: int = 5, l2_regularization: float = 0.0, target: str = "log",
                 n_jobs: int = 1, random_state: int = 0):
        self.n_jobs = n_jobs
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.l2_regularization = l2_regularization
        self.target = target
        self.random_state = random_state

    def _make_model(self):
        return HistGradientBoostingRegressor(
            max_iter=self.max_iter, learning_rate=self.learning_rate, max_leaf_nodes=self.max_leaf_nodes,
            min_samples_leaf=self.min_samples_leaf, l2_regularization=self.l2_regularization,
            categorical_features="from_dtype", early_stopping=False, random_state=self.random_state)


class _Standardised(EncodedPredictor):
    """Fits the model on a standardised transformed target (for MLP and GP). Subclasses whose
    model needs more than ``fit`` / ``predict`` override :meth:`_fit_standardised` / :meth:`_predict_standardised`."""

    def _fit_model(self, Z, z, X, groups) -> None:
        self.z_mean_ = float(np.mean(z))
        self.z_std_ = float(np.std(z)) or 1.0
        self._fit_standardised(Z, (z - self.z_mean_) / self.z_std_)

    def _fit_standardised(self, Z, zs) -> None:
        self.model_.fit(Z, zs)

    def _predict_model(self, Z) -> np.ndarray:
        return self._predict_standardised(Z) * self.z_std_ + self.z_mean_

    def _predict_standardised(self, Z) -> np.ndarray:
        """The prediction in the standardised target space."""
        return self.model_.predict(Z)


class MLPPredictor(_Standardised):
    """A small MLP regressor (scikit-learn, Adam, early stopping) on standardised numeric +
    log + analytic features, regressing standardised log throughput. Each feature is held to
    the range it had in training: a ReLU network goes on linearly, without bound, outside it
    (fitted on torchtitan's 13 single-node jobs, unclipped, it predicted 1e-89 and infinite
    tokens/s for the multi-node ones)."""

    name = "mlp"
    encoding = "scaled"
    fit_cost = 4.0

    def __init__(self, hidden_layer_sizes: tuple = (128, 64), alpha: float = 1e-3, learning_rate_init: float = 1e-3,
                 max_iter: int = 1000, early_stopping: bool = True, target: str = "log", random_state: int = 0):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.alpha = alpha
        self.learning_rate_init = learning_rate_init
        self.max_iter = max_iter
        self.early_stopping = early_stopping
        self.target = target
        self.random_state = random_state

    def _make_model(self):
        return MLPRegressor(
            hidden_layer_sizes=tuple(self.hidden_layer_sizes), alpha=self.alpha,
            learning_rate_init=self.learning_rate_init, max_iter=self.max_iter,
            early_stopping=self.early_stopping, n_iter_no_change=20, random_state=self.random_state)

    def _fit_model(self, Z, z, X, groups) -> None:
        if self.early_stopping and len(z) < 20:  # too few rows to hold out a validation set
            self.model_.set_params(early_stopping=False)
        self.z_low_, self.z_high_ = np.min(Z, axis=0), np.max(Z, axis=0)
        super()._fit_model(Z, z, X, groups)

    def _predict_standardised(self, Z) -> np.ndarray:
        return self.model_.predict(np.clip(Z, self.z_low_, self.z_high_))


def _lbfgs(obj_func, initial_theta, bounds, maxiter: int = 50):
    """L-BFGS-B on the GP's log marginal likelihood, at most ``maxiter`` iterations."""
    from scipy.optimize import minimize

    res = minimize(obj_func, initial_theta, method="L-BFGS-B", jac=True, bounds=bounds, options={"maxiter": maxiter})
    return res.x, res.fun


class GPPredictor(_Standardised):
    """Gaussian process on standardised features (RBF with one length scale per feature +
    white noise, fitted by marginal likelihood) over standardised log throughput.

    ``predict`` gives the posterior median throughput ``exp(mu)``; :meth:`predict_std` its
    standard deviation, ``exp(mu) * sigma`` (delta method; ``sigma`` the posterior standard
    deviation of log throughput). The fit is cubic in the rows, and the kernel
    hyperparameters need many fits: they are chosen by marginal likelihood on at most
    ``max_opt_samples`` rows, then the posterior conditions on at most ``max_samples`` rows
    (seeded random subsets) with those hyperparameters fixed.
    """

    name = "gp"
    encoding = "scaled"
    has_std = True
    fit_cost = 5.0

    def __init__(self, ard: bool = True, noise: float = 1e-2, max_samples: int = 2000, max_opt_samples: int = 300,
                 max_opt_iter: int = 50, n_restarts_optimizer: int = 0, target: str = "log", random_state: int = 0):
        self.ard = ard
        self.max_opt_iter = max_opt_iter
        self.noise = noise
        self.max_samples = max_samples
        self.max_opt_samples = max_opt_samples
        self.n_restarts_optimizer = n_restarts_optimizer
        self.target = target
        self.random_state = random_state

    def _make_model(self):
        return None  # built in _fit_model, once the feature count is known

    def _fit_standardised(self, Z, zs) -> None:
        n, d = Z.shape
        scale = np.ones(d) if self.ard else 1.0
        kernel = ConstantKernel(1.0, (1e-3, 1e3)) * RBF(scale, (1e-2, 1e3)) + WhiteKernel(self.noise, (1e-6, 1.0))
        rng = np.random.default_rng(self.random_state)
        optimizer = partial(_lbfgs, maxiter=int(self.max_opt_iter))
        if n > self.max_opt_samples:  # hyperparameters from a subset
            rows = np.sort(rng.choice(n, self.max_opt_samples, replace=False))
            with warnings.catch_warnings():  # length scales at their bounds: expected, not news
                warnings.simplefilter("ignore", ConvergenceWarning)
                opt = GaussianProcessRegressor(kernel=kernel, optimizer=optimizer,
                                               n_restarts_optimizer=self.n_restarts_optimizer,
                                               random_state=self.random_state).fit(Z[rows], zs[rows])
            kernel = opt.kernel_
            optimizer = None
        if n > self.max_samples:
            rows = np.sort(rng.choice(n, self.max_samples, replace=False))
            Z, zs = Z[rows], zs[rows]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.model_ = GaussianProcessRegressor(kernel=kernel, optimizer=optimizer,
                                                   n_restarts_optimizer=self.n_restarts_optimizer,
                                                   random_state=self.random_state).fit(Z, zs)

    _CHUNK = 20_000  # rows per kernel evaluation: bounds memory to CHUNK x training rows

    def _posterior(self, Z: np.ndarray, return_std: bool):
        mu, sd = np.empty(len(Z)), np.empty(len(Z))
        for start in range(0, len(Z), self._CHUNK):
            part = slice(start, start + self._CHUNK)
            if return_std:
                mu[part], sd[part] = self.model_.predict(Z[part], return_std=True)
            else:
                mu[part] = self.model_.predict(Z[part])
        return mu, sd

    def _predict_standardised(self, Z) -> np.ndarray:
        return self._posterior(Z, False)[0]

    def predict_std(self, X: pd.DataFrame) -> np.ndarray:
        """Posterior standard deviation of the predicted throughput (see the class docstring)."""
        self._check_fitted()
        X = as_columns(X)  # a dict of columns too: the encoder and the target's inverse read the same columns
        if self.constant_ is not None:
            return np.zeros(len(X))
        Z = self.encoder_.transform(X)
        with self._threads():
            mu, sd = self._posterior(Z, True)
        mu = mu * self.z_std_ + self.z_mean_
        sd = sd * self.z_std_
        if self.target_.kind in ("log", "log_per_device", "log_ratio"):
            return self.target_.inverse(mu, X) * sd
        return self.target_.inverse(sd, X) if self.target_.kind == "per_device" else sd
