"""A Hugging Face ``config.json`` read as ``transformers`` reads it: a field the file leaves out
takes its architecture's documented default, and one without a known default is refused.

``transformers`` builds a model from a ``config.json`` with its config class's defaults for the
fields the file omits (``LlamaConfig``: ``intermediate_size`` 11,008, not 4 x hidden). perfzoo does
the same for the fields its cost depends on, from :data:`DEFAULTS` (the config classes of
``transformers`` 5.24.0, ``models/<type>/configuration_<type>.py``), and says which it filled.
A field the cost depends on that the file omits and whose architecture perfzoo does not know is
refused with the field's name (:func:`read`): the attention heads, the vocabulary, the dense MLP
width (``intermediate_size``), and for a mixture of experts the experts per token and their width.
``num_key_value_heads`` left out means multi-head attention (one key/value head per head), the
convention of every ``transformers`` config class but those :data:`DEFAULTS` lists otherwise.

>>> import json, tempfile
>>> f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
>>> _ = f.write(json.dumps({"model_type": "llama", "num_hidden_layers": 16, "hidden_size": 2048,
...                        "num_attention_heads": 16, "vocab_size": 32000})); f.close()
>>> keys, sources = read(f.name)
>>> keys["ffn_dim"], sources["ffn_dim"]
(11008, "transformers' LlamaConfig default intermediate_size")
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Union

from perfzoo import models
from perfzoo.llmconfig import ConfigError

# model_type -> (config class, the defaults of the fields perfzoo's cost reads); transformers 5.24.0
DEFAULTS: dict[str, tuple[str, dict[str, Any]]] = {
    "llama": ("LlamaConfig", {"vocab_size": 32000, "intermediate_size": 11008, "num_attention_heads": 32,
                              "hidden_act": "silu", "tie_word_embeddings": False}),
    "mistral": ("MistralConfig", {"vocab_size": 32000, "intermediate_size": 14336, "num_attention_heads": 32,
                                  "num_key_value_heads": 8, "hidden_act": "silu", "tie_word_embeddings": False,
                                  "sliding_window": 4096}),
    "mixtral": ("MixtralConfig", {"vocab_size": 32000, "intermediate_size": 14336, "num_attention_heads": 32,
                                  "num_key_value_heads": 8, "hidden_act": "silu", "tie_word_embeddings": False,
                                  "num_experts_per_tok": 2, "num_local_experts": 8}),
    "qwen2": ("Qwen2Config", {"vocab_size": 151936, "intermediate_size": 22016, "num_attention_heads": 32,
                              "num_key_value_heads": 32, "hidden_act": "silu", "tie_word_embeddings": False}),
    "qwen2_moe": ("Qwen2MoeConfig", {"vocab_size": 151936, "intermediate_size": 5632, "num_attention_heads": 16,
                                     "num_key_value_heads": 16, "hidden_act": "silu", "tie_word_embeddings": False,
                                     "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
                                     "num_experts_per_tok": 4, "num_experts": 60}),
    "qwen3": ("Qwen3Config", {"vocab_size": 151936, "intermediate_size": 22016, "num_attention_heads": 32,
                              "num_key_value_heads": 32, "head_dim": 128, "hidden_act": "silu",
                              "tie_word_embeddings": False}),
    "qwen3_moe": ("Qwen3MoeConfig", {"vocab_size": 151936, "intermediate_size": 6144, "num_attention_heads": 32,
                                     "num_key_value_heads": 4, "hidden_act": "silu", "tie_word_embeddings": False,
                                     "moe_intermediate_size": 768, "num_experts_per_tok": 8, "num_experts": 128}),
    "gemma": ("GemmaConfig", {"vocab_size": 256000, "intermediate_size": 24576, "num_attention_heads": 16,
                              "num_key_value_heads": 16, "head_dim": 256, "hidden_act": "gelu_pytorch_tanh",
                              "tie_word_embeddings": True}),
    "gemma2": ("Gemma2Config", {"vocab_size": 256000, "intermediate_size": 9216, "num_attention_heads": 8,
                                "num_key_value_heads": 4, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
                                "tie_word_embeddings": True, "sliding_window": 4096}),
    "phi3": ("Phi3Config", {"vocab_size": 32064, "intermediate_size": 8192, "num_attention_heads": 32,
                            "hidden_act": "silu", "tie_word_embeddings": False}),
    "deepseek_v3": ("DeepseekV3Config", {"vocab_size": 129280, "intermediate_size": 18432,
                                         "moe_intermediate_size": 2048, "num_attention_heads": 128,
                                         "num_key_value_heads": 128, "n_shared_experts": 1, "n_routed_experts": 256,
                                         "num_experts_per_tok": 8, "kv_lora_rank": 512, "q_lora_rank": 1536,
                                         "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128,
                                         "first_k_dense_replace": 3, "hidden_act": "silu",
                                         "tie_word_embeddings": False}),
}
# perfzoo key -> the Hugging Face field a refusal names (the first of models' aliases)
FIELD = {key: names[0] for key, names in models.HF_KEYS.items()}


def read(path: Union[str, Path], overrides: Optional[dict] = None) -> tuple[dict[str, Any], dict[str, str]]:
    """The config keys of the ``config.json`` at ``path``, ``overrides`` (``--set``) winning, and
    where each came from (``config.json``, ``--set``, or the architecture's documented default: the
    module docstring). A :class:`ConfigError` names the Hugging Face field the cost needs and neither
    gives."""
    raw = models.read_hf_json(path)
    given = models.hf_keys(raw, path)
    model_type = str(raw.get("model_type", "")).lower()
    cls, defaults = DEFAULTS.get(model_type, (None, {}))
    keys = models.hf_keys({**defaults, **raw}, path) if defaults else dict(given)
    sources = {k: "config.json" if k in given and given[k] == keys[k] else
               f"transformers' {cls} default {_field(k, defaults)}" for k in keys if k != "model_name"}
    keys.update(overrides or {})
    sources.update({k: "--set" for k in overrides or {}})
    if "n_kv_heads" not in keys and "n_heads" in keys:
        keys["n_kv_heads"] = keys["n_heads"]
        sources["n_kv_heads"] = "num_attention_heads (no num_key_value_heads: multi-head attention)"
    moe = keys.get("n_experts", 0) > 1
    needed = ["n_heads", "vocab_size"]
    if moe:
        needed += ["experts_per_token", "moe_ffn_dim"]
    elif not keys.get("n_mamba_layers"):
        needed.append("ffn_dim")
    missing = [k for k in needed if k not in keys]
    if missing:
        kind = f" (model_type {model_type!r}, whose defaults perfzoo does not know)" if model_type and not cls else ""
        raise ConfigError(f"{path}: gives no {', '.join(FIELD.get(k, k) for k in missing)}{kind}; the cost "
                          f"depends on it: add it to the file, or --set {missing[0]}=...")
    return keys, sources


# perfzoo keys read from other fields than models.HF_KEYS lists
DERIVED_FROM = {"gated_mlp": ("hidden_act", "hidden_activation"), "n_sliding_layers": ("sliding_window",)}


def _field(key: str, defaults: dict) -> str:
    """The Hugging Face field a default of ``key`` came from."""
    names = models.HF_KEYS.get(key, ()) + DERIVED_FROM.get(key, ())
    return next((n for n in names if n in defaults), key)


__all__ = ["DEFAULTS", "read"]
