"""The runner's cache, the ranking by member tags, the leaderboard writer and the
``python -m perfzoo.bench`` CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.sbatch import SlurmOptions
from perfzoo import bench, zoo
from perfzoo.console import InputError, config_from_args
from perfzoo.datasets import load_dataset
from perfzoo.datasets.sources.vtrain import VTRAIN_COLUMNS, VTRAIN_PARAMS
from perfzoo.evaluation import leaderboard, ranking, report, runner, tasks
from perfzoo.evaluation.cross import cross_specs
from perfzoo.evaluation.tasks import PredictorSpec
from test_transfer import three_labs


class CountingLinear:
    """A tiny log-linear model that counts its fits (class-wide, in this process)."""

    fits = 0

    def __init__(self, alpha: float = 1.0, random_state: int = 0):
        self.alpha = alpha
        self.random_state = random_state

    def get_params(self, deep: bool = True):
        return {"alpha": self.alpha, "random_state": self.random_state}

    def set_params(self, **params):
        for k, v in params.items():
            setattr(self, k, v)
        return self

    def _Z(self, X: pd.DataFrame) -> np.ndarray:
        Z = np.log2(X[self.cols_].apply(pd.to_numeric, errors="coerce").fillna(1.0).clip(lower=1e-9).to_numpy(float))
        return np.c_[np.ones(len(Z)), Z]

    def fit(self, X, y):
        type(self).fits += 1
        self.cols_ = [c for c in X.columns if pd.api.types.is_numeric_dtype(X[c])]
        Z = self._Z(X)
        self.w_ = np.linalg.solve(Z.T @ Z + self.alpha * np.eye(Z.shape[1]), Z.T @ np.log(y))
        return self

    def predict(self, X):
        return np.exp(self._Z(X) @ self.w_)


@pytest.fixture(scope="module")
def vtrain(external):
    return load_dataset("vtrain-a100", external_dir=external)


def test_cache_reuses_results(vtrain, tmp_path):
    spec = PredictorSpec("counting", factory=CountingLinear)
    CountingLinear.fits = 0
    first = runner.run([vtrain], [spec], ["random", "scale"], seeds=range(2), jobs=1,
                       cache_dir=tmp_path / "cache", progress=False)
    assert CountingLinear.fits == 4 and first.computed == 4 and first.cached == 0
    assert not first.errors and first.frame["kendall"].notna().all()

    second = runner.run([vtrain], [spec], ["random", "scale"], seeds=range(2), jobs=1,
                        cache_dir=tmp_path / "cache", progress=False)
    assert CountingLinear.fits == 4, "the second run must compute nothing"
    assert second.computed == 0 and second.cached == 4
    cols = ["split", "seed", "kendall", "spearman", "top1_regret"]
    a = first.frame[cols].sort_values(["split", "seed"]).reset_index(drop=True)
    b = second.frame[cols].sort_values(["split", "seed"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    assert len(second.predictions) == 4  # scatter data comes back from the cache too

    # what changed is recomputed, and only that: one more seed, then a new parameter
    runner.run([vtrain], [spec], ["random"], seeds=range(3), jobs=1, cache_dir=tmp_path / "cache", progress=False)
    assert CountingLinear.fits == 5
    other = PredictorSpec.of("counting", params={"alpha": 2.0}, factory=CountingLinear)
    runner.run([vtrain], [other], ["random"], seeds=range(1), jobs=1, cache_dir=tmp_path / "cache", progress=False)
    assert CountingLinear.fits == 6


def test_parallel_run_matches_serial(vtrain, tmp_path):
    spec = PredictorSpec("counting", factory=CountingLinear)
    serial = runner.run([vtrain], [spec], ["random"], seeds=range(2), jobs=1, cache_dir=None, progress=False)
    parallel = runner.run([vtrain], [spec], ["random"], seeds=range(2), jobs=2, cache_dir=None, progress=False)
    key = ["seed", "kendall", "pearson"]
    pd.testing.assert_frame_equal(serial.frame[key].sort_values("seed").reset_index(drop=True),
                                  parallel.frame[key].sort_values("seed").reset_index(drop=True))


def test_unsupported_splits_are_skipped_with_a_reason(vtrain):
    skipped: list = []
    built = tasks.build_tasks(vtrain, [PredictorSpec("counting", factory=CountingLinear)],
                              ["random", "temporal"], seeds=[0], skipped=skipped)
    assert {t.ids["split"] for t in built} == {"random"}
    assert skipped and skipped[0]["split"] == "temporal" and "share one" in skipped[0]["reason"]


class FailsLinear(CountingLinear):
    """Not named ``failure``, but tagged as a classifier of failed jobs: P(fail) per row."""

    output = "probability"

    def fit(self, X, y):
        self.rate_ = float(np.mean(y))
        return self

    def predict_proba(self, X):
        return np.column_stack([np.full(len(X), 1 - self.rate_), np.full(len(X), self.rate_)])


class ScoresLinear(CountingLinear):
    """A ranking member: its outputs are scores, so its MAPE means nothing."""

    output = "score"


@pytest.mark.external
def test_evaluation_follows_member_tags_not_names():
    ds = load_dataset("fsdp-cpu")  # bundled, with OOM rows
    specs = [PredictorSpec("counting", factory=CountingLinear), PredictorSpec("fails", factory=FailsLinear),
             PredictorSpec("scores", factory=ScoresLinear)]
    built = tasks.build_tasks(ds, specs, ["random"], seeds=range(4))
    by_name = {}
    for t in built:
        by_name.setdefault(t.ids["predictor"], []).append(t)
    assert all(not t.failure and np.isfinite(t.y_train).all() for t in by_name["counting"])  # labelled rows only
    assert by_name["fails"] and all(t.failure and t.ids["output"] == "probability" for t in by_name["fails"])
    assert all(len(t.X_train) + len(t.X_test) == len(ds) for t in by_name["fails"])  # every row, failed ones too
    frame = pd.DataFrame(runner.execute(t) for t in built)
    summary = ranking.summarize(frame)
    assert set(ranking.ranked(summary, ds.name)["predictor"]) == {"counting", "scores"}
    rows = {line.split("|")[1].strip(" *★"): line for line in report.split_table(summary, ds.name, "random").splitlines()[2:]}
    assert set(rows) == {"counting", "scores"}
    assert "n/a" in rows["scores"] and "n/a" not in rows["counting"]  # MAPE


def test_leaderboard_files_and_load_best(vtrain, tmp_path):
    specs = [PredictorSpec("ridge"), PredictorSpec("constant", curve=False)]
    res = runner.run([vtrain], specs, ["random", "scale", "curve"], seeds=range(2), jobs=1,
                     cache_dir=None, curve_sizes=(25, 100), curve_seeds=range(2), progress=False)
    ctx = report.run_context("python -m perfzoo.bench --test", 1.0)
    best = leaderboard.write(res, [vtrain], specs, tmp_path, ctx)
    readme = (tmp_path / "README.md").read_text()
    for text in ("## vtrain-a100", "### random", "### scale", "### learning curve", "Kendall", "± ",
                 "AutoGluon", ctx["commit"], "--test", "**ridge** ★"):
        assert text in readme
    table = pd.read_csv(tmp_path / "results.csv")
    assert set(table["split"]) == {"random", "scale", "curve"}
    defined = json.loads((tmp_path / "tasks.json").read_text())
    assert set(table["task"]) == {t["id"] for t in defined} == {t.id for t in res.tasks}
    assert all(f"Task `{t['id']}`." in readme for t in defined)  # every table names its task
    assert len(table) == 2 * (2 + 2) + 2 * 2  # both members on random+scale, ridge on the curve
    assert (tmp_path / "figures" / "vtrain-a100-scatter.png").stat().st_size > 1000
    assert (tmp_path / "figures" / "vtrain-a100-curve.png").stat().st_size > 1000
    entry = best["datasets"]["vtrain-a100"]
    assert entry["predictor"] == "ridge"  # a constant ranks nothing (Kendall NaN): never "best"
    assert json.loads((tmp_path / "best.json").read_text())["rule"] == ranking.BEST_RULE

    # the saved artifact is a ready predictor, equal to ridge fitted on every job
    model = zoo.load_best("vtrain-a100", tmp_path)
    ref = zoo.make("ridge").fit(vtrain.X, vtrain.y)
    np.testing.assert_allclose(model.predict(vtrain.X.head(20)), ref.predict(vtrain.X.head(20)), rtol=1e-9)
    with pytest.raises(KeyError, match="no best predictor"):
        zoo.load_best("published-llm", tmp_path)

    # a rerun with nothing changed keeps the saved artifact (no churn in the repository)
    saved = tmp_path / entry["artifact"] / "model.joblib"
    before = saved.stat().st_mtime_ns
    again = leaderboard.write(res, [vtrain], specs, tmp_path, ctx, figures=False)
    assert again["datasets"]["vtrain-a100"]["artifact_key"] == entry["artifact_key"]
    assert saved.stat().st_mtime_ns == before

    # the data changed (a loader reads more of a table): --refit-shipped fits the same member on it, scores kept
    from perfzoo.evaluation.artifacts import refit_shipped

    changed = vtrain.subset(np.arange(0, len(vtrain), 2))
    assert refit_shipped([changed], tmp_path, ctx) == ["vtrain-a100"]
    after = json.loads((tmp_path / "best.json").read_text())["datasets"]["vtrain-a100"]
    assert after["content_hash"] == changed.content_hash() != entry["content_hash"]
    assert after["refitted"]["scored_on"] == entry["content_hash"] and after["kendall"] == entry["kendall"]
    assert after["artifact_n_train"] == int(changed.is_labelled.sum())
    ref = zoo.make("ridge").fit(changed.X, changed.y)
    np.testing.assert_allclose(zoo.load_best("vtrain-a100", tmp_path).predict(vtrain.X.head(20)),
                               ref.predict(vtrain.X.head(20)), rtol=1e-9)
    assert refit_shipped([changed], tmp_path, ctx) == []  # fitted on the data as it is: nothing to do


def _write_vtrain_subset(src: Path, dst: Path, keep, multi: bool) -> int:
    """Copy the vTrain rows that ``keep`` selects, in the single- or multi-node layout."""
    table = pd.read_csv(src, encoding="utf-8-sig")
    table = table[keep(table)].copy()
    if multi:  # the multi-node layout: a leading 'Parameters (billion)' column
        params = 12 * table["# layers"] * table["hidden size"] ** 2 / 1e9
        table.insert(0, VTRAIN_PARAMS, params.round(2))
        assert list(table.columns) == [VTRAIN_PARAMS, *VTRAIN_COLUMNS]
    table.to_csv(dst, index=False)
    return len(table)


def test_cross_dataset_json_parses(tmp_path, capsys, external):
    src = external / "vtrain_ground_truth_single.csv"
    train = tmp_path / "vtrain_small.csv"
    test = tmp_path / "vtrain_multi.csv"
    _write_vtrain_subset(src, train, lambda t: t["# GPUs"] <= 4, multi=False)
    n_test = _write_vtrain_subset(src, test, lambda t: t["# GPUs"] == 8, multi=True)
    rc = bench.main(["--train", str(train), "--test", str(test), "--predictor", "constant,ridge", "--json"])
    assert rc == 0
    lines = [l for l in capsys.readouterr().out.splitlines() if l.strip()]
    rows = [json.loads(l) for l in lines]
    assert [r["predictor"] for r in rows] == ["constant", "ridge"]
    for r in rows:
        for key in ("kendall", "spearman", "pearson", "grouped_kendall", "top1_regret"):
            assert key in r
        assert r["n_test"] == n_test and r["error"] is None
    assert rows[1]["kendall"] > 0.5  # small-scale jobs rank the 8-GPU ones
    assert rows[0]["kendall"] is None  # a constant ranks nothing: NaN -> null


def test_cross_runs_the_shipped_pick_as_best(tmp_path, capsys, external):
    src = external / "vtrain_ground_truth_single.csv"
    train, test = tmp_path / "vtrain_small.csv", tmp_path / "vtrain_multi.csv"
    _write_vtrain_subset(src, train, lambda t: t["# GPUs"] <= 4, multi=False)
    _write_vtrain_subset(src, test, lambda t: t["# GPUs"] == 8, multi=True)
    name = load_dataset(str(train)).name
    board = tmp_path / "board"
    board.mkdir()
    (board / "best.json").write_text(json.dumps({"datasets": {name: {"predictor": "ridge", "name": "ridge", "params": {}}}}))
    rc = bench.main(["--train", str(train), "--test", str(test), "--predictor", "best,constant,ridge", "--leaderboard",
                     str(board), "--json", "--jobs", "1"])
    assert rc == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert [r["predictor"] for r in rows] == ["ridge (best)", "constant"]  # the shipped ridge runs once
    best = rows[0]
    for key in ("kendall", "mape", "mdape", "ratio_median", "coverage", "interval_width"):
        assert isinstance(best[key], float), key
    assert best["shots"] == 0 and best["draws"] == 1
    assert rows[1]["ratio_median"] is not None and rows[1]["kendall"] is None  # a constant prices, but ranks nothing

    # the default members: the shipped pick first, then the shipped kinds and a few fast ones
    specs = cross_specs(None, name, str(board))
    assert [s.display for s in specs][:1] == ["ridge (best)"]
    assert {"roofline", "hybrid_roofline", "constant", "analytic"} <= {s.display for s in specs}
    assert [s.display for s in cross_specs(None, "unknown-data", str(board))][0] == "constant"
    # named, a missing pick is an error that says where it looked
    assert bench.main(["--train", str(test), "--test", str(train), "--predictor", "best", "--leaderboard", str(board)]) == 2
    assert "--predictor best:" in capsys.readouterr().err


def _analytic_across(capsys, train: str, test: str) -> tuple[dict, str]:
    """The JSON row of ``bench --train TRAIN --test TEST --predictor analytic`` and what it said on stderr."""
    assert bench.main(["--train", train, "--test", test, "--predictor", "analytic", "--json", "--jobs", "1"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out.strip()), captured.err


@pytest.mark.external
def test_cross_leaves_the_test_jobs_out_of_training(capsys):
    row, err = _analytic_across(capsys, "published-llm", "published-torchtitan")
    llm, titan = load_dataset("published-llm"), load_dataset("published-torchtitan")
    assert row["n_train"] == int(llm.is_labelled.sum()) - int(titan.is_labelled.sum())
    assert row["n_test"] == int(titan.is_labelled.sum())
    assert f"{len(titan)} of published-llm's {len(llm)} jobs are published-torchtitan's" in err
    # torchtitan's tables ran one model under several precisions, compile and float8 gathers: its slots are scored
    assert row["slots"] >= 3 and -1 <= row["slot_kendall"] <= 1
    assert row["slot_spread"] > 0 and 0 <= row["slot_regret"] < 1


@pytest.mark.external
def test_cross_scores_on_the_training_target(capsys):
    row, err = _analytic_across(capsys, "vtrain-a100", "published-megatron")
    assert "published-megatron scored on metrics.throughput" in err
    assert 0.2 < row["ratio_median"] < 5  # global tokens/s on both sides, not global against per device


def test_cli_rejects_unknown_names(capsys):
    assert bench.main(["--datasets", "no-such-dataset", "--quiet"]) == 2
    assert "unknown dataset" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main(["--train", "vtrain-a100"])
    with pytest.raises(SystemExit):
        bench.main(["--datasets", "vtrain-a100", "--shots", "3"])
    assert "--shots goes with --train and --test" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main(["--train", "a", "--test", "b", "--shots", "1,x"])
    assert "'x' is not a number of jobs" in capsys.readouterr().err


def test_transfer_splits_report_absolute_error_and_interval_coverage(tmp_path, write_published):
    labs = three_labs(tmp_path, write_published)
    res = runner.run([labs], [PredictorSpec("ridge"), PredictorSpec("analytic")], ["random", "node", "group"],
                     seeds=range(1), jobs=1, cache_dir=None, group_columns={labs.name: ["annotations.file"]},
                     progress=False)
    assert not res.errors
    frame = res.frame.set_index(["split", "predictor"]).sort_index()
    assert set(frame.index.get_level_values("split")) == {"random", "node", "group:annotations.file"}
    assert frame[["mape", "mdape", "ratio_median"]].notna().all().all()  # absolute error on every split
    transfer = frame.loc[["node", "group:annotations.file"]]
    assert transfer["coverage"].between(0, 1).all() and (transfer["interval_width"] >= 1).all()
    assert frame.loc["random", "coverage"].isna().all()  # intervals are calibrated on transfer splits only
    # the labs run at 40%, 55% and 30% of the analytic estimate: left out in turn, each is predicted
    # from the others' efficiency, off by a known factor
    held_out = res.frame[(res.frame["split"] == "group:annotations.file") & (res.frame["predictor"] == "analytic")]
    ratio = dict(zip(held_out["fold"], held_out["ratio_median"]))
    assert ratio["lab_b.csv"] < 1 < ratio["lab_c.csv"]


def _summary(members: dict, splits: tuple, mape: float = 10.0) -> pd.DataFrame:
    """A synthetic summary: ``members`` maps a name to its mean Kendall per split (None: no result)
    and, optionally, a second tuple of MAPEs per split (default ``mape`` everywhere)."""
    rows = []
    for predictor, values in members.items():
        ks, mapes = (values, (mape,) * len(splits)) if not isinstance(values[0], tuple) else values
        for split, k, m in zip(splits, ks, mapes):
            if k is not None:
                rows.append({"dataset": "d", "split": split, "kind": split.split(":")[0], "predictor": predictor,
                             "output": "throughput", "kendall_mean": k, "mape_mean": m,
                             "fit_time_s_mean": 0.1 if predictor == "fast_tie" else 1.0})
    return pd.DataFrame(rows)


def test_the_shipped_pick_is_chosen_on_transfer_not_on_the_random_split():
    SOURCE_SPLIT = ranking.SOURCE_SPLIT
    summary = _summary({"fits": (0.96, 0.70, 0.72), "transfers": (0.92, 0.90, 0.89), "fast_tie": (0.92, 0.90, 0.887),
                        "partial": (0.99, 0.99, None)}, ("random", "scale", SOURCE_SPLIT))
    order = ranking.shipping_order(summary, "d")
    # mean over random, scale and leave-one-source-out; a member missing a shipping split is not eligible;
    # within 0.005 the faster fit wins
    assert order["predictor"].tolist() == ["fast_tie", "transfers", "fits"]
    assert order.iloc[0]["ship_kendall"] == pytest.approx((0.92 + 0.90 + 0.887) / 3)
    assert order.iloc[0][f"kendall@{SOURCE_SPLIT}"] == pytest.approx(0.887)
    assert order.iloc[0]["split"] == "random"
    # every member is off by 10% on the transfer split: the score is the Kendall less 0.05
    assert order.iloc[0]["ship_score"] == pytest.approx(order.iloc[0]["ship_kendall"] - 0.05)
    assert order.iloc[0][f"mape@{SOURCE_SPLIT}"] == pytest.approx(10.0)


def test_a_member_that_ranks_best_but_is_off_by_2x_does_not_ship():
    splits = ("random", "scale", ranking.SOURCE_SPLIT, "node")
    summary = _summary({
        # top Kendall everywhere, but 100% MAPE on the transfer splits (leave one source out, node)
        "ranks": ((0.97, 0.95, 0.93, 0.93), (5.0, 8.0, 100.0, 100.0)),
        # slightly lower Kendall, 10% MAPE
        "prices": ((0.95, 0.93, 0.91, 0.90), (5.0, 8.0, 10.0, 10.0)),
    }, splits)
    order = ranking.shipping_order(summary, "d")
    assert order["predictor"].tolist() == ["prices", "ranks"]
    ranks = order.set_index("predictor").loc["ranks"]
    # rank splits: random, scale, leave-one-source-out; error splits: leave-one-source-out and node
    assert ranks["ship_kendall"] == pytest.approx((0.97 + 0.95 + 0.93) / 3)
    assert ranks["ship_mape"] == pytest.approx(100.0) and "mape@random" not in order.columns
    assert ranks["ship_score"] == pytest.approx(ranks["ship_kendall"] - ranking.MAPE_WEIGHT)
    assert ranking.ship_splits(summary, "d") == (["random", "scale", ranking.SOURCE_SPLIT], [ranking.SOURCE_SPLIT, "node"])


def test_without_transfer_splits_the_scale_split_prices_and_scores_do_not_ship():
    summary = _summary({"ranks": ((0.97, 0.95), (5.0, 60.0)), "prices": ((0.96, 0.94), (40.0, 12.0))},
                       ("random", "scale"))
    scores = summary[summary["predictor"] == "ranks"].assign(predictor="scores", output="score", mape_mean=np.nan)
    summary = pd.concat([summary, scores], ignore_index=True)
    assert ranking.ship_splits(summary, "d") == (["random", "scale"], ["scale"])
    order = ranking.shipping_order(summary, "d")
    # the scale split's MAPE (60 vs 12) decides; a member whose outputs are scores has no MAPE: not eligible
    assert order["predictor"].tolist() == ["prices", "ranks"]


def test_run_from_python_writes_the_leaderboard_and_returns_the_scores(tmp_path):
    results = bench.run(bench.BenchConfig(datasets=["llm-cpu"], predictors=["ridge"], splits=["random"], seeds=1,
                                          out=str(tmp_path / "lb"), no_cache=True, no_figures=True, no_artifacts=True,
                                          quiet=True, jobs=1))
    assert set(results.frame["predictor"]) == {"ridge"} and results.frame["kendall"].notna().all()
    readme = (tmp_path / "lb" / "README.md").read_text()
    assert "perfzoo.bench.run(datasets=['llm-cpu']" in readme and "## llm-cpu" in readme


@pytest.mark.parametrize("fields, error, message", [
    ({"splits": ["random", "sideways"]}, ValueError, "unknown split sideways; choose from random"),
    ({"seeds": 0}, InputError, "--seeds must be at least 1, got 0"),
    ({"curve_sizes": (25, 1)}, InputError, "--curve-sizes 1 is not a training-set size"),
    ({"slurm": SlurmOptions(partition="cpu")}, InputError, "--partition is a Slurm option; add --launcher slurm"),
    ({"launcher": "slurm", "slurm": SlurmOptions(time_min=0)}, InputError, "--time must be at least 1"),
    ({"launcher": "slurm", "slurm": SlurmOptions(nodes=2)}, InputError, "--nodes is for jobs laid out over nodes"),
    ({"launcher": "cloud"}, InputError, "--launcher"),
])
def test_a_bad_config_field_is_named(fields, error, message):
    with pytest.raises(error, match=message):
        bench.BenchConfig(**fields)


@pytest.mark.parametrize("flag, value, message", [
    ("--out", "/proc/perfzoo-leaderboard", "--out /proc/perfzoo-leaderboard: cannot write there"),
    ("--cache-dir", "/proc/perfzoo-cache", "--cache-dir /proc/perfzoo-cache: cannot write there"),
    ("--out", "{file}/leaderboard", "--out {file}/leaderboard: {file} is a file, not a folder"),
])
def test_an_output_folder_that_cannot_be_written_is_refused_before_any_fit(flag, value, message, tmp_path, capsys):
    """Found after 41 s of fitting, with joblib's warning, before: now one line and no fit."""
    file = tmp_path / "taken"
    file.write_text("")
    value, message = value.format(file=file), message.format(file=file)
    assert bench.main(["--predictors", "ridge", "--datasets", "llm-cpu", "--splits", "random", "--seeds", "1",
                       "--no-figures", "--no-artifacts", "--quiet", flag, value]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [f"perfzoo bench: error: {message}" + err.split(message, 1)[1]]
    assert not (tmp_path / "leaderboard").exists()


@pytest.mark.parametrize("fields, message", [
    ({"predictors": ["ridge", "ridge"]}, "--predictors names ridge more than once: keep one of each"),
    ({"datasets": ["llm-cpu", "llm-h100", "llm-cpu"]}, "--datasets names llm-cpu more than once"),
])
def test_a_member_or_dataset_named_twice_is_refused(fields, message, capsys):
    with pytest.raises(InputError, match=message):
        bench.BenchConfig(**fields)
    assert bench.main(["--predictors", "ridge,ridge", "--datasets", "llm-cpu"]) == 2
    assert "--predictors names ridge more than once" in capsys.readouterr().err


class _SecondShareLost:
    """Stands in for :class:`runner.Slurm`: runs the first job's share here and reports a second
    job as ended by Slurm without results."""

    def run(self, fn, items):
        if len(items) > 1:
            yield 1, None, "Slurm job 7_1 ended TIMEOUT"
        yield 0, fn(items[0]), None


def test_fits_of_a_slurm_job_that_ended_without_results_are_errors_and_not_cached(tmp_path):
    built = tasks.build_tasks(load_dataset("llm-cpu"), [PredictorSpec("counting", factory=CountingLinear)], ["random"],
                              seeds=[0, 1], skipped=[])
    cache = tasks.Cache(tmp_path / "cache")
    results, computed, cached = runner.run_tasks(built, jobs=2, cache=cache, progress=False, slurm=_SecondShareLost())
    assert computed == 2 and cached == 0
    assert results[0]["error"] is None and results[0]["kendall"] == results[0]["kendall"]
    assert results[1]["error"] == "Slurm job 7_1 ended TIMEOUT" and results[1]["seed"] == 1
    assert cache.get(built[0].key) is not None and cache.get(built[1].key) is None  # the lost fit runs again next time
    again, computed, cached = runner.run_tasks(built, jobs=2, cache=cache, progress=False, slurm=_SecondShareLost())
    assert (computed, cached) == (1, 1) and again[1]["error"] is None and cache.get(built[1].key) is not None


def test_the_slurm_flags_of_bench_set_its_slurm_options(capsys):
    args = bench.build_parser().parse_args(["--launcher", "slurm", "--partition", "cpu", "--time", "30",
                                            "--slurm-arg", "reservation=r1", "--slurm-folder", "shared/slurm"])
    config = config_from_args(bench.BenchConfig, args)
    assert config.slurm == SlurmOptions(partition="cpu", time_min=30, extra={"reservation": "r1"}, folder="shared/slurm")
    jobs = config.slurm_jobs()
    assert jobs.options is config.slurm and jobs.folder == str(Path("shared/slurm").resolve())
    assert bench.BenchConfig().slurm_jobs() is None
    # a malformed one is a one-line error, as every other mistake
    assert bench.main(["--launcher", "slurm", "--slurm-arg", "reservation", "--list-tasks"]) == 2
    assert capsys.readouterr().err == \
        "perfzoo bench: error: --slurm-arg 'reservation': expected KEY=VALUE, e.g. reservation=r1\n"


def test_bench_on_slurm_without_slurm_commands_says_where_to_run_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch, no sacct
    code = bench.main(["--datasets", "llm-cpu", "--predictors", "ridge", "--splits", "random", "--seeds", "1",
                       "--out", str(tmp_path / "lb"), "--no-cache", "--quiet", "--launcher", "slurm"])
    assert code == 2
    assert "sbatch, sacct not found: run --launcher slurm on a Slurm login node" in capsys.readouterr().err


def test_the_commit_is_taken_before_the_run_writes_its_outputs(tmp_path, monkeypatch, external):
    """The leaderboard's outputs are tracked files: the commit a run names is the checkout's as it started,
    not one its own writing made dirty."""
    out = tmp_path / "lb"
    seen = []

    def context(command, wall_time_s=None):
        seen.append(sorted(p.name for p in out.rglob("*")) if out.exists() else [])
        return report.run_context(command, wall_time_s)

    monkeypatch.setattr(bench, "run_context", context)
    bench.run(bench.BenchConfig(datasets=["published-llm"], predictors=["ridge"],
                                splits=["random", "transfer"], seeds=1, out=str(out), no_cache=True, quiet=True, jobs=1))
    assert seen == [[]] and (out / "best.json").is_file() and (out / "transfer.csv").is_file()
