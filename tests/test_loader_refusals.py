"""The published-table loader refuses, as predict does, the rows it would otherwise price from a
guess: expert parallelism on a model it reads as dense, a mixture of experts without its expert
count, a hybrid stack without its layer counts, and an MoE row given only TFLOP/s whose active
FLOPs per token are unknown; an MoE row's TFLOP/s becomes tokens/s over its active FLOPs."""

import shutil

import pytest

from perfzoo.datasets.sources import read_published

from test_datasets import published_row


@pytest.fixture(autouse=True)
def architectures(tmp_path, synthetic):
    shutil.copy(synthetic / "model_architectures.csv", tmp_path / "model_architectures.csv")


def load(tmp_path, write_published, rows):
    return read_published(write_published(tmp_path / "lab.csv", rows))


def test_expert_parallelism_on_a_model_read_as_dense_is_refused_and_counted(tmp_path, write_published):
    records, (report,) = load(tmp_path, write_published, [
        published_row(), published_row(ep="8", dp="8", tp="8"), published_row(model_name="Mixtral 8x7B", ep="8")])
    assert [r.config["model_name"] for r in records] == ["Llama 3 8B", "Mixtral 8x7B"]
    assert report.rows == 3 and report.labelled == 2 and [line for line, _ in report.skipped] == [3]
    why = report.skipped[0][1]
    assert why.startswith("ep = 8 needs a mixture-of-experts model, and perfzoo reads Llama 3 8B as dense")
    assert "\n" not in why and f"skipped line 3: {why}" in str(report)


def test_a_mixture_of_experts_without_an_expert_count_is_refused(tmp_path, write_published):
    records, (report,) = load(tmp_path, write_published, [
        published_row(model_name="Mystery-30B-A3B", n_layers="48", hidden_dim="2048", n_heads="32"),
        published_row(model_name="Mystery-Mamba-8B", n_layers="52", hidden_dim="4096", n_heads="32"),
        published_row(model_name="Nemotron-H 8B")])  # the catalog gives its Mamba-2 and attention counts
    assert [r.config["model_name"] for r in records] == ["Nemotron-H 8B"]
    (_, moe), (_, mamba) = report.skipped
    assert moe.startswith("Mystery-30B-A3B is a mixture of experts (its name states an active size) without an "
                          "expert count")
    assert mamba.startswith("Mystery-Mamba-8B mixes in layers perfzoo cannot count (Mamba")
    assert "not priced as a transformer" in mamba


def test_an_moe_rows_tflops_become_tokens_per_second_over_its_active_flops(tmp_path, write_published):
    # Mixtral 8x7B at 4,096 tokens, model FLOPs: attention projections d*a*h + 2*d*k*h + a*h*d = 41,943,040
    # and two of eight experts, 2 * 3 * 4096 * 14336 = 352,321,536, per layer, x 32 = 12,616,466,432; LM head
    # 32000 * 4096 = 131,072,000; routers 32 * 4096 * 8 = 1,048,576: N_active = 12,748,587,008, 6N = 76,491,522,048;
    # attention 6 * 4096 * 32 heads * 256 * 32 layers = 6,442,450,944: 82,933,972,992 FLOPs per token
    # (6N of all 46.7e9 parameters: 2.8e11, 3.4x too many)
    (record,), (report,) = load(tmp_path, write_published, [
        published_row(model_name="Mixtral 8x7B", seq_len="4096", tokens_per_sec_per_gpu="", tflops_per_gpu="400")])
    assert record.metrics.throughput_per_device == pytest.approx(400e12 / 82_933_972_992, rel=1e-9)
    assert "of the active parameters" in record.annotations["perfzoo_derived"]
    assert report.derived["tokens/s from TFLOP/s: MoE rows over their active FLOPs per token at the row's "
                          "sequence"] == 1


def test_an_moe_row_with_only_tflops_and_no_sequence_is_refused_not_priced_at_6n_of_every_expert(
        tmp_path, write_published):
    records, (report,) = load(tmp_path, write_published, [
        published_row(model_name="DeepSeek-V3", seq_len="", tokens_per_sec_per_gpu="", tflops_per_gpu="400"),
        published_row(model_name="DeepSeek-V3", seq_len="", tokens_per_sec_per_gpu="1500"),  # published: kept
        published_row(seq_len="", tokens_per_sec_per_gpu="", tflops_per_gpu="400")])  # dense: 6N as before
    assert [r.config["model_name"] for r in records] == ["DeepSeek-V3", "Llama 3 8B"]
    assert records[0].metrics.throughput_per_device == 1500
    assert records[1].metrics.throughput_per_device == pytest.approx(400e12 / (6 * 8.03e9), rel=1e-3)
    assert report.rows == 3 and [line for line, _ in report.skipped] == [2]
    assert "active FLOPs per token are unknown, and 6N of its total parameters" in report.skipped[0][1]
