"""A calibrated roofline: the analytic step time with a few efficiency factors fitted to
measurements, one per term, so that what the formula cannot know (the fraction of peak a
kernel reaches at each precision, how well collectives use their links) comes from data.

The step time is split into terms that add up to :func:`perfzoo.analytic.estimate`'s
``step_time_s``: compute at each precision class (``fp32``, ``bf16``, ``fp8``, ``fp4``: the FLOPs and
the softmax, scaled by the pipeline bubble, the GEMMs and attention at the rate their shapes reach,
:mod:`.kernels`, so a compute factor stands for a large GEMM's rate and a layout's narrower GEMMs
run slower than a wider one's), the memory-bound kernels
(``memory``: what the GEMMs, elementwise kernels and loss move through HBM, scaled by the bubble,
and the optimizer step), the critical-path communication (TP and EP, also scaled by the
bubble), the pipeline's point-to-point traffic, the data- and context-parallel traffic
that the kernels do not hide, and the host's wait where it paces the step (``host``); and three
counts whose factors are fixed costs the roofline has no figure for: seconds per call (launching
one layer's kernels, one blocking collective's latency) and seconds per GB the pipeline hands
from stage to stage whatever the link (``per_pipeline_gb``). The calibrated step is
``sum_k c_k * term_k``; the non-negative factors ``c_k`` minimise the squared *relative* error
of the step time (``scipy.optimize.lsq_linear``), so every job weighs the same whatever its
size. A communication factor is at most :data:`MAX_LINK_FACTOR`: a link moves the megabytes of a
training collective at a quarter of its datasheet bandwidth or better, so a cost beyond that is
not the link's and must not grow with a slower one. Fitted on one node, where the pipeline's
sends cross NVLink, an unbounded factor once priced them at 357x NVLink's time (vTrain's
Megatron-DeepSpeed jobs: 0.8 GB/s), and so at 357x the network's time on a job across nodes; the
cost now goes to ``per_pipeline_gb``, which is the same over either link (where the jobs cannot
tell a link's time from a cost per GB, a weak prior keeps the link at its datasheet figure,
factor 1, and the rest is per GB). A term no training job exercises keeps a neutral factor: the
median compute factor for an unseen precision (its speed-up over the others is then the peak
table's) and for unseen memory-bound kernels, 1 for unseen communication, 0 for unseen fixed
costs; a calibration saved before a term existed prices it the same way.

>>> import pandas as pd
>>> jobs = pd.DataFrame({"n_layers": [24, 24, 48], "hidden_dim": [1024, 2048, 2048], "n_heads": 16,
...                      "seq_len": 1024, "global_batch_size": 8, "micro_batch_size": 1, "n_gpus": 1,
...                      "accelerator": "A100-80GB"})
>>> ideal = estimate_arrays(jobs)["step_time_s"]
>>> cal = calibrate(jobs, measured_step_s=2.5 * ideal)  # jobs that ran at 40% of the roofline
>>> [round(float(r), 3) for r in cal.step_time(jobs) / (2.5 * ideal)]  # calibrated / measured
[1.0, 1.0, 1.0]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfzoo.analytic._frame import coded, compact
from perfzoo.analytic.estimates import estimate_arrays
from perfzoo.records.vocabulary import PRECISIONS, normalize_precision

COMPUTE_TERMS = tuple(f"compute_{p}" for p in PRECISIONS)
TERMS = (*COMPUTE_TERMS, "memory", "critical_comm", "pipeline_comm", "exposed_dp_comm", "host", "per_layer_pass",
         "per_collective", "per_pipeline_gb")
LINK_TERMS = ("critical_comm", "pipeline_comm", "exposed_dp_comm")
MAX_LINK_FACTOR = 4.0  # a link's time at most 4x its datasheet figure: the rest is not the link (module docstring)
LINK_PRIOR_WEIGHT = 1e-9  # pull of a link factor toward 1: so weak that it decides only a tie


def estimate_step_terms(df: pd.DataFrame, est: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """The step time's terms, one column per :data:`TERMS`: seconds (these add up to
    ``step_time_s``), then the counts (layer passes, blocking collectives, GB through the pipeline)."""
    precision, compute, rest = _terms(df, est)
    n = len(df)
    terms = np.zeros((n, len(TERMS)))
    for j in range(len(PRECISIONS)):
        terms[:, j] = np.where(precision == j, compute, 0.0)
    terms[:, len(PRECISIONS):] = np.column_stack([np.broadcast_to(v, (n,)) for v in rest])
    return terms


def _terms(df: pd.DataFrame, est: dict[str, np.ndarray] | None) -> tuple[np.ndarray, np.ndarray, list]:
    """``(precision codes, compute seconds, the other terms)``: the compute term goes to the column
    of its precision, the others in :data:`TERMS` order."""
    est = {k: compact(v) for k, v in (est if est is not None else estimate_arrays(df)).items()}
    stretch = 1.0 / (1.0 - est["bubble"])
    known = {k: np.nan_to_num(est[k]) for k in ("softmax_time_s", "memory_time_s", "optimizer_time_s",
                                                 "host_time_s")}  # 0: no such term
    compute = (est["compute_time_s"] + known["softmax_time_s"]) * stretch
    memory = known["memory_time_s"] * stretch + known["optimizer_time_s"]
    critical = (est["tp_time_s"] + est["ep_time_s"]) * stretch
    pipeline = est["pp_time_s"]
    host = known["host_time_s"]
    exposed = np.maximum(est["step_time_s"] - compute - memory - critical - pipeline - host, 0.0)
    precision = coded(df, "precision", normalize_precision, PRECISIONS)
    return precision, compute, [memory, critical, pipeline, exposed, host, est["layer_passes"] * stretch,
                                est["collective_calls"] * stretch, np.nan_to_num(est["comm_pp_bytes"]) / 1e9]


@dataclass
class Calibration:
    """Fitted efficiency factors, one per :data:`TERMS` (1.0 = the roofline's own figure)."""

    factors: dict[str, float]
    n_fitted: int

    def step_time(self, df: pd.DataFrame, est: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """Calibrated seconds per step (NaN where the analytic estimate is unknown)."""
        compute = float(np.median([self.factors[t] for t in COMPUTE_TERMS]))
        c = np.array([self.factors.get(t, _neutral(t, compute)) for t in TERMS])
        precision, seconds, rest = _terms(df, est)  # the terms' weighted sum, without their matrix
        out = seconds * np.take(c[:len(PRECISIONS)], precision)
        for factor, term in zip(c[len(PRECISIONS):], rest):
            out = out + factor * term
        return np.broadcast_to(out, (len(df),))

    def throughput(self, df: pd.DataFrame, est: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """Calibrated global throughput: the work of one step (tokens, or queries) over its time."""
        est = est if est is not None else estimate_arrays(df)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return _work_per_step(est) / self.step_time(df, est)


def _neutral(term: str, compute: float) -> float:
    """The factor of a term no job exercised: ``compute`` (the median compute factor) for
    compute and memory-bound kernels, 0 for per-call costs, 1 for communication."""
    if term in COMPUTE_TERMS or term == "memory":
        return compute
    return 0.0 if term.startswith("per_") else 1.0


def _work_per_step(est: dict[str, np.ndarray]) -> np.ndarray:
    return est["throughput"] * est["step_time_s"]


def calibrate(df: pd.DataFrame, measured_step_s: np.ndarray, est: dict[str, np.ndarray] | None = None) -> Calibration:
    """Fit the factors on jobs with a measured step time (rows with unknown terms are skipped)."""
    terms = estimate_step_terms(df, est)
    t = np.asarray(measured_step_s, dtype=float)
    ok = np.isfinite(terms).all(axis=1) & np.isfinite(t) & (t > 0) & (terms.sum(axis=1) > 0)
    A, used = terms[ok] / t[ok, None], (terms[ok] > 0).any(axis=0)
    factors = np.array([0.0 if name.startswith("per_") else 1.0 for name in TERMS])
    if ok.sum() >= 2 and used.any():
        link = np.array([name in LINK_TERMS for name in TERMS])[used]
        upper = np.where(link, MAX_LINK_FACTOR, np.inf)
        # the prior: a link at its datasheet figure (factor 1) where the jobs cannot tell its time
        # from a cost per GB (every job on one link)
        weight = np.sqrt(LINK_PRIOR_WEIGHT)
        prior = weight * np.eye(int(used.sum()))[link]
        target = np.concatenate([np.ones(int(ok.sum())), np.full(len(prior), weight)])
        from scipy.optimize import lsq_linear  # only where factors are fitted: pricing with them needs no scipy

        factors[used] = lsq_linear(np.vstack([A[:, used], prior]), target, bounds=(0.0, upper), method="bvls").x
    compute = [j for j, name in enumerate(TERMS) if name in COMPUTE_TERMS and used[j] and factors[j] > 0]
    neutral = float(np.median(factors[compute])) if compute else 1.0
    for j, name in enumerate(TERMS):
        if (name in COMPUTE_TERMS and (not used[j] or factors[j] == 0)) or (name == "memory" and not used[j]):
            factors[j] = _neutral(name, neutral)
    return Calibration(dict(zip(TERMS, map(float, factors))), int(ok.sum()))


def calibrate_throughput(df: pd.DataFrame, global_throughput: np.ndarray,
                         est: dict[str, np.ndarray] | None = None) -> Calibration:
    """:func:`calibrate` from measured global throughput (tokens/s, or queries/s) instead of step
    times; ``est``: ``estimate_arrays(df)`` if already computed."""
    est = est if est is not None else estimate_arrays(df)
    with np.errstate(divide="ignore", invalid="ignore"):
        measured_step = _work_per_step(est) / np.asarray(global_throughput, dtype=float)
    return calibrate(df, measured_step, est)
