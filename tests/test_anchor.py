"""Anchored calibration (perfzoo.zoo.anchor, perfzoo.zoo.calibrate.calibrated): the posterior worked by
hand, the spread of offsets, runs named and left out, and the commands that use them
(predict / plan / search --calibrate, bench --shots-within), on small synthetic data."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from perfzoo import bench, zoo
from perfzoo.datasets import load_dataset
from perfzoo.datasets.sources import DataError
from perfzoo.evaluation.anchored import shots_within
from perfzoo.plan.command import PlanConfig
from perfzoo.plan.command import run as plan_run
from perfzoo.predict import PredictConfig
from perfzoo.predict import run as predict
from perfzoo.zoo import calibrate
from perfzoo.zoo.anchor import Anchored
from perfzoo.zoo.conformal import conformal_quantiles
from perfzoo.zoo.interval import Interval
from perfzoo.zoo.offsets import SIGMA_PRIOR_DOF, Keys, Spread, keys, posterior, updated
from perfzoo.zoo.similarity import FITTED
from test_calibrate import CONFIG, labs  # noqa: F401 (the fixture)

H100 = "H100-SXM-80GB"


def spread(tau_c=0.04, tau_g=0.02, sigma=0.01) -> Spread:
    z = np.linspace(-2, 2, 41)
    return Spread(tau_c, tau_g, sigma, z, np.ones(z.size), z, np.ones(z.size))


def test_the_posterior_by_hand():
    sp = spread()  # prior variance V = 0.04 + 0.02 + 0.01
    V, rho = 0.07, FITTED
    at = lambda gpus: np.array([[np.log2(gpus), np.log2(gpus / 8)] + [0.0] * 9])  # (GPUs, nodes)
    runs = Keys(np.array([1]), np.array([9]), at(8))  # one run of model 1 on 8 GPUs
    queries = Keys(np.array([1, 1, 2, 3]), np.array([9, 9, 9, 8]), np.vstack([at(8), at(64), at(8), at(8)]))
    r = np.log(1.5)
    shift, var, level = posterior(runs, [r], queries, sp)
    # its layout: rho(0) of the offset; 8x the GPUs (and nodes: distance 6): rho(6); another model of its
    # cluster on its layout: the cluster's share only, rho(0) tau_c^2 / V; another cluster: nothing
    assert shift[:3] == pytest.approx([rho(0) * r, rho(6) * r, rho(0) * 0.04 / V * r])
    assert var[:3] == pytest.approx([V * (1 - rho(0) ** 2), V * (1 - rho(6) ** 2), V - (rho(0) * 0.04) ** 2 / V])
    assert (shift[3], var[3]) == (0.0, pytest.approx(V))
    assert level.tolist() == ["group", "group", "cluster", "none"]
    # two runs on one layout that agree move it further than one: K = V [[1, rho(0)], [rho(0), 1]]
    two, _, _ = posterior(Keys(np.array([1, 1]), np.array([9, 9]), np.vstack([at(8), at(8)])), [r, r], queries, sp)
    assert two[0] == pytest.approx(2 * rho(0) / (1 + rho(0)) * r) and two[0] > shift[0]


def test_runs_of_two_groups_pool_through_their_cluster():
    sp = spread()
    runs = Keys(np.array([1, 2]), np.array([9, 9]))
    shift, _, _ = posterior(runs, np.log([2.0, 2.0]), Keys(np.array([1]), np.array([9])), sp)
    alone, _, _ = posterior(Keys(np.array([1]), np.array([9])), np.log([2.0]), Keys(np.array([1]), np.array([9])), sp)
    # a second model on the same cluster that agrees moves the first model's prediction further
    assert np.log(2.0) > shift[0] > alone[0] > 0


def test_runs_that_disagree_widen_the_spread_between_models():
    sp = spread(tau_g=0.01)
    runs = Keys(np.array([1, 2, 3]), np.array([9, 9, 9]))
    wide = updated(sp, runs, np.log([1.0, 1.5, 2.0]))
    assert wide.between_groups == pytest.approx(np.var(np.log([1.0, 1.5, 2.0]), ddof=1) - 0.01)
    assert updated(sp, runs, np.log([1.2, 1.2, 1.2])).between_groups == 0.01  # they agree: nothing to widen
    assert wide.within == sp.within  # one run per model: nothing said about the layouts' scatter


def test_runs_of_one_model_update_the_scatter_between_its_layouts():
    sp = spread(sigma=0.01)
    gpus = np.array([[np.log2(g)] + [0.0] * 10 for g in (8, 16, 32, 64)])  # one doubling apart each
    one_model = Keys(np.array([1, 1, 1, 1]), np.array([9, 9, 9, 9]), gpus)
    scattered = np.log([1.0, 1.4, 0.8, 1.2])
    ss = float(((scattered - scattered.mean()) ** 2).sum())
    apart = np.mean([1 - FITTED(abs(i - j)) for i in range(4) for j in range(i + 1, 4)])
    wide = updated(sp, one_model, scattered)
    # the scatter, read against the share the layouts' distances leave apart, measures the prior variance
    total = (SIGMA_PRIOR_DOF * 0.07 + ss / apart) / (SIGMA_PRIOR_DOF + 3)
    assert wide.within == pytest.approx(total - 0.04 - 0.02)
    assert wide.within > 0.01 > updated(sp, one_model, np.log([1.0, 1.01, 0.99, 1.0])).within


def test_keys_read_equal_configs_alike():
    X = pd.DataFrame({"config.hidden_dim": [4096, 4096.0, 8192], "config.n_layers": [32, 32, 32],
                      "hardware.accelerator": ["H100", "H100-SXM-80GB", "H100"],
                      "config.precision": ["bf16", "BF16", "fp8"], "config.framework": ["NeMo", "nemo", "nemo"]})
    k = keys(X)
    assert k.group[0] == k.group[1] != k.group[2]  # 'H100' and 'H100-SXM-80GB' are one device; fp8 another group
    assert k.cluster[0] == k.cluster[1] == k.cluster[2]


def test_spread_estimate_recovers_its_components():
    rng = np.random.default_rng(0)
    rows, labels, srcs = [], [], []
    for s in range(4):
        for c in range(5):
            a = rng.normal(0, 0.2)
            for g in range(6):
                b = rng.normal(0, 0.1)
                for _ in range(8):
                    rows.append(a + b + rng.normal(0, 0.05))
                    labels.append((c, g))
                    srcs.append(s)
    k = Keys(np.array([hash(("g",) + t) for t in labels]), np.array([hash(("c", t[0])) for t in labels]))
    sp = Spread.estimate(np.array(rows), k, np.array(srcs))
    assert sp.within == pytest.approx(0.05 ** 2, rel=0.15)
    assert sp.between_groups == pytest.approx(0.1 ** 2, rel=0.35)
    # tau_c^2 is taken at its upper 80% bound over 4 sources (x 3 / chi2_0.2(3) = 2.95)
    assert 0.2 ** 2 < sp.between_clusters < 0.2 ** 2 * 6
    lo, hi = sp.quantiles(0.2)
    assert -2.5 < lo < -0.5 and 0.5 < hi < 2.5


class Constant(zoo.Predictor):
    """Predicts 1,000 tokens/s per row; NaN where the hidden size is 999 (a config it cannot price)."""

    name = "constant_test"

    def _fit(self, X, y, groups):
        pass

    def _predict(self, X):
        hidden = pd.to_numeric(pd.Series(np.asarray(X["config.hidden_dim"])), errors="coerce").to_numpy()
        return np.where(hidden == 999, np.nan, 1000.0)


def fitted_constant() -> Interval:
    """:class:`Constant` wrapped with an interval whose residuals spread +-0.5 and whose spread is :func:`spread`'s."""
    X = pd.DataFrame({"config.hidden_dim": [1024, 2048], "hardware.accelerator": [H100, H100]})
    model = Interval(Constant(), folds=2).fit(X, np.array([1000.0, 1000.0]))
    residuals = np.linspace(-0.5, 0.5, 41)
    model.spread_, model.residuals_, model.weights_, model.units_ = spread(), residuals, np.ones(41), None
    model.quantiles_ = {0.2: conformal_quantiles(residuals, 0.2)}
    return model


def test_anchored_names_its_runs_and_leaves_out_what_cannot_anchor():
    model = fitted_constant()
    X_runs = pd.DataFrame({"config.hidden_dim": [4096, 999, 4096], "hardware.accelerator": [H100] * 3})
    anchored = Anchored(model, X_runs, [1500.0, 1200.0, np.nan], names=["a.csv line 2", "a.csv line 3", "a.csv line 4"])
    assert [(r.name, r.left_out) for r in anchored.left_out] == [
        ("a.csv line 3", "the cost model cannot price its config"),
        ("a.csv line 4", "no measured throughput (failed or not finished)")]
    queries = pd.DataFrame({"config.hidden_dim": [4096, 8192], "hardware.accelerator": [H100, "B200"]})
    pred = anchored.predict(queries)
    assert pred[0] == pytest.approx(1000 * 1.5 ** FITTED(0))  # layouts unknown alike: distance 0
    assert pred[1] == 1000.0  # another GPU: not moved
    low, high = anchored.predict_interval(queries)
    assert low[0] < pred[0] < high[0] and (high[0] / low[0]) < (high[1] / low[1])  # narrower once anchored
    text = anchored.explain(queries)
    assert "anchored by 1 run of this model" in text[0] and "a.csv line 2" in text[0] and "x1.439" in text[0]
    assert text[1] == ""
    assert anchored.idle(queries) == [] and anchored.idle(queries.iloc[[1]]) == ["a.csv line 2"]  # B200 only: idle


def test_a_run_its_framework_cannot_run_is_left_out_and_named():
    model = fitted_constant()
    X_runs = pd.DataFrame({"config.hidden_dim": [4096, 4096], "hardware.accelerator": [H100] * 2,
                           "config.framework": ["torchtitan"] * 2, "config.fsdp": ["zero1", "full_shard"]})
    anchored = Anchored(model, X_runs, [1500.0, 1500.0], names=["a.csv line 2", "a.csv line 3"])
    (out,) = anchored.left_out
    assert out.name == "a.csv line 2" and out.flagged  # the refit leaves it out too (calibrate.calibrated)
    assert out.left_out.startswith("fsdp=zero1 under framework=torchtitan: torchtitan has no ZeRO-1")
    assert anchored.used_names == ["a.csv line 3"]


def test_predict_calibrate_with_one_run_moves_the_prediction_and_names_the_run(labs, tmp_path):  # noqa: F811
    public, _ = labs
    cfg = {**CONFIG, "global_batch_size": 128, "n_gpus": 32, "dp": 32}
    knobs = [f"{k}={v}" for k, v in cfg.items()]
    plain = predict(PredictConfig(knobs=knobs, dataset=str(public), predictor="analytic"))
    # one run of this model on 16 GPUs, measured at 2x what the public table's fit predicts for it
    one = {**cfg, "n_gpus": 16, "dp": 16, "global_batch_size": 64}
    base = predict(PredictConfig(knobs=[f"{k}={v}" for k, v in one.items()], dataset=str(public), predictor="analytic"))
    run = tmp_path / "one_run.csv"
    pd.DataFrame([{**one, "tokens_per_s_per_device": 2 * base["predicted_tokens_per_s_per_device"].iloc[0]}]).to_csv(
        run, index=False)
    calibrated = predict(PredictConfig(knobs=knobs, dataset=str(public), predictor="analytic", calibrate=str(run)))
    ratio = calibrated["predicted_tokens_per_s"].iloc[0] / plain["predicted_tokens_per_s"].iloc[0]
    # moved by the share its distance carries: 16 -> 32 GPUs, 2 -> 4 nodes, batch 64 -> 128
    assert ratio == pytest.approx(2 ** FITTED(3), rel=1e-3)
    assert "one_run.csv line 2" in calibrated["calibration"].iloc[0]
    assert calibrated.attrs["calibration"].startswith("calibrated with 1 of your runs")


def test_a_run_file_that_anchors_nothing_is_refused(labs, tmp_path):  # noqa: F811
    public, _ = labs
    runs = load_dataset(str(labs[1]))
    runs.frame["metrics.throughput_per_device"] = np.nan
    with pytest.raises(DataError, match="no run can anchor a prediction"):
        calibrate.calibrated(zoo.make("analytic").fit(load_dataset(str(public)).labelled().X,
                                                      load_dataset(str(public)).labelled().y),
                             load_dataset(str(public)), runs, "runs.csv")


def test_shots_within_skips_and_counts_small_groups():
    X = pd.DataFrame({"config.hidden_dim": [1024] * 4 + [2048], "hardware.accelerator": [H100] * 5})
    model = fitted_constant()
    out = shots_within(model, X, np.array([1500.0, 1500, 1500, 1500, 900]), shots=(0, 1, 3), draws=2)
    assert out[0]["scored"] == 5 and out[0]["mape"] == pytest.approx(100 * (4 * 1 / 3 + 1 / 9) / 5)
    assert (out[1]["groups"], out[1]["groups_skipped"], out[1]["scored"]) == (1, 1, 3)
    assert (out[3]["groups"], out[3]["groups_skipped"], out[3]["scored"]) == (1, 1, 1)
    assert out[3]["mape"] < out[1]["mape"] < out[0]["mape"]


def test_shots_within_anchors_each_release_by_its_own_runs():
    # one model, two software releases: 1.5x and 0.6x the cost model; a user's runs are of one
    X = pd.DataFrame({"config.hidden_dim": [1024] * 8, "hardware.accelerator": [H100] * 8})
    y = np.array([1500.0] * 4 + [600.0] * 4)
    by_release = shots_within(fitted_constant(), X, y, shots=(1,), draws=3, releases=np.array(["24.09"] * 4 + ["25.01"] * 4))
    pooled = shots_within(fitted_constant(), X, y, shots=(1,), draws=3)
    assert by_release[1]["groups"] == 2 and by_release[1]["scored"] == 6
    assert by_release[1]["mape"] < 10.0 < 30.0 < pooled[1]["mape"]  # shrunk a little toward the cost model; pooled: off by the other release


def test_bench_shots_within_scores_the_anchored_workflow(labs, capsys):  # noqa: F811
    public, runs = labs
    rc = bench.main(["--train", str(public), "--test", str(runs), "--predictor", "analytic", "--shots", "0,1",
                     "--shots-within", "--shot-seeds", "2", "--json", "--jobs", "1"])
    assert rc == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert [(r["shots"], r["predictor"]) for r in rows] == [(0, "analytic"), (1, "analytic")]
    zero, one = rows
    assert zero["mape"] == pytest.approx(50.0, rel=0.05)  # the runs are 2x the public lab
    # 4 of the 5 models have their runs on 16 and 32 GPUs measured (the last one's are not): one anchors,
    # the other, three doublings away (GPUs, nodes, batch), is scored: its own model's run moves it by
    # rho(3) of the 2x (error 26.7%), the other models' runs on its own layout by their cluster's share more
    assert (one["groups"], one["groups_skipped"], one["n_test"]) == (4, 0, 4)
    assert 5 < one["mape"] < 100 * (1 - 2 ** (FITTED(3) - 1)) and one["draws"] == 2


def test_calibrate_with_the_best_predictor_refits_the_leaderboards_anchoring_pick(labs, tmp_path, monkeypatch):  # noqa: F811
    public, runs = labs
    ds = load_dataset(str(public))
    board = tmp_path / "board"
    board.mkdir()
    entry = {"predictor": "ridge", "name": "ridge", "params": {},
             "calibrate": {"predictor": "analytic", "name": "analytic", "params": {}}}
    (board / "best.json").write_text(json.dumps({"datasets": {ds.name: entry}}))
    monkeypatch.setenv("PERFZOO_LEADERBOARD", str(board))
    assert zoo.anchor_member(ds.name) == ("analytic", {})
    base = calibrate.anchor_base(ds)
    assert isinstance(base, Interval) and base.name == "analytic" and base.spread_ is not None  # with its spread
    cfg = {**CONFIG, "global_batch_size": 128, "n_gpus": 32, "dp": 32}
    table = predict(PredictConfig(knobs=[f"{k}={v}" for k, v in cfg.items()], dataset=str(public),
                                  calibrate=str(runs)))
    assert table.attrs["predictor"].startswith("analytic")
    (board / "best.json").write_text(json.dumps({"datasets": {ds.name: {**entry, "calibrate": None}}}))
    assert zoo.anchor_member(ds.name) == ("ridge", {})  # no anchored scores: the shipped member


def test_plan_calibrate_ranks_with_the_anchored_predictor(labs, tmp_path):  # noqa: F811
    public, _ = labs
    layout = {"model": "llama3-8b", "seq_len": 4096, "global_batch_size": 64, "micro_batch_size": 1, "n_gpus": 8,
              "tp": 1, "pp": 1, "precision": "bf16", "accelerator": H100}
    run = tmp_path / "one_run.csv"
    pd.DataFrame([{**layout, "tokens_per_s_per_device": 5000.0}]).to_csv(run, index=False)
    kw = dict(model="llama3-8b", gpus=8, accelerator=H100, seq_len=4096, global_batch=64, predictor="analytic",
              dataset=str(public), top_k=3)
    plain = plan_run(PlanConfig(**kw), log=lambda s: None).plan
    logged = []
    anchored = plan_run(PlanConfig(**kw, calibrate=str(run)), log=logged.append).plan
    assert any("calibrated with 1 of your runs" in line for line in logged)
    both = anchored.top(5000).merge(plain.top(5000), on="key", suffixes=("", "_plain"))
    moved = np.log(both["predicted_tokens_per_s_per_device"] / both["predicted_tokens_per_s_per_device_plain"])
    assert (np.sign(moved) == np.sign(moved.iloc[0])).all() and (moved != 0).all()  # one offset's direction
    # the run's layout but its micro-batch: the nearer in micro-batch, the further moved
    alike = both[(both["tp"] == 1) & (both["pp"] == 1) & (both["cp"] == 1) & (both["fsdp"] == both["fsdp"].iloc[0])
                 & (both["activation_checkpointing"] == "none")]
    by_mb = moved[alike.index].groupby(alike["micro_batch_size"].astype(int)).first().abs()
    assert len(by_mb) >= 2 and by_mb.is_monotonic_decreasing and by_mb.iloc[0] > by_mb.iloc[-1]


def test_a_runs_csv_is_a_dataset_and_its_bad_rows_name_their_line(tmp_path):
    runs = tmp_path / "runs.csv"
    row = {"model": "llama3-8b", "seq_len": 8192, "global_batch_size": 64, "n_gpus": 8, "tp": 2,
           "micro_batch_size": 1, "precision": "bf16", "accelerator": H100}
    pd.DataFrame([{**row, "tokens_per_s_per_device": 9000.0}, {**row, "tp": 1, "tokens_per_s": 64000.0}]).to_csv(
        runs, index=False)
    ds = load_dataset(str(runs))
    assert ds.target == "metrics.throughput_per_device" and len(ds) == 2
    assert ds.frame["config.n_layers"].tolist() == [32, 32]  # the catalog's shape, as predict fills it
    assert ds.y.tolist() == [9000.0, 8000.0]  # a job's tokens/s is divided by its GPUs
    bad = tmp_path / "bad.csv"
    pd.DataFrame([{**row, "tokens_per_s_per_device": "fast"}]).to_csv(bad, index=False)
    with pytest.raises(DataError, match="bad.csv, line 2.*tokens_per_s_per_device"):
        load_dataset(str(bad))
    wrong = tmp_path / "wrong.csv"
    pd.DataFrame([{**row, "tp": 3, "tokens_per_s_per_device": 9000.0}]).to_csv(wrong, index=False)
    with pytest.raises(DataError, match="wrong.csv, line 2: tp x pp"):
        load_dataset(str(wrong))


def test_plan_ties_use_the_error_between_two_layouts_of_one_model():
    from perfzoo.plan.scoring import Scorer
    model = fitted_constant()
    low, high = Scorer(model).relative()
    # one run of the group anchoring the other layout: sd = sqrt(tau sigma / (tau + sigma) + sigma), tau = 0.06
    sd = np.sqrt(0.06 * 0.01 / 0.07 + 0.01)
    z_lo, z_hi = model.spread_.quantiles(0.2)
    assert (low, high) == (pytest.approx(np.exp(z_lo * sd)), pytest.approx(np.exp(z_hi * sd)))
    # a member without its interval: no spread, so the top pick's own interval decides
    assert Scorer(model.member_).relative() is None and Scorer(model.member_).interval(pd.DataFrame()) is None
