"""The transformer cost model one quantity at a time: each function takes a flat frame of configs
(or one config as a mapping) and returns the quantity per row (a float for one config), through
:class:`~perfzoo.analytic.llm.LLMCost`, whose module docstring states the conventions.

>>> round(pipeline_bubble({"pp": 8, "grad_accum": 8}), 4)
0.4667
"""

from __future__ import annotations

import numpy as np

from perfzoo.analytic._frame import Frame, as_frame, wrap, wrap_frame
from perfzoo.analytic.llm import LLMCost

def param_count(cfg: Frame):
    """Total parameters (blocks + embedding + LM head); ``config.n_params`` where the shape is unknown.

    >>> param_count({"n_layers": 24, "hidden_dim": 1024, "n_heads": 16})
    301989888.0
    """
    df, scalar = as_frame(cfg)
    return wrap(LLMCost(df).total_params(), df, scalar)


def flops_per_token(cfg: Frame, recompute: bool = False, causal: bool = False):
    """Training model FLOPs per token, ``6N + 12*L*d*s`` for standard attention (+ recompute when
    ``recompute=True``; ``causal=True`` counts half the attention core, Megatron-Bridge's convention).

    >>> flops_per_token({"n_layers": 24, "hidden_dim": 1024, "n_heads": 16, "seq_len": 1024})
    2113929216.0
    """
    df, scalar = as_frame(cfg)
    return wrap(sum(LLMCost(df).flops_parts(causal=causal, recompute=recompute).values()), df, scalar)


def flops_per_step(cfg: Frame, recompute: bool = True):
    """Training FLOPs of one optimizer step, all devices together (``B*s`` tokens)."""
    df, scalar = as_frame(cfg)
    return wrap(LLMCost(df).flops_per_step(recompute), df, scalar)


def flops_per_device_step(cfg: Frame):
    """Hardware FLOPs (recompute included) one device performs per optimizer step."""
    df, scalar = as_frame(cfg)
    return wrap(LLMCost(df).flops_per_device_step(), df, scalar)


def pipeline_bubble(cfg: Frame):
    """Idle fraction of a pipeline step, ``(pp-1)/(vp*m + pp-1)`` (0 without PP).

    >>> pipeline_bubble({"pp": 4, "grad_accum": 8})
    0.2727272727272727
    """
    df, scalar = as_frame(cfg)
    return wrap(LLMCost(df).bubble(), df, scalar)


def state_bytes_per_device(cfg: Frame):
    """Bytes of parameters, gradients and optimizer state per device (columns
    ``param_bytes``, ``grad_bytes``, ``optimizer_bytes``) under the config's sharding."""
    df, scalar = as_frame(cfg)
    return wrap_frame(LLMCost(df).memory.state_bytes(), df, scalar)


def activation_bytes_per_device(cfg: Frame):
    """Activation memory per device at the start of backward (:mod:`.memory`)."""
    df, scalar = as_frame(cfg)
    return wrap(LLMCost(df).memory.activation_bytes(), df, scalar)


def memory_per_device(cfg: Frame):
    """The memory breakdown per device (:mod:`.memory`): state, activations, peak allocated,
    overheads, ``memory_bytes`` and ``memory_fraction``."""
    df, scalar = as_frame(cfg)
    with np.errstate(divide="ignore", invalid="ignore"):
        return wrap_frame(LLMCost(df).memory.columns(), df, scalar)


def comm_bytes_per_device(cfg: Frame):
    """Bytes each device sends per optimizer step: ``comm_dp_bytes`` (DDP all-reduce or
    FSDP all-gather + reduce-scatter), ``comm_tp_bytes``, ``comm_pp_bytes``, ``comm_cp_bytes``,
    ``comm_ep_bytes``."""
    df, scalar = as_frame(cfg)
    return wrap_frame(LLMCost(df).comm_bytes(), df, scalar)


def ideal_step_time(cfg: Frame):
    """Ideal seconds per optimizer step from peak FLOP/s and link bandwidths (NaN for unknown hardware)."""
    df, scalar = as_frame(cfg)
    with np.errstate(divide="ignore", invalid="ignore"):
        return wrap(LLMCost(df).step_time()["step_time_s"], df, scalar)


__all__ = ["activation_bytes_per_device", "comm_bytes_per_device", "flops_per_device_step", "flops_per_step",
           "flops_per_token", "ideal_step_time", "memory_per_device", "param_count", "pipeline_bubble",
           "state_bytes_per_device"]
