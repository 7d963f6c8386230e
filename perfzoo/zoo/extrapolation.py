"""How far a config lies beyond the data a predictor was trained on, and how much wider its interval
gets for it: ``predict`` and ``plan`` warn and widen alike.

A config beyond the training data's largest device count, sequence length or model size
extrapolates: :func:`beyond_training` counts the doublings on each axis, :func:`widened` moves each
end of an 80% interval out by :data:`WIDENING_PER_DOUBLING` (log throughput) per doubling, and
:func:`outside_training` says in words why a config lies outside (no accelerator given, or one
priced exactly as a better-known one; how many times the largest value on each axis). An
accelerator without a measured row (:func:`unseen_hardware`) widens the interval by what the
leave-one-accelerator-out replay measures (:data:`UNSEEN_ACCELERATOR_WIDENING`, or
:data:`UNSEEN_FAMILY_WIDENING` where its whole family is unseen, plus :data:`UNSEEN_STACK_WIDENING`, what
leaving one software stack out costs, where its vendor is) and gets a note the commands print first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfzoo import analytic, llmconfig
from perfzoo.datasets.dataset import Dataset
from perfzoo.hardware import accelerators
from perfzoo.zoo.analytic_features import n_devices

SCALE_AXES = ("devices", "sequence", "parameters")  # how far beyond its training data a config extrapolates
LABELS = {"devices": "devices", "sequence": "sequence length", "parameters": "parameters"}
# log throughput each end of an interval moves out per doubling beyond the training data's largest device
# count, sequence or model size: how fast the 80th percentile of the shipped member's |log residual| grows
# per doubling on the published tables' scale split (trained on <= 64 GPUs, tested up to 6.6 doublings
# beyond: 0.13 + 0.022 x doublings), measured by scripts/extrapolation_widening.py (its docstring says how)
WIDENING_PER_DOUBLING = 0.022
# log throughput each end of an interval moves out for an accelerator whose row the training data lacks,
# measured by scripts/hardware_widening.py (perfzoo.evaluation.hardware.held_out) on 2026-12-07 at the
# leaderboard of 75268c7: every accelerator of published-llm with >= 20 jobs held out in turn (7, all NVIDIA),
# the shipped member (analytic) fitted with its 80% interval (MoE and dense calibrated apart) on the rest; the
# widening that gives each held-out accelerator 80% coverage, the largest of them (GB200: 0.006, covered 0.78
# without it; the others 0, covered 0.81-0.91)
UNSEEN_ACCELERATOR_WIDENING = 0.006
# the same with a whole family held out in turn (NVIDIA Ampere 0.001, Hopper and Blackwell 0), at least the
# accelerators' figure (an accelerator of an unseen family is unseen too): for an accelerator whose family
# is unseen; published-llm has no other vendor, so for AMD, Google or Intel it is NVIDIA's figure, and their
# software stack adds UNSEEN_STACK_WIDENING
UNSEEN_FAMILY_WIDENING = 0.006
MEASURED_ON = "published-llm's NVIDIA accelerators"  # what the two widenings were measured holding out
# log throughput each end moves out, beside the family's, for a vendor no row measured: its software stack
# (compiler, kernels, collectives library) is as new as its chip. Measured by scripts/hardware_widening.py
# (perfzoo.evaluation.hardware.held_out, by "framework" and "year") on published-llm with the shipped analytic
# and its interval at the leaderboard of 75268c7 (MoE and dense calibrated apart): each framework
# (llm-foundry, NeMo, Megatron-Bridge, torchtitan, Megatron-LM) and each year's release generation (2021-2026)
# held out in turn, the widening that gives the held-out stack 80% coverage, the largest of them (Megatron-LM:
# 0.025, coverage without it 0.71; 2025 0.010, 2022 0.008, every other framework and year 0). With hybrid
# shipped (narrower intervals) the same replay gave 0.216 (Megatron-Bridge): what an unseen stack costs
# depends on how wide the member's own interval already is.
UNSEEN_STACK_WIDENING = 0.025
STACK_MEASURED = "Megatron-LM"  # the stack whose leaving out sets UNSEEN_STACK_WIDENING


def priced_alike(spec: accelerators.AcceleratorSpec, other: accelerators.AcceleratorSpec) -> bool:
    """Whether the cost model sees the same device in both: equal peak FLOP/s, memory bandwidth,
    softmax exponential rate, link bandwidths and node size (memory capacity only decides whether
    a config fits).

    >>> priced_alike(accelerators.spec("H200"), accelerators.spec("H100-SXM-80GB"))  # 4.8 vs 3.35 TB/s
    False
    >>> priced_alike(accelerators.spec("H100-SXM-80GB"), accelerators.spec("DGX-H100"))
    True
    """
    def figures(s: accelerators.AcceleratorSpec) -> tuple:
        return dict(s.peak_flops), s.hbm_bw, s.exp_rate, s.intra_bw, s.inter_bw, s.node_size

    return figures(spec) == figures(other)


def _extent(frame: pd.DataFrame, params: np.ndarray) -> dict[str, np.ndarray]:
    """Each row's value on every scale axis (:data:`SCALE_AXES`)."""
    seq = pd.to_numeric(frame.get("config.seq_len", pd.Series(np.nan, index=frame.index)), errors="coerce")
    return {"devices": np.asarray(n_devices(frame), dtype=float), "sequence": seq.to_numpy(dtype=float),
            "parameters": np.asarray(params, dtype=float)}


@dataclass(frozen=True)
class Seen:
    """What a predictor's training data covered, summarised once (:meth:`of`): its ``name``, the largest
    value on each scale axis (``largest``, NaN where no row gives one) and its jobs per accelerator,
    family and vendor (``jobs[by]``, :func:`accelerator_identity`, most first)."""

    name: str
    largest: dict[str, float]
    jobs: dict[str, pd.Series]

    @classmethod
    def of(cls, training: Dataset) -> "Seen":
        """The summary of ``training`` (its parameter counts priced once, each accelerator text read once)."""
        known = _extent(training.frame, analytic.estimate(training.frame)["n_params"].to_numpy(dtype=float))
        largest = {what: float(np.nanmax(v)) if np.isfinite(v).any() else np.nan for what, v in known.items()}
        given = training.frame.get("hardware.accelerator", pd.Series(dtype=object)).dropna()
        jobs = {}
        for by in ("accelerator", "family", "vendor"):
            identity = {a: accelerator_identity(a, by) for a in given.unique()}
            jobs[by] = given.map(identity).value_counts()
        return cls(training.name, largest, jobs)


def beyond_training(frame: pd.DataFrame, params: np.ndarray, seen: Seen) -> pd.DataFrame:
    """Per config (``params``: its parameter count) and scale axis (:data:`SCALE_AXES`: devices,
    sequence length, parameters), how many times the largest value among the jobs ``seen`` it is (NaN
    where either is unknown); a column ``doublings`` sums ``log2`` of those above 1, how far the
    config extrapolates in all (:func:`widened`).

    >>> from types import SimpleNamespace
    >>> seen = Seen.of(SimpleNamespace(name="x", frame=pd.DataFrame({"config.n_gpus": [8, 64],
    ...     "config.seq_len": [4096, 8192], "config.n_params": [8e9, 70e9]})))
    >>> asked = pd.DataFrame({"config.n_gpus": [256, 32], "config.seq_len": [32768, 2048]})
    >>> beyond_training(asked, np.array([70e9, 8e9]), seen).round(2).to_dict("list")
    {'devices': [4.0, 0.5], 'sequence': [4.0, 0.25], 'parameters': [1.0, 0.11], 'doublings': [4.0, 0.0]}
    """
    asked = _extent(frame, params)
    out = pd.DataFrame({what: asked[what] / seen.largest[what] for what in SCALE_AXES}, index=frame.index)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["doublings"] = np.log2(out[list(SCALE_AXES)].clip(lower=1.0)).fillna(0.0).sum(axis=1)
    return out


def widened(low: np.ndarray, high: np.ndarray, doublings: np.ndarray,
            hardware: np.ndarray | float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """An interval ``(low, high)`` widened for a config ``doublings`` beyond the training data
    (:func:`beyond_training`) on hardware it lacks (``hardware``: :func:`unseen_hardware`'s
    widening): each end moves out by ``w``, :data:`WIDENING_PER_DOUBLING` (log throughput) per
    doubling plus ``hardware``, ``low * exp(-w)``, ``high * exp(w)``.

    >>> lo, hi = widened(np.array([90.0]), np.array([110.0]), np.array([2.0]), 0.1)
    >>> bool(lo[0] < 90.0 < 110.0 < hi[0]), bool(np.isclose(np.log(hi[0] / 110.0), 2 * WIDENING_PER_DOUBLING + 0.1))
    (True, True)
    """
    w = WIDENING_PER_DOUBLING * np.asarray(doublings, dtype=float) + np.asarray(hardware, dtype=float)
    return np.asarray(low, dtype=float) * np.exp(-w), np.asarray(high, dtype=float) * np.exp(w)


def accelerator_identity(name: object, by: str = "accelerator") -> str:
    """What an accelerator text is to a predictor's data: its accelerator table row
    (``by="accelerator"``), that row's ``family`` or ``vendor``; the normalised text where no row
    matches (its own family and vendor: nothing is known of them).

    >>> accelerator_identity("NVIDIA H100 80GB HBM3"), accelerator_identity("H800", "family"), accelerator_identity("TPU v5p", "vendor")
    ('H100-80GB', 'NVIDIA Hopper', 'Google')
    """
    found = llmconfig.known_accelerator(name)
    if found is None:
        return accelerators.normalise(str(name))
    return {"accelerator": found.name, "family": found.family, "vendor": found.vendor}[by]


def unseen_hardware(frame: pd.DataFrame, seen: Seen) -> pd.DataFrame:
    """Per config, ``widening`` (log throughput each end of its interval moves out, :func:`widened`)
    and ``note`` (empty where the training data ``seen`` measured its accelerator's row): an accelerator
    whose family it has gets :data:`UNSEEN_ACCELERATOR_WIDENING`, one whose family (or vendor)
    it lacks, or that no table row matches, :data:`UNSEEN_FAMILY_WIDENING`, and one whose vendor it
    lacks that plus :data:`UNSEEN_STACK_WIDENING` (a vendor's software stack no row measured); the note
    says which, by how much, and what measured it (for a vendor never seen, it opens "priced from NVIDIA
    data: interval widened x.. for an unseen vendor stack" and says its error there was never measured)."""
    jobs = seen.jobs
    out = pd.DataFrame({"widening": 0.0, "note": ""}, index=frame.index)
    given = frame["hardware.accelerator"] if "hardware.accelerator" in frame else pd.Series(None, index=frame.index)
    for i, acc in zip(frame.index, given):
        if acc is None or (isinstance(acc, float) and np.isnan(acc)) or accelerator_identity(acc) in jobs["accelerator"]:
            continue
        spec = llmconfig.known_accelerator(acc)
        rows = list(jobs["accelerator"].index)
        text = f"accelerator {acc}" + (f" ({spec.family})" if spec else "") + f" is not in {seen.name}'s training data"
        if spec is not None and spec.family in jobs["family"]:
            kin = [r for r in rows if accelerator_identity(r, "family") == spec.family]
            w, held = UNSEEN_ACCELERATOR_WIDENING, "accelerator"
            text += f" (its {spec.family} kin {', '.join(kin)} are)"
        elif spec is not None and spec.vendor not in jobs["vendor"]:
            w = UNSEEN_FAMILY_WIDENING + UNSEEN_STACK_WIDENING
            out.loc[i, "widening"], out.loc[i, "note"] = w, _vendor_note(acc, spec, w, seen)
            continue
        else:
            w, held = UNSEEN_FAMILY_WIDENING, "family"
            missing = f"any {spec.family}" if spec else ""
            text += (f", nor {missing} accelerator" if missing else "") + (
                f" ({'/'.join(jobs['vendor'].index)} only: {', '.join(rows[:6])}{', ...' if len(rows) > 6 else ''})")
        text += (f": its interval is widened x{np.exp(w):.2f} at each end, what holding one {held} at a time out of "
                 f"{MEASURED_ON} measures (scripts/hardware_widening.py)")
        out.loc[i, "widening"], out.loc[i, "note"] = w, text
    return out


def _vendor_note(acc: object, spec: accelerators.AcceleratorSpec, w: float, seen: Seen) -> str:
    """:func:`unseen_hardware`'s note for an accelerator of a vendor the training data ``seen`` has no row of."""
    vendors = "/".join(seen.jobs["vendor"].index) or "no"
    return (f"priced from {vendors} data: interval widened x{np.exp(w):.2f} for an unseen vendor stack (leaving one "
            f"stack out of the shared tables costs x{np.exp(UNSEEN_STACK_WIDENING):.2f}, {STACK_MEASURED} the worst; "
            f"a new family x{np.exp(UNSEEN_FAMILY_WIDENING):.2f}; scripts/hardware_widening.py): accelerator {acc} "
            f"({spec.family}) is not in {seen.name}'s training data, nor any {spec.vendor} accelerator; its error on "
            f"{spec.vendor} hardware was never measured: a few runs of yours (--calibrate) measure it")


def outside_training(frame: pd.DataFrame, params: np.ndarray, seen: Seen) -> list[list[str]]:
    """Per config (``params``: its parameter count), why it lies outside what the training data ``seen``
    covered: no accelerator given, one priced exactly as a better-known one the accelerator table
    gives the same figures (an accelerator never seen is :func:`unseen_hardware`'s), a device
    count, sequence length or model size beyond the largest seen (how many times, how many
    doublings, and how much wider that makes the interval: :func:`beyond_training`, :func:`widened`)."""
    rows = seen.jobs["accelerator"]
    known = set(rows.index)
    factors = beyond_training(frame, params, seen)
    values = _extent(frame, params)
    out = []
    for i in range(len(frame)):
        notes = []
        acc = frame["hardware.accelerator"].iloc[i] if "hardware.accelerator" in frame else None
        if acc is None or (isinstance(acc, float) and np.isnan(acc)):
            notes.append("no accelerator given: the predictor treats it as unknown")
        spec = llmconfig.known_accelerator(acc) if isinstance(acc, str) else None
        twins = sorted(s for s in known if spec is not None and s != spec.name and llmconfig.known_accelerator(s) is not None
                       and priced_alike(spec, llmconfig.known_accelerator(s)) and rows[s] > rows.get(spec.name, 0))  # the better-known twin
        if twins:
            notes.append(f"{spec.name} is priced exactly as {twins[0]}: the accelerator table gives both the same "
                         "peak FLOP/s, memory and link bandwidths, so only the memory check tells them apart")
        beyond = []
        for what in SCALE_AXES:
            factor = float(factors[what].iloc[i])
            if np.isfinite(factor) and factor > 1.0:
                value = values[what][i]
                beyond.append(f"{LABELS[what]} {value:,.0f} is {factor:.1f}x the largest in {seen.name} "
                              f"({value / factor:,.0f})")
        if beyond:
            d = float(factors["doublings"].iloc[i])
            notes.append("; ".join(beyond) + f": {d:.1f} doublings beyond the training data, so the interval is "
                         f"widened {np.exp(WIDENING_PER_DOUBLING * d):.2f}x at each end "
                         f"({WIDENING_PER_DOUBLING:.3f} log per doubling, scripts/extrapolation_widening.py)")
        out.append(notes)
    return out


__all__ = ["LABELS", "MEASURED_ON", "SCALE_AXES", "STACK_MEASURED", "Seen", "UNSEEN_ACCELERATOR_WIDENING",
           "UNSEEN_FAMILY_WIDENING", "UNSEEN_STACK_WIDENING",
           "WIDENING_PER_DOUBLING", "accelerator_identity", "beyond_training", "outside_training", "priced_alike",
           "unseen_hardware", "widened"]
