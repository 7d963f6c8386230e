"""Bad input gets a clear error naming the problem and the fix; nothing silent."""

import json
import warnings
from datetime import datetime, timedelta, timezone

import pytest

from perfzoo.bench import main as bench
from perfzoo.datasets import list_datasets, load_dataset
from perfzoo.datasets.sources import DataError
from perfzoo.records import RecordError, parse_record
from perfzoo.records.store import RecordStore, TornLineWarning

from test_datasets import VTRAIN_HEADER, make_record


@pytest.mark.parametrize("argv, message", [
    (["--seeds", "0"], "argument --seeds: '0': give a number of seeds >= 1"),
    (["--seeds", "-2"], "argument --seeds: '-2'"),
    (["--curve-seeds", "0"], "argument --curve-seeds: '0'"),
    (["--curve-sizes", "0,-5"], "argument --curve-sizes: '0' is not a training-set size"),
    (["--curve-sizes", "25,x"], "'x' is not a training-set size"),
])
def test_bench_rejects_nonsense_counts(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench(["--datasets", "vtrain-a100", "--predictors", "ridge", "--no-cache", *argv])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_a_record_that_ends_before_it_starts_is_rejected():
    data = make_record(0).to_dict()
    start = datetime(2026, 1, 2, tzinfo=timezone.utc)
    data.update(started_at=start.isoformat(), ended_at=(start - timedelta(seconds=5)).isoformat())
    with pytest.raises(RecordError, match="is before started_at"):
        parse_record(data)


def test_random_bytes_in_a_store_name_the_file_and_line(tmp_path):
    (tmp_path / "records.jsonl").write_bytes(json.dumps(make_record(0).to_dict()).encode() + b"\n\xa9\xff\x00\n")
    with pytest.raises(Exception, match=r"records\.jsonl line 2: not text: byte 0 is not UTF-8"):
        RecordStore(tmp_path, create=False).records()


def test_a_torn_line_warns_once_per_process(tmp_path):
    (tmp_path / "records.jsonl").write_text(make_record(0).to_json() + "\n" + '{"schema_vers')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            assert len(RecordStore(tmp_path, create=False).records()) == 1
    torn = [w for w in caught if issubclass(w.category, TornLineWarning)]
    assert len(torn) == 1 and "\n" not in str(torn[0].message) and "line 2" in str(torn[0].message)


def test_a_missing_bundled_folder_is_said(monkeypatch, tmp_path):
    monkeypatch.setenv("PERFZOO_DATASETS", str(tmp_path / "nonexistent"))
    with pytest.warns(UserWarning, match=r"nonexistent does not exist \(from \$PERFZOO_DATASETS\)"):
        list_datasets()


def test_vtrain_degrees_must_multiply_to_the_gpu_count(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(VTRAIN_HEADER + "\n3,16,8,1024,16,24,1024,1,2,2,372.1\n")
    with pytest.raises(DataError, match=r"line 2, column '# GPUs': 3 GPUs but .* = 1 x 2 x 2 = 4"):
        load_dataset(str(path))


def test_collect_refuses_search_only_spaces_and_mixed_stores_and_runs_a_repeated_config_once(tmp_path, capsys):
    from perfzoo.collect.cli import main as collect

    from test_collect import llm_raw, write_jsonl

    assert collect(["--space", "megatron-a100", "--n", "2", "--out", str(tmp_path / "m")]) == 2
    assert "megatron-a100 is a space for search only" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
    configs = write_jsonl(tmp_path / "c.jsonl", [llm_raw(), llm_raw(), llm_raw()])
    assert collect(["--space", "llm-small", "--configs", configs, "--out", str(tmp_path / "s"), "--steps", "1",
                    "--warmup", "0", "--no-progress"]) == 0
    out = capsys.readouterr()
    assert "2 repeated config(s)" in out.err and "1 jobs to run" in out.err
    (record,) = RecordStore(tmp_path / "s").records()
    assert record.annotations["space"] == "llm-small"
    assert collect(["--space", "fsdp-ads-v2", "--n", "1", "--out", str(tmp_path / "s"), "--dry-run"]) == 2
    assert "holds records of llm/llm-small, not of fsdp/fsdp-ads-v2" in capsys.readouterr().err


# --- every entry point: one line, the right exit status, never a traceback --------------------------

def _stores(tmp_path):
    """Bad record stores: a corrupt middle line, a newer schema, a file where a folder should be."""
    good = make_record(0).model_dump_json()
    (tmp_path / "corrupt").mkdir()
    (tmp_path / "corrupt" / "records.jsonl").write_text(good + "\n{\"not json\n" + make_record(1).model_dump_json() + "\n")
    (tmp_path / "newer").mkdir()
    (tmp_path / "newer" / "records.jsonl").write_text(json.dumps({**json.loads(good), "schema_version": 9}) + "\n")
    (tmp_path / "afile").write_text("x")
    (tmp_path / "empty.csv").write_text("")
    return tmp_path


@pytest.mark.parametrize("command, argv, status, words", [
    ("collect", ["--workload", "llm", "--n", "1", "--out", "{tmp}/corrupt"], 2, "line 2: not valid JSON"),
    ("collect", ["--workload", "llm", "--n", "1", "--out", "{tmp}/newer"], 2, "upgrade perfzoo to read this store"),
    ("collect", ["--workload", "llm", "--n", "1", "--out", "/proc/x"], 2, "--out /proc/x: cannot be a record store"),
    ("collect", ["--workload", "llm", "--n", "1", "--out", "{tmp}/afile"], 2, "is a file"),
    ("collect", ["--space", "nosuch", "--n", "1", "--out", "{tmp}/s"], 2, "unknown search space 'nosuch'"),
    ("tune", ["--store", "{tmp}/t", "--predictor", "nosuch"], 2, "--predictor 'nosuch' is not 'best' or a zoo member"),
    ("tune", ["--store", "/proc/x"], 2, "--store /proc/x: cannot be a record store"),
    ("tune", ["--store", "{tmp}/t", "--space", "megatron-a100"], 2, "is a space for search only"),
    ("tune", ["--store", "{tmp}/t", "--space", "llm-small", "--hand-tuned"], 2, "no hand-tuned baseline"),
    ("tune", ["--store", "{tmp}/t", "--lr", "-1"], 2, "must be positive"),
    ("search", ["--space", "fsdp-ads-v3", "--dataset", "fsdp-cpu", "--lr", "-1"], 2, "--lr must be positive"),
    ("search", ["--space", "fsdp-ads-v3", "--dataset", "fsdp-cpu", "--n-samples", "0"], 2, "--n-samples must be"),
    ("search", ["--space", "fsdp-ads-v3", "--dataset", "fsdp-cpu", "--out", "/proc/x/p.jsonl"], 2, "cannot write there"),
    ("search", ["--space", "fsdp-ads", "--dataset", "llm-cpu", "--predictor", "ridge"], 2,
     "holds jobs of the llm workload, --space fsdp-ads configs of the fsdp workload"),
    ("search", ["--space", "fsdp-ads-v3", "--dataset", "{tmp}/corrupt"], 2, "line 2: not valid JSON"),
    pytest.param("bench", ["--train", "vtrain-a100", "--test", "fsdp-cpu", "--predictor", "ridge"], 2,
                 "share no config knob that varies in fsdp-cpu", marks=pytest.mark.external),
    pytest.param("bench", ["--datasets", "vtrain-a100", "--predictors", "ridge", "--splits", "temporal", "--no-cache",
                           "-q", "--out", "{tmp}/lb"], 2, "nothing to score: vtrain-a100 temporal",
                 marks=pytest.mark.external),
    pytest.param("bench", ["--datasets", "vtrain-a100", "--predictors", "ridge", "--splits", "curve", "--curve-sizes",
                           "5000", "--no-cache", "-q", "--out", "{tmp}/lb"], 2, "give smaller --curve-sizes",
                 marks=pytest.mark.external),
    ("perfzoo", ["datasets", "show", "{tmp}/newer"], 2, "upgrade perfzoo"),
    ("predict", ["--set", "n_layers"], 2, "--set 'n_layers': expected KEY=VALUE"),
    ("predict", ["--configs", "{tmp}/nope.jsonl"], 2, "no such file"),
    ("predict", ["--configs", "{tmp}/empty.csv"], 2, "empty.csv: the file is empty; give a CSV with a header row"),
    ("plan.benchmark", ["--out", "{tmp}/no/such/folder/b.md"], 2, "does not exist"),  # refused before minutes of work
    *(("predict", ["--dataset", "llm-h100", "--predictor", "ridge", "--set", "model=llama3-8b", "n_gpus=8",
                   "accelerator=H100", "seq_len=8192", "global_batch_size=64", f"release={r}"], 2, words)
      for r, words in (
        ("abc", "release=abc: not a release"), ("2099-13", "release=2099-13: not a release"),
        ("25.13", "release=25.13: not a release"), ("2099-01", "release=2099-01: after today"))),
    # a stated size the shape contradicts: the learned predictor read one, the cost model the other
    ("predict", ["--dataset", "llm-h100", "--predictor", "ridge", "--set", "model=llama3-8b", "n_gpus=8",
                 "accelerator=H100", "seq_len=8192", "global_batch_size=64", "n_params=1"], 2,
     "n_params=1: the shape (32 layers, hidden 4,096, 32 heads) counts 8.0B parameters; leave n_params out"),
    ("predict", ["--set", "n_layers=2", "--dataset", "{tmp}/corrupt"], 2, "line 2: not valid JSON"),
])
def test_every_entry_point_answers_bad_input_in_one_line(command, argv, status, words, tmp_path, capsys):
    import importlib

    module = importlib.import_module({"perfzoo": "perfzoo.cli", "search": "perfzoo.search.cli",
                                      "collect": "perfzoo.collect.cli"}.get(command, f"perfzoo.{command}"))
    tmp = _stores(tmp_path)
    assert module.main([a.replace("{tmp}", str(tmp)) for a in argv]) == status
    err = capsys.readouterr().err.strip().splitlines()
    assert err and words in err[-1] and err[-1].count(": error: ") == 1, err
    assert not (tmp_path / "t").exists()  # tune checked everything before it touched a store


def test_a_predictor_of_another_workload_cannot_drive_a_search():
    from perfzoo import zoo
    from perfzoo.search.objective import Objective
    from perfzoo.spaces import get
    from perfzoo.spaces.codec import SpaceCodec

    llm = load_dataset("llm-cpu").labelled()
    model = zoo.make("ridge").fit(llm.X, llm.y)
    with pytest.raises(ValueError, match="reads none of the knobs space 'fsdp-ads-v3' varies"):
        Objective(SpaceCodec(get("fsdp-ads-v3")), model)


def test_ties_at_the_top_are_said_and_broken_by_a_second_predictor(capsys):
    """A predictor that cannot tell the proposals apart: the log says so, and a ridge fit orders them."""
    from perfzoo import zoo
    from perfzoo.search import cli

    assert cli.main(["--space", "fsdp-ads-v3", "--dataset", "fsdp-cpu", "--predictor", "constant", "--top-k", "5",
                     "--failure", "none", "--n-samples", "300", "--restarts", "1", "--json"]) == 0
    out = capsys.readouterr()
    assert "ties: the top 5 proposals had only 1 distinct scores (within 0.1%); ties broken by a ridge fit on " \
           "fsdp-cpu over the best 25" in out.err
    configs = [json.loads(line)["config"] for line in out.out.splitlines()]
    ds = load_dataset("fsdp-cpu").labelled().ok()
    ridge = zoo.make("ridge").fit(ds.X, ds.y)
    from perfzoo.spaces import get
    from perfzoo.spaces.codec import SpaceCodec

    codec = SpaceCodec(get("fsdp-ads-v3"))
    frame = codec.frame(codec.index_of(configs), columns=list(ds.X.columns),
                        fixed={c: ds.X[c].mode().iloc[0] for c in ds.X.columns if not c[7:] in codec.names})
    second = ridge.predict(frame)
    assert len(configs) == 5 and list(second) == sorted(second, reverse=True)


def test_a_folder_named_perfzoo_does_not_shadow_the_package(tmp_path):
    """A clone called perfzoo, with Python started in the folder holding it (issue: import shadowing):
    the import and ``python -m perfzoo.bench --help`` reach the installed package, not the folder."""
    import subprocess
    import sys
    from pathlib import Path

    import perfzoo

    (tmp_path / "perfzoo").symlink_to(Path(__file__).resolve().parent.parent, target_is_directory=True)
    out = subprocess.run([sys.executable, "-c", "from perfzoo.datasets import load_dataset; import perfzoo; "
                          "print(perfzoo.__file__)"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()) == Path(perfzoo.__file__)
    bench = subprocess.run([sys.executable, "-m", "perfzoo.bench", "--help"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=120)
    assert bench.returncode == 0, bench.stderr
    assert bench.stdout.startswith("usage:") and "--quick" in bench.stdout
