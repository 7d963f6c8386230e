"""Target transforms: what a predictor regresses on, and the way back to throughput.

Targets (:data:`TARGETS`)
-------------------------
``raw`` (throughput), ``log`` (natural log), ``per_device`` (throughput / devices),
``log_per_device``, ``log_ratio`` (log of measured over analytic throughput: a residual
model that inherits the analytic model's scaling) and ``log_roofline_ratio`` (the same over
the calibrated roofline of :mod:`perfzoo.analytic.calibration`, fitted on the training jobs). Devices are ``config.n_gpus``, else
``hardware.accelerator_count``, else ``config.world_size``.
"""

from __future__ import annotations

from typing import Iterable, Optional

import numpy as np
import pandas as pd

from perfzoo.console import InputError
from perfzoo import analytic
from perfzoo.zoo.analytic_features import estimates, n_devices

TARGETS = ("raw", "log", "per_device", "log_per_device", "log_ratio", "log_roofline_ratio")
# measured / analytic-ideal throughput of a typical job: the shared published sources' medians are
# 0.58-0.68 (python scripts/efficiency_table.py); only used to tell the target's
# unit where the training jobs all ran on one device count (the wrong unit is off by that count)
TYPICAL_EFFICIENCY = 0.6


def analytic_log_throughput(X, per_device: bool, est: Optional[dict] = None) -> np.ndarray:
    """log of the analytic throughput (global or per device); ``est``: :func:`estimates` of ``X`` if known."""
    v = (est if est is not None else estimates(X))["throughput_per_device" if per_device else "throughput"]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(v > 0, np.log(np.where(v > 0, v, 1.0)), np.nan)


def _safe_log(y: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(y, 1e-12))


class TargetTransform:
    """What a predictor regresses on, and the way back to throughput.

    Parameters
    ----------
    kind : one of :data:`TARGETS`
    per_device : bool or None
        ``log_ratio`` only: compare with the analytic throughput per device (True) or
        global (False). None decides in ``fit``: the unit whose log-ratio to the measured
        target varies least (the target's unit is rarely in doubt: global and per-device
        throughput differ by the device count). Where the training jobs all ran on one device
        count the spread cannot tell the units apart; then the unit whose median efficiency
        (measured / analytic ideal) is nearer :data:`TYPICAL_EFFICIENCY` wins: the wrong one is
        off by that device count.

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"config.n_gpus": [2, 4]})
    >>> t = TargetTransform("per_device").fit([10.0, 40.0], X)
    >>> t.transform([10.0, 40.0], X).tolist(), t.inverse([5.0, 10.0], X).tolist()
    ([5.0, 10.0], [10.0, 40.0])
    """

    def __init__(self, kind: str = "log", per_device: Optional[bool] = None):
        if kind not in TARGETS:
            raise InputError(f"unknown target {kind!r}; choose one of {TARGETS}")
        self.kind = kind
        self.per_device = per_device

    def _baseline(self, X: pd.DataFrame) -> np.ndarray:
        if self.kind == "log_roofline_ratio":
            est = estimates(X)
            tput = self.calibration_.throughput(X, est) / (n_devices(X) if self.per_device_ else 1.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                base = np.where(tput > 0, np.log(np.where(tput > 0, tput, 1.0)), np.nan)
        else:
            base = analytic_log_throughput(X, self.per_device_)
        return np.where(np.isfinite(base), base, self.fallback_)

    def fit(self, y: Iterable[float], X: pd.DataFrame) -> "TargetTransform":
        y = np.asarray(y, dtype=float)
        self.per_device_ = bool(self.per_device)
        # log_ratio: rows whose analytic estimate is unknown are regressed around the median log y
        self.fallback_ = float(np.median(_safe_log(y))) if len(y) else 0.0
        ratio = self.kind in ("log_ratio", "log_roofline_ratio")
        est = estimates(X) if ratio else None
        if ratio and self.per_device is None:
            ly = _safe_log(y)
            residuals = {}
            for pd_ in (False, True):
                r = ly - analytic_log_throughput(X, pd_, est)
                residuals[pd_] = r[np.isfinite(r)]
            devices = n_devices(X)
            if len(devices) and np.all(devices == devices[0]) and devices[0] != 1:  # one device count:
                # the spreads are equal, the levels are not (the wrong unit is off by that count)
                score = {k: abs(float(np.median(r)) - np.log(TYPICAL_EFFICIENCY)) if len(r) else np.inf
                         for k, r in residuals.items()}
            else:
                score = {k: float(np.std(r)) if len(r) > 1 else np.inf for k, r in residuals.items()}
            self.per_device_ = bool(score[True] < score[False])
        if self.kind == "log_roofline_ratio":
            global_y = y * n_devices(X) if self.per_device_ else y
            self.calibration_ = analytic.calibrate_throughput(X, global_y, est)
        return self

    def transform(self, y: Iterable[float], X: pd.DataFrame) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        k = self.kind
        if k == "raw":
            return y
        if k == "log":
            return _safe_log(y)
        if k == "per_device":
            return y / n_devices(X)
        if k == "log_per_device":
            return _safe_log(y / n_devices(X))
        return _safe_log(y) - self._baseline(X)

    def inverse(self, z: Iterable[float], X: pd.DataFrame) -> np.ndarray:
        z = np.asarray(z, dtype=float)
        k = self.kind
        if k == "raw":
            return z
        if k == "log":
            return np.exp(z)
        if k == "per_device":
            return z * n_devices(X)
        if k == "log_per_device":
            return np.exp(z) * n_devices(X)
        return np.exp(z + self._baseline(X))
