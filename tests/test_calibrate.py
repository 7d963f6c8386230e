"""Few-shot calibration on small synthetic labs (no external data): the join both ``predict
--calibrate`` and ``bench --shots`` use, the fitted interval, and the two commands."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from perfzoo import analytic, bench, zoo
from perfzoo.datasets import load_dataset
from perfzoo.datasets.sources import DataError
from perfzoo.predict import PredictConfig
from perfzoo.predict import run as predict
from perfzoo.zoo import calibrate
from perfzoo.zoo.interval import Interval
from test_datasets import published_row

SHAPES = [(16, 2048), (24, 2048), (32, 4096), (40, 5120), (48, 6144)]
CONFIG = {"n_layers": 32, "hidden_dim": 4096, "n_heads": 32, "n_kv_heads": 32, "ffn_dim": 16384, "vocab_size": 32000,
          "seq_len": 4096, "micro_batch_size": 1, "tp": 1, "pp": 1, "cp": 1, "fsdp": "full_shard",
          "precision": "bf16", "activation_checkpointing": "full", "accelerator": "H100-80GB"}


def lab(tmp_path, write_published, name: str, efficiency: float, gpu_counts, unmeasured: int = 0, shapes=SHAPES):
    """A published-table CSV whose jobs run at ``efficiency`` x the analytic estimate; the last
    ``unmeasured`` rows publish no throughput."""
    rows = []
    for L, d in shapes:
        for n in gpu_counts:
            cfg = {**CONFIG, "n_layers": L, "hidden_dim": d, "n_heads": d // 128, "n_kv_heads": d // 128,
                   "ffn_dim": 4 * d, "global_batch_size": 4 * n, "n_gpus": n, "dp": n}
            tput = efficiency * analytic.throughput(cfg, per_device=True)
            rows.append(published_row(model_name=f"Synthetic {L}x{d}", n_layers=str(L), hidden_dim=str(d),
                                      n_heads=str(d // 128), ffn_dim=str(4 * d), n_kv_heads=str(d // 128),
                                      vocab_size="32000", seq_len="4096", global_batch_size=str(4 * n),
                                      n_gpus=str(n), dp=str(n), tokens_per_sec_per_gpu=f"{tput:.3f}"))
    for row in rows[len(rows) - unmeasured:]:
        row["tokens_per_sec_per_gpu"] = ""
    return write_published(tmp_path / name, rows)


@pytest.fixture
def labs(tmp_path, write_published):
    """(public, runs): a public table at 40% of the estimate (4 jobs), and a user's runs at 80%
    (10 jobs, two unmeasured)."""
    return (lab(tmp_path, write_published, "public_lab.csv", 0.40, [8, 64], shapes=SHAPES[:2]),
            lab(tmp_path, write_published, "my_runs.csv", 0.80, [16, 32], unmeasured=2))


def test_join_adds_the_measured_runs_and_says_so(labs):
    public, runs = (load_dataset(str(p)) for p in labs)
    joined = calibrate.join(public, runs)
    assert (joined.used, joined.unusable, joined.replaced) == (8, 2, 0)
    ds = joined.dataset
    assert len(ds) == len(public) + 8 and ds.name == f"{public.name}+{runs.name}"
    assert ds.target == public.target and ds.feature_columns == public.feature_columns
    assert ds.frame[calibrate.CALIBRATION_COLUMN].sum() == 8
    assert ds.frame[calibrate.SOURCE_COLUMN].nunique() == 2  # the runs are a source of their own
    assert "calibrated with 8 of your jobs from my_runs.csv (2 left out" in joined.describe("my_runs.csv")

    again = calibrate.join(ds, runs)  # the same records a second time count once
    assert again.replaced == 8 and len(again.dataset) == len(ds)


def test_join_refuses_runs_it_cannot_use(labs):
    public, runs = (load_dataset(str(p)) for p in labs)
    no_target = runs.subset(np.arange(len(runs)))
    no_target.frame = no_target.frame.drop(columns=[public.target])
    with pytest.raises(DataError, match="no column 'metrics.throughput_per_device'"):
        calibrate.join(public, no_target)
    knobs = [c for c in public.feature_columns if c.startswith("config.")]
    no_knobs = runs.subset(np.arange(len(runs)))
    no_knobs.frame = no_knobs.frame.assign(**{c: None for c in knobs})
    with pytest.raises(DataError, match="shares no config column"):
        calibrate.join(public, no_knobs)


def test_fit_with_interval_cross_fits_over_the_sources(labs):
    public, runs = (load_dataset(str(p)) for p in labs)
    joined = calibrate.join(public, runs).dataset
    model = calibrate.fit_with_interval(zoo.make("analytic"), joined)
    low, high = model.predict_interval(runs.labelled().X)
    # the two sources (40% and 80% of the estimate) have 4 and 8 jobs, fewer than a fold needs
    # (conformal.MIN_GROUP_ROWS): folds by configuration, and the interval spans the factor 2 between them
    assert np.all(high / low > 1.9)
    assert isinstance(model, Interval) and model.dataset_ == joined.name and model.member_.name == "analytic"
    ranking = calibrate.fit_with_interval(zoo.make("lightgbm_rank", n_estimators=5, min_child_samples=2), joined)
    assert not isinstance(ranking, Interval) and not hasattr(ranking, "predict_interval")  # scores: no interval
    assert np.isfinite(ranking.predict(runs.X)).all()


def test_predict_calibrate_moves_the_prediction_toward_the_users_runs(labs):
    public, runs = labs
    knobs = [f"{k}={v}" for k, v in {**CONFIG, "global_batch_size": 128, "n_gpus": 32, "dp": 32}.items()]
    plain = predict(PredictConfig(knobs=knobs, dataset=str(public), predictor="analytic"))
    calibrated = predict(PredictConfig(knobs=knobs, dataset=str(public), predictor="analytic", calibrate=str(runs)))
    assert calibrated.attrs["calibration"].startswith("calibrated with 8 of your runs")
    assert "left out my_runs.csv line 10, my_runs.csv line 11: no measured throughput" in calibrated.attrs["calibration"]
    assert "anchored by 2 runs of this model" in calibrated["calibration"].iloc[0]  # its 16- and 32-GPU runs
    # the user's cluster runs at 2x the public lab's efficiency: the prediction rises toward it
    assert calibrated["predicted_tokens_per_s"].iloc[0] > 1.2 * plain["predicted_tokens_per_s"].iloc[0]
    assert (calibrated["interval_low"] < calibrated["predicted_tokens_per_s"]).all()
    assert (calibrated["predicted_tokens_per_s"] <= calibrated["interval_high"]).all()


def test_bench_shots_print_one_line_per_count(labs, capsys):
    public, runs = labs
    rc = bench.main(["--train", str(public), "--test", str(runs), "--predictor", "analytic,ridge", "--shots", "0,2",
                     "--shot-seeds", "3", "--json", "--jobs", "1"])
    assert rc == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert [(r["shots"], r["predictor"]) for r in rows] == [(0, "analytic"), (0, "ridge"), (2, "analytic"), (2, "ridge")]
    zero, two = rows[0], rows[2]
    assert (zero["draws"], two["draws"]) == (1, 3)
    assert (zero["n_test"], two["n_test"]) == (8, 6)  # two configurations of the user's 8 joined the training data
    assert (zero["n_train"], two["n_train"]) == (4, 6)
    for r in rows:
        assert r["error"] is None and 0 <= r["coverage"] <= 1 and r["mdape"] >= 0
    # the runs are 2x faster than the public lab: with no shots the analytic member predicts half
    assert zero["ratio_median"] == pytest.approx(0.5, rel=0.02)
    assert zero["mape"] == pytest.approx(50.0, rel=0.05)


def test_bench_reads_an_untidy_test_table_and_says_what_it_read(labs, capsys):
    # a throughput published with thousands separators is read as the number; the test file's load
    # report goes to stderr, so the user sees which rows were scored and which were left out
    public, runs = labs
    table = pd.read_csv(runs, dtype=str, keep_default_na=False)
    measured = table["tokens_per_sec_per_gpu"] != ""
    first = table.index[measured][0]
    value = float(table.loc[first, "tokens_per_sec_per_gpu"])
    table.loc[first, "tokens_per_sec_per_gpu"] = f"{value:,.3f}"
    assert "," in table.loc[first, "tokens_per_sec_per_gpu"]
    untidy = runs.with_name("untidy_runs.csv")
    table.to_csv(untidy, index=False)
    ds = load_dataset(str(untidy))
    row = ds.frame[ds.frame["annotations.line"] == first + 2].iloc[0]
    assert row["metrics.throughput_per_device"] == pytest.approx(value)
    assert row["annotations.tokens_per_sec_per_gpu_raw"] == f"{value:,.3f}"  # the text as published is kept
    rc = bench.main(["--train", str(public), "--test", str(untidy), "--predictor", "analytic", "--json", "--jobs", "1"])
    out = capsys.readouterr()
    assert rc == 0 and json.loads(out.out.splitlines()[0])["n_test"] == 8
    assert "perfzoo bench: test data untidy_runs.csv: 10 rows read: 8 labelled" in out.err


def test_bench_leaves_rows_it_cannot_price_out_of_the_score(labs, capsys):
    # an accelerator the table does not have: predict refuses the config, so the bench scores no
    # member's guess for it (the analytic member's training median, the hybrid's plain fit)
    public, runs = labs
    table = pd.read_csv(runs, dtype=str, keep_default_na=False)
    table.loc[0, "gpu_type"] = "Trainium2"
    odd = runs.with_name("odd_runs.csv")
    table.to_csv(odd, index=False)
    rc = bench.main(["--train", str(public), "--test", str(odd), "--predictor", "analytic,ridge", "--json", "--jobs", "1"])
    out = capsys.readouterr()
    assert rc == 0 and [json.loads(line)["n_test"] for line in out.out.splitlines()] == [7, 7]
    assert "1 of odd-runs's 10 rows cannot be priced (lines 2; accelerator Trainium2): the cost model lacks" in out.err


def test_source_labels_only_where_there_are_several_sources():
    frame = pd.DataFrame({calibrate.SOURCE_COLUMN: ["a.csv", "b.csv", "a.csv"]})
    assert calibrate.source_labels(frame).tolist() == ["a.csv", "b.csv", "a.csv"]
    assert calibrate.source_labels(frame.iloc[[0, 2]]) is None
    assert calibrate.source_labels(pd.DataFrame({"x": [1]})) is None


def test_measured_jobs_are_grouped_by_collection_session():
    # perfzoo's own GPU jobs came from lent machines, one session each: the interval is cross-fitted
    # over sessions (the checkout the harness ran and the day), so it is sized for a machine never seen
    from perfzoo.datasets import load_dataset

    labels = pd.Series(calibrate.source_labels(load_dataset("llm-h100").frame)).value_counts()
    assert labels.tolist() == [211, 90] and all("@2026-11-2" in label for label in labels.index)
    # one session (llm-cpu), or rows not all measured, give no groups
    assert calibrate.source_labels(load_dataset("llm-cpu").frame) is None
    mixed = pd.DataFrame({"source": ["measured", "published"], "software.git_commit": ["a", "b"],
                          "started_at": pd.to_datetime(["2026-11-23", "2026-11-27"])})
    assert calibrate.collection_sessions(mixed) is None and calibrate.source_labels(mixed) is None
