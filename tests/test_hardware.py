"""Held-out hardware (perfzoo.evaluation.hardware): members fitted on one card's jobs, scored on
the other card's, both ways, with the training card's shipped pick marked."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from perfzoo.datasets import load_dataset
from perfzoo.evaluation import hardware
from perfzoo.zoo.best import best_member


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
    from perfzoo.zoo.extrapolation import UNSEEN_ACCELERATOR_WIDENING, UNSEEN_FAMILY_WIDENING

    ds = load_dataset("published-llm", external_dir=external)
    table = hardware.held_out(ds, *best_member("published-llm"), "family").set_index("group")  # the shipped member
    # the tables' families with >= MIN_JOBS ok jobs: NVIDIA's only (Volta's few V100 jobs stay in training)
    assert set(table.index) == {"NVIDIA Ampere", "NVIDIA Hopper", "NVIDIA Blackwell"}
    assert (table["jobs"] >= hardware.MIN_JOBS).all()
    # a group its plain interval already covers 80% of needs no widening; one it covers less needs some
    assert ((table["coverage"] >= hardware.LEVEL) == (table["widening"] == 0)).all()
    # the stored figure is the largest, and at least an accelerator's (scripts/hardware_widening.py; the
    # shipped member)
    assert max(table["widening"].max(), UNSEEN_ACCELERATOR_WIDENING) == pytest.approx(UNSEEN_FAMILY_WIDENING, abs=0.002)


def test_holding_a_software_stack_out_measures_the_widening_of_an_unseen_vendor(external):
    """Each framework of the shared tables left out in turn (scripts/hardware_widening.py): the largest
    widening that restores 80% coverage of a held-out stack is what an unseen vendor's stack adds."""
    from perfzoo.zoo.extrapolation import STACK_MEASURED, UNSEEN_STACK_WIDENING

    ds = load_dataset("published-llm", external_dir=external)
    table = hardware.held_out(ds, *best_member("published-llm"), "framework").set_index("group")
    assert {"llm-foundry", "nemo", "megatron-bridge", "torchtitan", "megatron-lm"} == set(table.index)
    assert ((table["coverage"] >= hardware.LEVEL) == (table["widening"] == 0)).all()
    assert table["widening"].max() == pytest.approx(UNSEEN_STACK_WIDENING, abs=0.01)
    assert table["widening"].idxmax() == STACK_MEASURED.lower()


def test_v100_variants_are_priced_from_their_datasheets_in_fp16_and_refuse_bf16(synthetic, capsys):
    """V100 SXM2 and PCIe, 16 and 32 GB, each its own row (public V100 tables name all four); fp16 is
    their 16-bit format: a V100 config is priced in fp16, and bf16 is refused in one line."""
    from perfzoo.hardware import accelerators
    from perfzoo.predict import PredictConfig, main, run

    rows = {text: accelerators.spec(text) for text in ("V100-16GB", "V100-32GB", "Tesla V100-SXM2-16GB",
                                                       "Tesla V100-PCIE-32GB", "V100-PCIE-16GB", "Tesla V100S-PCIE-32GB")}
    names = {text: s.name for text, s in rows.items()}
    assert names == {"V100-16GB": "V100-16GB", "V100-32GB": "V100", "Tesla V100-SXM2-16GB": "V100-16GB",
                     "Tesla V100-PCIE-32GB": "V100-PCIe-32GB", "V100-PCIE-16GB": "V100-PCIe-16GB",
                     "Tesla V100S-PCIE-32GB": "V100S-PCIe"}
    sxm16, sxm32, pcie32 = rows["V100-16GB"], rows["V100-32GB"], rows["Tesla V100-PCIE-32GB"]
    # the datasheet: SXM2 125 fp16 tensor TFLOP/s, PCIe 112; 900 GB/s either way; NVLink only on SXM2
    assert (sxm16.memory_gib, sxm32.memory_gib, pcie32.memory_gib) == (16, 32, 32)
    assert sxm16.flops("bf16") == sxm32.flops("bf16") == 125e12 and pcie32.flops("bf16") == 112e12
    assert sxm16.hbm_bw == pcie32.hbm_bw == 0.9e12 and pcie32.intra_bw < sxm32.intra_bw
    assert all(s.formats == {"fp16"} and s.flops("fp8") is None for s in rows.values())
    knobs = ["model_name=llama3-8b", "n_layers=32", "hidden_dim=4096", "seq_len=2048", "global_batch_size=16",
             "n_gpus=8", "tp=8", "accelerator=V100-32GB"]
    table = run(PredictConfig(knobs=knobs, dataset=str(synthetic / "lab_benchmarks.csv"), predictor="ridge"))
    assert table["predicted_tokens_per_s"].iloc[0] > 0 and "precision=fp16" in table["filled"].iloc[0]
    assert main(["--dataset", str(synthetic / "lab_benchmarks.csv"), "--predictor", "ridge", "--set",
                 *knobs[:-1], "accelerator=V100-16GB", "precision=bf16"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "precision=bf16: V100-16GB's matrix units run fp16 only" in err, err


def test_common_accelerators_have_datasheet_rows():
    """A10, A30, A40, L4, RTX 4090 and RTX 6000 Ada: dense peaks from the vendors' datasheets, FP8 only
    on Ada, each row citing its source; an A10G or RTX A6000 matches none (refused, not guessed)."""
    from perfzoo.hardware import accelerators

    peaks = {n: (accelerators.spec(n).flops("bf16"), accelerators.spec(n).peak("fp8"), accelerators.spec(n).memory_gib)
             for n in ("A10", "A30", "A40", "L4", "RTX 4090", "RTX 6000 Ada")}
    assert peaks == {"A10": (125e12, None, 24), "A30": (165e12, None, 24), "A40": (149.7e12, None, 48),
                     "L4": (121e12, 242e12, 24), "RTX 4090": (165.2e12, 330.3e12, 24),
                     "RTX 6000 Ada": (364e12, 728e12, 48)}
    assert all("datasheet" in accelerators.spec(n).source or "whitepaper" in accelerators.spec(n).source for n in peaks)
    with pytest.warns(UserWarning, match="unknown accelerator"):
        assert accelerators.spec("A10G") is None and accelerators.spec("RTX A6000") is None
