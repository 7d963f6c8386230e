"""The model catalog: public LLM architectures by name, as perfzoo's config keys.

A model is a row of ``perfzoo/data/models.csv`` (one per architecture, with its source and
whether its values were checked); its shape is given in the config vocabulary of
``docs/architecture.md`` (``n_layers``, ``hidden_dim``, ``ffn_dim``, ``n_heads``, ``n_kv_heads``,
``head_dim``, ``vocab_size``, ... and, for mixture-of-experts models, ``n_experts``,
``experts_per_token``, ``moe_ffn_dim``, ``n_shared_experts``, ``shared_ffn_dim``,
``n_dense_layers``; multi-head latent attention, multi-token prediction, sliding windows and
hybrid Mamba layers have keys of their own, :data:`SHAPE_KEYS`; :mod:`perfzoo.analytic.shape`
prices them), so a preset can be merged into any config.
Names match loosely (case, spaces, ``-`` and ``_`` are ignored), and every alias a published
table uses for the model is listed with it.

>>> get("llama3-70b")["n_layers"]
80
>>> get("Llama 3.1 70B")["model_name"]
'llama3-70b'
>>> get("mixtral-8x7b")["n_experts"]
8
>>> close_names("llama-3-70")[:2]
['llama3-70b', 'llama2-70b']
>>> get("Kimi_K2")["kv_lora_rank"], get("Nemotron_3_Nano")["n_mamba_layers"]
(512, 23)

A Hugging Face ``config.json`` read from disk (no hub access) gives the same keys
(:func:`from_hf_config`).
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from pathlib import Path
from typing import Any, Optional, Union

import pandas as pd

CATALOG_FILE = Path(__file__).parent / "data" / "models.csv"
# the catalog's columns that are config keys (the rest: name, aliases, arch, active_params, verified, source)
SHAPE_KEYS = ("n_params", "n_layers", "hidden_dim", "ffn_dim", "n_heads", "n_kv_heads", "head_dim", "vocab_size",
              "gated_mlp", "tie_embeddings", "n_experts", "experts_per_token", "moe_ffn_dim", "n_shared_experts",
              "shared_ffn_dim", "n_dense_layers", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
              "qk_rope_head_dim", "v_head_dim", "mtp_layers", "sliding_window", "n_sliding_layers",
              "n_attention_layers", "n_mamba_layers", "mamba_heads", "mamba_head_dim", "mamba_state_dim",
              "mamba_groups")
_COLUMN_KEYS = {"gated": "gated_mlp"}  # catalog column -> config key, where they differ
_BOOL_KEYS = {"gated_mlp", "tie_embeddings"}


class UnknownModelError(KeyError, ValueError):
    """No model in the catalog has this name or alias."""

    def __str__(self) -> str:
        return str(self.args[0])


def _norm(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", str(name).strip().lower())


@functools.lru_cache(maxsize=None)
def catalog() -> pd.DataFrame:
    """The catalog as a frame, one row per model (``name`` first)."""
    return pd.read_csv(CATALOG_FILE, comment="#", dtype={"aliases": str, "source": str})


@functools.lru_cache(maxsize=None)
def _index() -> dict[str, str]:
    index = {}
    for row in catalog().itertuples():
        for alias in [row.name, *str(row.aliases if isinstance(row.aliases, str) else "").split("|")]:
            if alias:
                index.setdefault(_norm(alias), row.name)
    return index


def names() -> list[str]:
    """Every model's catalog name.

    >>> "llama3.1-405b" in names()
    True
    """
    return list(catalog()["name"])


@functools.lru_cache(maxsize=None)
def _shapes() -> dict[str, dict[str, Any]]:
    """Each model's config keys by catalog name, read off the catalog once (the published loaders
    look a model up per table row)."""
    shapes = {}
    for row in catalog().to_dict("records"):
        keys: dict[str, Any] = {"model_name": row["name"]}
        for column, value in row.items():
            key = _COLUMN_KEYS.get(column, column)
            if key not in SHAPE_KEYS or pd.isna(value):
                continue
            keys[key] = bool(value) if key in _BOOL_KEYS else (int(value) if float(value).is_integer() else float(value))
        shapes[row["name"]] = keys
    return shapes


def lookup(name: str) -> Optional[dict[str, Any]]:
    """The config keys of the model called ``name`` (or one of its aliases), or None."""
    found = _index().get(_norm(name))
    return None if found is None else dict(_shapes()[found])


def close_names(name: str, n: int = 3) -> list[str]:
    """Catalog names that look like ``name`` (for "did you mean" in errors)."""
    index = _index()
    hits = difflib.get_close_matches(_norm(name), list(index), n=3 * n, cutoff=0.6)
    return list(dict.fromkeys(index[h] for h in hits))[:n]


def get(name: str) -> dict[str, Any]:
    """The config keys of the model called ``name``; :class:`UnknownModelError` names close ones."""
    found = lookup(name)
    if found is None:
        close = close_names(name)
        raise UnknownModelError(
            f"unknown model {name!r}; " + (f"close: {', '.join(close)}. " if close else "")
            + "Known models: python -m perfzoo.plan --list-models, or give the shape with --set n_layers=... "
              "hidden_dim=...")
    return found


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
}
# a hybrid pattern's letters (Nemotron-H's hybrid_override_pattern): Mamba-2, attention, MLP, MoE
_PATTERN = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}


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
        raise ValueError(f"{path}: not a readable JSON model config (not UTF-8 text: byte {exc.start})") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable JSON model config ({exc})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: not a model config (expected a JSON object)")
    for nested in ("text_config", "attn_config", "ffn_config"):  # Llama 4's text model, DBRX's blocks
        if isinstance(raw.get(nested), dict):
            raw = {**raw[nested], **raw}
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
        raise ValueError(f"{path}: not a model config: it gives no layer count and width "
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
    keys.update(_window_layers(raw, keys.pop("sliding_window", None), keys["n_layers"]))
    pattern = raw.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        counts = {kind: sum(_PATTERN.get(c) == kind for c in pattern) for kind in _PATTERN.values()}
        keys.update(n_layers=len(pattern), n_mamba_layers=counts["mamba"], n_attention_layers=counts["attention"])
    act = str(raw.get("hidden_act", raw.get("hidden_activation", raw.get("activation_function", "")))).lower()
    if act:  # Gemma's MLP is gated whatever its GELU is called (GeGLU: gate, up and down projections)
        keys["gated_mlp"] = act in ("silu", "swiglu", "geglu") or "glu" in act or model_type.startswith("gemma")
    keys["model_name"] = str(raw.get("_name_or_path") or raw.get("model_type") or path.parent.name)
    return keys


__all__ = ["UnknownModelError", "catalog", "names", "lookup", "get", "close_names", "from_hf_config", "hf_keys",
           "read_hf_json", "SHAPE_KEYS", "CATALOG_FILE"]
