"""The model shape a prediction or a plan priced, and where each value came from.

``predict`` and ``plan`` print one line of the shape they priced (layers, hidden, FFN, heads, KV
heads, experts and experts per token, parameters) and where each value came from: the user
(``--set`` or the config), the catalog, a ``config.json``, a ``transformers`` default
(:mod:`perfzoo.llmconfig.huggingface`), or the cost model's own default where the config leaves a value
out (FFN 4 x hidden, one KV head per head), so a silent default shows.

>>> cfg = {"model_name": "toy", "n_layers": 2, "hidden_dim": 64, "n_heads": 4, "vocab_size": 100}
>>> print(describe(cfg, {"n_layers": "user", "hidden_dim": "user", "n_heads": "user", "vocab_size": "user"}))
toy: 2 layers, hidden 64, FFN 256, 4 heads, 4 KV heads, 0.1M parameters; from user (layers, hidden, heads), the cost model's default (FFN: 4 x hidden; KV heads: one per head), counted from the shape (parameters)
"""

from __future__ import annotations

from typing import Any, Mapping

from perfzoo.console import InputError
from perfzoo import analytic
from perfzoo.llmconfig import catalog
from perfzoo.records.vocabulary import is_missing

FIELDS = (("n_layers", "layers"), ("hidden_dim", "hidden"), ("ffn_dim", "FFN"), ("n_heads", "heads"),
          ("n_kv_heads", "KV heads"), ("n_experts", "experts"), ("experts_per_token", "experts per token"),
          ("moe_ffn_dim", "expert FFN"), ("n_params", "parameters"))
MOE_FIELDS = ("n_experts", "experts_per_token", "moe_ffn_dim")


def given_sources(raw: Mapping[str, Any]) -> dict[str, str]:
    """Where each shape key of a user's config ``raw`` (as given, before the front door) comes from:
    ``user`` for the keys it states, the catalog for those its ``model`` (or a catalog
    ``model_name``) fills."""
    plain = {str(k).split(".", 1)[-1]: v for k, v in raw.items() if not is_missing(v)}
    name = plain.get("model") or plain.get("model_name")
    preset = catalog.lookup(str(name)) if name is not None else None
    out = {k: f"catalog ({preset['model_name']})" for k in preset or {}}
    out.update({k: "user" for k in plain})
    return out


def describe(cfg: Mapping[str, Any], sources: Mapping[str, str]) -> str:
    """One line: the shape ``cfg`` is priced with and where each value came from (``sources``:
    key -> where; a key with none is the cost model's default, or counted from the shape)."""
    moe = (cfg.get("n_experts") or 1) > 1
    default = "the cost model's default"
    values, groups = [], {}
    for key, label in FIELDS:
        if key in MOE_FIELDS and not moe:
            continue
        value, source, what = cfg.get(key), sources.get(key, "given"), label
        if key == "ffn_dim" and value is None:
            if moe and not cfg.get("n_dense_layers"):
                continue  # every MLP is an expert's
            value, source, what = 4 * cfg["hidden_dim"], default, "FFN: 4 x hidden"
        elif key == "n_kv_heads" and value is None:
            value, source, what = cfg.get("n_heads"), default, "KV heads: one per head"
        elif key == "n_params":
            est = analytic.estimate(dict(cfg))
            value, source = float(est["n_params"]), "counted from the shape"
            if moe:  # what one token's matmuls touch: K experts, the shared ones, the head
                active = _value(key, label, float(est["active_params"])).split()[0]
                values.append(f"{_value(key, label, value)} ({active} active)")
                groups.setdefault(source, []).append(what)
                continue
        if value is None:
            values.append(f"{label} unknown")
            continue
        values.append(_value(key, label, value))
        groups.setdefault(source, []).append(what)
    sep = {default: "; "}
    where = ", ".join(f"{g} ({sep.get(g, ', ').join(items)})" for g, items in groups.items())
    name = f"{cfg['model_name']}: " if cfg.get("model_name") else ""
    return f"{name}{', '.join(values)}; from {where}"


SIZE_TOLERANCE = 0.25  # a stated parameter count this far from the shape's is another model's


def check_stated_size(cfg: Mapping[str, Any]) -> None:
    """A ``ValueError`` where ``cfg`` states ``n_params`` beside a full shape (layers, hidden, heads, vocabulary) that
    counts more than :data:`SIZE_TOLERANCE` apart from it: the prices follow the shape while a learned
    predictor reads the count, so one of the two describes another model.

    >>> check_stated_size({"n_layers": 32, "hidden_dim": 4096, "n_heads": 32, "vocab_size": 32000, "n_params": 7e9})
    >>> check_stated_size({"n_layers": 32, "hidden_dim": 4096, "n_heads": 32, "vocab_size": 32000, "n_params": 1})
    Traceback (most recent call last):
    ...
    perfzoo.console.InputError: n_params=1: the shape (32 layers, hidden 4,096, 32 heads) counts 6.7B parameters; leave n_params out (it is counted from the shape) or give the shape of the model it counts
    """
    stated = cfg.get("n_params")
    if is_missing(stated) or any(is_missing(cfg.get(k)) for k in ("n_layers", "hidden_dim", "n_heads", "vocab_size")):
        return
    counted = float(analytic.estimate({k: v for k, v in cfg.items() if k != "n_params"})["n_params"])
    if counted > 0 and abs(float(stated) / counted - 1.0) > SIZE_TOLERANCE:
        shape = f"{int(cfg['n_layers'])} layers, hidden {int(cfg['hidden_dim']):,}, {int(cfg['n_heads'])} heads"
        raise InputError(f"n_params={stated:g}: the shape ({shape}) counts {_value('n_params', '', counted).split()[0]} parameters; "
                         "leave n_params out (it is counted from the shape) or give the shape of the model it counts")


def _value(key: str, label: str, value: float) -> str:
    if key == "n_params":
        return f"{value / 1e9:,.1f}B parameters" if value >= 1e9 else f"{value / 1e6:,.1f}M parameters"
    if key in ("hidden_dim", "ffn_dim", "moe_ffn_dim", "experts_per_token"):
        return f"{label} {int(value):,}"
    return f"{int(value):,} {label}"


__all__ = ["FIELDS", "SIZE_TOLERANCE", "check_stated_size", "describe", "given_sources"]
