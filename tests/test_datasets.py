"""The dataset registry and the external-data loaders: on the real files in ../shared/external
(tests marked ``external``), and on files written here or in tests/data/external."""

import json
import shutil
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pytest

from perfzoo.datasets import EXTERNAL, UnknownDatasetError, list_datasets, load_dataset, load_path, published_tables
from perfzoo.datasets.dataset import Dataset
from perfzoo.datasets.sources import DataError, read_vtrain
from perfzoo.records import Hardware, JobRecord, Metrics, RecordError, job_id_for
from perfzoo.records.store import RecordStore

VTRAIN_HEADER = ("# GPUs,global batch,micro batch,hidden size,attention heads,# layers,"
                 "sequence length,tensor parallelism,data parallelism,pipeline parallelism,"
                 "iteration time (ms)")
# rows of vTrain data/ground_truth_multi.csv @f8dda8473a48 (MIT); the last two repeat one config
MULTI_ROWS = [
    "3.6,64,512,8,3072,32,30,2048,1,64,1,3566.5",
    "18.4,256,1024,8,6144,48,40,2048,8,32,1,9603.6",
    "175,512,1536,2,12288,96,96,2048,4,4,32,53909.6",
    "175,512,1536,2,12288,96,96,2048,4,4,32,53937.9",
]
VOCABULARY = {
    "precision": {"fp32", "fp16", "bf16", "fp8", "mxfp8", "nvfp4", None},
    "fsdp": {"full_shard", "shard_grad_op", "no_shard", "hybrid_shard", "none", None},
    "activation_checkpointing": {"none", "selective", "full", None},
    "compile": {True, False, None},
}


def published_row(**cells):
    row = {"source": "New Lab benchmarks", "date": "2026-01-02", "model_name": "Llama 3 8B",
           "seq_len": "8192", "global_batch_size": "64", "micro_batch_size": "1", "n_gpus": "64",
           "gpu_type": "H100-80GB", "tp": "1", "pp": "1", "cp": "1", "dp": "64", "fsdp": "FSDP2",
           "precision": "BF16", "activation_checkpointing": "full", "compile": "true",
           "tokens_per_sec_per_gpu": "4000", "provenance": "test row"}
    return {**row, **cells}


def rows_where(ds, **equal):
    mask = np.ones(len(ds), dtype=bool)
    for column, value in equal.items():
        mask &= (ds.frame[column] == value).to_numpy()
    return ds.frame[mask]


# --- vTrain -------------------------------------------------------------------------------

@pytest.mark.external
def test_vtrain_a100_rows_and_a_hand_checked_throughput():
    ds = load_dataset("vtrain-a100")
    assert len(ds) == 1440 and ds.summary()["ok"] == 1440
    first = ds.frame.iloc[0]  # 2,16,8,1024,16,24,1024,1,1,2,372.160408
    expected = 16 * 1024 / (372.160408 / 1000)
    assert first["metrics.throughput"] == pytest.approx(expected, rel=1e-12)
    assert first["metrics.throughput_per_device"] == pytest.approx(expected / 2, rel=1e-12)
    assert first["metrics.step_time_mean_s"] == pytest.approx(0.372160408)
    assert first["metrics.throughput_unit"] == "tokens/s"
    assert (first["config.n_gpus"], first["config.tp"], first["config.dp"], first["config.pp"]) == (2, 1, 1, 2)
    assert first["config.grad_accum"] == 2  # 16 / (8 x 1)
    assert (first["config.ffn_dim"], first["config.n_kv_heads"], first["config.cp"]) == (4096, 16, 1)
    assert (first["hardware.accelerator"], first["hardware.accelerator_count"], first["hardware.nodes"]) == ("A100", 2, 1)
    assert first["started_at"] == pd.Timestamp("2024-09-26", tz="UTC")
    assert first["source"] == "published"
    assert ds.frame["job_id"].is_unique


@pytest.mark.external
def test_vtrain_a100_metadata_and_scale_split():
    ds = load_dataset("vtrain-a100")
    assert (ds.target, ds.target_unit, ds.time_column) == ("metrics.throughput", "tokens/s", "started_at")
    assert (ds.scale_column, ds.scale_threshold) == ("config.n_gpus", 4)
    summary = ds.summary()
    assert (summary["scale_train_rows"], summary["scale_test_rows"]) == (720, 720)  # 2-4 GPUs vs 8
    assert set(ds.feature_columns) >= {"config.n_gpus", "config.tp", "config.pp", "config.dp",
                                       "config.micro_batch_size", "config.hidden_dim", "config.n_layers"}
    assert "config.seq_len" in ds.feature_columns  # constant here, kept: analytic estimates need it
    assert all(c.startswith(("config.", "hardware.")) for c in ds.feature_columns)


def test_multi_node_layout_file_loads_by_path(tmp_path):
    path = tmp_path / "ground_truth_multi.csv"
    path.write_bytes(("\ufeffParameters (billion)," + VTRAIN_HEADER + "\r\n"
                      + "\r\n".join(MULTI_ROWS) + "\r\n").encode("utf-8"))
    ds = load_dataset(str(path))
    assert len(ds) == 4 and ds.name == "ground-truth-multi"
    big = ds.frame.iloc[2]
    assert big["config.n_params"] == 175_000_000_000
    assert (big["config.n_gpus"], big["config.tp"], big["config.dp"], big["config.pp"]) == (512, 4, 4, 32)
    assert big["config.grad_accum"] == 1536 / (2 * 4)
    assert big["hardware.nodes"] == 64
    assert big["metrics.throughput"] == pytest.approx(1536 * 2048 / 53.9096)
    # the repeated configuration: one config_key, two job ids
    assert ds.frame["config_key"].iloc[2] == ds.frame["config_key"].iloc[3]
    assert ds.frame["job_id"].is_unique
    assert ds.scale_threshold == 256  # inferred: every smaller scale predicts the largest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ground_truth_multi.csv"]  # nothing written


# --- published tables ---------------------------------------------------------------------

@pytest.mark.external
def test_published_row_counts_and_the_union():
    mosaic = load_dataset("published-mosaicml")
    titan = load_dataset("published-torchtitan")
    nemo = load_dataset("published-nemo")
    megatron = load_dataset("published-megatron")
    union = load_dataset("published-llm")
    assert (len(mosaic), len(titan), len(nemo), len(megatron)) == (516, 60, 71, 49 - 4)
    tables = published_tables()  # the four above and any published-table CSV shared since
    assert {"published-mosaicml", "published-torchtitan", "published-nemo", "published-megatron"} <= set(tables)
    assert len(union) == sum(len(load_path(path)) for path in tables.values())
    assert union.frame["job_id"].is_unique
    assert {s.split(" (")[0].split(" long")[0] for s in union.frame["annotations.source"]} >= {
        "MosaicML llm-foundry MPT training benchmarks", "pytorch/torchtitan docs & benchmarks",
        "NVIDIA NeMo performance summary", "NVIDIA/Megatron-LM README scaling tables"}
    dgxc = load_dataset("published-dgxc")  # registered under a short name, not its file's
    assert len(dgxc) == 332 and tables["published-dgxc"].name == "nvidia_dgxc_benchmarking_perf_tables.csv"
    assert "nvidia-dgxc-benchmarking-perf-tables" not in list_datasets()
    for ds in (mosaic, titan, nemo, megatron, dgxc, union):
        assert (ds.target, ds.target_unit) == ("metrics.throughput_per_device", "tokens/s")
        assert (ds.scale_column, ds.scale_threshold) == ("config.n_gpus", 64)
        assert ds.group_columns == ("config.model_name", "hardware.accelerator", "annotations.file")


@pytest.mark.external
def test_published_throughput_per_device_and_global():
    row = load_dataset("published-mosaicml").frame.iloc[0]  # MPT-70b, 128 GPUs, 328.3501 tok/s/GPU
    assert row["metrics.throughput_per_device"] == pytest.approx(328.3501)
    assert row["metrics.throughput"] == pytest.approx(328.3501 * 128)
    assert row["metrics.mfu"] == pytest.approx(0.4265)
    assert row["started_at"] == pd.Timestamp("2022-12-21", tz="UTC")
    assert row["annotations.variant"] == "removed_in_later_version"


@pytest.mark.external
def test_oom_rows_are_failures_not_missing_values():
    ds = load_dataset("published-torchtitan")
    oom = ds.frame[ds.frame["status"] == "oom"]
    assert len(oom) == 2
    assert set(oom["failure.kind"]) == {"oom"}
    assert oom["metrics.throughput_per_device"].isna().all()
    assert set(oom["config.model_name"]) == {"Llama 2 70B"}
    assert ds.failed.sum() == 2 and np.isnan(ds.y[ds.failed]).all()
    ok = ds.ok()
    assert len(ok) == 58 and not ok.failed.any()
    # the ok rows without a target are the ones whose model the table does not name; Llama 4
    # Scout's two rows take their shape from perfzoo's model catalog
    unknown = ok.frame["annotations.label"].str.startswith("unlabelled: model unknown").to_numpy()
    assert np.isnan(ok.y).tolist() == unknown.tolist() and unknown.sum() == 4
    assert set(ok.frame.loc[unknown, "config.model_name"]) == {"dense model (unspecified in doc; torchao source)"}
    scout = ok.frame[ok.frame["config.model_name"] == "Llama 4 Scout (MoE)"]
    assert len(scout) == 2 and set(scout["annotations.catalog_model"]) == {"llama4-scout"}


@pytest.mark.external
def test_architecture_filled_from_model_architectures_csv():
    ds = load_dataset("published-torchtitan")
    llama3 = rows_where(ds, **{"config.model_name": "Llama 3 8B"})
    assert len(llama3) == 5
    assert (llama3["config.n_params"] == 8_030_000_000).all()  # blank in the CSV
    assert llama3["annotations.arch_filled"].str.contains("n_params").all()
    assert (llama3["annotations.arch_key"] == "llama3-8b").all()
    qwen = rows_where(ds, **{"config.model_name": "Qwen3 8B"}).iloc[0]  # no architecture in the CSV
    assert (qwen["config.n_layers"], qwen["config.hidden_dim"], qwen["config.ffn_dim"],
            qwen["config.n_heads"], qwen["config.n_kv_heads"], qwen["config.vocab_size"]) == (
        36, 4096, 12288, 32, 8, 151936)
    # a value the CSV gives is never replaced
    mosaic = load_dataset("published-mosaicml").frame
    assert mosaic["annotations.arch_filled"].isna().all()
    assert mosaic["config.n_params"].iloc[0] == 64861528064


@pytest.mark.external
def test_messy_text_is_normalised_and_the_raw_text_kept():
    frame = load_dataset("published-llm").frame
    for key, allowed in VOCABULARY.items():
        assert {None if pd.isna(v) else v for v in frame[f"config.{key}"]} <= allowed, key

    def normalised(key, raw):
        values = {None if pd.isna(v) else v for v in frame.loc[frame[f"annotations.{key}_raw"] == raw, f"config.{key}"]}
        assert len(values) == 1, (key, raw, values)
        return values.pop()

    assert normalised("precision", "amp_bf16") == "bf16"
    assert normalised("precision", "BF16 (mixed precision FSDP2; not stated in table)") == "bf16"
    assert normalised("precision", "FP8 (Float8 linears) + BF16") == "fp8"
    assert normalised("precision", "mxfp8_cublas") == "mxfp8"
    assert normalised("precision", "NVFP4 (bf16 tail)") == "nvfp4"
    assert normalised("precision", "None (bfloat16)") == "bf16"
    assert normalised("activation_checkpointing", "TRUE") == "full"
    assert normalised("activation_checkpointing", "False") == "none"
    assert normalised("activation_checkpointing", "selective op") == "selective"
    assert normalised("compile", "true (train_configs/llama3_405b.toml)") is True
    assert (frame["config.fsdp"] == "shard_grad_op").sum() == 6  # 'SHARD_GRAD_OP': only the case changes
    assert normalised("fsdp", "FSDP2 (dp_shard=8)") == "full_shard"
    assert normalised("n_gpus", "256 (doc text also says '512 GPU training on 64 node GB200')") == 256
    # torchtitan's "local batch" is the batch per data-parallel rank, which its pipeline (pp=8) runs in
    # pp micro-batches: the raw text kept
    assert normalised("micro_batch_size", "32 (local batch)") == 4
    memory = frame.loc[frame["annotations.peak_memory_gib_raw"] == "33.71 (GB)", "metrics.peak_memory_gib"]
    assert memory.tolist() == [33.71]
    assert {"annotations.variant", "annotations.notes", "annotations.derived_fields",
            "annotations.date_basis"} <= set(frame.columns)
    assert set(frame["hardware.accelerator"]) >= {"A100-80GB", "A100-40GB", "H100-80GB", "H100-96GB", "B200"}


@pytest.mark.external
def test_republished_configurations_share_a_config_key():
    ds = load_dataset("published-mosaicml")
    sizes = ds.frame.groupby("config_key").size()
    assert sizes.max() > 1 and ds.summary()["configurations"] == len(sizes) < len(ds)
    copies = ds.frame[ds.frame["config_key"] == sizes.idxmax()]
    assert copies["job_id"].is_unique
    assert copies.filter(like="config.").nunique(dropna=False).max() == 1  # the same configuration


def test_a_new_published_csv_is_picked_up_with_no_code_change(tmp_path, synthetic, write_published):
    for name in ("lab_benchmarks.csv", "model_architectures.csv", "vtrain_sample.csv"):
        shutil.copy(synthetic / name, tmp_path / name)
    write_published(tmp_path / "newlab_benchmarks.csv", [
        published_row(),
        published_row(tokens_per_sec_per_gpu="OOM", micro_batch_size="4", variant="OOM"),
    ])
    assert list_datasets(tmp_path)[len(EXTERNAL):len(EXTERNAL) + 3] == [
        "lab-benchmarks", "newlab-benchmarks", "vtrain-sample"]
    union = load_dataset("published-llm", external_dir=tmp_path)
    assert len(union) == 5 + 2  # lab_benchmarks.csv: 6 rows, 1 without a GPU count
    new = load_dataset("newlab-benchmarks", external_dir=tmp_path)
    assert new.frame["status"].tolist() == ["ok", "oom"]
    assert new.frame["config.n_layers"].tolist() == [32, 32]  # filled by the architecture table
    assert new.frame["metrics.throughput"].iloc[0] == 4000 * 64


# --- the Dataset object -------------------------------------------------------------------

@pytest.mark.external
def test_dataset_api():
    ds = load_dataset("published-torchtitan")
    assert list(ds.X.columns) == list(ds.feature_columns)
    assert ds.y.dtype == float and ds.y.shape == (60,)
    assert ds.frame["started_at"].dt.tz is not None
    part = ds.subset(np.arange(10))
    assert len(part) == 10 and part.content_hash() != ds.content_hash()
    assert ds.content_hash() == load_dataset("published-torchtitan").content_hash()
    summary = json.loads(json.dumps(ds.summary()))
    assert summary["rows"] == 60 and summary["oom"] == 2 and summary["scale_max"] == 512
    assert summary["time_min"].startswith("2024-04-18")


@pytest.mark.external
def test_dataset_rejects_metadata_naming_missing_columns():
    frame = load_dataset("published-torchtitan").frame
    with pytest.raises(ValueError, match="'config.nope'"):
        Dataset(name="x", frame=frame, target="metrics.throughput", target_unit="tokens/s",
                feature_columns=("config.nope",))


# --- bundled record stores ----------------------------------------------------------------

def make_record(i, status="ok"):
    config = {"model_name": "tiny", "n_gpus": 1 + i % 3, "seq_len": 128 * (1 + i)}
    hardware = Hardware(accelerator="cpu", accelerator_count=config["n_gpus"])
    return JobRecord(
        job_id=job_id_for("llm", config, hardware.model_dump()), source="measured",
        provenance="test", started_at=datetime(2026, 1, 1 + i, tzinfo=timezone.utc), status=status,
        workload="llm", config=config, hardware=hardware,
        failure={"kind": "oom", "message": "CUDA out of memory"} if status == "oom" else None,
        metrics=Metrics(throughput=None if status == "oom" else 100.0 * (i + 1), throughput_unit="tokens/s"))


def test_comparable_groups_holdout_columns_and_the_labelled_mask():
    ds = Dataset.from_records("toy", [make_record(i) for i in range(6)] + [make_record(6, status="oom")])
    assert ds.is_labelled.tolist() == [True] * 6 + [False]
    assert len(ds.labelled()) == 6
    # the jobs a searcher chooses between: same model, device count and accelerator
    assert ds.comparable_columns == ["config.model_name", "config.n_gpus", "hardware.accelerator"]
    assert ds.comparable_groups().tolist()[:3] == ["tiny|1|cpu", "tiny|2|cpu", "tiny|3|cpu"]
    # group splits hold out the group columns that vary (none here), or the ones named
    assert ds.holdout_columns == []
    named = Dataset.from_records("toy", [make_record(i) for i in range(6)], group_columns=["config.n_gpus"])
    assert named.holdout_columns == ["config.n_gpus"]


def test_bundled_folders_are_discovered(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFZOO_DATASETS", str(tmp_path))
    folder = tmp_path / "cpu-llm-sweep"
    store = RecordStore(folder)
    for i, status in enumerate(["ok", "ok", "oom", "ok"]):
        store.append(make_record(i, status))
    (folder / "dataset.json").write_text(json.dumps({"scale_threshold": 2, "provenance": "a test sweep"}))
    (folder / "README.md").write_text("# cpu-llm-sweep\n\nA card.\n")
    (tmp_path / "not-a-dataset").mkdir()
    before = sorted(p.name for p in folder.iterdir())
    assert list_datasets()[-1] == "cpu-llm-sweep" and "not-a-dataset" not in list_datasets()
    ds = load_dataset("cpu-llm-sweep")
    assert len(ds) == 4 and ds.summary()["oom"] == 1
    assert (ds.scale_column, ds.scale_threshold, ds.target_unit) == ("config.n_gpus", 2, "tokens/s")
    assert ds.card.startswith("# cpu-llm-sweep") and ds.provenance == "a test sweep"
    assert "config.model_name" in ds.group_columns and "config.seq_len" in ds.feature_columns
    assert len(load_dataset(str(folder / "records.jsonl"))) == 4
    assert sorted(p.name for p in folder.iterdir()) == before  # reading writes nothing


# --- bad input ----------------------------------------------------------------------------

def test_unknown_name_lists_the_known_ones():
    with pytest.raises(UnknownDatasetError) as err:
        load_dataset("vtrain-h100")
    message = str(err.value)
    assert "'vtrain-h100'" in message and all(name in message for name in EXTERNAL)
    assert isinstance(err.value, KeyError) and isinstance(err.value, ValueError)


def test_missing_external_file_says_where_it_is_published(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError) as err:
        load_dataset("vtrain-a100", external_dir=tmp_path)
    message = str(err.value)
    for part in ("vtrain_ground_truth_single.csv", str(tmp_path), "PERFZOO_EXTERNAL_DATA",
                 "github.com/VIA-Research/vTrain", "data/ground_truth_single.csv"):
        assert part in message
    monkeypatch.setenv("PERFZOO_EXTERNAL_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"from \$PERFZOO_EXTERNAL_DATA"):
        load_dataset("published-llm")


def test_missing_column_is_named(tmp_path, write_published):
    path = tmp_path / "short.csv"
    path.write_text("\ufeff" + VTRAIN_HEADER.replace(",iteration time (ms)", "") + "\n2,16,8,1024,16,24,1024,1,1,2\n")
    with pytest.raises(DataError, match=r"short\.csv: missing column 'iteration time \(ms\)'.*needs"):
        read_vtrain(path)
    published = write_published(tmp_path / "pub.csv", [published_row()])
    frame = pd.read_csv(published, dtype=str).drop(columns=["tokens_per_sec_per_gpu"])
    frame.to_csv(published, index=False)
    with pytest.raises(DataError, match="missing column 'tokens_per_sec_per_gpu'"):
        load_dataset(str(published))


def test_empty_and_header_only_files(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(DataError, match=r"empty\.csv: the file is empty"):
        load_dataset(str(empty))
    header_only = tmp_path / "header.csv"
    header_only.write_text(VTRAIN_HEADER + "\n")
    with pytest.raises(DataError, match="header but no rows"):
        load_dataset(str(header_only))


def test_unparsable_number_names_file_line_column_and_value(tmp_path, write_published):
    path = write_published(tmp_path / "bad.csv", [published_row(), published_row(n_gpus="many")])
    with pytest.raises(DataError, match=r"bad\.csv, line 3, column 'n_gpus': 'many' is not a whole number"):
        load_dataset(str(path))
    path = write_published(tmp_path / "bad_date.csv", [published_row(date="last spring")])
    with pytest.raises(DataError, match=r"line 2, column 'date': 'last spring' is not a date"):
        load_dataset(str(path))


def test_unreadable_or_unknown_paths(tmp_path):
    with pytest.raises(FileNotFoundError, match="no/such/file.csv"):
        load_dataset("no/such/file.csv")
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(DataError, match="not a known CSV layout"):
        load_dataset(str(other))
    with pytest.raises(FileNotFoundError, match="no records.jsonl"):
        load_dataset(str(tmp_path))
    bad_meta = tmp_path / "store"
    RecordStore(bad_meta).append(make_record(0))
    (bad_meta / "dataset.json").write_text('{"scale_threshold": "high"}')
    with pytest.raises(DataError, match=r"field 'scale_threshold' = 'high'"):
        load_dataset(str(bad_meta))
    (bad_meta / "dataset.json").write_text('{"scale_threshold": ')
    with pytest.raises(DataError, match="not valid JSON"):
        load_dataset(str(bad_meta))


def test_negative_measurement_is_rejected_with_its_field(tmp_path, write_published):
    path = write_published(tmp_path / "neg.csv", [published_row(mfu="-0.3")])
    with pytest.raises(RecordError, match=r"neg\.csv, line 2: .*field 'metrics\.mfu' = -0\.3"):
        load_dataset(str(path))


def test_a_row_that_contradicts_itself_is_kept_and_reported(tmp_path, write_published):
    rows = [published_row(), published_row(grad_accum="4"),  # 1 x 4 x 64 = 256 sequences, not the 64 published
            published_row(tp="2", dp="64")]  # 2 x 64 = 128 ranks on 64 GPUs
    ds = load_dataset(str(write_published(tmp_path / "untidy.csv", rows)))
    assert len(ds) == 3 and (ds.frame["status"] == "ok").all()  # nothing dropped, nothing rewritten
    assert ds.frame["config.grad_accum"].iloc[1] == 4 and ds.frame["config.tp"].iloc[2] == 2
    (report,) = ds.load_reports
    assert [line for line, _ in report.contradictions] == [3, 4]
    assert "micro_batch_size x grad_accum x dp = 1 x 4 x 64 = 256 but global_batch_size = 64" in report.contradictions[0][1]
    assert "tp x pp x cp x dp = 2 x 1 x 1 x 64 = 128 but n_gpus = 64" in report.contradictions[1][1]
    assert "line 3: micro_batch_size" in str(report) and report.to_dict()["contradicting_rows"]["4"].startswith("tp x pp")


def test_measured_llm_records_read_with_the_fp8_recipe_their_harness_ran():
    """harness.workloads.llm quantizes the forward GEMM only: its FP8 records, stored before the
    config said so, read with ``low_precision_backward`` false (perfzoo.workloads.llm.harness_recipe),
    the stored lines as they were; a config the llm-gpu space draws says it too, and its job id is
    the one a record without the key has (a resumed sweep skips it)."""
    from perfzoo import spaces, workloads
    from perfzoo.datasets import bundled_dir
    from perfzoo.collect.sweep import job_identity

    path = bundled_dir() / "llm-h100" / "records.jsonl"
    before = path.read_bytes()
    frame = load_dataset("llm-h100").frame
    fp8 = (frame["config.precision"] == "fp8").to_numpy()
    assert fp8.sum() > 100 and (frame.loc[fp8, "config.low_precision_backward"] == False).all()  # noqa: E712
    assert frame.loc[~fp8, "config.low_precision_backward"].isna().all()
    assert path.read_bytes() == before and b"low_precision_backward" not in before
    drawn = spaces.get("llm-gpu").sample(20, seed=0)
    assert {c["precision"]: c.get("low_precision_backward") for c in drawn} == {"fp8": False, "bf16": None}
    stored = next(json.loads(line)["config"] for line in before.decode().splitlines()
                  if json.loads(line)["config"]["precision"] == "fp8")
    llm = workloads.get("llm")
    assert job_identity(llm, {**stored, **llm.implied(stored)}) == stored


# --- the cache of loaded tables -------------------------------------------------------------

def test_a_table_is_read_once_and_again_when_it_or_a_neighbour_changes(tmp_path, synthetic, monkeypatch):
    from perfzoo.datasets import cache

    monkeypatch.setenv(cache.ENV_CACHE, str(tmp_path / "cache"))
    data = tmp_path / "data"
    shutil.copytree(synthetic, data)
    first = load_dataset("lab-benchmarks", external_dir=data)
    kept = list((tmp_path / "cache" / "datasets").glob("*.pickle"))
    assert len(kept) == 1
    again = load_dataset("lab-benchmarks", external_dir=data)
    pd.testing.assert_frame_equal(again.frame, first.frame)
    assert list((tmp_path / "cache" / "datasets").glob("*.pickle")) == kept  # read back, not written again
    # a neighbour the loader reads (the architecture table) changed: read afresh
    arch = data / "model_architectures.csv"
    arch.write_text(arch.read_text() + "\n")
    load_dataset("lab-benchmarks", external_dir=data)
    assert len(list((tmp_path / "cache" / "datasets").glob("*.pickle"))) == 2
    # a row of the table itself changed: the new value is read, not the kept one
    table = data / "lab_benchmarks.csv"
    table.write_text(table.read_text().replace(",5200,", ",5300,", 1))
    changed = load_dataset("lab-benchmarks", external_dir=data)
    assert not changed.frame["metrics.throughput"].equals(first.frame["metrics.throughput"])


def test_an_unwritable_cache_folder_still_loads(tmp_path, synthetic, monkeypatch):
    from perfzoo.datasets import cache

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv(cache.ENV_CACHE, str(blocker))
    assert len(load_dataset("lab-benchmarks", external_dir=synthetic)) > 0
    assert not any(tmp_path.glob("*.tmp"))


def test_two_tables_of_one_folder_are_kept_apart(tmp_path, synthetic, monkeypatch):
    from perfzoo.datasets import cache

    monkeypatch.setenv(cache.ENV_CACHE, str(tmp_path / "cache"))
    shutil.copy(synthetic / "lab_benchmarks.csv", tmp_path / "a.csv")
    table = pd.read_csv(synthetic / "lab_benchmarks.csv")
    table.head(2).to_csv(tmp_path / "b.csv", index=False)
    assert (len(load_path(tmp_path / "a.csv")), len(load_path(tmp_path / "b.csv"))) == (5, 2)
