"""The FLOPs per token a published row's TFLOP/s and MFU figures are counted in: each
convention a source may count by (:func:`flops_per_token_published`), and what a row that gives
both tokens/s and TFLOP/s says through them about its samples (:func:`packed_sample_len`)."""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo import analytic

# FLOP conventions a source may count by: (hardware FLOPs, causal attention)
CONVENTIONS = ((False, False), (False, True), (True, False), (True, True))


def flops_per_token_published(configs: Sequence[dict]) -> list[dict[tuple[bool, bool], tuple[Optional[float], str]]]:
    """Training FLOPs per token of published rows, computed for all rows at once, and the
    convention used (for the record), keyed by :data:`CONVENTIONS`: whether the source counts
    hardware FLOPs, and whether it counts causal attention (half the core, Megatron-Bridge's).

    ``6N + 12*L*d*s`` (:func:`perfzoo.analytic.flops_per_token`; ``6N + 6*L*d*s`` causal), plus
    the recomputed forward for hardware FLOPs (full recompute unless the row says selective);
    ``6N`` (``8N``) alone when only ``n_params`` is known; None when neither the shape nor
    ``n_params`` is.

    >>> from perfzoo.datasets.sources._llm import llm_config
    >>> cfg = llm_config(n_layers=24, hidden_dim=1024, n_heads=16, seq_len=1024)
    >>> flops_per_token_published([cfg])[0][False, False]
    (2113929216.0, 'model FLOPs 6N+12Lds')
    """
    frame = pd.DataFrame(list(configs))
    checkpointing = frame["activation_checkpointing"]
    recomputed = frame.assign(activation_checkpointing=checkpointing.where(
        checkpointing.notna() & (checkpointing != "none"), "full"))
    shaped = frame[["n_layers", "hidden_dim", "seq_len"]].notna().all(axis=1).to_numpy()  # nothing guessed
    params = pd.to_numeric(frame["n_params"], errors="coerce").to_numpy(float)
    counted = {(hw, causal): np.where(shaped, analytic.flops_per_token(recomputed if hw else frame, recompute=hw,
                                                                       causal=causal).to_numpy(float), np.nan)
               for hw, causal in CONVENTIONS}
    return [{conv: _with_convention(counted[conv][i], n, *conv) for conv in CONVENTIONS}
            for i, n in enumerate(params)]


def _with_convention(value: float, n_params: float, hardware: bool, causal: bool) -> tuple[Optional[float], str]:
    kind = "hardware FLOPs" if hardware else "model FLOPs"
    if not math.isnan(value):
        return float(value), f"{kind} 6N+{'6Lds (causal)' if causal else '12Lds'}" + ("+recompute" if hardware else "")
    if not math.isnan(n_params) and n_params > 0:
        return (8.0 if hardware else 6.0) * float(n_params), f"{kind} {'8N' if hardware else '6N'} (shape unknown)"
    return None, ""


PACKING_TOLERANCE = 0.02  # a FLOP count this far off is the figures' rounding, not the row's samples


def packed_sample_len(configs: Sequence[dict], flops_per_token: Sequence[float], whole: Sequence[Optional[float]],
                      convention: tuple[bool, bool]) -> list[Optional[int]]:
    """The tokens per sample of rows whose published FLOPs per token (``flops_per_token``: TFLOP/s
    over tokens/s; NaN where a row does not give both) count attention over samples much shorter
    than the sequence, packed into it; None for every other row. ``whole``: each row's count over
    its whole sequence in the file's ``convention`` (:func:`flops_per_token_published`; None or NaN
    unknown).

    Under that convention the attention core's FLOPs grow linearly with a sample's context, so the
    published count, between a count without attention (1-token samples) and the count over the
    whole sequence, places the sample: ``S = 1 + (s - 1)(published - none) / (whole - none)``. Only
    a count more than :data:`PACKING_TOLERANCE` below the whole sequence's and within the attention
    term is read so, and only where it puts the samples under a quarter of the sequence (a causal
    count read as a full one would put them at half), and only for a model another row of which
    counts its whole sequence (the file counts that model as perfzoo does; where it does not, the
    shortfall is its formula, not the samples). NeMo's SFT and LoRA rows of Llama 2 (SQuAD's short
    samples packed into 4,096-token sequences) count 0-5% of the attention their sequences would.

    >>> from perfzoo.datasets.sources._llm import llm_config
    >>> cfg = llm_config(model_name="LLAMA2-7B", n_layers=32, hidden_dim=4096, n_heads=32, ffn_dim=11008,
    ...                  vocab_size=32000, seq_len=4096)
    >>> whole = flops_per_token_published([cfg])[0][False, False][0]
    >>> packed_sample_len([cfg, cfg], [0.865 * whole, whole], [whole, whole], (False, False))  # SFT, pre-training
    [140, None]
    >>> packed_sample_len([cfg], [0.865 * whole], [whole], (False, False))  # no row of the model counts its sequence
    [None]
    """
    whole = np.asarray(whole, dtype=float)
    none = np.array([np.nan if f[convention][0] is None else f[convention][0]  # 1-token samples
                     for f in flops_per_token_published([{**c, "packed_sample_len": 1} for c in configs])], dtype=float)
    published = np.asarray(flops_per_token, dtype=float)
    frame = pd.DataFrame(list(configs))
    s = pd.to_numeric(frame["seq_len"], errors="coerce").to_numpy(float)
    shaped = frame[["n_layers", "hidden_dim", "seq_len"]].notna().all(axis=1).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        sample = 1.0 + (s - 1.0) * (published - none) / (whole - none)
    # the model's count holds in this file: another of its rows publishes the whole sequence's FLOPs
    counted = pd.Series(np.abs(published / whole - 1.0) <= PACKING_TOLERANCE)
    holds = counted.groupby(frame["model_name"].to_numpy(), dropna=False).transform("any").to_numpy(bool)
    short = (shaped & holds & (published < whole * (1 - PACKING_TOLERANCE))
             & (published > none * (1 - PACKING_TOLERANCE)) & (sample <= s / 4))
    return [int(max(1, round(v))) if ok else None for v, ok in zip(sample, short)]
