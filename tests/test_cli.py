"""The `perfzoo` command: every command behind one front, its version, the dataset table, one
dataset's summary, forwarding, one-line errors."""

import argparse
import importlib
import importlib.metadata
import json
import subprocess
import sys
import types

import numpy as np
import pytest

import perfzoo
from perfzoo.cli import COMMANDS, build_parser, command_module, main
from perfzoo.datasets import EXTERNAL, published_tables


def run(*args):
    """`python -m perfzoo.cli ARGS` in a fresh process: (exit status, stdout, stderr)."""
    done = subprocess.run([sys.executable, "-m", "perfzoo.cli", *args], capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.external
def test_datasets_table_lists_every_dataset(capsys):
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:6] == ["name", "rows", "ok", "oom", "timeout", "failed"]
    for name in EXTERNAL:
        assert any(line.startswith(name + " ") for line in lines)
    vtrain = next(line for line in lines if line.startswith("vtrain-a100 "))
    assert vtrain.split()[1:6] == ["1440", "1440", "0", "0", "0"]
    assert "2024-09-26..2024-09-26" in vtrain and "n_gpus 2..8" in vtrain
    titan = next(line for line in lines if line.startswith("published-torchtitan "))
    assert titan.split()[1:4] == ["60", "58", "2"]


@pytest.mark.external
def test_datasets_json(capsys):
    assert main(["datasets", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by_name = {row["name"]: row for row in rows}
    assert all({"name", "rows"} <= set(row) for row in rows)
    assert by_name["vtrain-a100"]["rows"] == 1440
    tables = published_tables()  # whichever published-table CSVs the shared folder holds
    assert {"published-mosaicml", "published-torchtitan", "published-nemo", "published-megatron"} <= set(tables)
    assert by_name["published-llm"]["rows"] == sum(by_name[name]["rows"] for name in tables)


@pytest.mark.external
def test_datasets_show(capsys):
    assert main(["datasets", "show", "vtrain-a100"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("vtrain-a100\n")
    for part in ("1440 (ok 1440", "metrics.throughput (tokens/s, higher is better)",
                 "config.n_gpus: 2 .. 8", "train <= 4 (720 rows)", "config.tp", "vTrain"):
        assert part in out
    assert main(["datasets", "--json", "show", "published-torchtitan"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["oom"] == 2 and shown["target"] == "metrics.throughput_per_device" and shown["card"]


def test_unknown_dataset_is_one_line_and_non_zero(capsys):
    assert main(["datasets", "show", "no-such-dataset"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("perfzoo datasets: error: unknown dataset 'no-such-dataset'")
    assert "vtrain-a100" in lines[0]


def test_bad_input_in_a_fresh_process_has_no_traceback(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    for args, expected in [
        (["datasets", "show", str(empty)], "the file is empty"),
        (["datasets", "show", str(tmp_path / "absent.csv")], "absent.csv: no such file"),
        (["datasets", "show", "vtrain-a100", "--external-dir", str(tmp_path)], "vtrain_ground_truth_single.csv not found"),
    ]:
        code, out, err = run(*args)
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and err.startswith("perfzoo datasets: error: ") and expected in err
        assert "Traceback" not in err


def test_missing_external_data_still_lists_the_table(tmp_path, capsys):
    assert main(["datasets", "--external-dir", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "unavailable: vtrain_ground_truth_single.csv not found" in captured.out
    assert "perfzoo datasets show NAME" in captured.err


def test_commands_forward_to_their_module(monkeypatch):
    seen = []
    monkeypatch.setitem(sys.modules, "perfzoo.tune", types.SimpleNamespace(main=lambda argv: seen.append(argv) or 3))
    assert main(["tune", "--trials", "5"]) == 3
    assert seen == [["--trials", "5"]]


def test_a_command_not_landed_yet_says_so(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "perfzoo.tune", None)  # import fails as if the module did not exist
    assert main(["tune"]) == 2
    assert capsys.readouterr().err.strip() == "perfzoo tune: not available yet"


def test_version_is_the_package_version():
    code, out, err = run("--version")
    assert code == 0 and out.strip() == f"perfzoo {perfzoo.__version__}"
    assert perfzoo.__version__ == importlib.metadata.version("perfzoo")  # pyproject reads it from the package


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    listed = {line.split()[0] for line in out.splitlines() if line.startswith("    ") and line[4] != " "}
    assert listed == {"plan", "predict", "bench", "collect", "search", "tune", "datasets"}


SUBCOMMANDS = [[c] for c in COMMANDS] + [["plan", "benchmark"], ["search", "benchmark"],
                                         ["datasets", "show"], ["datasets", "export"]]


def _own_parser(words):
    """The parser that ``python -m perfzoo.<words>`` reads its line with."""
    module = command_module(words[0])
    if words[0] == "datasets":
        parser = module.build_parser()
        for word in words[1:]:  # down the sub-parsers
            parser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[word]
        return parser
    if words[1:] == ["benchmark"]:
        module = importlib.import_module(module.__name__.rpartition(".")[0] + ".benchmark")
    return module.build_parser()


@pytest.mark.parametrize("words", SUBCOMMANDS, ids=" ".join)
def test_every_command_gives_its_own_help(words, capsys):
    with pytest.raises(SystemExit) as done:
        main([*words, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: ")
    options = [s for a in _own_parser(words)._actions for s in a.option_strings if s.startswith("--")]
    assert options and all(option in out for option in options)


def test_perfzoo_plan_help_in_a_fresh_process():
    code, out, err = run("plan", "--help")
    assert code == 0 and err == ""
    for option in ("--model NAME_OR_CONFIG", "--gpus", "--accelerator", "--seq-len", "--global-batch", "--baseline"):
        assert option in out
    assert "config.json" in out  # --model takes a Hugging Face config.json


def test_the_console_script_is_this_main():
    scripts = importlib.metadata.entry_points(group="console_scripts")
    assert scripts["perfzoo"].value == "perfzoo.cli:main"


def test_help_and_usage_errors():
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    with pytest.raises(SystemExit) as done:
        main(["datasets", "show"])  # NAME_OR_PATH missing
    assert done.value.code == 2


@pytest.mark.parametrize("fmt", ["parquet", "csv", "hf"])
def test_datasets_export_round_trips(fmt, tmp_path, capsys):
    import datasets as hf
    import pandas as pd

    from perfzoo.datasets import load_dataset

    out = tmp_path / f"llm-h100.{fmt}"
    assert main(["datasets", "export", "llm-h100", str(out), "--format", fmt]) == 0
    ds = load_dataset("llm-h100")
    assert capsys.readouterr().out.strip() == (f"llm-h100: {len(ds)} rows x {ds.frame.shape[1]} columns written to "
                                               f"{out} ({fmt})")
    back = {"parquet": pd.read_parquet, "csv": pd.read_csv,
            "hf": lambda p: hf.load_from_disk(str(p)).to_pandas()}[fmt](out)
    assert list(back.columns) == list(ds.frame.columns) and len(back) == len(ds)
    assert back["job_id"].tolist() == ds.frame["job_id"].tolist()
    assert back["metrics.throughput"].tolist() == pytest.approx(ds.frame["metrics.throughput"].tolist(), nan_ok=True)
    # nothing is overwritten
    assert main(["datasets", "export", "llm-h100", str(out), "--format", fmt]) == 2
    assert capsys.readouterr().err.strip() == (f"perfzoo datasets: error: {out}: exists already; give a new path "
                                               "(nothing is overwritten)")


def test_datasets_export_needs_a_format(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["datasets", "export", "llm-h100", str(tmp_path / "x")])
    assert info.value.code == 2 and "--format" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("fmt", ["parquet", "csv", "hf"])
def test_datasets_export_split_writes_a_tasks_rows(fmt, tmp_path, capsys):
    import datasets as hf
    import pandas as pd

    from perfzoo.datasets import load_dataset
    from perfzoo.evaluation.export import task_frames
    from perfzoo.evaluation.suite import define_tasks

    ds = load_dataset("llm-h100")
    task = define_tasks(ds, ["random"], range(5))[0]  # the full run's random split: 5 seeds
    out = tmp_path / "task"
    assert main(["datasets", "export", "llm-h100", str(out), "--format", fmt, "--split", task.id]) == 0
    train, test = task_frames(ds, task)
    assert capsys.readouterr().out.strip() == (f"{task.id}: {len(train)} training and {len(test)} test rows (5 "
                                               f"partitions) written to {out} ({fmt}), with README.md and task.json")
    if fmt == "hf":
        back = hf.load_from_disk(str(out))
        assert set(back) == {"train", "test"}
        sides = (back["train"].to_pandas(), back["test"].to_pandas())
    else:
        read = pd.read_parquet if fmt == "parquet" else pd.read_csv
        sides = (read(out / f"train.{fmt}"), read(out / f"test.{fmt}"))
    if fmt == "parquet":  # the task's rows, every value (Parquet keeps timestamps in ms, not s; a missing
        # value of an object column, NaN in the frame, reads back as None: both are missing)
        def missing_as_nan(frame):
            return frame.astype(object).where(frame.notna(), np.nan)

        pd.testing.assert_frame_equal(missing_as_nan(sides[0]), missing_as_nan(train), check_dtype=False)
        pd.testing.assert_frame_equal(missing_as_nan(sides[1]), missing_as_nan(test), check_dtype=False)
    for back, rows in zip(sides, (train, test)):
        assert list(back.columns) == list(rows.columns) and len(back) == len(rows)
        assert back["record_id"].tolist() == rows["record_id"].tolist()
        assert back["task.partition"].tolist() == rows["task.partition"].tolist()
    # a partition is exactly the split's rows
    split = task.partitions()[2]
    seed2 = sides[0][sides[0]["task.partition"] == "seed 2"]
    assert seed2["record_id"].tolist() == ds.frame["record_id"].iloc[split.train].tolist()
    assert json.loads((out / "task.json").read_text()) == task.definition()
    card = (out / "README.md").read_text()
    assert card.startswith(f"# llm-h100: perfzoo benchmark task `{task.id}`")
    assert "under the MIT licence" in card and ds.card.strip()[:60] in card
    # nothing is overwritten; a task of another dataset is refused
    assert main(["datasets", "export", "llm-h100", str(out), "--format", fmt, "--split", task.id]) == 2
    assert "exists already" in capsys.readouterr().err
    assert main(["datasets", "export", "llm-cpu", str(tmp_path / "other"), "--format", fmt, "--split", task.id]) == 2
    assert capsys.readouterr().err.strip() == (f"perfzoo datasets: error: task {task.id} is of dataset 'llm-h100', not "
                                               "'llm-cpu'")


@pytest.mark.external
def test_an_exported_external_task_keeps_its_licence_and_provenance(tmp_path, capsys):
    from perfzoo.datasets import load_dataset
    from perfzoo.evaluation.suite import define_tasks

    ds = load_dataset("vtrain-a100")
    task = define_tasks(ds, ["scale"], range(5))[0]
    assert main(["datasets", "export", "vtrain-a100", str(tmp_path / "t"), "--format", "parquet", "--split",
                 task.id]) == 0
    card = (tmp_path / "t" / "README.md").read_text()
    assert "(MIT licence)" in card and "Copyright (c) 2024, VIA Research Group at KAIST" in card
    assert "`vtrain_ground_truth_single.csv` (1440)" in card
