"""Your own predictor on the benchmark without editing perfzoo: an import path, an installed entry
point, any scikit-learn regressor; the contract checked one line per problem; plugins cached and
ranked like members. The user's package is ``tests/data/tests_plugin`` (outside ``perfzoo/``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfzoo import bench, zoo
from perfzoo.datasets import load_dataset
from perfzoo.evaluation import runner
from perfzoo.evaluation.splits import random_split
from perfzoo.evaluation.tasks import PredictorSpec
from perfzoo.testing import check_predictor, predictor_failures
from perfzoo.zoo.plugin import GROUP, SklearnRegressor, problems, source_files

DATA = Path(__file__).parent / "data"
MINE = "tests_plugin.model:Mine"


@pytest.fixture
def plugin_path(monkeypatch):
    """``tests/data`` on this process's path, as a user's ``PYTHONPATH`` puts it."""
    monkeypatch.syspath_prepend(str(DATA))


def _entry_point(site: Path) -> Path:
    """A distribution installed in ``site`` (a dist-info folder) that registers ``mine``."""
    info = site / "tests_plugin_dist-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tests-plugin-dist\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\nmine = {MINE}\n")
    return site


def _bench(args: list[str], pythonpath: list[Path], cwd: Path) -> subprocess.CompletedProcess:
    """``python -m perfzoo.bench ARGS`` in a fresh process with ``pythonpath`` (the cache goes to ``cwd``)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, pythonpath))}
    return subprocess.run([sys.executable, "-m", "perfzoo.bench", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


def _split_rows(name: str):
    """(X, y, X_test, y_test) of a bundled dataset's seed-0 random split."""
    ds = load_dataset(name).labelled()
    sp = random_split(ds, seed=0)
    return (ds.X.iloc[sp.train].reset_index(drop=True), ds.y[sp.train],
            ds.X.iloc[sp.test].reset_index(drop=True), ds.y[sp.test])


@pytest.mark.external
@pytest.mark.parametrize("how", ["import path", "entry point"])
def test_a_package_outside_perfzoo_is_scored_by_the_bench(how, tmp_path, monkeypatch):
    """The issue's command, by import path and by the name an installed entry point registers."""
    name = MINE if how == "import path" else "mine"
    path = [DATA] if how == "import path" else [_entry_point(tmp_path / "site"), DATA]
    out = tmp_path / "lb"
    done = _bench(["--predictors", name, "--datasets", "vtrain-a100", "--splits", "random,scale", "--out", str(out),
                   "--seeds", "2", "--no-figures", "--quiet", "--jobs", "1"], path, tmp_path)
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(out / "results.csv")
    assert set(table["predictor"]) == {name} and set(table["split"]) == {"random", "scale"} and len(table) == 4
    assert table["error"].isna().all() and (table.loc[table["split"] == "random", "kendall"] > 0.9).all()
    tasks = {t["split"]: t["id"] for t in json.loads((out / "tasks.json").read_text())}
    assert set(table["task"]) == set(tasks.values())
    readme = (out / "README.md").read_text()
    assert all(f"`{task}`" in readme for task in tasks.values())
    assert "- machine: " in readme and "- commit: " in readme and f"--predictors {name}" in readme
    assert "## Your predictors beside the leaderboard" in readme
    # shipped like a member: its artifact loads back where its package imports
    monkeypatch.syspath_prepend(str(DATA))
    entry = json.loads((out / "best.json").read_text())["datasets"]["vtrain-a100"]
    assert entry["name"] == name and entry["tasks"] == {"random": tasks["random"], "scale": tasks["scale"]}
    model = zoo.load_best("vtrain-a100", out)
    assert type(model.member_).__name__ == "Mine" and np.isfinite(model.predict(load_dataset("vtrain-a100").X.head(5))).all()


def test_an_entry_point_registers_a_member_by_name(tmp_path, monkeypatch, plugin_path):
    monkeypatch.syspath_prepend(str(_entry_point(tmp_path)))
    assert "mine" in zoo.installed() and "mine" not in zoo.names()  # a default run covers the registry only
    assert zoo.get("mine").__name__ == "Mine"
    assert zoo.make("mine", alpha=3.0).alpha == 3.0
    with pytest.raises(ValueError, match=r"installed \(perfzoo.predictors\): mine; or give an import path"):
        zoo.get("yours")


def test_a_class_that_breaks_the_contract_gets_one_line_per_problem(tmp_path, capsys, plugin_path):
    out = tmp_path / "lb"
    rc = bench.main(["--predictors", f"tests_plugin.broken:Broken,{MINE}", "--datasets", "llm-cpu", "--splits",
                     "random", "--out", str(out), "--quiet"])
    assert rc == 2 and not out.exists()
    lines = capsys.readouterr().err.strip().splitlines()
    prefix = "perfzoo bench: error: tests_plugin.broken:Broken: "
    assert len(lines) == 4 and all(line.startswith(prefix) for line in lines)
    for line, what in zip(lines, ("sets no name", "output = 'tokens' is not one of throughput, score, probability",
                                  "implements no _predict()", "no attribute 'depth'")):
        assert what in line
    # a name that is no member at all, a module that is not there: one line each
    assert bench.main(["--predictors", "tests_plugin.model:Yours", "--datasets", "llm-cpu"]) == 2
    assert capsys.readouterr().err.strip() == "perfzoo bench: error: tests_plugin.model:Yours: tests_plugin.model has no 'Yours'"
    assert bench.main(["--predictors", "no_such_pkg.models:X", "--datasets", "llm-cpu"]) == 2
    assert "no module 'no_such_pkg' (install the package or put its folder on PYTHONPATH)" in capsys.readouterr().err


def test_a_constructor_without_defaults_is_named():
    found = problems(SklearnRegressor, "sklearn-wrapper")
    assert len(found) == 1 and "missing 1 required positional argument: 'estimator'" in found[0]
    assert "every constructor parameter needs a default" in found[0]
    assert problems(zoo.get("ridge"), "ridge") == [] and problems(zoo.get("sklearn.svm:SVR"), "svr") == []
    not_a_model = problems(zoo.get("collections:OrderedDict"), "od")
    assert "is neither a perfzoo.zoo.Predictor" in not_a_model[0] and "od: has no fit()" in not_a_model


def test_predictor_failures_lists_every_failure_on_data(tmp_path, plugin_path):
    from tests_plugin.broken import Sloppy
    from tests_plugin.model import Mine

    rows = _split_rows("llm-h100")
    assert predictor_failures(Mine(), *rows, tmp_path / "mine") == []
    failures = predictor_failures(Sloppy(), *rows, tmp_path / "sloppy")
    for what in ("sloppy: fit must return self", "sloppy: refit with the same seed differs",
                 "sloppy: save/load changed it", "sloppy: one row predicts differently than inside a frame"):
        assert any(line.startswith(what) for line in failures), what
    assert all("\n" not in line for line in failures)
    with pytest.raises(AssertionError) as info:  # the assert-style use lists them all, one per line
        check_predictor(Sloppy(), *rows, tmp_path / "again")
    assert len(str(info.value).splitlines()) == len(failures)


def test_any_scikit_learn_regressor_by_its_import_path(tmp_path):
    model = zoo.make("sklearn.ensemble:ExtraTreesRegressor", n_estimators=30)
    assert isinstance(model, SklearnRegressor) and model.name == "ExtraTreesRegressor"
    assert predictor_failures(model, *_split_rows("llm-cpu"), tmp_path) == []
    with pytest.raises(ValueError, match=r"sklearn.ensemble:ExtraTreesRegressor takes no parameter\(s\) \['trees'\]"):
        zoo.make("sklearn.ensemble:ExtraTreesRegressor", trees=3)
    res = bench.run(bench.BenchConfig(datasets=["llm-cpu"], predictors=["sklearn.ensemble:ExtraTreesRegressor"],
                                      splits=["random"], seeds=2, out=str(tmp_path / "lb"), no_cache=True,
                                      no_figures=True, no_artifacts=True, quiet=True, jobs=1))
    assert res.frame["error"].isna().all() and (res.frame["kendall"] > 0.7).all()


def test_plugins_are_cached_by_their_code_and_parameters(tmp_path, monkeypatch):
    """Two packages with the same code share a fingerprint; a changed line or parameter does not."""
    for pkg, alpha in (("same_a", "10.0"), ("same_b", "10.0"), ("edited", "11.0")):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
        text = (DATA / "tests_plugin" / "model.py").read_text()
        (tmp_path / pkg / "model.py").write_text(text.replace("alpha: float = 10.0", f"alpha: float = {alpha}"))
    monkeypatch.syspath_prepend(str(tmp_path))
    code = {pkg: PredictorSpec(f"{pkg}.model:Mine").cache_identity()["code"] for pkg in ("same_a", "same_b", "edited")}
    assert code["same_a"] == code["same_b"] != code["edited"]
    assert PredictorSpec.of("same_a.model:Mine", params={"alpha": 2.0}).cache_identity() != \
        PredictorSpec("same_a.model:Mine").cache_identity()
    wrapped = source_files(zoo.make("sklearn.ensemble:ExtraTreesRegressor"))
    assert any(f.endswith(os.path.join("ensemble", "_forest.py")) for f in wrapped)  # the regressor's code counts
    ds = load_dataset("llm-cpu")
    first = runner.run([ds], [PredictorSpec("same_a.model:Mine")], ["random"], seeds=range(2), cache_dir=tmp_path / "c",
                       progress=False)
    again = runner.run([ds], [PredictorSpec("same_a.model:Mine")], ["random"], seeds=range(2), cache_dir=tmp_path / "c",
                       progress=False)
    assert (first.computed, again.computed, again.cached) == (2, 0, 2)


def test_your_member_stands_beside_the_leaderboards_on_the_same_task(tmp_path, plugin_path):
    ref, mine = tmp_path / "reference", tmp_path / "mine"
    common = dict(datasets=["llm-cpu"], seeds=2, no_cache=True, no_figures=True, no_artifacts=True, quiet=True, jobs=1)
    bench.run(bench.BenchConfig(predictors=["ridge", "constant"], splits=["random", "scale"], out=str(ref), **common))
    bench.run(bench.BenchConfig(predictors=[MINE], splits=["random", "temporal"], out=str(mine), reference=str(ref),
                                **common))
    readme = (mine / "README.md").read_text()
    section = readme[readme.index("## Your predictors beside the leaderboard"):]
    ours = pd.read_csv(mine / "results.csv").groupby("split")["task"].first()
    random_table = section[section.index(f"### `{ours['random']}`"):]
    rows = [line.split(" | ")[:2] for line in random_table.splitlines()[4:7]]
    assert sorted(rows) == sorted([["| ridge", str(ref)], [f"| **{MINE}**", "this run"], ["| constant", str(ref)]])
    # the temporal task is not in the reference: said, not compared
    assert f"Not in `{ref}`: `{ours['temporal']}`" in section
    with pytest.raises(bench.InputError, match="no results.csv there"):
        bench.run(bench.BenchConfig(predictors=[MINE], splits=["random"], out=str(tmp_path / "x"),
                                    reference=str(tmp_path), **common))


def test_a_regressor_with_its_mixin_after_base_estimator_is_told_the_order(plugin_path):
    found = problems(zoo.get("tests_plugin.broken:MixinLast"), "tests_plugin.broken:MixinLast")
    assert found == ["tests_plugin.broken:MixinLast: tests_plugin.broken.MixinLast(BaseEstimator, RegressorMixin) "
                     "derives from RegressorMixin, but scikit-learn >= 1.6 tags a class a regressor only with the mixin "
                     "before BaseEstimator: write class MixinLast(RegressorMixin, BaseEstimator)"]
    with pytest.raises(ValueError, match=r"write class MixinLast\(RegressorMixin, BaseEstimator\)"):
        zoo.make("tests_plugin.broken:MixinLast")


def test_a_bench_whose_only_member_raises_says_the_real_error_and_writes_nothing(tmp_path, capsys, plugin_path):
    out = tmp_path / "lb"
    rc = bench.main(["--predictors", "tests_plugin.broken:Raises", "--datasets", "llm-cpu", "--splits", "random",
                     "--seeds", "1", "--out", str(out), "--quiet", "--no-cache", "--jobs", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and not out.exists()
    assert err[-1] == ("perfzoo bench: error: every fit failed (1 of 1); the first, tests_plugin.broken:Raises on "
                       "llm-cpu (random split): RuntimeError: the fit failed for real")
