"""Step timing: per-step wall times on each rank, reduced to the statistics a record keeps.

Every rank times each measured step with a synchronisation at both ends (a CUDA event pair
on GPU, ``time.perf_counter`` after the step's collectives on CPU). The job's step time for
step *i* is the **max over ranks** of rank times for step *i* (the slowest rank sets the
pace); throughput per step is ``items_per_step / step_time``. The headline throughput is the
p90 of per-step throughput (as in the CubicML paper), and the job is flagged ``noisy`` when
the interquartile range of step times exceeds 10% of their median.

>>> s = summarize_steps([[0.10, 0.11, 0.10, 0.12], [0.11, 0.10, 0.13, 0.10]], items_per_step=64)
>>> s["step_time_n"], round(s["step_time_p50_s"], 3)
(4, 0.115)
"""

from __future__ import annotations

import time
from typing import Optional, Sequence

import numpy as np

NOISE_THRESHOLD = 0.1  # IQR / median of step time above this -> noisy


def max_over_ranks(per_rank: Sequence[Sequence[float]]) -> list[float]:
    """Element-wise max of the ranks' step-time lists (truncated to the shortest)."""
    if not per_rank:
        return []
    n = min(len(r) for r in per_rank)
    return [max(float(r[i]) for r in per_rank) for i in range(n)]


def summarize_steps(per_rank: Sequence[Sequence[float]], items_per_step: float,
                    n_devices: int = 1, threshold: float = NOISE_THRESHOLD) -> dict:
    """Reduce per-rank step times to the metrics fields of a job record.

    ``items_per_step`` counts the items (examples or tokens) of one step over **all** ranks.
    Returns a dict whose keys are :class:`perfzoo.records.Metrics` field names.
    """
    steps = max_over_ranks(per_rank)
    if not steps:
        return {"step_time_n": 0}
    t = np.asarray(steps, dtype=float)
    tput = items_per_step / t
    p25, p50, p75, p90, p99 = np.percentile(t, [25, 50, 75, 90, 99])
    noise = float((p75 - p25) / p50) if p50 > 0 else None
    p50_tput, p90_tput = (float(v) for v in np.percentile(tput, [50, 90]))
    return {
        "throughput": p90_tput,
        "throughput_per_device": p90_tput / max(n_devices, 1),
        "throughput_stat": "p90",
        "throughput_mean": float(tput.mean()),
        "throughput_p50": p50_tput,
        "throughput_p90": p90_tput,
        "step_time_n": int(t.size),
        "step_time_mean_s": float(t.mean()),
        "step_time_p50_s": float(p50),
        "step_time_p90_s": float(p90),
        "step_time_p99_s": float(p99),
        "noise_iqr_over_median": noise,
        "noisy": bool(noise is not None and noise > threshold),
    }


def summarize_throughputs(throughputs: Sequence[float], n_devices: int = 1) -> dict:
    """The throughput fields of a job record from per-step throughputs alone.

    For a job that reports its throughput but not its step times (a user's command whose
    log prints tokens/s): the same p90 headline and percentiles as :func:`summarize_steps`.

    >>> s = summarize_throughputs([100.0, 110.0, 90.0, 105.0], n_devices=2)
    >>> s["step_time_n"], s["throughput"] > s["throughput_p50"], s["throughput_per_device"] == s["throughput"] / 2
    (4, True, True)
    """
    if not len(throughputs):
        return {"step_time_n": 0}
    tput = np.asarray(throughputs, dtype=float)
    p25, p50, p75, p90 = (float(v) for v in np.percentile(tput, [25, 50, 75, 90]))
    noise = (p75 - p25) / p50 if p50 > 0 else None
    return {"throughput": p90, "throughput_per_device": p90 / max(n_devices, 1), "throughput_stat": "p90",
            "throughput_mean": float(tput.mean()), "throughput_p50": p50, "throughput_p90": p90,
            "step_time_n": int(tput.size), "noise_iqr_over_median": noise,
            "noisy": bool(noise is not None and noise > NOISE_THRESHOLD)}


class StepTimer:
    """Times steps with a synchronisation at both ends.

    On CUDA it records a pair of events around each step and reads them after a final
    synchronize (no host stall inside the loop beyond the step's own); on CPU it uses
    ``time.perf_counter`` (CPU collectives are synchronous, so the step is done when
    the call returns).
    """

    def __init__(self, device: str = "cpu"):
        self.device = device
        self._cpu_times: list[float] = []
        self._events: list = []
        self._t0: Optional[float] = None
        self._start_event = None

    def start(self) -> None:
        if self.device == "cuda":
            import torch

            self._start_event = torch.cuda.Event(enable_timing=True)
            self._start_event.record()
        else:
            self._t0 = time.perf_counter()

    def stop(self) -> None:
        if self.device == "cuda":
            import torch

            end = torch.cuda.Event(enable_timing=True)
            end.record()
            self._events.append((self._start_event, end))
        else:
            self._cpu_times.append(time.perf_counter() - self._t0)

    def times(self) -> list[float]:
        """Step times in seconds (synchronises the GPU once)."""
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()
            return [a.elapsed_time(b) / 1000.0 for a, b in self._events]
        return list(self._cpu_times)
