"""Uncertainty as a wrapper (perfzoo.zoo.interval.Interval), the estimator protocol the zoo writes
itself (perfzoo.zoo.estimator), a registry that loads light, and predictors saved in the old layout."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
import sklearn.base

from perfzoo import zoo
from perfzoo.datasets import load_dataset
from perfzoo.evaluation import report
from perfzoo.evaluation.artifacts import fit_artifact, refit_shipped
from perfzoo.evaluation.tasks import PredictorSpec
from perfzoo.search import Exhaustive, propose
from perfzoo.spaces import Categorical, Space
from perfzoo.zoo.base import METADATA_FILE, outdated
from perfzoo.zoo.calibrate import fit_with_interval
from perfzoo.zoo.estimator import clone
from perfzoo.zoo.interval import Interval, LayoutUncertain, Uncertain

HEAVY = ("sklearn", "lightgbm", "catboost", "torch", "scipy.stats")  # what plan with an analytic member must not import


def _toy() -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Throughput proportional to GPUs, each of four sources off by its own factor, and each row's source."""
    gpus = np.tile([1, 2, 4, 8, 16, 32], 20)
    X = pd.DataFrame({"config.n_gpus": gpus, "config.hidden_dim": np.repeat([1024, 2048], 60),
                      "hardware.accelerator": "H100-SXM-80GB"})
    sources = np.repeat(["a", "b", "c", "d"], 30)
    factor = pd.Series(sources).map({"a": 0.8, "b": 1.0, "c": 1.1, "d": 1.3}).to_numpy()
    noise = np.random.default_rng(0).lognormal(0, 0.05, len(gpus))
    return X, 100.0 * gpus * factor * noise, sources


def _run(code: str) -> dict:
    """What a fresh Python prints as JSON after running ``code``."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.external
def test_loading_and_predicting_with_a_saved_analytic_imports_no_heavy_library(tmp_path):
    folder = tmp_path / "analytic"
    fit_with_interval(zoo.make("analytic"), load_dataset("llm-h100")).save(folder)
    found = _run(f"""
        import json, sys
        import perfzoo.plan.command  # the plan command and the layers below it load what they load
        below = set(sys.modules)
        from perfzoo import zoo
        from perfzoo.datasets import load_dataset
        model = zoo.load({str(folder)!r})
        X = load_dataset("llm-h100").labelled().X.head(50)
        pred, (low, high), rel = model.predict(X), model.predict_interval(X), model.relative()
        assert (low <= pred).all() and (pred <= high).all() and rel[0] < 1 < rel[1]
        heavy = ("scipy.optimize", *{HEAVY!r})
        print(json.dumps({{"name": model.name, "type": type(model).__name__,
                          "loaded": [m for m in heavy if m in sys.modules],
                          "by_zoo": [m for m in heavy if m in sys.modules and m not in below]}}))
    """)
    assert (found["name"], found["type"]) == ("analytic", "Interval")
    assert found["loaded"] == [] and found["by_zoo"] == [], found  # plan.command and the member: none of them


def test_the_registry_imports_a_members_module_when_it_is_asked_for():
    found = _run("""
        import json, sys
        from perfzoo import zoo
        before = [m for m in ("perfzoo.zoo.classic", "perfzoo.zoo.boosting", "perfzoo.zoo.neural",
                              "perfzoo.zoo.plugin", "sklearn", "lightgbm", "torch") if m in sys.modules]
        names, analytic = zoo.names(), type(zoo.make("analytic")).__name__
        after_analytic = "sklearn" in sys.modules
        ridge = zoo.get("ridge").__name__
        print(json.dumps({"before": before, "names": names[:3], "analytic": analytic,
                          "after_analytic": after_analytic, "ridge": ridge, "after_ridge": "sklearn" in sys.modules}))
    """)
    assert found == {"before": [], "names": ["constant", "analytic", "roofline"], "analytic": "AnalyticPredictor",
                     "after_analytic": False, "ridge": "RidgePredictor", "after_ridge": True}
    assert "gp" in zoo.REGISTRY and "xgboost" not in zoo.REGISTRY and len(zoo.REGISTRY) == len(zoo.names())
    assert zoo.RidgePredictor is zoo.get("ridge")  # the package's names load lazily too
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        zoo.Nothing  # noqa: B018


def test_the_estimator_protocol_is_scikit_learns():
    model = Interval(zoo.make("lightgbm", n_estimators=30), folds=3)
    params = model.get_params()
    assert params["member__n_estimators"] == 30 and params["folds"] == 3 and params["member"] is model.member
    assert model.set_params(member__n_estimators=40, seed=2) is model and model.member.n_estimators == 40
    for twin in (clone(model), sklearn.base.clone(model)):
        assert type(twin.member) is type(model.member) and twin.member is not model.member
        assert twin.get_params(deep=True).keys() == params.keys() and twin.member.n_estimators == 40
    assert repr(model) == "Interval(folds=3, member=LightGBMPredictor(n_estimators=40), seed=2)"
    with pytest.raises(ValueError, match=r"Interval takes no parameter 'alpha'; it takes \['folds', 'member', 'seed'\]"):
        model.set_params(alpha=0.1)
    with pytest.raises(ValueError, match=r"ridge takes no parameter\(s\) \['depth'\]; it takes \['alpha', 'target'\]"):
        zoo.make("ridge", depth=3)


def test_an_interval_is_its_members_predictions_with_a_calibrated_band(tmp_path):
    X, y, sources = _toy()
    model = Interval(zoo.make("analytic"), folds=4).fit(X, y, dataset="toy", groups=sources)
    member = zoo.make("analytic").fit(X, y)
    np.testing.assert_array_equal(model.predict(X), member.predict(X))
    assert (model.name, model.output, model.floor, model.dataset_, model.n_train_) == ("analytic", "throughput", True, "toy", 120)
    low, high = model.predict_interval(X)
    assert ((low <= model.predict(X)) & (model.predict(X) <= high)).all()
    cover = np.mean((low <= y) & (y <= high))
    assert 0.7 <= cover <= 1.0  # 80% for a source never seen, so more of the rows of the sources it saw
    # the default level was computed when fitted; another is computed when asked, and nests
    assert set(model.quantiles_) == {0.2}
    wide = model.predict_interval(X, alpha=0.05)
    assert (wide[0] <= low).all() and (high <= wide[1]).all()
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        model.predict_interval(X, alpha=1.5)
    low_r, high_r = model.relative()
    assert 0 < low_r < 1 < high_r and high_r / low_r < np.median(high / low)  # layouts of a model share its offset
    assert isinstance(model, LayoutUncertain) and isinstance(model, Uncertain)
    assert not isinstance(member, Uncertain) and not hasattr(model, "predict_std")
    meta = model.metadata()
    assert meta["class"] == "perfzoo.zoo.interval.Interval" and meta["member"]["class"].endswith("AnalyticPredictor")
    assert meta["interval"]["sources"] == 4 and meta["interval"]["residuals"] == 120 and meta["format"] == 2
    loaded = zoo.load(model.save(tmp_path / "toy"))
    np.testing.assert_array_equal(loaded.predict_interval(X)[1], high)
    assert loaded.relative() == (low_r, high_r)


def test_a_predictor_saved_in_the_old_layout_is_refused_in_one_line_saying_how_to_refit(tmp_path):
    X, y, _ = _toy()
    folder = zoo.make("analytic").fit(X, y).save(tmp_path / "old")
    assert outdated(folder) is None
    meta = json.loads((folder / METADATA_FILE).read_text())
    del meta["format"]  # what perfzoo wrote before intervals were a wrapper
    (folder / METADATA_FILE).write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=r"saved by an older perfzoo \(layout 1: the interval inside the member.*"
                                         r"python -m perfzoo.bench --refit-shipped") as raised:
        zoo.load(folder)
    assert "\n" not in str(raised.value)


def test_refit_shipped_refits_an_artifact_of_the_old_layout(tmp_path, vtrain_small):
    ds = vtrain_small
    art = fit_artifact(ds, PredictorSpec("ridge"), tmp_path / "artifacts")
    path = art["path"]
    entry = {"name": "ridge", "params": {}, "artifact": str(path.relative_to(tmp_path)), "content_hash": ds.content_hash()}
    (tmp_path / "best.json").write_text(json.dumps({"datasets": {ds.name: entry}}))
    ctx = report.run_context("test", 0.0)
    assert refit_shipped([ds], tmp_path, ctx) == []  # fitted on its data as it is, in this layout
    meta = json.loads((path / METADATA_FILE).read_text())
    (path / METADATA_FILE).write_text(json.dumps({**meta, "format": 1}))
    assert refit_shipped([ds], tmp_path, ctx) == [ds.name]
    model = zoo.load_best(ds.name, tmp_path)
    assert isinstance(model, Interval) and model.member_.name == "ridge"


@pytest.fixture
def vtrain_small(external):
    ds = load_dataset("vtrain-a100", external_dir=external)
    return ds.subset(np.arange(0, len(ds), 8))


def test_a_search_walks_the_trees_of_an_intervals_member():
    space = Space(name="small", workload="fsdp", dimensions=[Categorical(f"k{i}", choices=tuple(range(6)))
                                                             for i in range(3)])
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.integers(0, 6, (300, 3)), columns=[f"config.k{i}" for i in range(3)])
    y = np.exp(X.to_numpy() @ np.array([0.3, -0.2, 0.1]) + rng.normal(0, 0.05, 300))
    model = Interval(zoo.make("lightgbm", n_estimators=40)).fit(X, y)
    fast = propose(Exhaustive(), space, model, top_k=10)
    slow = propose(Exhaustive(fast=False), space, model, top_k=10)
    assert (fast.stats["path"], slow.stats["path"]) == ("treegrid", "chunked")
    np.testing.assert_allclose(fast.predicted, slow.predicted, rtol=1e-9)


def test_mixtures_of_experts_get_their_own_width_where_they_err_further():
    """Mondrian conformal by kind of job (perfzoo.zoo.conformal.kinds): the MoE rows, five times as
    noisy as the dense ones here, get a wider interval and the dense rows a narrower one than the pooled
    width; each kind's coverage on fresh rows of its own lands near 80%."""
    rng = np.random.default_rng(1)
    gpus = np.tile([1, 2, 4, 8, 16, 32], 40)
    experts = np.tile(np.repeat([1, 8], 6), 20)
    X = pd.DataFrame({"config.n_gpus": gpus, "config.n_experts": experts, "hardware.accelerator": "H100-SXM-80GB"})
    sources = np.repeat(["a", "b", "c", "d"], 60)

    def draw():
        return 100.0 * gpus * rng.lognormal(0, np.where(experts > 1, 0.25, 0.05))

    model = Interval(zoo.make("ridge")).fit(X, draw(), groups=sources)
    low, high = model.predict_interval(X)
    width = np.log(high / low)
    pooled = np.subtract(*model.quantiles_[0.2][::-1])
    moe = experts > 1
    assert width[moe].min() > pooled > width[~moe].max()
    fresh = draw()
    inside = (low <= fresh) & (fresh <= high)
    assert 0.65 <= inside[moe].mean() <= 0.95 and 0.65 <= inside[~moe].mean() <= 0.95
    # a frame without the kind's column: one kind, the pooled width
    plain = Interval(zoo.make("ridge")).fit(X.drop(columns="config.n_experts"), draw(), groups=sources)
    lo, hi = plain.predict_interval(X.drop(columns="config.n_experts"))
    assert np.allclose(np.log(hi / lo), np.subtract(*plain.quantiles_[0.2][::-1]))


def test_the_shipping_rule_checks_coverage_per_held_out_source_not_only_the_mean():
    """Two members with the same mean coverage leaving sources out: the one that covers a source 0.54 of
    the time ranks after the one that covers each at least 0.70, whatever their scores (summarize keeps
    the worst fold's coverage, shipping_order reads it)."""
    from perfzoo.evaluation.ranking import SOURCE_SPLIT, covers_too_little, shipping_order, summarize

    rows = []
    for predictor, kendall, covers in (("sharp", 0.90, (0.54, 0.99, 0.92)), ("honest", 0.85, (0.72, 0.88, 0.85))):
        for split in ("random", SOURCE_SPLIT):
            for fold, c in enumerate(covers if split == SOURCE_SPLIT else (0.9,)):
                rows.append({"dataset": "d", "split": split, "kind": "group" if split == SOURCE_SPLIT else split,
                             "predictor": predictor, "output": "throughput", "fold": fold, "seed": 0,
                             "kendall": kendall, "mape": 10.0, "coverage": c, "fit_time_s": 1.0,
                             "n_train": 10, "n_test": 5})
    summary = summarize(pd.DataFrame(rows))
    source = summary[summary["split"] == SOURCE_SPLIT].set_index("predictor")
    assert source["coverage_mean"].round(2).to_dict() == {"sharp": 0.82, "honest": 0.82}
    assert source["coverage_min"].to_dict() == {"sharp": 0.54, "honest": 0.72}
    order = shipping_order(summary, "d")
    assert order["predictor"].tolist() == ["honest", "sharp"] and order["ship_score"].iloc[1] > order["ship_score"].iloc[0]
    assert covers_too_little(order).tolist() == [False, True]
