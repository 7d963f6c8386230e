"""The table rows a loader refuses, as ``predict`` refuses the same config: no answer from a model
perfzoo would have to guess. A refused row is skipped, and its line and reason listed in the file's
load report (:class:`~perfzoo.datasets.sources.LoadReport`).

* expert parallelism (``ep`` or ``etp`` > 1) on a model perfzoo reads as dense: no expert count in
  the row, ``model_architectures.csv`` or the catalog (``predict``: "ep = 32 needs a
  mixture-of-experts model"), where the row would otherwise be priced as a dense model of its width;
* a mixture of experts without its expert count (an ``experts_per_token`` or expert width, or a
  name stating its active size, ``Qwen3-30B-A3B``, but no ``n_experts``), or without its top-k;
* a model whose name says its stack mixes in layers other than attention (Mamba, gated delta-net,
  RWKV, ...) while the row, the table and the catalog give none of their counts: priced as a
  transformer it would come out several times off.

>>> refusal({"model_name": "Mystery-MoE", "ep": 8, "n_experts": None})[:52]
'ep = 8 needs a mixture-of-experts model, and perfzoo'
>>> refusal({"model_name": "Llama 3 8B", "ep": 1, "n_experts": None}) is None
True
>>> refusal({"model_name": "Jamba 52B", "n_experts": None})[:40]
'Jamba 52B mixes in layers perfzoo cannot'
"""

from __future__ import annotations

import re
from typing import Optional

# a published name's active parameter count (Qwen3-30B-A3B, GLM-4.5-355B-A32B): a mixture of experts
_ACTIVE_SIZE = re.compile(r"\d(?:\.\d+)?[BM][-_ ]?A\d+(?:\.\d+)?[BM]\b", re.IGNORECASE)
# names of stacks that mix in layers other than softmax attention
_MIXED = re.compile(r"mamba|\bssm\b|rwkv|retnet|hyena|xlstm|jamba|zamba|griffin|recurrentgemma|samba|deltanet|"
                    r"linear[- _]attention|nemotron[-_ ]?h\b|qwen3[-_. ]?next|falcon[-_ ]?h1|kimi[-_ ]?linear",
                    re.IGNORECASE)
# the config keys that count a hybrid stack's layers of each kind (perfzoo.analytic.shape prices them)
HYBRID_COUNTS = ("n_mamba_layers", "n_linear_layers")


def refusal(config: dict) -> Optional[str]:
    """Why a row with ``config`` (its shape filled from the tables and the catalog) cannot be priced
    (module docstring), or None."""
    name = config.get("model_name") or "the model"
    experts = config.get("n_experts")
    moe = experts is not None and experts > 1
    for key in ("ep", "etp"):
        degree = config.get(key)
        if degree is not None and degree > 1 and not moe:
            return (f"{key} = {degree} needs a mixture-of-experts model, and perfzoo reads {name} as dense (no "
                    "n_experts > 1 in the row, model_architectures.csv or the catalog): refused, not priced as a "
                    "dense model; give n_experts and experts_per_token, or add the model to the catalog")
    stated = [k for k in ("experts_per_token", "moe_ffn_dim") if config.get(k) is not None]
    if experts is None and (stated or _ACTIVE_SIZE.search(str(name))):
        why = f"it gives {stated[0]}" if stated else "its name states an active size"
        return (f"{name} is a mixture of experts ({why}) without an expert count (n_experts): refused, not priced "
                "as a dense model; give n_experts, or add the model to the catalog")
    if moe and config.get("experts_per_token") is None:
        return (f"{name} is a mixture of {experts} experts without experts_per_token (the top-k each token is "
                "routed to): refused; give experts_per_token, or add the model to the catalog")
    mixed = _MIXED.search(str(name))
    if mixed and not any(config.get(k) for k in HYBRID_COUNTS):
        return (f"{name} mixes in layers perfzoo cannot count ({mixed.group(0)}: no n_mamba_layers or "
                "n_linear_layers in the row or the catalog): refused, not priced as a transformer; add the model "
                "to the catalog with its layer pattern")
    return None
