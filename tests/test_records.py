"""The job-record schema: valid records round-trip, invalid ones name field, value and fix."""

import json
from pathlib import Path

import pytest

from perfzoo.records import schema
from perfzoo.records import Hardware, JobRecord, Metrics, RecordError, job_id_for, parse_record


def make_record(**overrides):
    fields = dict(
        job_id=job_id_for("llm", {"seq_len": 128}, {"accelerator": "cpu"}),
        source="measured",
        provenance="python -m perfzoo.collect --workload llm",
        started_at="2026-11-21T09:00:00Z",
        ended_at="2026-11-21T10:00:05+01:00",
        status="ok",
        workload="llm",
        config={"seq_len": 128, "precision": "bf16", "compile": False, "vocab_size": None},
        hardware=Hardware(accelerator="cpu", accelerator_count=2, cpu_cores=2),
        metrics=Metrics(throughput=1000.5, throughput_unit="tokens/s", throughput_stat="p90"),
    )
    fields.update(overrides)
    return JobRecord(**fields)


def test_json_round_trip_is_exact():
    rec = make_record()
    again = parse_record(rec.to_json())
    assert again == rec
    assert again.to_json() == rec.to_json()
    assert again.schema_version == schema.SCHEMA_VERSION


def test_timestamps_are_normalised_to_utc():
    rec = make_record()
    assert rec.to_dict()["ended_at"] == "2026-11-21T09:00:05Z"


@pytest.mark.parametrize(
    "change, field, expected",
    [
        ({"status": "exploded"}, "status", "'ok', 'oom', 'timeout' or 'failed'"),
        ({"source": "guess"}, "source", "measured"),
        ({"started_at": "yesterday"}, "started_at", "datetime"),
        ({"started_at": "2026-11-21T10:00:00"}, "started_at", "time zone"),
        ({"config": {"layers": [1, 2]}}, "config.layers", "valid"),
        ({"bogus": 1}, "bogus", "Extra inputs are not permitted"),
        ({"metrics": {"throughput": -3.0}}, "metrics.throughput", "greater than or equal to 0"),
        ({"metrics": {"throughput": float("nan")}}, "metrics.throughput", "finite"),
        ({"hardware": {"accelerator": "cpu", "accelerator_count": "two"}}, "hardware.accelerator_count", "integer"),
    ],
)
def test_invalid_fields_are_named_with_value_and_expectation(change, field, expected):
    data = make_record().to_dict()
    data.update(change)
    with pytest.raises(RecordError) as err:
        parse_record(data, where="f.jsonl line 3: ")
    message = str(err.value)
    assert message.startswith("f.jsonl line 3: ")
    assert f"'{field}" in message
    assert expected in message


def test_missing_required_field_is_named():
    data = make_record().to_dict()
    del data["workload"]
    with pytest.raises(RecordError, match="field 'workload'.*Field required"):
        parse_record(data)


def test_malformed_json_and_non_object():
    with pytest.raises(RecordError, match="not valid JSON"):
        parse_record('{"job_id": ')
    with pytest.raises(RecordError, match="must be a JSON object"):
        parse_record("[1, 2]")


def test_newer_schema_version_asks_for_an_upgrade():
    data = make_record().to_dict() | {"schema_version": 99}
    with pytest.raises(RecordError, match="newer perfzoo.*upgrade perfzoo"):
        parse_record(data)


def test_older_versions_are_upgraded_through_registered_migrations(monkeypatch):
    # A version-0 record called its workload 'kind'; a migration renames it on read.
    monkeypatch.setattr(schema, "MIGRATIONS", {})

    @schema.migration(0)
    def rename_kind(data):
        data["workload"] = data.pop("kind")
        return data

    old = make_record().to_dict()
    old["schema_version"] = 0
    old["kind"] = old.pop("workload")
    assert parse_record(json.dumps(old)).workload == "llm"


def test_a_record_made_before_the_hardware_facts_reads_with_them_unknown_and_its_file_unchanged(tmp_path):
    from perfzoo.records.store import RecordStore

    with open(Path(__file__).parents[1] / "datasets" / "llm-cpu" / "records.jsonl") as f:
        before = f.readline()  # a bundled record of 2026-11-23
    assert not {"cpu_capability", "cpu_flags", "accelerator_power_limit_w"} & set(json.loads(before)["hardware"])
    (tmp_path / "records.jsonl").write_text(before)
    rec = RecordStore(tmp_path, create=False).records()[0]
    assert rec.hardware.cpu == "AMD EPYC" and rec.hardware.cpu_capability is None
    assert rec.to_json() == before.strip()  # unknown facts are left out: the record writes as it was read
    assert rec.hardware.accelerator_power_limit_w is None and rec.hardware.cpu_family is None
    assert (tmp_path / "records.jsonl").read_text() == before  # stored files are never rewritten


def test_hardware_facts_round_trip_and_unknown_ones_are_left_out():
    hw = Hardware(accelerator="cpu", accelerator_count=1, cpu_vendor="AuthenticAMD", cpu_family=25,
                  cpu_model_number=1, cpu_stepping=1, cpu_flags="avx2 fma", cpu_capability="AVX2",
                  torch_cpu_capability="AVX2", matmul_fp32_gflops=73.0, matmul_bf16_gflops=1.1)
    rec = make_record(hardware=hw)
    again = parse_record(rec.to_json())
    assert again.hardware == hw and again.hardware.cpu_capability == "AVX2"
    written = json.loads(make_record().to_json())["hardware"]
    assert "cpu_capability" not in written and "accelerator_clock_max_mhz" not in written
    assert "driver" in written  # a v1 field stays in the JSON, null or not
    with pytest.raises(RecordError, match="hardware.accelerator_power_limit_w"):
        parse_record(rec.to_dict() | {"hardware": hw.model_dump() | {"accelerator_power_limit_w": -5}})
    with pytest.raises(RecordError, match="hardware.gpu_voltage.*a field of a newer perfzoo"):
        parse_record(rec.to_dict() | {"hardware": hw.model_dump() | {"gpu_voltage": 1.1}})


def test_failed_job_carries_its_failure():
    rec = make_record(status="oom", metrics=Metrics(),
                      failure={"kind": "oom", "rank": 1, "exit_code": 1, "message": "MemoryError",
                               "memory": {"limit_gib": 1.5}})
    assert parse_record(rec.to_json()).failure.memory == {"limit_gib": 1.5}


def test_job_id_depends_on_config_hardware_and_repeat_only():
    base = job_id_for("fsdp", {"a": 1, "b": "x"}, {"accelerator": "cpu"})
    assert base == job_id_for("fsdp", {"b": "x", "a": 1}, {"accelerator": "cpu"})
    assert base != job_id_for("fsdp", {"a": 2, "b": "x"}, {"accelerator": "cpu"})
    assert base != job_id_for("fsdp", {"a": 1, "b": "x"}, {"accelerator": "cuda"})
    assert base != job_id_for("fsdp", {"a": 1, "b": "x"}, {"accelerator": "cpu"}, repeat=1)
