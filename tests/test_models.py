"""The model catalog (perfzoo.models): presets by name and alias, close names, Hugging Face configs."""

import json

import pytest

from perfzoo import models


def test_every_catalog_row_is_a_model_with_a_shape_and_a_source():
    table = models.catalog()
    assert table["name"].is_unique and len(table) >= 8
    for name in models.names():
        keys = models.get(name)
        assert keys["n_layers"] > 0 and keys["hidden_dim"] > 0 and keys["vocab_size"] > 0, name
        assert (keys.get("n_experts", 1) > 1) == ("moe_ffn_dim" in keys), name  # MoE rows give the expert width
    assert table["source"].notna().all()


def test_names_match_loosely_and_aliases_resolve():
    assert models.get("Llama 3.1 70B")["model_name"] == "llama3-70b"
    assert models.get("LLAMA3_8B") == models.get("llama3-8b")
    assert models.lookup("no-such-model") is None


def test_an_unknown_model_is_one_line_with_close_names():
    with pytest.raises(models.UnknownModelError) as err:
        models.get("llama-3-70")
    message = str(err.value)
    assert "unknown model 'llama-3-70'" in message and "llama3-70b" in message and "\n" not in message


def test_a_hugging_face_config_gives_the_same_keys(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"num_hidden_layers": 32, "hidden_size": 4096, "intermediate_size": 14336,
                                "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
                                "num_local_experts": 8, "num_experts_per_tok": 2, "hidden_act": "silu",
                                "tie_word_embeddings": False, "model_type": "mixtral"}))
    keys = models.from_hf_config(path)
    preset = models.get("mixtral-8x7b")
    for key in ("n_layers", "hidden_dim", "n_heads", "n_kv_heads", "vocab_size", "n_experts", "experts_per_token",
                "moe_ffn_dim", "gated_mlp", "tie_embeddings"):
        assert keys[key] == preset[key], key
    (tmp_path / "bad.json").write_text(json.dumps({"architectures": ["X"]}))
    with pytest.raises(ValueError, match="no layer count and width"):
        models.from_hf_config(tmp_path / "bad.json")
