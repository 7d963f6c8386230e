"""Hybrid stacks priced by their own layers: Mamba-2, sliding-window attention and gated delta-net
linear attention, each by its own FLOPs (hand-worked here), and the layer pattern of a Hugging Face
config.json read into the counts the cost prices; a layer kind perfzoo cannot price is refused."""

import json

import pandas as pd
import pytest

from perfzoo.analytic.shape import ModelShape
from perfzoo.console import InputError
from perfzoo.llmconfig import catalog, huggingface


def shape(**keys):
    return ModelShape(pd.DataFrame([keys]))


def test_one_mamba2_layer_costs_its_projections_and_its_scan():
    # Nemotron-H 8B's mixer: d 4096, 128 heads x 64 (di 8192), state 128, 8 groups
    # in-projection d*(2di + 2GN + heads) = 4096 * (16384 + 2048 + 128) = 76,021,760; out di*d = 33,554,432
    layer = shape(n_layers=1, n_mamba_layers=1, n_attention_layers=0, hidden_dim=4096, n_heads=32,
                  mamba_heads=128, mamba_head_dim=64, mamba_state_dim=128, mamba_groups=8, seq_len=8192)
    assert float(layer.mamba_params[0]) == 76_021_760 + 33_554_432
    flops = layer.flops_per_token(6.0)
    assert float(flops["linear"][0]) == 6 * 109_576_192  # 6 x the projections: 657,457,152
    assert float(flops["attention"][0]) == 3 * 7 * 8192 * 128  # the scan, 7*di*N forward, x3: 22,020,096
    assert float(flops["head"][0]) == 0.0


def test_gpt_oss_sliding_window_layers_attend_over_their_window_only():
    # gpt-oss-120b: 36 attention layers, 18 of them a 128-token window; 64 heads of 64
    cfg = {**catalog.get("gpt-oss-120b"), "seq_len": 4096}
    sh = ModelShape(pd.DataFrame([cfg]))
    per_ctx = 2 * 64 * (64 + 64)  # forward FLOPs per token per token of context, one layer: 16,384
    full = 3 * per_ctx * (18 * 4096 + 18 * 128)  # model FLOPs: 3,737,124,864 (all 36 full: 7,247,757,312)
    assert float(sh.core_flops_per_token(causal=False)[0]) == full
    windowed = 128 - 128 * 127 / (2 * 4096)  # causal: a query sees min(its position, 128) keys: 126.015625
    causal = 3 * per_ctx * (18 * 2048 + 18 * windowed)
    assert float(sh.core_flops_per_token(causal=True)[0]) == pytest.approx(causal, rel=1e-12)


def test_one_gated_delta_net_layer_costs_its_projections_and_a_chunked_core_linear_in_the_sequence():
    # Qwen3-Next's linear attention: d 2048, 16 key heads and 32 value heads of 128, conv kernel 4
    keys = dict(n_layers=1, n_linear_layers=1, hidden_dim=2048, n_heads=16, n_kv_heads=2, head_dim=256,
                linear_key_heads=16, linear_value_heads=32, linear_key_head_dim=128, linear_value_head_dim=128,
                linear_conv_kernel=4, ffn_dim=5120, gated_mlp=True)
    short, long = shape(seq_len=4096, **keys), shape(seq_len=65536, **keys)
    # q, k (2 x 2048), v, z (2 x 4096), beta, alpha (2 x 32) in: 2048 * 12352; out 4096 * 2048
    assert float(short.linear_attention_params[0]) == 25_296_896 + 8_388_608
    assert float(short.L_attn[0]) == 0 and float(short.L_linear[0]) == 1
    # per value head and token: 2C(3dk + 2dv) = 128 * 640 = 81,920 in the chunk, 6*dk*dv = 98,304 for the state;
    # x 32 heads = 5,767,168, + the convolution 2*4*(2*2048 + 4096) = 65,536
    core = 32 * (81_920 + 98_304) + 65_536
    assert float(short.core_flops_per_token(causal=True)[0]) == 3 * core
    assert float(long.core_flops_per_token(causal=True)[0]) == 3 * core  # no s^2 term
    linear = short.flops_per_token(6.0)["linear"]
    assert float(linear[0]) == 6 * (33_685_504 + 3 * 2048 * 5120)  # the mixer's projections and the MLP


def test_qwen3_next_in_the_catalog_counts_its_linear_layers_and_sizes():
    cfg = catalog.get("Qwen3-Next-80B-A3B")
    assert (cfg["n_layers"], cfg["n_linear_layers"], cfg["n_experts"]) == (48, 36, 512)
    sh = ModelShape(pd.DataFrame([{**cfg, "seq_len": 4096}]))
    assert float(sh.L_attn[0]) == 12
    assert float(sh.total_params[0]) == pytest.approx(80e9, rel=0.01)
    assert float(sh.matmul_params[0]) == pytest.approx(3.46e9, rel=0.01)  # ~3B active and its LM head


def _write(tmp_path, name, config):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(config))
    return path


QWEN3_NEXT = {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "num_hidden_layers": 48,
              "hidden_size": 2048, "intermediate_size": 5120, "num_attention_heads": 16, "num_key_value_heads": 2,
              "head_dim": 256, "vocab_size": 151936, "num_experts": 512, "num_experts_per_tok": 10,
              "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512, "linear_num_key_heads": 16,
              "linear_num_value_heads": 32, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
              "linear_conv_kernel_dim": 4, "full_attention_interval": 4, "tie_word_embeddings": False}


def test_layer_types_and_hybrid_patterns_read_as_the_counts_the_cost_prices(tmp_path):
    keys, _ = huggingface.read(_write(tmp_path, "next", QWEN3_NEXT))
    assert keys["n_linear_layers"] == 36 and keys["gated_mlp"] is True
    assert {k: keys[k] for k in ("linear_key_heads", "linear_value_heads", "linear_key_head_dim",
                                 "linear_value_head_dim", "linear_conv_kernel")} == \
        {k: catalog.get("qwen3-next-80b-a3b")[k] for k in ("linear_key_heads", "linear_value_heads",
                                                           "linear_key_head_dim", "linear_value_head_dim",
                                                           "linear_conv_kernel")}
    listed = {**QWEN3_NEXT, "layer_types": (["linear_attention"] * 3 + ["full_attention"]) * 12}
    del listed["full_attention_interval"]
    assert huggingface.read(_write(tmp_path, "listed", listed))[0]["n_linear_layers"] == 36
    oss = {"model_type": "gpt_oss", "num_hidden_layers": 4, "hidden_size": 2880, "num_attention_heads": 64,
           "num_key_value_heads": 8, "head_dim": 64, "vocab_size": 201088, "num_local_experts": 32,
           "num_experts_per_tok": 4, "intermediate_size": 2880, "sliding_window": 128,
           "layer_types": ["sliding_attention", "full_attention"] * 2}
    keys, _ = huggingface.read(_write(tmp_path, "oss", oss))
    assert (keys["n_sliding_layers"], keys["sliding_window"], keys["gated_mlp"]) == (2, 128, True)
    assert "n_linear_layers" not in keys
    hybrid = {"model_type": "nemotron_h", "num_hidden_layers": 10, "hidden_size": 1024, "num_attention_heads": 8,
              "vocab_size": 1000, "intermediate_size": 4096, "hybrid_override_pattern": "M-M*-M-E*M"}
    keys, _ = huggingface.read(_write(tmp_path, "nh", hybrid))
    assert (keys["n_layers"], keys["n_mamba_layers"], keys["n_attention_layers"]) == (10, 4, 2)


def test_a_layer_kind_perfzoo_cannot_price_is_refused_in_one_line(tmp_path):
    odd = {**QWEN3_NEXT, "layer_types": ["linear_attention"] * 47 + ["chunked_attention"]}
    with pytest.raises(InputError, match="layer_types names a layer kind perfzoo cannot price, 'chunked_attention'"):
        huggingface.read(_write(tmp_path, "odd", odd))
    pattern = {"model_type": "nemotron_h", "num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4,
               "vocab_size": 10, "hybrid_override_pattern": "M*R-"}
    with pytest.raises(InputError, match="hybrid_override_pattern names a layer kind perfzoo cannot price, 'R'"):
        huggingface.read(_write(tmp_path, "pattern", pattern))
    unknown = {"architectures": ["FancyHybridForCausalLM"], "model_type": "fancy_hybrid", "num_hidden_layers": 4,
               "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 128,
               "layer_types": ["full_attention"] * 4}
    with pytest.raises(InputError, match="FancyHybridForCausalLM mixes layer kinds \\(layer_types\\) in an "
                                         "architecture perfzoo does not know") as err:
        huggingface.read(_write(tmp_path, "unknown", unknown), {"gated_mlp": True})
    assert "\n" not in str(err.value)


def test_a_config_naming_only_its_class_reads_as_that_model_type(tmp_path):
    deepseek = {"architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 61, "hidden_size": 7168,
                "num_attention_heads": 128, "vocab_size": 129280}
    keys, sources = huggingface.read(_write(tmp_path, "ds", deepseek))
    assert keys["n_experts"] == 256 and keys["kv_lora_rank"] == 512 and keys["gated_mlp"] is True
    assert sources["n_experts"] == "transformers' DeepseekV3Config default n_routed_experts"


def test_predict_refuses_linear_layer_counts_the_model_cannot_hold():
    from perfzoo import llmconfig
    base = {"model": "qwen3-next-80b-a3b", "seq_len": 4096, "n_gpus": 64, "accelerator": "H100-SXM-80GB", "ep": 8}
    assert llmconfig.check(dict(base))["n_linear_layers"] == 36
    with pytest.raises(llmconfig.ConfigError, match="n_linear_layers = 60 is more than the model's n_layers = 48"):
        llmconfig.check({**base, "n_linear_layers": 60})
    with pytest.raises(llmconfig.ConfigError, match="n_linear_layers = 6 needs the linear attention's linear_key_heads"):
        llmconfig.check({"model": "llama3-8b", "seq_len": 4096, "n_gpus": 8, "accelerator": "H100-SXM-80GB",
                         "n_linear_layers": 6})
