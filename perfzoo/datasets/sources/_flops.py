"""The FLOPs per token a published row's TFLOP/s and MFU figures are counted in: each
convention a source may count by (:func:`flops_per_token_published`), the one a file's figures use
(:func:`file_flop_convention`), what a row that gives both tokens/s and TFLOP/s says through them
about its samples (:func:`packed_sample_len`, :func:`read_packing`), and the peak a file's MFU is
over (:func:`read_mfu_peak`). A file's rows are read rows of :mod:`.published` (their ``config``,
``tflops``, ``per_gpu``, ``mfu``, ``flops(hardware, causal)``)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo import analytic
from perfzoo.datasets.sources._base import LoadReport
from perfzoo.hardware.accelerators import spec as accelerator_spec
from perfzoo.records.vocabulary import normalize_precision

# FLOP conventions a source may count by: (hardware FLOPs, causal attention)
CONVENTIONS = ((False, False), (False, True), (True, False), (True, True))


def flops_per_token_published(configs: Sequence[dict]) -> list[dict[tuple[bool, bool], tuple[Optional[float], str]]]:
    """Training FLOPs per token of published rows, computed for all rows at once, and the
    convention used (for the record), keyed by :data:`CONVENTIONS`: whether the source counts
    hardware FLOPs, and whether it counts causal attention (half the core, Megatron-Bridge's).

    ``6N + 12*L*d*s`` (:func:`perfzoo.analytic.flops_per_token`; ``6N + 6*L*d*s`` causal), plus
    the recomputed forward for hardware FLOPs (full recompute unless the row says selective), where
    ``N`` counts the parameters one token's matmuls touch (a mixture of experts' active ones);
    ``6N`` (``8N``) alone when only ``n_params`` is known; None when neither the shape nor
    ``n_params`` is, and for a mixture of experts whose shape or sequence is unknown: ``6N`` of its
    total parameters would count every expert (DeepSeek-V3: 4.0e12 FLOPs per token, about 16x its
    active count), so the reason stands in the convention's place.

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
    experts = pd.to_numeric(frame.get("n_experts", pd.Series(np.nan, index=frame.index)), errors="coerce")
    moe = experts.to_numpy(float) > 1
    counted = {(hw, causal): np.where(shaped, analytic.flops_per_token(recomputed if hw else frame, recompute=hw,
                                                                       causal=causal).to_numpy(float), np.nan)
               for hw, causal in CONVENTIONS}
    return [{conv: _with_convention(counted[conv][i], n, moe[i], *conv) for conv in CONVENTIONS}
            for i, n in enumerate(params)]


def _with_convention(value: float, n_params: float, moe: bool, hardware: bool,
                     causal: bool) -> tuple[Optional[float], str]:
    kind = "hardware FLOPs" if hardware else "model FLOPs"
    active = " of the active parameters" if moe else ""
    if not math.isnan(value):
        return float(value), (f"{kind} 6N+{'6Lds (causal)' if causal else '12Lds'}" + ("+recompute" if hardware else "")
                               + active)
    if moe:
        return None, MOE_UNPRICED
    if not math.isnan(n_params) and n_params > 0:
        return (8.0 if hardware else 6.0) * float(n_params), f"{kind} {'8N' if hardware else '6N'} (shape unknown)"
    return None, ""


# why an MoE row's TFLOP/s or MFU cannot become tokens/s without its shape and sequence
MOE_UNPRICED = ("a mixture of experts whose shape or sequence length is not given: its active FLOPs per token are "
                "unknown, and 6N of its total parameters would count every expert; refused (give seq_len)")


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


def file_flop_convention(rows: Sequence[Any]) -> tuple[tuple[bool, bool], str]:
    """The FLOP convention of a file's figures, one of :data:`CONVENTIONS` (hardware FLOPs with
    recompute or model FLOPs; causal attention or not), and why.

    Read off the rows that publish both tokens/s and TFLOP/s: of the conventions, the one whose
    FLOPs per token the figures imply most closely (median ratio nearest 1; model FLOPs sit near
    1, hardware FLOPs with full recompute near 4/3 of them, causal attention a few percent
    below). Without such rows: model FLOPs, full attention (a row can still say ``HFU-like``).
    """
    ratios: dict[tuple[bool, bool], list[float]] = {conv: [] for conv in CONVENTIONS}
    for p in rows:
        for conv in CONVENTIONS:
            flops, _ = p.flops(*conv)
            if p.per_gpu and p.tflops and flops:
                ratios[conv].append(p.tflops * 1e12 / p.per_gpu / flops)
    if not ratios[False, False]:
        return (False, False), "model FLOPs (no row gives both tokens/s and TFLOP/s to tell)"
    medians = {conv: float(pd.Series(r).median()) for conv, r in ratios.items()}
    best = min(CONVENTIONS, key=lambda conv: abs(math.log(medians[conv])))
    hardware, causal = best
    return best, (f"{'hardware' if hardware else 'model'} FLOPs{', causal attention' if causal else ''}: "
                  f"on {len(ratios[False, False])} rows giving both, the implied FLOPs per token are "
                  f"{medians[False, False]:.2f}x 6N+12Lds ({medians[best]:.2f}x the chosen count)")


def read_packing(rows: Sequence[Any], convention: tuple[bool, bool], report: LoadReport) -> None:
    """``packed_sample_len`` for the rows whose tokens/s and TFLOP/s count attention over samples
    much shorter than their sequences (:func:`packed_sample_len`)."""
    if not rows:
        return
    published = [p.tflops * 1e12 / p.per_gpu if p.tflops and p.per_gpu else math.nan for p in rows]
    whole = [p.flops(*convention)[0] for p in rows]
    samples = packed_sample_len([p.config for p in rows], published, whole, convention)
    found = [(p, sample, flops) for p, sample, flops in zip(rows, samples, published) if sample is not None]
    # copies of one configuration (a table re-published) get one sample length: the median of theirs
    keys = [repr(sorted(p.config.items())) for p, _, _ in found]
    copies: defaultdict[str, list[int]] = defaultdict(list)
    for key, (_, sample, _) in zip(keys, found):
        copies[key].append(sample)
    for key, (p, _, flops) in zip(keys, found):
        sample = int(statistics.median_low(copies[key]))
        p.config["packed_sample_len"] = sample
        p.derived.append(f"packed_sample_len={sample}: the published FLOPs per token ({flops:.4g}) count attention "
                         f"over {sample}-token samples, not the {p.config['seq_len']}-token sequence")
        report.derived["packed_sample_len from the published FLOPs per token"] += 1
    if found:  # their counts, now over the samples, in one pass
        for (p, _, _), counts in zip(found, flops_per_token_published([p.config for p, _, _ in found])):
            p.flops_by_convention = counts


def read_mfu_peak(rows: Sequence[Any], convention: tuple[bool, bool], report: LoadReport) -> None:
    """Whether a file's MFU is over the dense BF16 peak (the default) or over the peak of each row's
    precision (NVIDIA's DGX Cloud tables: an FP8 row's MFU is about half a BF16 row's at a similar
    speed), read off its low-precision rows that give tokens/s and MFU: the peak whose implied
    tokens/s come nearer the published ones; ``mfu_peak`` of every row and the file's FLOP-convention
    line say which."""
    own, bf16 = [], []
    for p in rows:
        spec = accelerator_spec(p.hardware["accelerator"])
        precision = normalize_precision(p.config.get("precision"))
        flops = p.flops(False, convention[1])[0]
        if spec is None or precision not in ("fp8", "fp4") or not (p.per_gpu and p.mfu and flops):
            continue
        peak, peak_bf16 = spec.flops(precision), spec.flops("bf16")
        if peak and peak_bf16:
            own.append(abs(math.log(p.mfu * peak / flops / p.per_gpu)))
            bf16.append(abs(math.log(p.mfu * peak_bf16 / flops / p.per_gpu)))
    if own and statistics.median(own) < statistics.median(bf16):
        for p in rows:
            p.mfu_peak = normalize_precision(p.config.get("precision"))
        report.flop_convention += (f"; MFU over the dense peak of each row's precision (on {len(own)} FP8/FP4 rows "
                                   f"giving tokens/s and MFU, implied/published tokens/s "
                                   f"{math.exp(statistics.median(own)):.2f}x against "
                                   f"{math.exp(statistics.median(bf16)):.2f}x over the BF16 peak)")
