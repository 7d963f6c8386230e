"""The source registry: each layout detected and read behind one interface, its default
columns applied, and a new CSV layout added as one class plus one registration."""

import shutil
from pathlib import Path
from typing import Sequence

import pytest

from perfzoo import sources
from perfzoo.datasets import list_datasets, load_dataset
from perfzoo.sources import SOURCES, CsvSource, DataError, Load
from perfzoo.sources._csv import iter_rows, read_table
from perfzoo.sources._llm import RecordBuilder, llm_config


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
