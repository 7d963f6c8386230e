"""``perfzoo.llmconfig``: the front door for LLM configs that predict, plan and search share."""

import pytest

from perfzoo import llmconfig, workloads
from perfzoo.llmconfig import catalog
from perfzoo.llmconfig import ConfigError, check


def test_every_vocabulary_and_catalog_key_is_accepted_with_a_unit_or_choices():
    spec = workloads.get("llm")
    for key in set(catalog.SHAPE_KEYS) | set(spec.size_keys) | set(spec.optional_keys):
        assert key in llmconfig.KEYS, key
    for key in llmconfig.KEYS.values():
        assert key.doc and (key.unit or key.choices), key.name


def test_a_preset_fills_the_shape_and_given_keys_win():
    cfg = check({"model": "llama3-8b", "n_layers": 16, "seq_len": "4096", "n_gpus": 8.0, "tp": 2,
                 "accelerator": "NVIDIA H100 80GB HBM3", "compile": "yes"})
    assert cfg["model_name"] == "llama3-8b" and cfg["hidden_dim"] == 4096 and cfg["n_layers"] == 16
    assert cfg["seq_len"] == 4096 and isinstance(cfg["n_gpus"], int) and cfg["dp"] == 4
    assert cfg["accelerator"] == "H100-80GB" and cfg["accelerator_count"] == 8 and cfg["compile"] is True
    named = check({"model_name": "Llama 3 70B", "seq_len": 8192, "n_gpus": 8, "accelerator": "H100"})
    assert named["n_layers"] == 80 and named["model_name"] == "Llama 3 70B"


def test_prefixed_keys_and_missing_values_are_read():
    cfg = check({"config.model_name": "llama3-8b", "config.seq_len": 2048, "hardware.accelerator": "A100-80GB",
                 "config.n_gpus": 4, "config.tp": None, "config.cp": float("nan")})
    assert "tp" not in cfg and "cp" not in cfg and cfg["dp"] == 4


@pytest.mark.parametrize("config, message", [
    ({"model": "llama3-8b", "n_gpus": 8, "seq_len": 8192, "accelerator": "H100", "ep": 2},
     "ep = 2 needs a mixture-of-experts model"),
    ({"model": "mixtral-8x7b", "n_gpus": 8, "seq_len": 8192, "accelerator": "H100", "ep": 3},
     "n_experts = 8 is not divisible by ep = 3"),
    ({"model": "mixtral-8x7b", "n_gpus": 8, "seq_len": 8192, "accelerator": "H100", "tp": 2, "ep": 8, "etp": 2},
     r"ep x etp = 8 x 2 does not divide tp x cp x dp = 2 x 1 x 4"),
    ({"model": "llama3-8b", "n_gpus": 8, "seq_len": 8192, "accelerator": "H100", "etp": 2},
     "etp = 2 needs a mixture-of-experts model"),
    ({"model": "llama3-8b", "n_gpus": 8, "seq_len": 8192, "accelerator": "H100", "vp": 2}, "vp = 2 needs pipeline"),
    ({"model": "llama3-8b", "n_gpus": 8, "seq_len": 8192, "accelerator": "H100", "tp": 3}, "does not divide n_gpus = 8"),
    ({"model": "llama3-8b", "n_gpus": 8, "seq_len": 8192, "accelerator": "H100", "global_batch_size": 12,
      "micro_batch_size": 1, "grad_accum": 1}, "micro_batch_size x grad_accum x dp = 1 x 1 x 8 = 8 but"),
    ({"model": "llama3-8b", "n_gpus": 8, "accelerator_count": 16}, "n_gpus = 8 but accelerator_count = 16"),
    ({"model": "llama3-8b", "precision": "int3"}, "precision='int3': choose one of"),
    ({"model": "llama3-8b", "compile": "maybe"}, "compile='maybe': expected true or false"),
    ({"model": "llama3-8b", "n_gpus": 8, "seq_len": 8192, "accelerator": "H100", "precision": "nvfp4"},
     "precision=nvfp4: H100-80GB has no fp4 peak"),
    # an fp4 peak is not every fp4 format: AMD's CDNA 4 runs the OCP MX formats, not NVIDIA's NVFP4
    ({"model": "qwen2.5-7b", "n_gpus": 8, "seq_len": 4096, "accelerator": "MI355X", "precision": "nvfp4"},
     r"precision=nvfp4: MI355X's matrix units do not run nvfp4 \(its low-precision formats in the accelerator "
     r"table: fp8, mxfp4, mxfp8\)"),
    ({"model": "llama3-8b", "n_gpus": 8, "seq_len": 8192, "accelerator": "H100", "precision": "mxfp8"},
     "precision=mxfp8: H100-80GB's matrix units do not run mxfp8"),
    ({"model": "llama-9"}, "unknown model 'llama-9'"),
    ({"n_layers": 2, "hidden_dim": 64, "n_heads": 3}, "hidden_dim = 64 is not divisible by n_heads = 3"),
    ({"model": "llama3-8b", "precision": "nvfp4", "bf16_layers": 40}, "bf16_layers = 40 is more than the model's n_layers = 32"),
    ({"model": "llama3-8b", "fused_loss": "maybe"}, "fused_loss='maybe': expected true or false"),
])
def test_inconsistent_configs_are_one_line_errors(config, message):
    with pytest.raises(ConfigError, match=message) as info:
        check(config)
    assert "\n" not in str(info.value)


def test_a_partial_config_is_checked_without_the_required_keys():
    assert check({"tp": 2, "precision": "fp8"}, require=False) == {"tp": 2, "precision": "fp8"}
    with pytest.raises(ConfigError, match="cannot price this config"):
        check({"tp": 2, "precision": "fp8"})


def test_search_checks_what_set_fixes_for_an_llm_space(capsys):
    from perfzoo.search.cli import main

    code = main(["--space", "llm-small", "--dataset", "llm-cpu", "--predictor", "ridge", "--searcher", "random",
                 "--n-samples", "50", "--top-k", "2", "--set", "hardware.acelerator=cpu"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "unknown key 'acelerator' (did you mean accelerator" in err[-1]


def test_a_device_that_runs_one_16_bit_format_refuses_the_other():
    from perfzoo.hardware import accelerators

    v100, a100 = accelerators.spec("V100"), accelerators.spec("A100-80GB")
    llmconfig.check_precision("fp16", v100)  # Volta's tensor cores run fp16
    llmconfig.check_precision("bf16", a100)  # Ampere's run both
    llmconfig.check_precision("fp16", a100)
    with pytest.raises(ConfigError, match=r"precision=bf16: V100's matrix units run fp16 only .*choose precision=fp16"):
        llmconfig.check_precision("bf16", v100)
    with pytest.raises(ConfigError, match="precision=bf16: V100"):
        check({"accelerator": "V100", "precision": "bf16"}, require=False)


def test_published_layouts_that_were_refused_are_accepted():
    # Megatron-Bridge, Qwen3-235B-A22B on 64 GB200: tp 2, ep 64 over dp 32 (MoE parallel folding:
    # ep x etp divides tp x cp x dp, not dp alone)
    qwen = {"model": "qwen3-235b-a22b", "n_gpus": 64, "seq_len": 4096, "accelerator": "GB200", "tp": 2, "pp": 1,
            "ep": 64, "global_batch_size": 1024, "micro_batch_size": 1}
    assert check(qwen)["dp"] == 32
    # llm-foundry, MPT-13b on 8 GPUs: 256 sequences per device in 22 micro-batches of 12, the last partial
    mpt = {"model": "mpt-13b", "n_gpus": 8, "seq_len": 2048, "accelerator": "H100", "global_batch_size": 2048,
           "micro_batch_size": 12, "grad_accum": 22}
    assert check({**mpt, "framework": "llm-foundry"})["grad_accum"] == 22
    with pytest.raises(ConfigError, match=r"micro_batch_size x grad_accum x dp = 12 x 22 x 8 = 2112"):
        check(mpt)  # a trainer that needs whole micro-batches
    with pytest.raises(ConfigError, match=r"grad_accum = 21 but 256 sequences per device in micro-batches of 12 take 22"):
        check({**mpt, "framework": "llm-foundry", "grad_accum": 21})
    with pytest.raises(ConfigError, match=r"global_batch_size = 2050 is not divisible by dp = 8"):
        check({**mpt, "framework": "llm-foundry", "global_batch_size": 2050, "grad_accum": None})
