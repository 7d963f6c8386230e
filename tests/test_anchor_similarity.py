"""Anchors by similarity, checked: the layout distance (perfzoo.zoo.similarity), a far run or a run of
another model moving a prediction and its interval little (perfzoo.zoo.anchor), and the runs refused
or left out before they anchor (perfzoo.zoo.plausible), through ``predict --calibrate``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_anchor import fitted_constant
from test_calibrate import CONFIG, labs  # noqa: F401 (the fixture)

from perfzoo.datasets import load_dataset
from perfzoo.datasets.sources import DataError
from perfzoo.predict import PredictConfig
from perfzoo.predict import run as predict
from perfzoo.zoo import similarity
from perfzoo.zoo.anchor import Anchored
from perfzoo.zoo.plausible import implied_mfu
from perfzoo.zoo.similarity import FITTED, distance, layout

H100 = "H100-SXM-80GB"
STUDY = Path(__file__).parents[1] / "docs" / "studies" / "anchor-similarity-1129" / "similarity.py"


def test_the_layout_distance_counts_doublings_recompute_levels_and_unknowns():
    X = pd.DataFrame({"config.n_gpus": [8, 64, 8, 8], "hardware.nodes": [1, 8, 1, None], "config.tp": [1, 2, None, 1],
                      "config.micro_batch_size": [1, 4, 1, 1], "config.seq_len": [4096, 4096, 8192, None],
                      "config.activation_checkpointing": ["none", "full", "selective", "none"]})
    d = distance(layout(X), layout(X))
    # 8x the GPUs and nodes, tp 1 -> 2, micro-batch 4x, recompute none -> full; a missing tp is 1 (not used), then
    # selective (one level) and twice the sequence; a nodes count and a sequence one row leaves out: 1 each
    assert d[0].tolist() == [0.0, 3 + 3 + 1 + 2 + 2, 1 + 1, 1 + 1]
    assert d[3, 3] == 0.0 and np.allclose(d, d.T)


def _frame(hidden: list[int], gpus: list[int]) -> pd.DataFrame:
    return pd.DataFrame({"config.hidden_dim": hidden, "config.n_gpus": gpus, "hardware.nodes": [max(1, g // 8) for g in gpus],
                         "hardware.accelerator": [H100] * len(gpus)})


def test_a_far_run_or_a_run_of_another_model_moves_a_prediction_and_its_interval_little():
    model = fitted_constant()  # 1,000 tokens/s everywhere; tau_c^2 0.04, tau_g^2 0.02, sigma^2 0.01
    V, r = 0.07, np.log(1.5)
    anchored = Anchored(model, _frame([4096], [8]), [1500.0])
    # its model on its layout, on 128x the GPUs and nodes (distance 7 + 7), another model on its layout
    X = _frame([4096, 4096, 8192], [8, 1024, 8])
    pred = anchored.predict(X)
    assert np.log(pred / 1000) == pytest.approx([FITTED(0) * r, FITTED(14) * r, FITTED(0) * 0.04 / V * r])
    low, high = anchored.predict_interval(X)
    width = np.log(high / low)
    assert width[0] < width[2] < width[1]  # the near run narrows most; another model by the cluster's share
    z_lo, z_hi = anchored.spread.quantiles(0.2)
    assert width[1] == pytest.approx((z_hi - z_lo) * np.sqrt(V * (1 - FITTED(14) ** 2)))  # next to the prior's
    assert width[2] == pytest.approx((z_hi - z_lo) * np.sqrt(V - (FITTED(0) * 0.04) ** 2 / V))


def _runs_csv(path: Path, rows: list[dict]) -> Path:
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_a_run_faster_than_its_gpu_is_refused_naming_its_line(labs, tmp_path):  # noqa: F811
    public, _ = labs
    cfg = {**CONFIG, "global_batch_size": 64, "n_gpus": 16, "dp": 16}
    run = _runs_csv(tmp_path / "one_run.csv", [{**cfg, "tokens_per_s_per_device": 9_000_000.0}])
    with pytest.raises(DataError, match=r"^one_run.csv line 2: 9,000,000 tokens/s per GPU is \d+x what its GPU "
                                        r"can do \(989 TFLOP/s at \d+\.\d GFLOP per token\); .*check the unit") as err:
        predict(PredictConfig(knobs=[f"{k}={v}" for k, v in cfg.items()], dataset=str(public), predictor="analytic",
                              calibrate=str(run)))
    assert "\n" not in str(err.value)


def test_a_run_far_off_its_prediction_is_left_out_with_a_warning(labs, tmp_path):  # noqa: F811
    public, _ = labs
    near = {**CONFIG, "global_batch_size": 64, "n_gpus": 16, "dp": 16}
    far = {**CONFIG, "global_batch_size": 128, "n_gpus": 32, "dp": 32}
    base = {n: predict(PredictConfig(knobs=[f"{k}={v}" for k, v in c.items()], dataset=str(public), predictor="analytic"))
            ["predicted_tokens_per_s_per_device"].iloc[0] for n, c in (("near", near), ("far", far))}
    runs = _runs_csv(tmp_path / "runs.csv", [{**near, "tokens_per_s_per_device": 1.2 * base["near"]},
                                             {**far, "tokens_per_s_per_device": 0.2 * base["far"]}])
    with pytest.warns(UserWarning, match=r"runs.csv line 3 measured 0.2x its prediction .*more than 3x off"):
        table = predict(PredictConfig(knobs=[f"{k}={v}" for k, v in far.items()], dataset=str(public),
                                      predictor="analytic", calibrate=str(runs)))
    assert "runs.csv line 2" in table["calibration"].iloc[0] and "line 3" not in table["calibration"].iloc[0]
    assert table.attrs["calibration"].startswith("calibrated with 1 of your runs")
    assert "left out runs.csv line 3: measured 0.2x its prediction" in table.attrs["calibration"]
    # moved by the one run it keeps, three doublings away (GPUs, nodes, batch)
    moved = table["predicted_tokens_per_s_per_device"].iloc[0] / base["far"]
    assert moved == pytest.approx(1.2 ** FITTED(3), rel=1e-3)


@pytest.mark.external
def test_no_run_of_the_shared_tables_is_faster_than_its_gpu():
    for name in ("published-llm", "vtrain-a100"):
        ds = load_dataset(name).labelled().ok()
        mfu, _, _ = implied_mfu(ds.frame, np.asarray(ds.y, dtype=float), ds.target)
        assert np.isfinite(mfu).all() and 0.02 < np.median(mfu) and mfu.max() < 0.7, name


@pytest.mark.external
def test_the_fitted_similarity_is_what_the_shared_tables_give():
    spec = importlib.util.spec_from_file_location("anchor_similarity_study", STUDY)
    study = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study)
    assert similarity.fit(*study.residuals()) == FITTED
