"""Sizes of the ``fsdp`` workload's model, from its config alone: pure arithmetic, no torch,
so the cost model and the closed loop's baselines (:mod:`perfzoo.workloads.fsdp_ads`) can
size a config without importing torch.

>>> layer_widths({"n_layers": 2, "width": 8, "width_01": 4})
[8, 4]
>>> tower_layer_params({"n_layers": 1, "width": 8})  # one interaction layer: cross + norm, up, down
[640]
"""

from __future__ import annotations

MLP_MULT = 4  # the hidden width of each layer's MLP, in multiples of its output width


def layer_widths(config: dict) -> list[int]:
    """Each layer's output width: ``width_00``.. where the config gives them, else ``width``."""
    return [int(config.get(f"width_{i:02d}", config["width"])) for i in range(int(config["n_layers"]))]


def tower_layer_params(config: dict) -> list[int]:
    """Parameters of each layer of an fsdp config: the arithmetic of
    :class:`harness.workloads.fsdp_ads.TowerLayer` and ``InteractionLayer``."""
    widths = layer_widths(config)
    ins = [int(config["width"]), *widths[:-1]]
    tower = len(set(ins + widths)) > 1
    out = []
    for a, b in zip(ins, widths):
        mlp = 2 * a + a * MLP_MULT * b + MLP_MULT * b + MLP_MULT * b * b + b  # norm, up, down
        out.append(mlp + ((a * b if a != b else 0) if tower else a * a + a))  # skip, or the cross layer
    return out
