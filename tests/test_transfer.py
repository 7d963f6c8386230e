"""The transfer matrix on three small synthetic sources (no external data needed)."""

import numpy as np
import pandas as pd
import pytest

from perfzoo import analytic
from perfzoo.datasets.dataset import Dataset
from perfzoo.datasets.sources.published import read_published
from perfzoo.evaluation import transfer
from perfzoo.evaluation.transfer import LEAVE_ONE_OUT, leave_one_out_mean, to_markdown, transfer_matrix
from test_datasets import published_row

SHAPES = [(16, 2048), (24, 2048), (32, 4096), (40, 5120), (48, 6144)]


def _source(tmp_path, write_published, name, efficiency, gpu_counts):
    rows = []
    for L, d in SHAPES:
        for n in gpu_counts:
            cfg = {"n_layers": L, "hidden_dim": d, "n_heads": d // 128, "n_kv_heads": d // 128, "ffn_dim": 4 * d,
                   "vocab_size": 32000, "seq_len": 4096, "global_batch_size": 4 * n, "micro_batch_size": 1,
                   "n_gpus": n, "tp": 1, "pp": 1, "cp": 1, "dp": n, "fsdp": "full_shard", "precision": "bf16",
                   "activation_checkpointing": "full", "compile": True, "accelerator": "H100-80GB"}  # as published_row
            tput = efficiency * analytic.throughput(cfg, per_device=True)
            rows.append(published_row(model_name=f"Synthetic {L}x{d}", n_layers=str(L), hidden_dim=str(d),
                                      n_heads=str(d // 128), ffn_dim=str(4 * d), n_kv_heads=str(d // 128),
                                      vocab_size="32000", seq_len="4096", global_batch_size=str(4 * n),
                                      n_gpus=str(n), dp=str(n), tokens_per_sec_per_gpu=f"{tput:.3f}"))
    return write_published(tmp_path / name, rows)


@pytest.fixture
def sources(tmp_path, write_published):
    return three_labs(tmp_path, write_published)


def three_labs(tmp_path, write_published):
    paths = [_source(tmp_path, write_published, "lab_a.csv", 0.40, [8, 16, 64]),
             _source(tmp_path, write_published, "lab_b.csv", 0.55, [8, 32, 128]),
             _source(tmp_path, write_published, "lab_c.csv", 0.30, [16, 64, 256])]
    load = read_published(*paths)
    return Dataset.from_records("three-labs", load.records, target="metrics.throughput_per_device",
                                scale_column="config.n_gpus")


def test_matrix_fits_on_each_source_and_scores_on_each_other(sources):
    table = transfer_matrix(sources, ["analytic", "ridge"])
    files = ["lab_a.csv", "lab_b.csv", "lab_c.csv"]
    assert list(table.columns) == files
    assert list(table.loc["analytic"].index) == [*files, LEAVE_ONE_OUT]
    # the jobs ran at a constant fraction of the analytic estimate: it ranks every held-out source perfectly
    assert np.allclose(table.loc[("analytic", LEAVE_ONE_OUT)].to_numpy(dtype=float), 1.0)
    assert leave_one_out_mean(table, "analytic") == pytest.approx(1.0)
    assert np.isfinite(table.loc[("ridge", "lab_a.csv"), "lab_b.csv"])
    text = to_markdown(table, "three-labs")
    assert "### ridge" in text and "| all others |" in text and "mean over sources: **1.000**" in text


def test_each_cell_holds_the_absolute_error_too(sources):
    scores = transfer.transfer_scores(sources, ["analytic"])
    assert set(transfer.METRICS) <= set(scores.columns) and len(scores) == 4 * 3  # 3 sources + all others, x 3
    mape = transfer.matrix(scores, "mape").loc[("analytic", LEAVE_ONE_OUT)]
    # left out in turn, a lab is priced at the geometric mean of the other two labs' efficiencies
    # (the median of an even number of log ratios): a 0.40 from 0.55 and 0.30 ...
    expected = {"lab_a.csv": (0.55 * 0.30) ** 0.5 / 0.40, "lab_b.csv": (0.40 * 0.30) ** 0.5 / 0.55,
                "lab_c.csv": (0.40 * 0.55) ** 0.5 / 0.30}
    for lab, ratio in expected.items():
        assert mape[lab] == pytest.approx(100 * abs(ratio - 1), abs=0.5)
    text = to_markdown(transfer.matrix(scores), "three-labs", transfer.matrix(scores, "mape"))
    assert "Kendall tau / MAPE %" in text and f"1.000 / {100 * abs(expected['lab_c.csv'] - 1):.0f}" in text


def test_one_source_is_not_a_transfer_problem(sources):
    one = sources.subset(sources.frame["annotations.file"].to_numpy() == "lab_a.csv")
    with pytest.raises(ValueError, match="one source only"):
        transfer_matrix(one, ["analytic"])


def test_bench_writes_the_transfer_matrix_for_a_dataset_with_several_sources(tmp_path, sources):
    written = transfer.write([sources], ["constant", "analytic", "ridge", "gp", "failure"], tmp_path)
    text = (tmp_path / "transfer.md").read_text()
    assert written == [tmp_path / "transfer.md", tmp_path / "transfer.csv"]
    assert "### analytic" in text and "### ridge" in text
    assert "### gp" not in text and "### failure" not in text  # too costly to fit per source; not throughput
    assert "### constant" not in text  # ranks nothing
    table = pd.read_csv(tmp_path / "transfer.csv")
    assert {"predictor", "train", "test", "kendall", "mape", "mdape", "dataset"} <= set(table.columns)
    assert set(table["predictor"]) == {"analytic", "ridge"}
    assert transfer.write([sources.subset(sources.frame["annotations.file"].to_numpy() == "lab_a.csv")],
                          ["analytic"], tmp_path / "none") == []
