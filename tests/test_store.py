"""The record store: durable appends, torn-line recovery, concurrent writers, resume, export."""

import json
import multiprocessing as mp
import subprocess
import sys
import textwrap
import warnings

import pandas as pd
import pytest

from perfzoo.records import Failure, Hardware, JobRecord, Metrics, job_id_for
from perfzoo.records.store import RECORDS_FILE, DuplicateJobWarning, RecordStore, StoreError, TornLineWarning


def record(i, status="ok"):
    config = {"local_batch": 2 ** (i % 5), "shard_00": "FULL_SHARD", "index": i}
    hardware = {"accelerator": "cpu", "accelerator_count": 2}
    return JobRecord(
        job_id=job_id_for("fsdp", config, hardware),
        source="measured",
        provenance="test",
        started_at=f"2026-11-21T10:{i // 60 % 60:02d}:{i % 60:02d}Z",
        status=status,
        failure=Failure(kind="oom", rank=0) if status == "oom" else None,
        workload="fsdp",
        config=config,
        hardware=Hardware(**hardware),
        metrics=Metrics(throughput=100.0 + i, throughput_unit="queries/s") if status == "ok" else Metrics(),
    )


def test_append_then_read_back_in_order(tmp_path):
    store = RecordStore(tmp_path / "s")
    assert store.extend(record(i) for i in range(5)) == 5
    fresh = RecordStore(tmp_path / "s")
    assert [r.config["index"] for r in fresh.records()] == [0, 1, 2, 3, 4]
    assert len(fresh) == 5


def test_a_store_directory_another_process_creates_after_the_check_is_opened(tmp_path, monkeypatch):
    # two collects of one sweep both find no directory, then both create it: the second must open
    # the store the first made (a race CI hit), not fail with "File exists"
    from pathlib import Path

    path = tmp_path / "store"
    path.mkdir()
    real_exists = Path.exists
    monkeypatch.setattr(Path, "exists", lambda self: False if self == path else real_exists(self))
    store = RecordStore(path)
    store.append(record(0))
    monkeypatch.undo()
    assert len(RecordStore(path)) == 1


def test_duplicate_job_id_is_not_written_twice(tmp_path):
    store = RecordStore(tmp_path)
    assert store.append(record(1)) is True
    assert RecordStore(tmp_path).append(record(1)) is False
    assert len((tmp_path / RECORDS_FILE).read_text().splitlines()) == 1


def test_a_second_record_of_a_job_written_by_hand_is_read_past_with_a_warning(tmp_path):
    # two stores concatenated by hand (a job measured in each): the first record is the job's,
    # the second is named, not silently dropped, and nothing in the file changes
    RecordStore(tmp_path).extend(record(i) for i in range(2))
    path = tmp_path / RECORDS_FILE
    again = record(1).to_dict() | {"record_id": "f" * 32, "metrics": {"throughput": 5.0, "throughput_unit": "queries/s"}}
    before = path.read_text()
    path.write_text(before + json.dumps(again) + "\n")
    with pytest.warns(DuplicateJobWarning, match=rf"line 3: .*a second record of job {record(1).job_id} \(record f{{32}}\)"):
        records = RecordStore(tmp_path).records()
    assert [r.metrics.throughput for r in records] == [100.0, 101.0]
    assert path.read_text() == before + json.dumps(again) + "\n"


def test_resume_sees_done_job_ids(tmp_path):
    RecordStore(tmp_path).extend(record(i) for i in range(3))
    done = RecordStore(tmp_path).job_ids()
    todo = [record(i) for i in range(6) if record(i).job_id not in done]
    assert [r.config["index"] for r in todo] == [3, 4, 5]


def test_torn_last_line_is_reported_skipped_and_next_append_works(tmp_path):
    store = RecordStore(tmp_path)
    store.extend(record(i) for i in range(3))
    path = tmp_path / RECORDS_FILE
    before = path.read_bytes()
    size_before = len(before)
    fragment = record(3).to_json().encode()[:57]
    with open(path, "ab") as f:  # what a writer killed mid-write leaves: half a line, no newline
        f.write(fragment)
    with pytest.warns(TornLineWarning, match=rf"line 4 \(byte {size_before}\)"):
        assert len(RecordStore(tmp_path).records()) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", TornLineWarning)  # said once per process, not on every read
        assert RecordStore(tmp_path).append(record(4)) is True
        assert [r.config["index"] for r in RecordStore(tmp_path).records()] == [0, 1, 2, 4]
    # nothing earlier was rewritten: the first bytes are exactly as they were
    assert path.read_bytes()[:size_before] == before
    lines = path.read_bytes().split(b"\n")
    assert lines[3] == fragment


def test_torn_line_from_a_killed_process(tmp_path):
    """A real writer process killed while writing leaves the store readable and appendable."""
    RecordStore(tmp_path).extend(record(i) for i in range(2))
    script = textwrap.dedent(f"""
        import os, signal
        fd = os.open({str(tmp_path / RECORDS_FILE)!r}, os.O_WRONLY | os.O_APPEND)
        os.write(fd, b'{{"schema_version":1,"record_id":"abc","job_id":"half')
        os.fsync(fd)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    assert subprocess.run([sys.executable, "-c", script]).returncode == -9
    with pytest.warns(TornLineWarning):
        store = RecordStore(tmp_path)
        assert store.append(record(2))
    assert len(RecordStore(tmp_path)) == 3


def test_malformed_line_in_the_middle_is_an_error_naming_file_and_line(tmp_path):
    store = RecordStore(tmp_path)
    store.extend(record(i) for i in range(2))
    with open(tmp_path / RECORDS_FILE, "a") as f:
        f.write('{"schema_version": 1, "job_id": "x"}\n')
    with pytest.raises(StoreError, match=r"records.jsonl line 3: .*field 'source'.*move the line out"):
        RecordStore(tmp_path).records()


def _append_many(path, start, count):
    store = RecordStore(path)
    for i in range(start, start + count):
        store.append(record(i))


def test_two_processes_appending_concurrently_lose_nothing(tmp_path):
    ctx = mp.get_context("spawn")
    workers = [ctx.Process(target=_append_many, args=(tmp_path, k * 1000, 150)) for k in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    lines = (tmp_path / RECORDS_FILE).read_text().splitlines()
    assert len(lines) == 300
    assert all(json.loads(line)["schema_version"] == 1 for line in lines)
    assert {r.config["index"] for r in RecordStore(tmp_path).records()} == (
        set(range(150)) | set(range(1000, 1150)))


def test_flat_export_to_pandas_parquet_and_hf_datasets(tmp_path):
    store = RecordStore(tmp_path / "s")
    store.extend([record(0), record(1, status="oom"), record(2)])
    frame = store.to_frame()
    assert len(frame) == 3
    assert {"config.local_batch", "config.shard_00", "metrics.throughput", "hardware.accelerator",
            "failure.kind", "status", "job_id"} <= set(frame.columns)
    assert frame["status"].tolist() == ["ok", "oom", "ok"]
    assert frame["failure.kind"].fillna("-").tolist() == ["-", "oom", "-"]
    assert str(frame["started_at"].dt.tz) == "UTC"
    back = pd.read_parquet(store.to_parquet(tmp_path / "records.parquet"))
    assert back["metrics.throughput"].tolist()[::2] == [100.0, 102.0]
    hf = store.to_hf_dataset()
    assert hf.num_rows == 3 and "config.shard_00" in hf.column_names


def test_store_path_that_is_a_file_is_rejected(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(NotADirectoryError, match="a store is a directory"):
        RecordStore(tmp_path / "f")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        RecordStore(tmp_path / "missing", create=False)


@pytest.mark.parametrize("newlines", [True, False])
def test_random_bytes_are_not_a_record_file_rather_than_a_torn_record(tmp_path, newlines, external, capsys):
    """A file of random bytes named records.jsonl was read as one torn record (skipped, then "holds no
    job records"); it is no record file at all, whole lines or a single partial one."""
    import numpy as np

    data = np.random.default_rng(0).bytes(4000)
    data = data if newlines else data.replace(b"\n", b"")
    assert not data.lstrip().startswith(b"{")
    (tmp_path / RECORDS_FILE).write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TornLineWarning)
        with pytest.raises(StoreError, match=rf"{RECORDS_FILE}: not a perfzoo record file: line 1 \(byte 0\) is no "
                                             "JSON record, whole or torn; give a record store collect wrote"):
            RecordStore(tmp_path).records()
    from perfzoo.plan.cli import main

    assert main(["--model", "llama3-8b", "--gpus", "8", "--accelerator", "H100-SXM-80GB", "--seq-len", "8192",
                 "--global-batch", "64", "--calibrate", str(tmp_path), "--external-dir", str(external)]) == 2
    assert capsys.readouterr().err.strip().endswith("is no JSON record, whole or torn; give a record store collect "
                                                    "wrote (or its records.jsonl), or a runs CSV")
