"""The model catalog: public LLM architectures by name, as perfzoo's config keys.

A model is a row of ``perfzoo/llmconfig/models.csv`` (one per architecture, with its source and
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
(:func:`perfzoo.llmconfig.huggingface.from_hf_config`).
"""

from __future__ import annotations

import difflib
import functools
import re
from pathlib import Path
from typing import Any, Optional

import pandas as pd
from perfzoo.console import InputError

CATALOG_FILE = Path(__file__).parent / "models.csv"
# the catalog's columns that are config keys (the rest: name, aliases, arch, active_params, verified, source)
SHAPE_KEYS = ("n_params", "n_layers", "hidden_dim", "ffn_dim", "n_heads", "n_kv_heads", "head_dim", "vocab_size",
              "gated_mlp", "tie_embeddings", "n_experts", "experts_per_token", "moe_ffn_dim", "n_shared_experts",
              "shared_ffn_dim", "n_dense_layers", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
              "qk_rope_head_dim", "v_head_dim", "mtp_layers", "sliding_window", "n_sliding_layers",
              "n_attention_layers", "n_mamba_layers", "mamba_heads", "mamba_head_dim", "mamba_state_dim",
              "mamba_groups", "n_linear_layers", "linear_key_heads", "linear_value_heads", "linear_key_head_dim",
              "linear_value_head_dim", "linear_conv_kernel")
_COLUMN_KEYS = {"gated": "gated_mlp"}  # catalog column -> config key, where they differ
_BOOL_KEYS = {"gated_mlp", "tie_embeddings"}


class UnknownModelError(InputError, KeyError):
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


MATCH_KEYS = ("n_layers", "hidden_dim", "ffn_dim", "n_heads", "n_kv_heads", "vocab_size", "n_experts",
              "experts_per_token", "moe_ffn_dim")


def by_shape(shape: dict[str, Any]) -> Optional[str]:
    """The one catalog model whose :data:`MATCH_KEYS` agree with every one ``shape`` gives (at least
    layers, hidden and heads), or None: a launch line that gives a model's shape names that model.

    >>> by_shape({"n_layers": 32, "hidden_dim": 4096, "ffn_dim": 14336, "n_heads": 32, "n_kv_heads": 8,
    ...           "vocab_size": 128256})
    'llama3-8b'
    """
    given = {k: shape[k] for k in MATCH_KEYS if shape.get(k) is not None}
    if not {"n_layers", "hidden_dim", "n_heads"} <= set(given):
        return None
    hits = {name for name, keys in _shapes().items()
            if all(keys.get(k, 1 if k == "n_experts" else None) == v for k, v in given.items())}
    return hits.pop() if len(hits) == 1 else None


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


__all__ = ["UnknownModelError", "catalog", "names", "lookup", "get", "close_names", "SHAPE_KEYS", "CATALOG_FILE"]
