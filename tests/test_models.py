"""The model catalog (perfzoo.llmconfig.catalog): presets by name and alias, close names, Hugging Face configs."""

import json

import pytest

from perfzoo import analytic
from perfzoo.llmconfig import catalog, huggingface


def test_every_catalog_row_is_a_model_with_a_shape_and_a_source():
    table = catalog.catalog()
    assert table["name"].is_unique and len(table) >= 8
    for name in catalog.names():
        keys = catalog.get(name)
        assert keys["n_layers"] > 0 and keys["hidden_dim"] > 0 and keys["vocab_size"] > 0, name
        assert (keys.get("n_experts", 1) > 1) == ("moe_ffn_dim" in keys), name  # MoE rows give the expert width
    assert table["source"].notna().all()


def test_names_match_loosely_and_aliases_resolve():
    assert catalog.get("Llama 3.1 70B")["model_name"] == "llama3-70b"
    assert catalog.get("LLAMA3_8B") == catalog.get("llama3-8b")
    assert catalog.lookup("no-such-model") is None


def test_an_unknown_model_is_one_line_with_close_names():
    with pytest.raises(catalog.UnknownModelError) as err:
        catalog.get("llama-3-70")
    message = str(err.value)
    assert "unknown model 'llama-3-70'" in message and "llama3-70b" in message and "\n" not in message


def test_a_hugging_face_config_gives_the_same_keys(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"num_hidden_layers": 32, "hidden_size": 4096, "intermediate_size": 14336,
                                "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
                                "num_local_experts": 8, "num_experts_per_tok": 2, "hidden_act": "silu",
                                "tie_word_embeddings": False, "model_type": "mixtral"}))
    keys = huggingface.from_hf_config(path)
    preset = catalog.get("mixtral-8x7b")
    for key in ("n_layers", "hidden_dim", "n_heads", "n_kv_heads", "vocab_size", "n_experts", "experts_per_token",
                "moe_ffn_dim", "gated_mlp", "tie_embeddings"):
        assert keys[key] == preset[key], key
    (tmp_path / "bad.json").write_text(json.dumps({"architectures": ["X"]}))
    with pytest.raises(ValueError, match="no layer count and width"):
        huggingface.from_hf_config(tmp_path / "bad.json")


def test_the_catalog_covers_every_public_architecture_the_shared_tables_and_plan_name():
    wanted = ["llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3.1-405b", "mixtral-8x7b",
              "mixtral-8x22b", "deepseek-v3", "kimi-k2", "qwen3-8b", "qwen3-30b-a3b", "qwen3-235b-a22b",
              "gpt-oss-20b", "gpt-oss-120b", "nemotron4-15b", "nemotron4-340b", "nemotron-3-nano",
              "gpt3-125m", "gpt3-350m", "gpt3-760m", "gpt3-1.3b", "gpt3-2.7b", "gpt3-6.7b", "gpt3-13b", "gpt3-175b",
              "mpt-125m", "mpt-350m", "mpt-760m", "mpt-1b", "mpt-3b", "mpt-7b", "mpt-13b", "mpt-30b", "mpt-70b",
              "llama3.2-1b", "llama3.2-3b", "llama4-scout", "qwen2.5-3b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b",
              "qwen2.5-72b", "qwen3-4b", "qwen3-14b", "qwen3-32b", "deepseek-v2-lite", "deepseek-v2",
              "llama4-maverick", "mistral-7b", "mistral-nemo-12b", "dbrx", "grok-1", "deepseek-moe-16b",
              "qwen2-57b-a14b", "qwen1.5-moe-a2.7b", "olmoe-1b-7b", "nemotron-h-8b", "nemotron-h-47b", "nemotron-h-56b"]
    assert set(wanted) <= set(catalog.names())
    table = catalog.catalog().set_index("name")
    assert table["verified"].isin(["yes", "partly", "no"]).all()
    # every name the Megatron-Bridge table uses resolves (its variants are stripped by the loader)
    for name in ("LLAMA3_8B", "LLAMA3_70B", "LLAMA3.1_405B", "DeepSeekV3", "GPT OSS 120B", "Qwen3_30B_a3B",
                 "Qwen3_235B_a22B", "Kimi_K2", "Nemotron_3_Nano"):
        assert catalog.lookup(name) is not None, name
    assert catalog.get("Llama 4 Scout (MoE)")["model_name"] == "llama4-scout"  # torchtitan's name for it
    assert catalog.get("LLAMA4_MAVERICK")["model_name"] == "llama4-maverick"
    maverick = catalog.get("Llama 4 Maverick (MoE)")  # alternating dense and MoE layers, 24 of each
    assert (maverick["n_dense_layers"], maverick["ffn_dim"], maverick["moe_ffn_dim"]) == (24, 16384, 8192)
    nemotron_h = catalog.get("Nemotron-H 56B")  # squared-ReLU MLPs: two matrices, not gated
    assert nemotron_h["model_name"] == "nemotron-h-56b" and nemotron_h["gated_mlp"] is False
    assert nemotron_h["n_mamba_layers"] + nemotron_h["n_attention_layers"] < nemotron_h["n_layers"]
    assert catalog.get("Mistral-Nemo-Base-2407")["head_dim"] == 128  # 32 heads of 128, not hidden / heads


def test_catalog_shapes_give_the_published_parameter_counts():
    # the cost model's count from each row's shape against the count the source states (MTP
    # modules are not in DeepSeek-V3's 671B): within 2% except Nemotron-4 15B (+4%: the paper
    # rounds), active parameters within 5% with or without the input embedding (the cost model's
    # count has the LM head, not the embedding lookup; sources count it either way)
    table = catalog.catalog().set_index("name")
    for name in catalog.names():
        keys = {k: v for k, v in catalog.get(name).items() if k != "n_params"}
        keys["mtp_layers"] = 0
        est = analytic.estimate(keys)
        stated = table.loc[name, "n_params"]
        if stated == stated:  # given
            assert est["n_params"] == pytest.approx(stated, rel=0.045 if name == "nemotron4-15b" else 0.021), name
        active = table.loc[name, "active_params"]
        if active == active:
            embedding = keys["vocab_size"] * keys["hidden_dim"] * (0 if keys.get("tie_embeddings") else 1)
            assert min(abs(est["active_params"] + e - active) for e in (0, embedding)) <= 0.05 * active, name


def test_a_hugging_face_config_reads_mla_mtp_windows_and_hybrid_patterns(tmp_path):
    deepseek = {"num_hidden_layers": 61, "hidden_size": 7168, "intermediate_size": 18432, "num_attention_heads": 128,
                "num_key_value_heads": 128, "vocab_size": 129280, "n_routed_experts": 256, "num_experts_per_tok": 8,
                "moe_intermediate_size": 2048, "n_shared_experts": 1, "first_k_dense_replace": 3,
                "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                "v_head_dim": 128, "num_nextn_predict_layers": 1, "hidden_act": "silu", "model_type": "deepseek_v3"}
    (tmp_path / "config.json").write_text(json.dumps(deepseek))
    keys = huggingface.from_hf_config(tmp_path / "config.json")
    preset = catalog.get("deepseek-v3")
    for key in ("n_layers", "hidden_dim", "ffn_dim", "n_experts", "experts_per_token", "moe_ffn_dim", "n_shared_experts",
                "n_dense_layers", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                "mtp_layers"):
        assert keys[key] == preset[key], key
    oss = {"num_hidden_layers": 4, "hidden_size": 2880, "intermediate_size": 2880, "num_attention_heads": 64,
           "num_key_value_heads": 8, "head_dim": 64, "vocab_size": 201088, "num_local_experts": 32,
           "num_experts_per_tok": 4, "sliding_window": 128,
           "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]}
    (tmp_path / "oss.json").write_text(json.dumps(oss))
    keys = huggingface.from_hf_config(tmp_path / "oss.json")
    assert keys["sliding_window"] == 128 and keys["n_sliding_layers"] == 2 and keys["moe_ffn_dim"] == 2880
    maverick = {"model_type": "llama4", "text_config": {
        "model_type": "llama4_text", "num_hidden_layers": 48, "hidden_size": 5120, "intermediate_size": 8192,
        "intermediate_size_mlp": 16384, "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 202048, "num_local_experts": 128, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2,
        "hidden_act": "silu", "tie_word_embeddings": False}}
    dbrx = {"model_type": "dbrx", "d_model": 6144, "n_layers": 40, "n_heads": 48, "vocab_size": 100352,
            "attn_config": {"kv_n_heads": 8, "clip_qkv": 8}, "tie_word_embeddings": False,
            "ffn_config": {"ffn_hidden_size": 10752, "moe_num_experts": 16, "moe_top_k": 4,
                           "ffn_act_fn": {"name": "silu"}}}
    for name, config, compared in (
            ("llama4-maverick", maverick, ("n_layers", "ffn_dim", "moe_ffn_dim", "n_experts", "n_shared_experts",
                                           "n_dense_layers", "head_dim", "gated_mlp")),
            ("dbrx", dbrx, ("n_layers", "hidden_dim", "n_heads", "n_kv_heads", "moe_ffn_dim", "n_experts",
                            "experts_per_token"))):
        (tmp_path / f"{name}.json").write_text(json.dumps(config))
        keys, preset = huggingface.from_hf_config(tmp_path / f"{name}.json"), catalog.get(name)
        assert {k: keys.get(k) for k in compared} == {k: preset[k] for k in compared}, name
    qwen = {"num_hidden_layers": 4, "hidden_size": 1024, "num_attention_heads": 8, "sliding_window": 4096,
            "use_sliding_window": False}
    (tmp_path / "qwen.json").write_text(json.dumps(qwen))
    assert "sliding_window" not in huggingface.from_hf_config(tmp_path / "qwen.json")
    nano = {"num_hidden_layers": 52, "hidden_size": 2688, "num_attention_heads": 32, "vocab_size": 131072,
            "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME", "mamba_num_heads": 64,
            "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8}
    (tmp_path / "nano.json").write_text(json.dumps(nano))
    keys = huggingface.from_hf_config(tmp_path / "nano.json")
    preset = catalog.get("nemotron-3-nano")
    for key in ("n_layers", "n_mamba_layers", "n_attention_layers", "mamba_heads", "mamba_head_dim", "mamba_state_dim",
                "mamba_groups"):
        assert keys[key] == preset[key], key


def test_gemma_configs_read_as_gated_mlps_with_their_window_patterns(tmp_path):
    # Gemma's GELU MLP is gated (GeGLU), though its activation name has no "glu"; Gemma 2 slides
    # every other layer, Gemma 3 five of every six (sliding_window_pattern), as the catalog rows
    gemma2 = {"model_type": "gemma2", "num_hidden_layers": 46, "hidden_size": 4608, "intermediate_size": 36864,
              "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128, "vocab_size": 256000,
              "sliding_window": 4096, "hidden_activation": "gelu_pytorch_tanh", "hidden_act": "gelu_pytorch_tanh"}
    gemma3 = {"model_type": "gemma3", "text_config": {
        "model_type": "gemma3_text", "num_hidden_layers": 62, "hidden_size": 5376, "intermediate_size": 21504,
        "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128, "vocab_size": 262208,
        "sliding_window": 1024, "sliding_window_pattern": 6, "hidden_activation": "gelu_pytorch_tanh"}}
    compared = ("n_layers", "hidden_dim", "ffn_dim", "n_heads", "n_kv_heads", "head_dim", "vocab_size", "gated_mlp",
                "sliding_window", "n_sliding_layers")
    for name, config in (("gemma2-27b", gemma2), ("gemma3-27b", gemma3)):
        (tmp_path / f"{name}.json").write_text(json.dumps(config))
        keys, preset = huggingface.from_hf_config(tmp_path / f"{name}.json"), catalog.get(name)
        assert {k: keys.get(k) for k in compared} == {k: preset[k] for k in compared}, name
    assert catalog.get("gemma3-27b")["n_sliding_layers"] == 52 and catalog.get("gemma2-27b")["gated_mlp"] is True
    starcoder = {"model_type": "starcoder2", "num_hidden_layers": 4, "hidden_size": 1024, "num_attention_heads": 8,
                 "hidden_act": "gelu_pytorch_tanh"}  # a GELU MLP of two matrices stays ungated
    (tmp_path / "starcoder.json").write_text(json.dumps(starcoder))
    assert huggingface.from_hf_config(tmp_path / "starcoder.json")["gated_mlp"] is False


def test_every_shape_key_is_optional_for_llm_configs():
    """A preset's shape keys can be left out of a config (dense rows have no expert keys)."""
    from perfzoo import workloads

    missing = set(catalog.SHAPE_KEYS) - {"n_layers", "hidden_dim", "n_heads"} - workloads.get("llm").optional_keys
    assert not missing, f"add to perfzoo/workloads/llm optional_keys: {sorted(missing)}"


def test_config_files_read_as_transformers_builds_their_models(tmp_path):
    """A Llama config with a GELU is still LlamaMLP (gated); a DeepSeek-V3 or Mixtral config without
    hidden_act keeps its gated experts; a DeepSeek-V3 config without num_nextn_predict_layers has no
    MTP block (the catalog's DeepSeek-V3 has one: its name must not fill the file's gaps)."""
    from perfzoo.plan.planner import model_keys

    def keys_of(name, raw):
        path = tmp_path / name / "config.json"
        path.parent.mkdir()
        path.write_text(json.dumps(raw))
        return model_keys(str(path))

    llama = {"model_type": "llama", "num_hidden_layers": 16, "hidden_size": 2048, "num_attention_heads": 16,
             "vocab_size": 32000, "intermediate_size": 5632, "hidden_act": "gelu"}
    assert keys_of("llama", llama)[0]["gated_mlp"] is True
    mixtral = {"model_type": "mixtral", "num_hidden_layers": 32, "hidden_size": 4096, "intermediate_size": 14336,
               "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000, "num_local_experts": 8,
               "num_experts_per_tok": 2}
    assert keys_of("mixtral", mixtral)[0]["gated_mlp"] is True
    shape = catalog.get("deepseek-v3")
    deepseek = {"model_type": "deepseek_v3", "_name_or_path": "deepseek-ai/DeepSeek-V3", "num_hidden_layers": 61,
                "hidden_size": 7168, "vocab_size": 129280, "num_attention_heads": 128}
    keys, sources = keys_of("deepseek", deepseek)
    assert shape.get("mtp_layers") == 1 and "mtp_layers" not in keys  # only where the file says so
    assert keys["model_name"] == "deepseek-ai/DeepSeek-V3"
    assert all(not str(sources.get(k, "")).startswith("catalog") for k in keys)
    total = float(analytic.estimate(keys)["n_params"])
    assert 660e9 < total < 675e9  # 671B, not 682.6B with the catalog's MTP block
    keys, _ = keys_of("deepseek-mtp", {**deepseek, "num_nextn_predict_layers": 1})
    assert keys["mtp_layers"] == 1


def test_the_shape_line_gives_total_and_active_parameters_of_a_mixture_of_experts():
    from perfzoo.llmconfig import shape_report

    moe = catalog.get("qwen3-30b-a3b")
    assert "30.5B parameters (3.0B active)" in shape_report.describe(moe, {k: "catalog" for k in moe})
    dense = catalog.get("llama3-8b")
    assert "active" not in shape_report.describe(dense, {k: "catalog" for k in dense})
