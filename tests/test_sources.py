"""The source registry: each layout detected and read behind one interface, its default
columns applied, and a new CSV layout added as one class plus one registration."""

import re
import shutil
from pathlib import Path
from typing import Sequence

import pytest

from perfzoo.console import InputError
from perfzoo.console import read_configs
from perfzoo.datasets import sources
from perfzoo.datasets import list_datasets, load_dataset
from perfzoo.datasets.sources import SOURCES, CsvSource, DataError, Load
from perfzoo.datasets.sources._csv import iter_rows, read_table
from perfzoo.datasets.sources._llm import RecordBuilder, llm_config
from perfzoo.llmconfig import huggingface
from perfzoo.spaces.file import load as load_space


def test_each_file_is_detected_as_its_layout(synthetic, tmp_path):
    assert sources.detect(synthetic / "lab_benchmarks.csv").name == "published"
    assert sources.detect(synthetic / "vtrain_sample.csv").name == "vtrain"
    assert sources.detect(tmp_path).name == "store"
    with pytest.raises(DataError, match="not a known CSV layout"):
        sources.detect(synthetic / "model_architectures.csv")
    with pytest.raises(KeyError, match="registered: store, vtrain, published"):
        sources.get("parquet")


def test_a_source_gives_its_default_columns(synthetic):
    vtrain = load_dataset(str(synthetic / "vtrain_sample.csv"))
    assert (vtrain.name, vtrain.target, vtrain.scale_column, vtrain.group_columns) == (
        "vtrain-sample", "metrics.throughput", "config.n_gpus", ("config.model_name",))
    assert vtrain.provenance == f"{synthetic / 'vtrain_sample.csv'} (vtrain layout, read in place)"
    assert len(vtrain) == 4 and not vtrain.load_reports
    lab = load_dataset(str(synthetic / "lab_benchmarks.csv"))
    assert lab.target == SOURCES["published"].target == "metrics.throughput_per_device"
    assert [r.file for r in lab.load_reports] == ["lab_benchmarks.csv"]


class KernelSource(CsvSource):
    """A made-up layout: one kernel benchmark a row (model, GPUs, tokens per second)."""

    name = "kernels"
    title = "kernel-benchmark"
    describe = "the kernel-benchmark layout (model, gpus, tokens_per_s)"
    columns = ("model", "gpus", "tokens_per_s")
    target = "metrics.throughput"
    target_unit = "tokens/s"

    def read(self, paths: Sequence[Path]) -> Load:
        builder, records = RecordBuilder(), []
        for path in paths:
            for row in iter_rows(read_table(path, self.title), path):
                gpus = row.number("gpus", whole=True, required=True)
                records.append(builder.record(
                    row, llm_config(model_name=row.text("model"), n_gpus=gpus),
                    {"accelerator": "H100", "accelerator_count": gpus}, provenance=row.where,
                    started_at="2025-01-01T00:00:00+00:00", status="ok",
                    metrics={"throughput": row.number("tokens_per_s", required=True), "throughput_unit": "tokens/s"}))
        return Load(records, [])


def test_a_new_csv_layout_is_one_class_and_one_registration(tmp_path, monkeypatch, synthetic):
    monkeypatch.setitem(SOURCES, KernelSource.name, KernelSource())
    (tmp_path / "kernel_runs.csv").write_text("model,gpus,tokens_per_s\ntiny,1,100\ntiny,2,190\ntiny,4,350\n")
    shutil.copy(synthetic / "lab_benchmarks.csv", tmp_path)
    assert "kernel-runs" in list_datasets(tmp_path)
    ds = load_dataset("kernel-runs", external_dir=tmp_path)
    assert ds.frame["metrics.throughput"].tolist() == [100, 190, 350]
    assert (ds.target, ds.scale_column, ds.scale_threshold) == ("metrics.throughput", "config.n_gpus", 2)
    assert len(load_dataset("published-llm", external_dir=tmp_path)) == 5  # the published files only
    with pytest.raises(DataError, match="and the kernel-benchmark layout"):
        sources.detect(synthetic / "model_architectures.csv")


def test_a_table_whose_every_row_is_skipped_names_what_is_missing(tmp_path, write_published):
    rows = [{"source": "lab", "date": "2025-01-01", "model_name": "llama3-8b", "seq_len": 8192, "n_gpus": n,
             "gpu_type": "", "tokens_per_sec_per_gpu": 9000, "tp": 1, "pp": 1, "dp": n} for n in (8, 16)]
    path = write_published(tmp_path / "mine.csv", rows)
    with pytest.raises(DataError) as info:
        load_dataset(str(path))
    assert str(info.value) == (f"{path}: no job in it, its rows were skipped: no accelerator (gpu_type blank) "
                               "(2 rows); fill what is missing")


def _undecodable(path):
    path.write_bytes("tp,n_layers\n".encode() + b"\xff\xfe\n")
    return path


@pytest.mark.parametrize("read, message", [
    (lambda p: load_dataset(str(_undecodable(p / "t.csv"))), r"{p}/t.csv: not a readable CSV file \('utf-8' codec"),
    (lambda p: read_configs(str(_undecodable(p / "c.csv"))), r"--configs {p}/c.csv: not UTF-8 text \(byte 12 is 0xff\)"),
    (lambda p: read_configs(str(_undecodable(p / "c.jsonl"))), r"--configs {p}/c.jsonl: not UTF-8 text"),
    (lambda p: load_space(_undecodable(p / "s.toml")), r"space file {p}/s.toml: not UTF-8 text \(byte 12\)"),
    (lambda p: huggingface.from_hf_config(_undecodable(p / "config.json")),
     r"{p}/config.json: not a readable JSON model config \(not UTF-8 text: byte 12\)"),
])
def test_an_undecodable_file_is_named(tmp_path, read, message):
    with pytest.raises((ValueError, InputError), match=message.format(p=re.escape(str(tmp_path)))):
        read(tmp_path)
