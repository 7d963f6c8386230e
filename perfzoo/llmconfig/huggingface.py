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

import json
from pathlib import Path
from typing import Any, Optional, Union

from perfzoo.console import InputError
from perfzoo.llmconfig.keys import ConfigError

# Hugging Face config.json keys -> perfzoo config keys (the first present wins)
HF_KEYS: dict[str, tuple[str, ...]] = {
    "n_layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
    "hidden_dim": ("hidden_size", "n_embd", "d_model"),
    "ffn_dim": ("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"),
    "n_heads": ("num_attention_heads", "n_head", "n_heads"),
    "n_kv_heads": ("num_key_value_heads", "kv_n_heads"),
    "head_dim": ("head_dim",),
    "vocab_size": ("vocab_size",),
    "tie_embeddings": ("tie_word_embeddings",),
    "n_experts": ("num_local_experts", "n_routed_experts", "num_experts", "moe_num_experts"),
    "experts_per_token": ("num_experts_per_tok", "experts_per_token", "moe_top_k"),
    "moe_ffn_dim": ("moe_intermediate_size",),
    "n_shared_experts": ("n_shared_experts",),
    "shared_ffn_dim": ("shared_expert_intermediate_size", "moe_shared_expert_intermediate_size"),
    "n_dense_layers": ("first_k_dense_replace",),
    "q_lora_rank": ("q_lora_rank",),
    "kv_lora_rank": ("kv_lora_rank",),
    "qk_nope_head_dim": ("qk_nope_head_dim",),
    "qk_rope_head_dim": ("qk_rope_head_dim",),
    "v_head_dim": ("v_head_dim",),
    "mtp_layers": ("num_nextn_predict_layers",),
    "sliding_window": ("sliding_window",),
    "mamba_heads": ("mamba_num_heads",),
    "mamba_head_dim": ("mamba_head_dim",),
    "mamba_state_dim": ("ssm_state_size", "mamba_state_dim"),
    "mamba_groups": ("n_groups", "mamba_n_groups"),
    "linear_key_heads": ("linear_num_key_heads",),
    "linear_value_heads": ("linear_num_value_heads",),
    "linear_key_head_dim": ("linear_key_head_dim",),
    "linear_value_head_dim": ("linear_value_head_dim",),
    "linear_conv_kernel": ("linear_conv_kernel_dim",),
}
# model types whose transformers MLP (and experts) are gated, gate, up and down projections, whatever their
# activation: LlamaMLP, MistralMLP, MixtralBlockSparseTop2MLP, Qwen2MLP, Qwen3MLP, their MoE blocks,
# DeepseekV3MLP, Phi3MLP (gate_up_proj), GemmaMLP (GeGLU) and Gemma 2's and 3's
GATED_TYPES = frozenset({"llama", "llama4", "llama4_text", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3",
                         "qwen3_moe", "qwen3_next", "deepseek_v3", "phi3", "gemma", "gemma2", "gemma3", "gemma3_text",
                         "gpt_oss"})
# model types whose transformers MLP is two matrices, up and down, whatever their activation: GPT2MLP,
# GPTBigCodeMLP, GPTNeoXMLP, GPTJMLP, Starcoder2MLP, FalconMLP, MptMLP, BloomMLP, OPT's fc1/fc2, PhiMLP,
# NemotronMLP (squared ReLU), Nemotron-H's MLP and experts
UNGATED_TYPES = frozenset({"gpt2", "gpt_bigcode", "gpt_neox", "gptj", "starcoder2", "falcon", "mpt", "bloom", "opt",
                           "phi", "nemotron", "nemotron_h"})
# a hybrid pattern's letters (Nemotron-H's hybrid_override_pattern): Mamba-2, attention, MLP, MoE
_PATTERN = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
# the mixers layer_types names (GPT-OSS, Gemma 3, Qwen3-Next): softmax attention, over the whole
# sequence or a window, and linear attention (Qwen3-Next's gated delta-net)
LAYER_TYPES = {"full_attention": "attention", "sliding_attention": "sliding", "linear_attention": "linear"}
# the model class a config.json names in "architectures", for one that gives no model_type
ARCHITECTURE_TYPES = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "MixtralForCausalLM": "mixtral",
                      "Qwen2ForCausalLM": "qwen2", "Qwen2MoeForCausalLM": "qwen2_moe", "Qwen3ForCausalLM": "qwen3",
                      "Qwen3MoeForCausalLM": "qwen3_moe", "Qwen3NextForCausalLM": "qwen3_next",
                      "DeepseekV3ForCausalLM": "deepseek_v3", "GptOssForCausalLM": "gpt_oss",
                      "NemotronHForCausalLM": "nemotron_h", "GemmaForCausalLM": "gemma",
                      "Gemma2ForCausalLM": "gemma2", "Gemma3ForCausalLM": "gemma3_text", "Phi3ForCausalLM": "phi3"}
# config.json fields that say a stack mixes layer kinds
HYBRID_FIELDS = ("hybrid_override_pattern", "layer_types", "full_attention_interval", "linear_num_value_heads",
                 "linear_num_key_heads", "mamba_num_heads")
PRICED = ("attention over the whole sequence or a sliding window, Mamba-2, gated delta-net linear attention, "
          "dense and MoE MLPs")


def _unpriced(path: Union[str, Path], where: str, kind: Any, known) -> InputError:
    return InputError(f"{path}: {where} names a layer kind perfzoo cannot price, {kind!r} (it knows "
                      f"{', '.join(map(repr, known))}: {PRICED}); it is refused, not priced as a transformer")


def layer_kinds(raw: dict, n: int, path: Union[str, Path] = "config.json") -> dict[str, Any]:
    """The layer counts the cost prices from a Hugging Face config ``raw`` of ``n`` layers: a
    ``hybrid_override_pattern`` (Nemotron-H, Nemotron 3: ``M`` Mamba-2, ``*`` attention, ``-`` MLP,
    ``E`` MoE, one letter a layer), else ``layer_types`` (one name a layer) or Qwen3-Next's
    ``full_attention_interval`` (every ``k``-th layer full attention, the rest linear). A letter
    or name perfzoo cannot price is an :class:`InputError` naming it.

    >>> layer_kinds({"hybrid_override_pattern": "M-M*"}, 4)
    {'n_layers': 4, 'n_mamba_layers': 2, 'n_attention_layers': 1}
    >>> layer_kinds({"layer_types": ["linear_attention"] * 3 + ["full_attention"]}, 4)
    {'n_linear_layers': 3}
    >>> layer_kinds({"full_attention_interval": 4, "linear_num_value_heads": 32}, 48)
    {'n_linear_layers': 36}
    """
    pattern, layer_types = raw.get("hybrid_override_pattern"), raw.get("layer_types")
    if isinstance(pattern, str) and pattern:
        odd = sorted(set(pattern) - set(_PATTERN))
        if odd:
            raise _unpriced(path, "hybrid_override_pattern", odd[0], _PATTERN)
        counts = {kind: sum(_PATTERN[c] == kind for c in pattern) for kind in _PATTERN.values()}
        return {"n_layers": len(pattern), "n_mamba_layers": counts["mamba"], "n_attention_layers": counts["attention"]}
    if isinstance(layer_types, list):
        odd = [t for t in layer_types if t not in LAYER_TYPES]
        if odd:
            raise _unpriced(path, "layer_types", odd[0], LAYER_TYPES)
        if len(layer_types) != n:
            raise InputError(f"{path}: layer_types names {len(layer_types)} layers, num_hidden_layers says {n}: "
                             "correct one of them")
        linear = sum(LAYER_TYPES[t] == "linear" for t in layer_types)
        return {"n_linear_layers": linear} if linear else {}
    interval = raw.get("full_attention_interval")
    if interval and raw.get("linear_num_value_heads", raw.get("linear_num_key_heads")):
        return {"n_linear_layers": n - n // int(interval)}
    return {}


def _window_layers(raw: dict, window: Any, n: int) -> dict[str, Any]:
    """``sliding_window`` and ``n_sliding_layers`` of a Hugging Face config ``raw`` whose window is
    ``window`` and whose layers number ``n`` (neither without a window, or with one the config does
    not use: Qwen's ``use_sliding_window`` false). Which layers
    slide: those ``layer_types`` names (GPT-OSS, newer Gemma configs); else all but every
    ``sliding_window_pattern``-th (Gemma 3: five local layers to each global one); else every other
    one in Gemma 2 (its even layers); else every layer (Mistral)."""
    if not window or not raw.get("use_sliding_window", True):
        return {}
    layer_types, pattern = raw.get("layer_types"), raw.get("sliding_window_pattern")
    if isinstance(layer_types, list):
        sliding = sum("sliding" in str(t) for t in layer_types)
    elif isinstance(pattern, int) and pattern > 1:
        sliding = n - n // pattern
    elif str(raw.get("model_type", "")).lower() == "gemma2":
        sliding = (n + 1) // 2
    else:
        sliding = n
    return {"sliding_window": window, "n_sliding_layers": sliding}


def from_hf_config(path: Union[str, Path]) -> dict[str, Any]:
    """The config keys of a Hugging Face ``config.json`` on disk (no hub access).

    Mixtral-style configs give the expert width as ``intermediate_size`` and no dense MLP:
    that width becomes ``moe_ffn_dim``. Llama 4 interleaves dense layers (``intermediate_size_mlp``
    wide) with MoE layers (every ``interleave_moe_layer_step``-th, or those ``moe_layers`` lists),
    each MoE layer with one shared expert; DBRX nests its keys in ``attn_config`` and
    ``ffn_config``. Raises ``ValueError`` naming the file when it is not a model config (no layer
    count or width).
    """
    return hf_keys(read_hf_json(path), path)


def read_hf_json(path: Union[str, Path]) -> dict[str, Any]:
    """A Hugging Face ``config.json`` as one flat dict (Llama 4's ``text_config`` and DBRX's
    ``attn_config`` / ``ffn_config`` merged in); ``ValueError`` naming the file when it is not one."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not a readable JSON model config (not UTF-8 text: byte {exc.start})") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a readable JSON model config ({exc})") from None
    if not isinstance(raw, dict):
        raise InputError(f"{path}: not a model config (expected a JSON object)")
    for nested in ("text_config", "attn_config", "ffn_config"):  # Llama 4's text model, DBRX's blocks
        if isinstance(raw.get(nested), dict):
            raw = {**raw[nested], **raw}
    names = raw.get("architectures")
    if not raw.get("model_type") and isinstance(names, list) and names and names[0] in ARCHITECTURE_TYPES:
        raw["model_type"] = ARCHITECTURE_TYPES[names[0]]  # what transformers' AutoConfig reads the class as
    return raw


def hf_keys(raw: dict[str, Any], path: Union[str, Path]) -> dict[str, Any]:
    """The config keys of a flat Hugging Face config ``raw`` (:func:`read_hf_json`) read from ``path``."""
    path = Path(path)
    model_type = str(raw.get("model_type", "")).lower()
    keys: dict[str, Any] = {}
    for key, names_ in HF_KEYS.items():
        value = next((raw[n] for n in names_ if raw.get(n) is not None), None)
        if value is not None:
            keys[key] = value
    if "n_layers" not in keys or "hidden_dim" not in keys:
        raise InputError(f"{path}: not a model config: it gives no layer count and width "
                         "(num_hidden_layers, hidden_size)")
    if keys.get("n_experts", 0) and "moe_ffn_dim" not in keys and "ffn_dim" in keys:
        keys["moe_ffn_dim"] = keys.pop("ffn_dim")
    if keys.get("n_experts", 0) and model_type.startswith("llama4"):
        moe_layers, step = raw.get("moe_layers"), raw.get("interleave_moe_layer_step") or 1
        n_moe = len(moe_layers) if isinstance(moe_layers, list) else keys["n_layers"] // int(step)
        keys.setdefault("n_shared_experts", 1)
        if n_moe < keys["n_layers"]:
            keys["n_dense_layers"] = keys["n_layers"] - n_moe
            keys["ffn_dim"] = raw.get("intermediate_size_mlp", keys.get("ffn_dim"))
    keys.update(layer_kinds(raw, keys["n_layers"], path))
    keys.update(_window_layers(raw, keys.pop("sliding_window", None), keys["n_layers"]))
    act = str(raw.get("hidden_act", raw.get("hidden_activation", raw.get("activation_function", "")))).lower()
    if model_type in GATED_TYPES:  # their MLP classes are gated whatever the activation is called
        keys["gated_mlp"] = True
    elif model_type in UNGATED_TYPES:
        keys["gated_mlp"] = False
    elif act:
        keys["gated_mlp"] = act in ("silu", "swiglu", "geglu") or "glu" in act
    keys["model_name"] = str(raw.get("_name_or_path") or raw.get("model_type") or path.parent.name)
    return keys


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
FIELD = {key: names[0] for key, names in HF_KEYS.items()}


def read(path: Union[str, Path], overrides: Optional[dict] = None) -> tuple[dict[str, Any], dict[str, str]]:
    """The config keys of the ``config.json`` at ``path``, ``overrides`` (``--set``) winning, and
    where each came from (``config.json``, ``--set``, or the architecture's documented default: the
    module docstring). A :class:`ConfigError` names the Hugging Face field the cost needs and neither
    gives."""
    raw = read_hf_json(path)
    given = hf_keys(raw, path)
    model_type = str(raw.get("model_type", "")).lower()
    cls, defaults = DEFAULTS.get(model_type, (None, {}))
    keys = hf_keys({**defaults, **raw}, path) if defaults else dict(given)
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
    names = raw.get("architectures")
    arch = names[0] if isinstance(names, list) and names else f"model_type {model_type or '(none)'}"
    mixed = [f for f in HYBRID_FIELDS if raw.get(f)]
    if mixed and model_type not in GATED_TYPES | UNGATED_TYPES:
        raise ConfigError(f"{path}: {arch} mixes layer kinds ({mixed[0]}) in an architecture perfzoo does not "
                          f"know, so what each kind costs is unknown; perfzoo prices {PRICED} in the architectures "
                          f"{', '.join(sorted(GATED_TYPES | UNGATED_TYPES))}: refused, not priced as a transformer")
    if model_type not in GATED_TYPES | UNGATED_TYPES and "gated_mlp" not in (overrides or {}):
        raise ConfigError(f"{path}: {arch} is an architecture perfzoo does not know, and whether its MLP is gated "
                          "(three matrices or two) is its model class's, not the file's: say it with --set "
                          "gated_mlp=true or false, or give a config.json of a known architecture "
                          f"({', '.join(sorted(GATED_TYPES | UNGATED_TYPES))})")
    return keys, sources


# perfzoo keys read from other fields than HF_KEYS lists
DERIVED_FROM = {"gated_mlp": ("hidden_act", "hidden_activation"), "n_sliding_layers": ("sliding_window",)}


def _field(key: str, defaults: dict) -> str:
    """The Hugging Face field a default of ``key`` came from."""
    names = HF_KEYS.get(key, ()) + DERIVED_FROM.get(key, ())
    return next((n for n in names if n in defaults), key)


__all__ = ["ARCHITECTURE_TYPES", "DEFAULTS", "GATED_TYPES", "HF_KEYS", "LAYER_TYPES", "UNGATED_TYPES", "from_hf_config",
           "hf_keys", "layer_kinds", "read", "read_hf_json"]
