"""Versioned benchmark tasks: an id names the data, the split's rows, the seeds and the metrics;
``--list-tasks`` prints them and ``--task ID`` runs exactly one; an edited dataset row gives a new
id (and the old id refuses to run); ids are the same in every process and for every copy of the
data."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from perfzoo import bench
from perfzoo.datasets import load_dataset
from perfzoo.datasets.registry import REPO_ROOT
from perfzoo.evaluation import suite
from perfzoo.evaluation.suite import define_tasks, parse_id

SPLITS = ["random", "temporal", "scale", "group", "curve"]


def _ids(ds, seeds=range(5)) -> dict[str, str]:
    return {t.split: t.id for t in define_tasks(ds, SPLITS, seeds, curve_sizes=(25, 50), curve_seeds=range(3))}


@pytest.fixture
def llm_cpu_copy(tmp_path) -> Path:
    """A copy of the bundled ``llm-cpu`` record store (``dataset.json`` names it ``llm-cpu``)."""
    path = tmp_path / "copy"
    shutil.copytree(REPO_ROOT / "datasets" / "llm-cpu", path)
    return path


def test_editing_one_row_of_a_dataset_changes_every_task_id(llm_cpu_copy, capsys):
    bundled = _ids(load_dataset("llm-cpu"))
    assert _ids(load_dataset(str(llm_cpu_copy))) == bundled  # the same content, read from elsewhere: the same ids
    assert all(tid.startswith(f"llm-cpu/{split}/") for split, tid in bundled.items())
    records = llm_cpu_copy / "records.jsonl"
    lines = records.read_text().splitlines()
    row = json.loads(lines[7])
    row["metrics"]["throughput"] *= 1.01  # one job measured 1% faster
    lines[7] = json.dumps(row)
    records.write_text("\n".join(lines) + "\n")
    edited = load_dataset(str(llm_cpu_copy))
    assert edited.content_hash() != load_dataset("llm-cpu").content_hash()
    changed = _ids(edited)
    assert set(changed) == set(bundled) and all(changed[s] != bundled[s] for s in bundled)
    # the old id no longer runs on the edited data: its numbers stay the ones published under it
    old = bundled["scale"]
    assert bench.main(["--task", old, "--datasets", str(llm_cpu_copy), "--predictors", "ridge", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"perfzoo bench: error: no task {old}: llm-cpu's scale split is {changed['scale']} (5 seeds) or "
                   f"{_ids(edited, range(3))['scale']} (3 seeds) now; its data, rows, seeds or metrics changed since "
                   "that id was made")


def test_seeds_rows_and_metric_code_are_part_of_the_id(tmp_path):
    ds = load_dataset("llm-h100")
    five, three = _ids(ds), _ids(ds, range(3))
    assert five["random"] != three["random"] and five["scale"] != three["scale"]  # the seeds
    assert [k for k in five if k.startswith("group:")] and all(five[k] == three[k] for k in five if k.startswith("group:"))
    other = define_tasks(ds.subset(range(len(ds) - 1)), ["scale"], range(5))[0]  # one row fewer
    assert other.id != five["scale"]
    # a metric's code counts, its description does not
    source = Path(suite.M.__file__).read_text()
    for name, text in (("same", source.replace('"""Benchmark metrics', '"""The benchmark metrics', 1)
                        + "\n# a comment\n"), ("changed", source.replace("return float(np.mean(", "return float(np.median(", 1))):
        (tmp_path / f"{name}.py").write_text(text)
    assert "return float(np.mean(" in source
    assert suite._code_hash(tmp_path / "same.py") == suite.METRICS_CODE != suite._code_hash(tmp_path / "changed.py")


def test_list_tasks_and_run_exactly_one(tmp_path, capsys):
    assert bench.main(["--list-tasks", "--datasets", "llm-cpu", "--splits", "random,scale,group"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split() == ["task", "partitions", "seeds", "train/test", "data"]
    listed = {parse_id(line.split()[0])[1]: line.split() for line in lines[1:]}
    assert set(listed) == {"random", "scale", "group:config.precision"}
    assert listed["random"][1:3] == ["5", "0-4"] and listed["scale"][1:3] == ["1", "0-4"]
    assert listed["group:config.precision"][1:3] == ["2", "-"]
    assert bench.main(["--list-tasks", "--json", "--datasets", "llm-cpu", "--splits", "scale"]) == 0
    definition = json.loads(capsys.readouterr().out)
    scale = listed["scale"][0]
    assert definition["id"] == scale and definition["seeds"] == [0, 1, 2, 3, 4] and definition["partitions"] == 1

    out = tmp_path / "lb"
    assert bench.main(["--task", scale, "--predictors", "ridge,constant", "--out", str(out), "--no-cache", "--quiet",
                       "--no-figures", "--no-artifacts", "--jobs", "1"]) == 0
    table = pd.read_csv(out / "results.csv")
    assert set(table["task"]) == {scale} and set(table["split"]) == {"scale"}
    assert sorted(table.loc[table["predictor"] == "ridge", "seed"]) == [0, 1, 2, 3, 4]
    assert json.loads((out / "tasks.json").read_text()) == [definition]
    readme = (out / "README.md").read_text()
    assert f"| llm-cpu | scale | `{scale}` | ridge |" in readme and f"Task `{scale}`." in readme
    # a --quick task is found too, and runs with its 3 seeds
    quick = define_tasks(load_dataset("llm-cpu"), ["random"], range(3))[0]
    assert bench.main(["--task", quick.id, "--predictors", "ridge", "--out", str(tmp_path / "q"), "--no-cache",
                       "--quiet", "--no-figures", "--no-artifacts", "--jobs", "1"]) == 0
    assert sorted(pd.read_csv(tmp_path / "q" / "results.csv")["seed"]) == [0, 1, 2]


def test_task_ids_are_the_same_in_another_process():
    done = subprocess.run([sys.executable, "-m", "perfzoo.bench", "--list-tasks", "--json", "--datasets",
                           "llm-h100,fsdp-cpu", "--splits", "random,temporal,scale,group,curve"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    there = [json.loads(line)["id"] for line in done.stdout.splitlines()]
    here = [t.id for _, t in bench.tasks(bench.BenchConfig(datasets=["llm-h100", "fsdp-cpu"],
                                                           splits=["random", "temporal", "scale", "group", "curve"]))]
    assert there == here and len(here) == len(set(here)) >= 9


@pytest.mark.parametrize("flags, message", [
    (["--task", "llm-cpu/random"], "--task 'llm-cpu/random' is not a task id (<dataset>/<split>/<8 hex digits>"),
    (["--task", "llm-cpu/random/0123abcd", "--splits", "scale"], "--task names its split; leave out --splits"),
    (["--task", "llm-cpu/sideways/0123abcd"], "no task llm-cpu/sideways/0123abcd: 'sideways' is no split kind (one of "
                                              "random, temporal, scale, node, group, curve, transfer)"),
    (["--task", "llm-cpu/node/0123abcd"], "no task llm-cpu/node/0123abcd: llm-cpu has no node split now"),
])
def test_a_bad_task_is_one_line(flags, message, capsys):
    assert bench.main([*flags, "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_the_transfer_matrix_is_a_task_too(tmp_path, write_published):
    from test_transfer import three_labs

    labs = three_labs(tmp_path, write_published)
    task = define_tasks(labs, ["transfer"], range(5))[0]
    assert task.id.startswith("three-labs/transfer/") and task.seeds == ()
    cells = [task.label(sp) for sp in task.partitions()]
    assert cells[:2] == ["lab_a.csv -> lab_a.csv", "lab_a.csv -> lab_b.csv"] and cells[-1] == "all others -> lab_c.csv"
    assert len(cells) == 4 * 3 and task.metrics == ("kendall", "mape", "mdape")
