"""The zoo's generic conformance test (like scikit-learn's ``check_estimator``), run over
every registered member on real data (``vtrain-a100``), plus the registry and the
failure classifier on real OOM rows.

Members are fitted on a 400-row sample of a seeded 75/25 split (fewer epochs / trees where
a member is slow) and scored on the held-out quarter, so the file runs in a few minutes
on 2 cores.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from perfzoo import zoo
from perfzoo.datasets import load_dataset
from perfzoo.evaluation.metrics import kendall
from perfzoo.evaluation.splits import random_split

REQUIRED_MEMBERS = {
    "constant", "analytic", "ridge", "knn", "random_forest", "gbr", "hist_gbr", "lightgbm", "catboost",
    "lightgbm_rank", "catboost_rank", "mlp_rank_ensemble", "mlp", "gp", "hybrid", "failure",
}

# smaller settings for speed; every other parameter is the member's default
FAST = {
    "random_forest": dict(n_estimators=60),
    "hist_gbr": dict(max_iter=100),
    "lightgbm": dict(n_estimators=150),
    "catboost": dict(iterations=150),
    "lightgbm_rank": dict(n_estimators=150),
    "catboost_rank": dict(iterations=100),
    "mlp_rank_ensemble": dict(n_models=2, epochs=25),
    "mlp": dict(max_iter=300),
    "gp": dict(max_opt_samples=150, max_opt_iter=30),
    "hybrid": dict(n_estimators=150),
    "failure": dict(n_estimators=60),
}
N_TRAIN = 400


@pytest.fixture(scope="module")
def vtrain():
    """(X_train, y_train, X_test, y_test): seed-0 random split, 400 training rows sampled."""
    ds = load_dataset("vtrain-a100").ok()
    X = ds.X  # features, constant ones included: the analytic estimates need them
    y = ds.y
    split = random_split(ds, seed=0)
    train = np.sort(np.random.default_rng(0).choice(split.train, N_TRAIN, replace=False))
    return (X.iloc[train].reset_index(drop=True), y[train],
            X.iloc[split.test].reset_index(drop=True), y[split.test])


def _target(name: str, y: np.ndarray) -> np.ndarray:
    """What a member is fitted on: throughput, or for ``failure`` a stand-in failure label
    (vTrain has no failed jobs): the slowest quarter 'fails' (NaN throughput = failed)."""
    if name != "failure":
        return y
    return np.where(y < np.quantile(y, 0.25), np.nan, y)


def test_registry_has_every_member():
    assert REQUIRED_MEMBERS <= set(zoo.names())
    assert set(zoo.names(floors=False)) == set(zoo.names()) - {"constant", "analytic"}
    assert "failure" not in zoo.names(throughput_only=True)
    with pytest.raises(ValueError, match="registered"):
        zoo.make("xgboost")
    with pytest.raises(ValueError, match="takes"):
        zoo.make("lightgbm", n_trees=5)
    with pytest.raises(zoo.NotFittedError):
        zoo.make("ridge").predict(pd.DataFrame({"config.tp": [1]}))
    for name in zoo.names():
        cls = zoo.get(name)
        assert cls.name == name and cls.output in ("throughput", "score", "probability")
        assert cls.encoding in (None, "native", "numeric", "scaled", "onehot")


@pytest.mark.parametrize("name", zoo.names())
def test_conformance(name, vtrain, tmp_path):
    X, y, X_test, y_test = vtrain
    params = FAST.get(name, {})
    model = zoo.make(name, **params)
    y_fit = _target(name, y)

    # the constructor stores parameters only; clone copies them
    assert model.get_params() == {**zoo.get(name)().get_params(), **params}
    twin = clone(model)
    assert twin.get_params() == model.get_params()
    assert model.set_params(**params) is model

    # fit returns self; predict gives one finite float per row
    assert model.fit(X, y_fit, dataset="vtrain-a100") is model
    pred = model.predict(X_test)
    assert pred.shape == (len(X_test),) and pred.dtype == float
    assert np.isfinite(pred).all(), f"{name}: non-finite predictions"

    # same seed, same predictions
    np.testing.assert_allclose(twin.fit(X, y_fit).predict(X_test), pred, rtol=1e-7, atol=1e-10,
                               err_msg=f"{name}: refit with the same seed differs")

    # save / load: identical predictions, metadata written
    path = model.save(tmp_path / name)
    loaded = zoo.load(path)
    assert type(loaded) is type(model)
    np.testing.assert_allclose(loaded.predict(X_test), pred, rtol=1e-12)  # threads may reorder a sum
    meta = json.loads((path / "metadata.json").read_text())
    assert meta["name"] == name and meta["dataset"] == "vtrain-a100" and meta["n_train"] == N_TRAIN - (
        int(np.isnan(y_fit).sum()) if name != "failure" else 0)
    assert meta["perfzoo_version"] and meta["fit_time_s"] >= 0 and meta["params"] == json.loads(
        json.dumps(model.get_params(), default=repr))
    assert set(meta["input_columns"]) == set(X.columns)

    # one row predicts what it predicts inside a frame
    np.testing.assert_allclose(model.predict(X_test.iloc[[3]]), pred[[3]], rtol=1e-9)

    # unseen categories
    unseen = X_test.iloc[:20].assign(**{"hardware.accelerator": "H100-80GB", "config.fsdp": "full_shard"})
    out = model.predict(unseen)
    assert out.shape == (20,) and np.isfinite(out).all(), f"{name}: unseen category"

    # a missing optional field is unknown, not an error
    out = model.predict(X_test.iloc[:20].drop(columns=["hardware.accelerator"]))
    assert out.shape == (20,) and np.isfinite(out).all(), f"{name}: missing optional column"

    # a constant target does not crash
    const = np.full(len(X), 1234.0)
    out = clone(model).fit(X, const).predict(X_test)
    assert out.shape == (len(X_test),) and np.isfinite(out).all(), f"{name}: constant target"

    # extras some members offer
    if model.has_std:
        std = model.predict_std(X_test)
        assert std.shape == (len(X_test),) and np.isfinite(std).all() and (std >= 0).all()
    if name == "failure":
        proba = model.predict_proba(X_test)
        assert proba.shape == (len(X_test), 2) and np.allclose(proba.sum(axis=1), 1.0)
        np.testing.assert_allclose(proba[:, 0], pred)  # predict = P(success)

    # every non-floor member ranks held-out jobs better than the constant floor (tau = 0)
    tau = kendall(y_test, pred)
    if model.floor:
        assert name == "constant" or np.isfinite(tau)
    else:
        assert tau > 0.3, f"{name}: Kendall tau {tau:.3f} on held-out vtrain-a100 does not beat constant"


def test_failure_classifier_on_real_oom_rows():
    ds = load_dataset("published-llm")
    X, failed = ds.X, ds.failed
    assert failed.any(), "published-llm should hold OOM rows"
    model = zoo.make("failure").fit(X, ds.y)  # dataset.y is NaN where the job failed
    p_fail = model.predict_failure(X)
    assert ((0 <= p_fail) & (p_fail <= 1)).all()
    assert p_fail[failed].mean() > p_fail[~failed].mean()
    model2 = zoo.make("failure").fit(X, ds.frame["status"])  # status strings work too
    np.testing.assert_allclose(model2.predict_failure(X), p_fail)


def test_ranking_members_respect_groups(vtrain):
    X, y, X_test, y_test = vtrain
    groups = np.where(X["config.hidden_dim"] > 1024, "big", "small")
    model = zoo.make("lightgbm_rank", n_estimators=50).fit(X, y, groups=groups)
    assert np.isfinite(model.predict(X_test)).all()


def test_gp_std_of_one_config_given_as_a_dict(vtrain):
    X, y, _, _ = vtrain
    gp = zoo.make("gp", target="per_device").fit(X.iloc[:200], y[:200])
    row = X.iloc[[0]]
    assert gp.predict_std(row.iloc[0].to_dict()) == pytest.approx(gp.predict_std(row))
