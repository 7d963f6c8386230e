"""``perfzoo predict``: predictions with a breakdown, warnings outside the training data, unknown columns."""

import json
import re

import numpy as np
import pandas as pd
import pytest

from perfzoo import analytic, zoo
from perfzoo.datasets import load_dataset
from perfzoo.llmconfig import ConfigError
from perfzoo.predict import main
from perfzoo.pricing import Resolved, price, resolve
from perfzoo.zoo.extrapolation import (
    UNSEEN_ACCELERATOR_WIDENING,
    UNSEEN_FAMILY_WIDENING,
    UNSEEN_STACK_WIDENING,
    WIDENING_PER_DOUBLING,
)
from perfzoo.zoo.interval import Interval

LLAMA3_70B = {"model_name": "llama3-70b", "n_layers": 80, "hidden_dim": 8192, "ffn_dim": 28672, "n_heads": 64,
              "n_kv_heads": 8, "vocab_size": 128256, "seq_len": 8192, "micro_batch_size": 1, "tp": 8, "pp": 4,
              "cp": 1, "precision": "bf16", "activation_checkpointing": "selective", "fsdp": "none"}


def predict_frame(configs, training, predictor=None, **kw):
    """``configs`` priced as ``predict`` prices them: by ``predictor`` fitted on ``training``, else ``--predictor best``."""
    resolved = (Resolved.fitted(predictor, training) if predictor is not None
                else resolve("best", training.name, training=training))
    return price(configs, resolved, **kw)


@pytest.fixture(scope="module")
def published(external):
    ds = load_dataset("published-llm", external_dir=external)
    ok = ds.labelled().ok()
    return ds, zoo.make("ridge").fit(ok.X, ok.y, dataset=ds.name)


def test_llama3_70b_on_h100_and_gb200_gets_a_prediction_and_a_breakdown(published):
    ds, ridge = published
    configs = [{**LLAMA3_70B, "n_gpus": 1024, "dp": 32, "global_batch_size": 1024, "accelerator": "H100-SXM-80GB"},
               {**LLAMA3_70B, "n_gpus": 256, "dp": 8, "global_batch_size": 256, "accelerator": "GB200"}]
    table = predict_frame(configs, ds, ridge)
    assert len(table) == 2
    per_dev = table["predicted_tokens_per_s_per_device"].to_numpy()
    assert np.allclose(table["predicted_tokens_per_s"].to_numpy(), per_dev * [1024, 256])  # published: per GPU
    for c in ("analytic.compute_time_s", "analytic.comm_time_s", "analytic.memory_bytes", "analytic.step_time_s"):
        assert np.isfinite(table[c]).all() and (table[c] > 0).all(), c
    assert table["analytic.comm_tp_bytes"].gt(0).all() and table["analytic.bubble"].gt(0).all()  # tp 8, pp 4
    assert set(table["fits_in_memory"]) <= {True, False}
    assert np.allclose(table["predicted_step_time_s"], [1024 * 8192, 256 * 8192] / table["predicted_tokens_per_s"])


def test_configs_outside_the_training_data_are_warned_about(published):
    ds, ridge = published
    # deep enough to be 3x the largest model in whichever tables are shared (Llama 3 70B: ~0.86B a layer)
    largest = analytic.estimate(ds.frame)["n_params"].max()
    layers = int(3 * largest / analytic.estimate(pd.DataFrame([{"config." + k: v for k, v in LLAMA3_70B.items()}]))[
        "n_params"].iloc[0] * LLAMA3_70B["n_layers"])
    table = predict_frame([{**LLAMA3_70B, "n_gpus": 1_000_000, "global_batch_size": 31250, "accelerator": "MI300X"},
                           {**LLAMA3_70B, "n_layers": layers, "n_gpus": 64, "dp": 2, "global_batch_size": 64,
                            "accelerator": "H100-SXM-80GB"}], ds, ridge)
    first, second = table["warnings"]
    assert "accelerator MI300X (AMD CDNA 3) is not in published-llm's training data" in table["unseen_hardware"].iloc[0]
    assert "devices 1,000,000 is" in first and "x the largest in published-llm" in first
    assert "parameters" in second and "accelerator" not in second and table["unseen_hardware"].iloc[1] == ""


def test_beyond_the_training_data_the_interval_widens_per_doubling(published):
    ds, ridge = published
    ok = ds.labelled().ok()
    model = Interval(zoo.make("ridge")).fit(ok.X, ok.y, dataset=ds.name)
    largest = int(pd.to_numeric(ds.frame["config.n_gpus"]).max())
    inside = {**LLAMA3_70B, "n_gpus": 1024, "dp": 32, "global_batch_size": 1024, "accelerator": "H100-SXM-80GB"}
    far = {**inside, "n_gpus": 8 * largest, "dp": largest // 4, "global_batch_size": largest // 4}  # 3 doublings
    table = predict_frame([inside, far], ds, model)
    assert table["doublings_beyond_training"].tolist() == [0.0, pytest.approx(3.0)]
    # the calibrated interval is the prediction times the residuals' quantiles, the same for every config;
    # 3 doublings beyond, each end moves out by 3 x WIDENING_PER_DOUBLING in log throughput (the scale
    # split's measured spread growth)
    pred = table["predicted_tokens_per_s"].to_numpy()
    for end, sign in (("interval_high", 1.0), ("interval_low", -1.0)):
        ratio = table[end].to_numpy() / pred
        assert ratio[1] / ratio[0] == pytest.approx(np.exp(sign * 3 * WIDENING_PER_DOUBLING))
    assert WIDENING_PER_DOUBLING > 0
    far_warning = table["warnings"].iloc[1]
    assert "devices" in far_warning and "3.0 doublings beyond the training data" in far_warning
    assert "doublings" not in table["warnings"].iloc[0]


def test_an_accelerator_without_a_measured_row_widens_the_interval_by_the_replays_figure(published, external, capsys):
    ds, _ = published
    ok = ds.labelled().ok()
    model = Interval(zoo.make("ridge")).fit(ok.X, ok.y, dataset=ds.name)
    base = {**LLAMA3_70B, "n_gpus": 64, "dp": 2, "global_batch_size": 64}
    # H100: measured; H800: Hopper (its family measured); MI300X: no AMD accelerator in the tables
    table = predict_frame([{**base, "accelerator": a} for a in ("H100-SXM-80GB", "H800", "MI300X")], ds, model)
    # a vendor no row measured: its family's widening plus what leaving one software stack out costs
    vendor = UNSEEN_FAMILY_WIDENING + UNSEEN_STACK_WIDENING
    assert table["hardware_widening"].tolist() == [0.0, UNSEEN_ACCELERATOR_WIDENING, vendor]
    # scripts/hardware_widening.py: 0.006 an accelerator or family; a stack (Megatron-LM held out) 0.025
    assert 0 < UNSEEN_ACCELERATOR_WIDENING <= UNSEEN_FAMILY_WIDENING < UNSEEN_STACK_WIDENING
    # the ridge's interval is the prediction times its residuals' quantiles: each end moves out by exp(widening)
    pred = table["predicted_tokens_per_s"].to_numpy()
    for end, sign in (("interval_high", 1.0), ("interval_low", -1.0)):
        ratio = table[end].to_numpy() / pred
        assert ratio[1] / ratio[0] == pytest.approx(np.exp(sign * UNSEEN_ACCELERATOR_WIDENING))
        assert ratio[2] / ratio[0] == pytest.approx(np.exp(sign * vendor))
    h100, h800, mi300x = table["unseen_hardware"]
    assert h100 == "" and "its NVIDIA Hopper kin H100-80GB" in h800
    assert f"x{np.exp(UNSEEN_ACCELERATOR_WIDENING):.2f} at each end" in h800
    assert mi300x.startswith(f"priced from NVIDIA data: interval widened x{np.exp(vendor):.2f} for an unseen vendor "
                             f"stack (leaving one stack out of the shared tables costs x{np.exp(UNSEEN_STACK_WIDENING):.2f}")
    assert "nor any AMD accelerator" in mi300x and "AMD" not in h800
    assert "error on AMD hardware was never measured" in mi300x
    # the command says so on its first line
    assert main(["--external-dir", str(external), "--predictor", "ridge", "--set", "model=llama3-70b", "seq_len=8192",
                 "n_gpus=64", "tp=8", "pp=4", "global_batch_size=64", "accelerator=MI300X"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"unseen hardware: {mi300x}"


def test_a_knob_the_predictor_never_saw_is_warned_about(published):
    # no published table states sequence_parallel: the analytic breakdown prices it (without it every
    # TP rank runs the norms and residuals of the whole sequence), the fitted predictor cannot read
    # it, and the output says so instead of ignoring it silently
    ds, ridge = published
    cfg = {**LLAMA3_70B, "n_gpus": 64, "dp": 2, "global_batch_size": 64, "accelerator": "H100-SXM-80GB",
           "framework": "megatron-bridge"}
    table = predict_frame([cfg, {**cfg, "sequence_parallel": False}], ds, ridge)
    plain, told = table["warnings"]
    assert "does not read" not in plain
    assert "the predictor does not read sequence_parallel" in told
    assert table["analytic.step_time_s"].iloc[1] > table["analytic.step_time_s"].iloc[0]
    assert table["predicted_tokens_per_s"].iloc[0] == table["predicted_tokens_per_s"].iloc[1]


def test_a_layer_pass_shorter_than_the_host_time_is_warned_about(published):
    # Qwen3-30B-A3B on 8 B200s, dropless MoE as Megatron-Bridge runs it: at micro batch 1 a layer
    # pass is 2 ms of GPU work, under the ~5 ms hosts take (that file measured 0.22 of the GPU-only
    # ideal there, 0.61 at micro batch 4); Megatron's dense layers show no such floor, an unnamed framework may
    ds, ridge = published
    moe = {"model": "qwen3-30b-a3b", "n_gpus": 8, "accelerator": "B200", "seq_len": 4096, "global_batch_size": 512,
           "precision": "mxfp8", "ep": 8, "framework": "megatron-bridge"}
    dense = {"model": "llama3-8b", "n_gpus": 8, "accelerator": "H100-SXM-80GB", "seq_len": 1024,
             "global_batch_size": 64, "micro_batch_size": 1}
    table = predict_frame([{**moe, "micro_batch_size": 1}, {**moe, "micro_batch_size": 4},
                           {**dense, "framework": "nemo"}, dense], ds, ridge)
    host = ["host's pace" in w for w in table["warnings"]]
    assert host == [True, False, False, True]
    # (2.4 ms with the sort of the received token copies by expert and back, perfzoo.analytic.traffic, and
    # the 16 local experts' grouped GEMMs at 2,048 tokens each, perfzoo.analytic.kernels)
    assert "per layer pass (forward and backward, one micro-batch) is 2.4 ms" in table["warnings"].iloc[0]
    # the breakdown shows the wait the estimate prices for it: 5 ms per pass less the GPU's 2 ms
    assert (table["analytic.host_time_s"] > 0).tolist() == host
    # and the experts' all-to-all, which only the MoE rows (ep=8) send
    assert (table["analytic.comm_ep_bytes"] > 0).tolist() == [True, True, False, False]


def test_missing_columns_are_unknowns_or_filled_layout_knobs_not_errors(published):
    ds, ridge = published
    table = predict_frame([{"n_layers": 32, "hidden_dim": 4096, "n_heads": 32, "vocab_size": 32000, "seq_len": 4096,
                            "n_gpus": 8, "accelerator": "H100-SXM-80GB"}], ds, ridge)
    assert np.isfinite(table["predicted_tokens_per_s"]).all()
    unknown = table["unknown_inputs"].iloc[0].split(", ")
    assert "config.global_batch_size" in unknown and "config.n_layers" not in unknown
    # a layout knob left out is filled as plan fills it, and said; not an unknown
    assert "config.tp" not in unknown and "tp=1 " in table["filled"].iloc[0] and "fsdp=zero1" in table["filled"].iloc[0]
    # a dense model leaves out no expert, MLA or Mamba keys (a filled ep=1 does not make it one of experts)
    assert not {"config.n_experts", "config.experts_per_token", "config.kv_lora_rank", "config.n_mamba_layers"} & set(unknown)
    # an MoE model that gives no top-k cannot be priced: each token's compute scales with it
    with pytest.raises(ConfigError, match="a mixture of 8 experts gives no experts_per_token"):
        predict_frame([{"n_layers": 32, "hidden_dim": 4096, "n_heads": 32, "vocab_size": 32000, "seq_len": 4096,
                        "n_gpus": 8, "accelerator": "H100-SXM-80GB", "n_experts": 8}], ds, ridge)
    assert np.isnan(table["predicted_step_time_s"].iloc[0])  # no batch given: no step time


@pytest.mark.external
def test_the_command_prints_the_breakdown_and_json(tmp_path, capsys):
    cfg = {**LLAMA3_70B, "n_gpus": 1024, "dp": 32, "global_batch_size": 1024, "accelerator": "H100-SXM-80GB"}
    argv = ["--predictor", "ridge", "--set", *[f"{k}={v}" for k, v in cfg.items()]]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "tokens/s" in out and "analytic: compute" in out and "bubble" in out and "ep 0.00 GiB" in out
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"config": cfg}) + "\n")
    assert main(["--predictor", "ridge", "--configs", str(path), "--json"]) == 0
    row = json.loads(capsys.readouterr().out.splitlines()[0])
    assert row["predicted_tokens_per_s"] > 0 and "analytic.memory_bytes" in row
    assert main(["--set", "n_layers"]) == 2


def test_set_given_twice_adds_keys_and_a_key_given_twice_is_refused(capsys):
    from perfzoo.plan.cli import build_parser as plan_parser
    from perfzoo.predict import build_parser
    from perfzoo.search.cli import build_parser as search_parser

    # every command that takes --set reads "--set a=1 b=2" and "--set a=1 --set b=2" alike
    assert build_parser().parse_args(["--set", "tp=2", "pp=4", "--set", "cp=1"]).knobs == ["tp=2", "pp=4", "cp=1"]
    assert plan_parser().parse_args(["--set", "n_layers=2", "--set", "hidden_dim=8", "--baseline", "tp=2",
                                     "--baseline", "pp=1"]).knobs == ["n_layers=2", "hidden_dim=8"]
    assert search_parser().parse_args(["--space", "llm-cpu", "--set", "a=1", "b=2", "--set", "c=3"]).fixed == ["a=1", "b=2", "c=3"]
    assert main(["--set", "n_layers=2", "--set", "n_layers=4"]) == 2
    assert capsys.readouterr().err.strip() == "perfzoo.predict: error: --set gives n_layers twice, n_layers=2 and n_layers=4: keep one"


def test_run_from_python_on_a_synthetic_dataset(synthetic):
    from perfzoo.predict import PredictConfig, run

    table = run(PredictConfig(knobs=["model_name=llama3-8b", "n_layers=32", "hidden_dim=4096", "seq_len=8192",
                                     "global_batch_size=64", "n_gpus=8", "accelerator=H100-SXM-80GB"],
                              dataset=str(synthetic / "lab_benchmarks.csv"), predictor="ridge"))
    assert len(table) == 1 and table.attrs["predictor"] == "ridge" and table.attrs["dataset"] == "lab-benchmarks"
    assert np.isfinite(table["predicted_tokens_per_s"]).all() and table["analytic.memory_bytes"].gt(0).all()


def test_without_a_global_batch_the_step_time_is_asked_for_not_printed_as_nan(synthetic, capsys):
    argv = ["--dataset", str(synthetic / "lab_benchmarks.csv"), "--predictor", "ridge", "--set", "model_name=llama3-8b",
            "n_layers=32", "hidden_dim=4096", "seq_len=8192", "n_gpus=8", "accelerator=H100-SXM-80GB"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "step time: give global_batch_size" in out and "nan" not in out
    assert main([*argv, "global_batch_size=64"]) == 0
    assert re.search(r"; step \d[\d.]* s\n", capsys.readouterr().out)


@pytest.mark.parametrize("fields, message", [
    ({"knobs": ["n_layers"]}, "--set 'n_layers': expected KEY=VALUE"),
    ({"knobs": ["n_layers=2"], "configs": "c.jsonl"}, "give exactly one of --set and --configs"),
    ({"knobs": ["n_layers=2"], "predictor": "nosuch"}, "--predictor nosuch: not 'best', a saved predictor's folder or a zoo member"),
    ({"knobs": ["tp=2", "n_layers=2", "tp=4"]}, "--set gives tp twice, tp=2 and tp=4: keep one"),
])
def test_a_bad_config_field_is_named(fields, message):
    from perfzoo.console import InputError
    from perfzoo.predict import PredictConfig

    with pytest.raises(InputError, match=message):
        PredictConfig(**fields)


# --- the front door (perfzoo.llmconfig): every case of issue 28's "What was found" -------------------

GOOD = ["model=llama3-70b", "seq_len=8192", "global_batch_size=256", "n_gpus=64", "tp=8", "pp=4",
        "accelerator=H100-SXM-80GB"]


def _override(items, **changes):
    keys = {i.split("=", 1)[0] for i in changes}
    return [i for i in items if i.split("=", 1)[0] not in keys] + [f"{k}={v}" for k, v in changes.items()]


@pytest.mark.parametrize("changes, drop, message", [
    ({"accelerator": "FOO-9000"}, (), "unknown accelerator 'FOO-9000'.*known: .*H100-80GB"),
    ({"tp": "0"}, (), r"tp=0: must be 1 or more \(devices\)"),
    ({"n_gpus": "-8"}, (), r"n_gpus=-8: must be 1 or more \(devices\)"),
    ({"seq_len": "abc"}, (), r"seq_len='abc': expected a whole number of tokens"),
    ({"seq_len": "-1"}, (), r"seq_len=-1: must be 1 or more \(tokens\)"),
    ({"packed_sample_len": "16384"}, (), "packed_sample_len = 16384 exceeds seq_len = 8192"),
    ({"cp": "2", "seq_len": "8190"}, (), r"seq_len = 8190 is not divisible by 2 x cp = 4"),
    ({"tp": "3", "dp": "8", "n_gpus": "8"}, ("pp",), "tp x pp x cp x dp = 3 x 1 x 1 x 8 = 24 but n_gpus = 8"),
    ({"seq_lenn": "8192"}, ("seq_len",), r"unknown key 'seq_lenn' \(did you mean seq_len\?\)"),
    ({"precision": "fp8", "accelerator": "A100-80GB"}, (), "precision=fp8: A100-80GB has no fp8 peak"),
    ({"precision": "bf16", "accelerator": "V100"}, (), "precision=bf16: V100's matrix units run fp16 only .*fp16"),
    ({"precision": "bf16", "accelerator": "V100-16GB"}, (), "precision=bf16: V100-16GB's matrix units run fp16 only .*fp16"),
    ({"precision": "bf16", "accelerator": "Tesla V100-PCIE-32GB"}, (),
     "precision=bf16: V100-PCIe-32GB's matrix units run fp16 only .*fp16"),
    ({}, ("seq_len", "n_gpus"), "cannot price this config: it gives no seq_len .*n_gpus"),
])
def test_each_config_perfzoo_cannot_price_is_one_line_and_exit_2(synthetic, capsys, changes, drop, message):
    import re

    items = [i for i in _override(GOOD, **changes) if i.split("=", 1)[0] not in drop]
    code = main(["--dataset", str(synthetic / "lab_benchmarks.csv"), "--predictor", "ridge", "--set", *items])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and re.search(message, err), err


def test_no_recognised_key_at_all_is_refused(synthetic, capsys):
    code = main(["--dataset", str(synthetic / "lab_benchmarks.csv"), "--set", "layers=80", "width=8192"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "unknown key 'layers'" in err and len(err.splitlines()) == 1


def test_a_model_name_alone_gets_its_shape_from_the_catalog(synthetic):
    from perfzoo.predict import PredictConfig, run

    short = run(PredictConfig(knobs=["model=llama3-70b", "seq_len=8192", "global_batch_size=64", "n_gpus=64",
                                     "tp=8", "pp=4", "accelerator=H100-SXM-80GB"],
                              dataset=str(synthetic / "lab_benchmarks.csv"), predictor="ridge"))
    spelled = run(PredictConfig(knobs=["model_name=llama3-70b", "n_layers=80", "hidden_dim=8192", "ffn_dim=28672",
                                       "n_heads=64", "n_kv_heads=8", "vocab_size=128256", "seq_len=8192",
                                       "global_batch_size=64", "n_gpus=64", "tp=8", "pp=4",
                                       "accelerator=H100-SXM-80GB"],
                                dataset=str(synthetic / "lab_benchmarks.csv"), predictor="ridge"))
    assert np.isfinite(short["predicted_tokens_per_s"]).all()
    for col in ("analytic.memory_bytes", "analytic.compute_time_s", "predicted_tokens_per_s"):
        assert short[col].iloc[0] == pytest.approx(spelled[col].iloc[0]), col


def test_help_lists_every_key_with_its_unit(capsys):
    from perfzoo import llmconfig

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for key in llmconfig.KEYS.values():
        assert f"  {key.name}" in out, key.name
    assert "seq_len [tokens]" in out and "n_gpus [devices]" in out


def test_h200_reaches_the_estimate_and_its_memory_bandwidth_makes_it_faster_than_h100(published):
    ds, _ = published
    roofline = zoo.make("roofline").fit(ds.labelled().ok().X, ds.labelled().ok().y, dataset=ds.name)
    base = {"model": "llama3-70b", "seq_len": 8192, "global_batch_size": 256, "n_gpus": 64, "tp": 8, "pp": 4,
            "micro_batch_size": 1, "precision": "bf16"}
    table = predict_frame([{**base, "accelerator": "H100-SXM-80GB"}, {**base, "accelerator": "H200"}], ds, roofline)
    h100, h200 = table.to_dict("records")
    # the accelerator reaches the estimate: H200's 141 GB change the memory fraction ...
    assert h200["analytic.memory_fraction"] == pytest.approx(h100["analytic.memory_fraction"] * 80 / 141)
    # ... and its 4.8 TB/s of HBM (H100: 3.35) the memory-bound kernels: same peaks, faster steps
    assert h200["analytic.step_time_s"] < h100["analytic.step_time_s"]
    assert h200["predicted_tokens_per_s"] > h100["predicted_tokens_per_s"]
    assert "priced exactly" not in h200["warnings"] and "priced exactly" not in h100["warnings"]


def test_a_config_without_checkpointing_gets_the_least_recompute_that_fits_and_says_which(synthetic):
    """70B at tp8, micro-batch 4, on 64 H100 does not fit without recompute; predict prices the least setting that fits."""
    from perfzoo.analytic.memory import MemoryRule

    ds = load_dataset(str(synthetic / "lab_benchmarks.csv"))
    cfg = {"model": "llama3-70b", "seq_len": 8192, "global_batch_size": 64, "n_gpus": 64, "tp": 8, "pp": 1,
           "micro_batch_size": 4, "fsdp": "full_shard", "accelerator": "H100-SXM-80GB"}
    row = predict_frame([cfg], ds).iloc[0]
    mode = row["filled"].split("activation_checkpointing=")[1].split()[0]
    assert mode in ("selective", "full") and row["fits_in_memory"]
    assert f"activation_checkpointing not given: {mode}, the least recompute under which it fits" in row["read_as"]
    lighter = {"full": "selective", "selective": "none"}[mode]
    again = predict_frame([{**cfg, "activation_checkpointing": lighter}], ds).iloc[0]
    assert not again["fits_in_memory"]  # the lighter setting, stated, does not fit
    stated = predict_frame([{**cfg, "activation_checkpointing": "none"}], ds, memory_margin=None).iloc[0]
    assert "activation_checkpointing" not in stated["filled"] and not stated["fits_in_memory"]
    assert MemoryRule().margin is None
