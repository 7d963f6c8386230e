"""Held-out hardware (perfzoo.evaluation.hardware): members fitted on one card's jobs, scored on
the other card's, both ways, with the training card's shipped pick marked."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from perfzoo.datasets import load_dataset
from perfzoo.evaluation import hardware


def test_each_card_is_scored_by_members_fitted_on_the_other(tmp_path):
    h100, h200 = load_dataset("llm-h100"), load_dataset("llm-h200")
    (tmp_path / "best.json").write_text(json.dumps({"datasets": {"llm-h100": {"predictor": "ridge"}}}))
    written = hardware.write([h100, h200, load_dataset("fsdp-cpu")], ["analytic", "constant", "ridge"], tmp_path)
    assert written == [tmp_path / "hardware.md", tmp_path / "hardware.csv"]
    table = pd.read_csv(tmp_path / "hardware.csv")
    assert set(zip(table["train"], table["test"])) == {("llm-h100", "llm-h200"), ("llm-h200", "llm-h100")}
    there = table[table["test"] == "llm-h200"].set_index("predictor")
    back = table[table["test"] == "llm-h100"].set_index("predictor")
    # every labelled job of the other card is scored, none fitted on; the shipped pick stands for its member
    n100, n200 = (int((ds.frame["status"] == "ok").sum()) for ds in (h100, h200))
    assert set(there["n_test"]) == {n200} and set(there["n_train"]) == {n100} and set(back["n_test"]) == {n100}
    assert (n100, n200) == (288, 179)  # the cards' ok jobs (datasets/llm-h100, llm-h200: README.md)
    assert list(there.index) == ["ridge (best)", "analytic", "constant"] and "ridge" in back.index
    assert 0.5 < there.loc["analytic", "kendall"] <= 1 and there.loc["analytic", "mape"] > 0
    assert pd.isna(there.loc["constant", "kendall"])  # a constant ranks nothing
    text = (tmp_path / "hardware.md").read_text()
    best = there["kendall"].idxmax()
    assert "## fit on llm-h100, score on llm-h200" in text and "Shipped pick of llm-h100: **ridge (best)**" in text
    assert f"Best member by Kendall: **{best}**" in text
    assert "Shipped pick of llm-h200" not in text  # best.json names none: said on stderr, not made up
    assert "## The same configs on both cards" in text and "| llm-h100 step (s) | configs | measured | analytic |" in text


def test_the_configs_both_cards_ran_are_set_side_by_side():
    h100, h200 = load_dataset("llm-h100"), load_dataset("llm-h200")
    table = hardware.paired_ratios(h100, h200)
    ok100, ok200 = (ds.frame[ds.frame["status"] == "ok"] for ds in (h100, h200))
    dims = ["config.n_layers", "config.hidden_dim", "config.seq_len", "config.micro_batch_size",
            "config.precision", "config.activation_checkpointing", "config.compile"]  # the llm-gpu space
    shared = set(map(tuple, ok100[dims].astype(str).to_numpy())) & set(map(tuple, ok200[dims].astype(str).to_numpy()))
    assert table["step_s"].iloc[-1] == "all" and table["configs"].iloc[-1] == len(shared) > 100
    assert table["configs"].iloc[:-1].sum() == len(shared)
    # one config by hand: the H200's tokens/s over the H100's
    key = sorted(shared)[0]
    pick = lambda ok: ok[(ok[dims].astype(str) == list(key)).all(axis=1)]["metrics.throughput"].iloc[0]
    one = hardware.paired_ratios(h100.subset((h100.frame[dims].astype(str) == list(key)).all(axis=1).to_numpy()), h200)
    assert one["configs"].iloc[-1] == 1 and one["measured"].iloc[-1] == pytest.approx(pick(ok200) / pick(ok100))
    # the analytic model: the H200's 4.8 TB/s against 3.35 speeds up the long steps, never slows a job
    assert (table["analytic"] >= 1.0 - 1e-9).all() and table["analytic"].iloc[-2] > 1.1
    with pytest.raises(ValueError, match="no config ran ok on both"):
        hardware.paired_ratios(h100, load_dataset("fsdp-cpu"))


def test_no_table_without_both_cards(tmp_path):
    assert hardware.write([load_dataset("llm-h100")], ["ridge"], tmp_path) == []
    assert not (tmp_path / "hardware.md").exists()


def test_holding_a_family_out_measures_the_widening_predict_and_plan_apply(external):
    from perfzoo.zoo.extrapolation import UNSEEN_FAMILY_WIDENING

    ds = load_dataset("published-llm", external_dir=external)
    table = hardware.held_out(ds, "analytic", {}, "family").set_index("group")
    # the tables' families with >= MIN_JOBS ok jobs: NVIDIA's only (Volta's few V100 jobs stay in training)
    assert set(table.index) == {"NVIDIA Ampere", "NVIDIA Hopper", "NVIDIA Blackwell"}
    assert (table["jobs"] >= hardware.MIN_JOBS).all()
    # a group its plain interval already covers 80% of needs no widening; one it covers less needs some
    assert ((table["coverage"] >= hardware.LEVEL) == (table["widening"] == 0)).all()
    # the stored figure is the largest (scripts/hardware_widening.py; the shipped member is analytic)
    assert table["widening"].max() == pytest.approx(UNSEEN_FAMILY_WIDENING, abs=0.002)
