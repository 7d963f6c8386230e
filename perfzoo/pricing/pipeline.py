"""Configs priced one way for every command: shape -> layout checks -> predictor -> extrapolation
and interval -> anchoring.

:func:`price` is what ``predict`` prints and ``plan``'s baselines rest on: each config checked at the
front door (:func:`completed_configs`: :mod:`perfzoo.llmconfig` for LLM data, where a framework's
bundle refuses what it cannot run and the layout it leaves out is filled as ``plan`` fills it),
predicted, its interval widened beyond the data the predictor saw (:func:`interval`, the one
``plan`` widens its top layouts with), the analytic breakdown and memory verdict
(:class:`perfzoo.analytic.memory.MemoryRule`), and where the predictor was calibrated on the
user's runs, which runs moved it.

>>> from perfzoo.pricing import resolve                                           # doctest: +SKIP
>>> table = price([{"model": "llama3-8b", "n_gpus": 8, "seq_len": 8192,
...                 "accelerator": "H100-SXM-80GB"}], resolve("best", "published-llm"))  # doctest: +SKIP
>>> table[["predicted_tokens_per_s", "interval_low", "fits_in_memory"]]          # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo import analytic, llmconfig
from perfzoo.analytic.memory import MemoryRule
from perfzoo.console import RunFailed
from perfzoo.datasets.dataset import Dataset
from perfzoo.datasets.drift import check_release, software_note
from perfzoo.llmconfig import layout_defaults, shape_report
from perfzoo.pricing.predictors import Resolved
from perfzoo.zoo.analytic_features import HOST_PACE, HOST_PASS_S, host_paced, n_devices
from perfzoo.zoo.base import input_columns
from perfzoo.zoo.calibrate import Calibrated
from perfzoo.zoo.extrapolation import beyond_training, outside_training, unseen_hardware, widened
from perfzoo.zoo.features import base_key
from perfzoo.zoo.interval import Uncertain

BREAKDOWN = ("compute_time_s", "comm_time_s", "host_time_s", "bubble", "comm_dp_bytes", "comm_tp_bytes", "comm_pp_bytes",
             "comm_cp_bytes", "comm_ep_bytes", "peak_allocated_bytes", "overhead_bytes", "memory_bytes",
             "memory_fraction", "step_time_s", "throughput_per_device")


def as_frame(configs: Sequence[dict]) -> pd.DataFrame:
    """Configs as the flat frame predictors take: ``config.*`` and ``hardware.*`` columns
    (a key already prefixed keeps its prefix; the hardware keys get ``hardware.``).

    >>> as_frame([{"tp": 2, "accelerator": "H100"}]).columns.tolist()
    ['config.tp', 'hardware.accelerator']
    """
    rows = []
    for cfg in configs:
        rows.append({key if key.startswith(("config.", "hardware.")) else
                     (f"hardware.{key}" if key in llmconfig.HARDWARE_KEYS else f"config.{key}"): value
                     for key, value in cfg.items()})
    return pd.DataFrame(rows)


def is_llm(training: Dataset) -> bool:
    """Whether ``training`` holds LLM jobs only (its configs then pass :func:`perfzoo.llmconfig.check`)."""
    found = set(training.frame["workload"].dropna()) if "workload" in training.frame else set()
    return found == {"llm"}


def check_stated(cfg: dict) -> None:
    """A :class:`~perfzoo.console.InputError` where a checked LLM config states what it cannot be:
    ``n_params`` another shape counts (:func:`perfzoo.llmconfig.shape_report.check_stated_size`) or
    a ``release`` that is no release (:func:`perfzoo.datasets.drift.check_release`); ``predict``
    and ``plan`` refuse such a config alike.

    >>> check_stated({"release": "abc"})
    Traceback (most recent call last):
    ...
    perfzoo.console.InputError: release=abc: not a release; give its date as YYYY-MM (2026-06) or a container's YY.MM (25.04)
    """
    shape_report.check_stated_size(cfg)
    check_release(cfg.get("release"))


def completed_configs(configs: Sequence[dict], training: Dataset,
                      rule: MemoryRule = MemoryRule()) -> list[layout_defaults.Completed]:
    """The configs to price, checked: for LLM data each through the front door
    (:func:`perfzoo.llmconfig.check`: presets, types, ranges, degrees, accelerator, the framework's
    rules) and its layout completed as ``plan`` completes one
    (:func:`perfzoo.llmconfig.layout_defaults.complete`; checkpointing left out: the least recompute
    under which ``rule`` says it fits); for other workloads each key must be one ``training`` has.
    The error names the config when there are several."""
    if not is_llm(training):
        known = {c.split(".", 1)[1] for c in training.frame.columns if c.startswith(("config.", "hardware."))}
        known |= set(llmconfig.HARDWARE_KEYS)
        for i, cfg in enumerate(configs, 1):
            for key in cfg:
                base = key.split(".", 1)[1] if key.startswith(("config.", "hardware.")) else key
                if base not in known:
                    exc = llmconfig.unknown_key_error(base, known, listed=f"the keys {training.name} has")
                    raise llmconfig.ConfigError(f"config {i}: {exc}" if len(configs) > 1 else str(exc))
        return [layout_defaults.Completed(dict(cfg)) for cfg in configs]
    out = []
    for i, cfg in enumerate(configs, 1):
        try:
            checked = llmconfig.check(cfg)
            check_stated(checked)
            out.append(layout_defaults.complete(checked, rule))
        except (llmconfig.ConfigError, ValueError) as exc:
            raise llmconfig.ConfigError(f"config {i}: {exc}" if len(configs) > 1 else str(exc)) from None
    return out


def screen(located: Sequence[tuple[str, dict]], training: Dataset) -> tuple[list[int], list[tuple[str, str]]]:
    """Which of ``located`` (``[(where, config)]``) :func:`completed_configs` accepts: their
    positions, and ``(where, reason)`` for each it refuses."""
    kept, refused = [], []
    for i, (where, cfg) in enumerate(located):
        try:
            completed_configs([cfg], training)
        except llmconfig.ConfigError as exc:
            refused.append((where, str(exc)))
        else:
            kept.append(i)
    return kept, refused


def launch_bound(est: pd.DataFrame) -> list[list[str]]:
    """Per config, a warning where :func:`perfzoo.zoo.analytic_features.host_paced` flags it."""
    seconds, flagged = host_paced(est)
    return [[f"its ideal GPU time per layer pass (forward and backward, one micro-batch) is {1e3 * t:.1f} ms, under "
             f"the ~{1e3 * HOST_PASS_S:.0f} ms of host time such a pass takes: it {HOST_PACE}"] if f else []
            for t, f in zip(seconds, flagged)]


def interval(resolved: Resolved, X: pd.DataFrame, frame: pd.DataFrame, params: np.ndarray,
             scale: Any = 1.0) -> Optional[dict[str, np.ndarray]]:
    """The predictor's 80% interval for the configs of ``frame`` (``X``: its columns as the predictor
    reads them; ``params``: each config's parameter count; ``scale``: the factor from the predictor's
    unit to the caller's), widened for how far each lies beyond the data the predictor saw and for an
    accelerator it never saw (:mod:`perfzoo.zoo.extrapolation`); None where the predictor has none.
    Also ``doublings``, ``hardware_widening`` and ``unseen_hardware`` (the note), per config."""
    seen = resolved.seen
    doublings = beyond_training(frame, params, seen)["doublings"].to_numpy()
    unseen = unseen_hardware(frame, seen)
    out = {"doublings": doublings, "hardware_widening": unseen["widening"].to_numpy(),
           "unseen_hardware": unseen["note"].to_numpy()}
    if not isinstance(resolved.predictor, Uncertain):
        return out
    low, high = resolved.predictor.predict_interval(X)
    out["low"], out["high"] = widened(np.asarray(low) * scale, np.asarray(high) * scale, doublings,
                                      out["hardware_widening"])
    return out


def price(configs: Sequence[dict], resolved: Resolved, memory_margin: Optional[float] = None) -> pd.DataFrame:
    """One row per config: predictions, their 80% interval (:func:`interval`; and plus or minus two
    standard deviations where the predictor has them), the analytic breakdown, whether it fits
    (:class:`perfzoo.analytic.memory.MemoryRule`: ``memory_margin``'s, else the rule derived from
    measured peaks), unknown inputs and warnings; for LLM data also the model shape priced and where
    it came from (``model``), the layout knobs filled (``filled``) or read as another name
    (``read_as``) and the framework priced (``framework``); where the predictor was calibrated on the
    user's runs, which moved each prediction (``calibration``).

    ``resolved``: the predictor and its training data (whose target says whether predictions are per
    device or for the job; LLM data puts every config through :func:`completed_configs`). A prediction
    that is NaN or infinite is a :class:`~perfzoo.console.RunFailed` naming the predictor and the config.
    """
    training, predictor = resolved.training, resolved.predictor
    raw = list(configs)
    rule = MemoryRule(memory_margin)
    done = completed_configs(raw, training, rule)
    configs = [d.config for d in done]
    releases = [cfg.pop("release", None) for cfg in configs]  # the software (checked), not a knob the predictor reads
    frame = as_frame(configs)
    cols = input_columns(predictor) or list(training.feature_columns)
    unknown = [c for c in cols if c not in frame.columns]
    X = frame.reindex(columns=cols)
    pred = np.asarray(predictor.predict(X), dtype=float)
    bad = np.flatnonzero(~np.isfinite(pred))
    if len(bad):
        raise RunFailed(f"predictor {resolved.name} returned {pred[bad[0]]} for config {bad[0] + 1}"
                        + (f" and {len(bad) - 1} more" if len(bad) > 1 else "")
                        + ": it cannot price it; choose another with --predictor")
    n = n_devices(frame)
    per_device = resolved.per_device
    glob, per_dev = (pred * n, pred) if per_device else (pred, pred / n)
    est = analytic.estimate(frame)
    params = est["n_params"].to_numpy(dtype=float)
    batch = frame.get("config.global_batch_size", pd.Series(np.nan, index=frame.index))
    # a step time for the global batch the user gave, not for the one the estimate assumes
    tokens = np.where(pd.to_numeric(batch, errors="coerce").notna(), est["tokens_per_step"].to_numpy(dtype=float), np.nan)
    out = pd.DataFrame({"predicted_tokens_per_s": glob, "predicted_tokens_per_s_per_device": per_dev,
                        "predicted_step_time_s": tokens / glob})
    scale = n if per_device else np.ones(len(frame))
    spread = interval(resolved, X, frame, params, scale)
    out["doublings_beyond_training"] = spread["doublings"]
    out["hardware_widening"], out["unseen_hardware"] = spread["hardware_widening"], spread["unseen_hardware"]
    if getattr(predictor, "has_std", False):
        std = np.asarray(predictor.predict_std(X), dtype=float)
        out["range_low"], out["range_high"] = widened((pred - 2 * std) * scale, (pred + 2 * std) * scale,
                                                      spread["doublings"], spread["hardware_widening"])
    if "low" in spread:
        out["interval_low"], out["interval_high"] = spread["low"], spread["high"]
    for c in BREAKDOWN:
        out[f"analytic.{c}"] = est[c].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        device = est["memory_bytes"].to_numpy(dtype=float) / est["memory_fraction"].to_numpy(dtype=float)
    out["device_memory_bytes"] = device
    out["memory_margin"] = memory_margin
    verdict = rule.fits(est["peak_allocated_bytes"], est["memory_bytes"], device)
    out["fits_in_memory"] = [None if not np.isfinite(f) else bool(ok) for f, ok in zip(est["memory_fraction"], verdict)]
    if is_llm(training):
        out["model"] = [shape_report.describe(c, shape_report.given_sources(r)) for c, r in zip(configs, raw)]
        out["filled"] = [d.describe() for d in done]
        out["read_as"] = ["; ".join(d.read_as) for d in done]
        out["framework"] = [layout_defaults.framework_note(c) for c in configs]
    _notes(out, frame, done, cols, unknown, est, resolved, configs, releases)
    if isinstance(predictor, Calibrated):  # which of the user's runs moved each prediction
        out["calibration"] = predictor.explain(X)
        out.attrs["calibration"] = predictor.describe(X)
    out.attrs.update(predictor=resolved.name, dataset=training.name, memory_margin=memory_margin,
                     fallback=resolved.note if resolved.fallback else "")
    return out


def _notes(out: pd.DataFrame, frame: pd.DataFrame, done: Sequence[layout_defaults.Completed], cols: Sequence[str],
           unknown: Sequence[str], est: pd.DataFrame, resolved: Resolved, configs: Sequence[dict],
           releases: Sequence[Any]) -> None:
    """:func:`price`'s ``unknown_inputs``, ``warnings`` and ``software`` columns."""
    training = resolved.training
    # what each config leaves out, less the keys of kinds of model it is not (a dense model's expert keys)
    # (a filled ep=1 makes no dense model one of experts)
    stated = [{k: v for k, v in d.config.items() if k not in d.filled} for d in done]
    out["unknown_inputs"] = [", ".join(c for c in unknown if llmconfig.applies(base_key(c), cfg)) for cfg in stated]
    # knobs the predictor never saw in training: the analytic breakdown prices them, the prediction cannot
    # (a model's name is not one: the catalog spells it out as the shape keys; nor a value filled for it)
    not_read = [c for c in frame.columns if c.startswith("config.") and c not in cols and c != "config.model_name"]
    warned = outside_training(frame, est["n_params"].to_numpy(dtype=float), resolved.seen)
    for w, host, cfg, row in zip(warned, launch_bound(est), stated, frame[not_read].notna().to_numpy()):
        w.extend(host)
        given = [base_key(c) for c, on in zip(not_read, row) if on and (base_key(c) in cfg or c in cfg)]
        if given:
            w.append(f"the predictor does not read {', '.join(given)} (never stated in its training data): "
                     "only the analytic breakdown uses it")
    out["warnings"] = ["; ".join(w) for w in warned]
    out["software"] = [software_note(training.frame, training.target, cfg.get("framework"), release, training.name)
                       for cfg, release in zip(configs, releases)]


__all__ = ["BREAKDOWN", "as_frame", "check_stated", "completed_configs", "interval", "is_llm", "launch_bound", "price", "screen"]
