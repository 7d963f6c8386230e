"""Bad input gets a clear error naming the problem and the fix; nothing silent."""

import json
import warnings
from datetime import datetime, timedelta, timezone

import pytest

from perfzoo.bench import main as bench
from perfzoo.datasets import list_datasets, load_dataset
from perfzoo.external import DataError
from perfzoo.records import RecordError, parse_record
from perfzoo.store import RecordStore, TornLineWarning

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
    from perfzoo.collect import main as collect

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
