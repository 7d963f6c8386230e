"""``python -m perfzoo.predict``: how fast would these configurations run, and why?

Configurations from flags (``--set key=value``, one config), a CSV or a JSONL file (one per
row / line; ``{"config": {...}}`` lines from the searcher too). For each: the predicted
throughput (tokens/s global and per device, step time where the batch is known), a range
where the predictor has an uncertainty (plus or minus two standard deviations), the analytic
breakdown (compute and communication time, traffic by kind, pipeline bubble, memory per device
and whether it fits) and warnings when the config lies outside what the predictor was fitted
on (an accelerator it never saw; a device count, sequence length or model size beyond the largest
in its training data, by how many times and doublings: the interval then widens by
:data:`WIDENING_PER_DOUBLING` per doubling at each end, the growth of the residuals' spread per
doubling on the published tables' scale split, ``scripts/extrapolation_widening.py``). An
accelerator without a measured row widens it by what holding accelerators out of the published
tables measures, and the output's first line says so
(:func:`perfzoo.zoo.extrapolation.unseen_hardware`, ``scripts/hardware_widening.py``).

LLM configs pass the front door (:mod:`perfzoo.llmconfig`, the keys and units in ``--help``):
``model=NAME`` fills the shape from the catalog, an unknown key, a value of the wrong type or
range, parallel degrees that do not multiply to the device count, a precision the accelerator
lacks or an unknown accelerator is a one-line error (exit 2), and so is a config that gives no
shape, sequence length, device count or accelerator: no prediction from fallback values. A
layout knob the config leaves out is filled as ``plan`` fills it (:mod:`perfzoo.llmconfig.layout_defaults`:
``tp=1``, micro batch 1, ``zero1`` over data-parallel ranks, ...), so ``predict`` and ``plan`` give
one answer per layout; the output prints what was filled, the model shape priced and where each
value came from (:mod:`perfzoo.llmconfig.shape_report`), the framework priced, and the memory: the peak
allocated (what ``torch.cuda.max_memory_allocated`` reports) and what the device needs with the
allocator's overheads, against its capacity by plan's rule (:class:`perfzoo.analytic.memory.MemoryRule`: the peak at the memory
model's error at 5% risk; ``--memory-margin`` a flat fraction instead).
Any other key left out (``compile``, ``framework``, ...) is unknown: the predictor treats it as
missing, and the output says which (not the keys of other kinds of model: a dense model leaves out
no expert keys, :func:`perfzoo.llmconfig.applies`).

``--configs FILE`` answers every row it can price and lists, on stderr, the rows it refuses with
their place in the file and the reason (exit status 1 when any was refused).

Examples
--------
Llama 3 70B on 1,024 H100s, with the leaderboard's best predictor for the published tables::

    python -m perfzoo.predict --dataset published-llm --set model=llama3-70b seq_len=8192 \\
        global_batch_size=1024 micro_batch_size=1 n_gpus=1024 tp=8 pp=4 precision=bf16 \\
        accelerator=H100-SXM-80GB

With a few jobs measured on your own cluster (a published-table CSV, or a record store that
``perfzoo collect`` wrote), ``--calibrate my_runs.csv`` refits the predictor with them joined to
the training data (:func:`perfzoo.zoo.calibrate.join`); the output says how many were used.

Python API
----------
:func:`run` takes a :class:`PredictConfig` (one field per flag, the same defaults) and returns the
predictions as a DataFrame, one row per config priced (``attrs["refused"]``: ``(where, reason)`` of each
config of a file it refused); :func:`predict_frame` takes configs as dicts and a
loaded dataset (and, optionally, a fitted predictor)::

    from perfzoo.predict import PredictConfig, run
    table = run(PredictConfig(knobs=["model=llama3-8b", "seq_len=8192", "n_gpus=8", "accelerator=H100-SXM-80GB"],
                              predictor="ridge"))
    table[["predicted_tokens_per_s", "analytic.memory_bytes", "warnings"]]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo import analytic, llmconfig, zoo
from perfzoo.analytic.memory import MemoryRule
from perfzoo.console import (RunFailed, UsageError, assignments, check_options, config_from_args, field_defaults,
                             guarded, read_located)
from perfzoo.datasets import load_dataset
from perfzoo.datasets.dataset import Dataset
from perfzoo.datasets.drift import check_release, software_note
from perfzoo.llmconfig import layout_defaults, shape_report
from perfzoo.zoo import calibrate
from perfzoo.zoo.analytic_features import HOST_PACE, HOST_PASS_S, host_paced, n_devices
from perfzoo.zoo.base import NotFittedError, Predictor, input_columns
from perfzoo.zoo.extrapolation import beyond_training, outside_training, unseen_hardware, widened
from perfzoo.zoo.features import base_key

HARDWARE_KEYS = llmconfig.HARDWARE_KEYS
BREAKDOWN = ("compute_time_s", "comm_time_s", "host_time_s", "bubble", "comm_dp_bytes", "comm_tp_bytes", "comm_pp_bytes",
             "comm_cp_bytes", "comm_ep_bytes", "peak_allocated_bytes", "overhead_bytes", "memory_bytes",
             "memory_fraction", "step_time_s", "throughput_per_device")
GIB = float(2**30)


@dataclass(frozen=True)
class PredictConfig:
    """One prediction request, as :func:`run` takes it; ``python -m perfzoo.predict`` translates its
    flags onto it field for field (``--set`` is ``knobs``).

    >>> PredictConfig(knobs=["n_layers"])
    Traceback (most recent call last):
    ...
    perfzoo.console.UsageError: --set 'n_layers': expected KEY=VALUE
    """

    knobs: Optional[list[str]] = None  # one config, KEY=VALUE items (hardware keys too: accelerator=...) ...
    configs: Optional[str] = None  # ... or the configs in this CSV or JSONL file
    dataset: str = "published-llm"  # the predictor's training data
    predictor: str = "best"  # 'best' (the leaderboard's for dataset), a zoo member fitted on dataset, or a saved folder
    calibrate: Optional[str] = None  # your measured jobs (a published-table CSV, a record store) join the training data
    external_dir: Optional[str] = None  # the external-data directory (default: $PERFZOO_EXTERNAL_DATA, ...)
    memory_margin: Optional[float] = None  # fraction of device memory kept free (default: the rule from measured peaks)

    def __post_init__(self):
        if (self.knobs is None) == (self.configs is None):
            raise UsageError("give exactly one of --set and --configs")
        assignments(self.knobs or (), "--set")
        if self.predictor != "best" and self.predictor not in zoo.names() and not Path(self.predictor).is_dir():
            raise UsageError(f"--predictor {self.predictor!r} is not 'best', a zoo member or a saved folder")
        try:
            MemoryRule(self.memory_margin)  # its check, said once
        except ValueError as exc:
            raise UsageError(str(exc)) from None

    def located_configs(self) -> list[tuple[str, dict]]:
        """``[(where, config)]``: ``--set`` for ``knobs``, else the file and line of each config in ``configs``."""
        if self.knobs is not None:
            return [("--set", assignments(self.knobs, "--set"))]
        return read_located(self.configs)


def as_frame(configs: Sequence[dict]) -> pd.DataFrame:
    """Configs as the flat frame predictors take: ``config.*`` and ``hardware.*`` columns
    (a key already prefixed keeps its prefix; the hardware keys get ``hardware.``)."""
    rows = []
    for cfg in configs:
        row = {}
        for key, value in cfg.items():
            if key.startswith(("config.", "hardware.")):
                row[key] = value
            else:
                row[f"hardware.{key}" if key in HARDWARE_KEYS else f"config.{key}"] = value
        rows.append(row)
    return pd.DataFrame(rows)


def is_llm(training: Dataset) -> bool:
    """Whether ``training`` holds LLM jobs only (its configs then pass :func:`perfzoo.llmconfig.check`)."""
    found = set(training.frame["workload"].dropna()) if "workload" in training.frame else set()
    return found == {"llm"}


def checked_configs(configs: Sequence[dict], training: Dataset) -> list[dict]:
    """The configs to predict, checked: for LLM data each through the front door
    (:func:`perfzoo.llmconfig.check`: presets, types, ranges, degrees, accelerator, what is
    missing) and its layout completed as ``plan`` completes one (:func:`perfzoo.llmconfig.layout_defaults.complete`),
    for other workloads each key must be one ``training`` has. The error names the config when
    there are several."""
    return [done.config for done in completed_configs(configs, training)]


def completed_configs(configs: Sequence[dict], training: Dataset,
                      rule: MemoryRule = MemoryRule()) -> list[layout_defaults.Completed]:
    """:func:`checked_configs` with what each completion filled and read (LLM data; nothing for others;
    checkpointing left out: the least recompute under which ``rule`` says it fits)."""
    if not is_llm(training):
        known = {c.split(".", 1)[1] for c in training.frame.columns if c.startswith(("config.", "hardware."))}
        known |= set(HARDWARE_KEYS)
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
            shape_report.check_stated_size(checked)
            out.append(layout_defaults.complete(checked, rule))
        except (llmconfig.ConfigError, ValueError) as exc:
            raise llmconfig.ConfigError(f"config {i}: {exc}" if len(configs) > 1 else str(exc)) from None
    return out


def screen(located: Sequence[tuple[str, dict]], training: Dataset) -> tuple[list[int], list[tuple[str, str]]]:
    """Which of ``located`` (``[(where, config)]``) :func:`checked_configs` accepts: their
    positions, and ``(where, reason)`` for each it refuses."""
    kept, refused = [], []
    for i, (where, cfg) in enumerate(located):
        try:
            checked_configs([cfg], training)
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


def predict_frame(configs: Sequence[dict], training: Dataset, predictor: Optional[Predictor] = None,
                  memory_margin: Optional[float] = None) -> pd.DataFrame:
    """One row per config: predictions, their range, the analytic breakdown, whether it fits
    (:class:`perfzoo.analytic.memory.MemoryRule`: ``memory_margin``'s, else the rule derived from measured peaks),
    unknown inputs and warnings (``unseen_hardware``: the note on an accelerator without a measured row,
    ``hardware_widening`` the log its interval widens by); for LLM data also the model shape priced and where it came from
    (``model``), the layout knobs filled (``filled``) or read as another name (``read_as``) and the
    framework priced (``framework``).

    ``training`` is the data the predictor was fitted on (its target says whether predictions
    are per device or global; its range drives the warnings; LLM data puts every config through
    :func:`checked_configs`); ``predictor`` a fitted predictor (default: the leaderboard's best
    for ``training``, else ``ridge`` fitted on it). A prediction that is NaN or infinite is a
    :class:`~perfzoo.console.RunFailed` naming the predictor and the config.
    """
    raw = list(configs)
    rule = MemoryRule(memory_margin)
    done = completed_configs(raw, training, rule)
    configs = [d.config for d in done]
    releases = [cfg.pop("release", None) for cfg in configs]  # the software, not a knob the predictor reads
    for release in releases:
        check_release(release)
    if predictor is None:
        try:
            predictor = zoo.load_best(training)
        except (FileNotFoundError, KeyError):
            ok = training.labelled().ok()
            predictor = zoo.make("ridge").fit(ok.X, ok.y, dataset=training.name)
    frame = as_frame(configs)
    cols = input_columns(predictor) or list(training.feature_columns)
    unknown = [c for c in cols if c not in frame.columns]
    X = frame.reindex(columns=cols)
    pred = np.asarray(predictor.predict(X), dtype=float)
    name = getattr(predictor, "name", type(predictor).__name__)
    bad = np.flatnonzero(~np.isfinite(pred))
    if len(bad):
        raise RunFailed(f"predictor {name} returned {pred[bad[0]]} for config {bad[0] + 1}"
                        + (f" and {len(bad) - 1} more" if len(bad) > 1 else "")
                        + ": it cannot price it; choose another with --predictor")
    std = np.asarray(predictor.predict_std(X), dtype=float) if hasattr(predictor, "predict_std") else None
    n = n_devices(frame)
    per_device_target = training.target.endswith("_per_device")
    glob, per_dev = (pred * n, pred) if per_device_target else (pred, pred / n)
    est = analytic.estimate(frame)
    batch = frame.get("config.global_batch_size", pd.Series(np.nan, index=frame.index))
    # a step time for the global batch the user gave, not for the one the estimate assumes
    tokens = np.where(pd.to_numeric(batch, errors="coerce").notna(), est["tokens_per_step"].to_numpy(dtype=float), np.nan)
    out = pd.DataFrame({"predicted_tokens_per_s": glob, "predicted_tokens_per_s_per_device": per_dev,
                        "predicted_step_time_s": tokens / glob})
    scale = n if per_device_target else np.ones(len(frame))
    # beyond what the predictor saw (the user's runs joined, when calibrated): the largest device count,
    # sequence or model size, or on an accelerator without a measured row, the intervals widen
    seen = predictor.joined.dataset if isinstance(predictor, calibrate.Calibrated) else training
    doublings = beyond_training(frame, est["n_params"].to_numpy(dtype=float), seen)["doublings"].to_numpy()
    unseen = unseen_hardware(frame, seen)
    hardware = unseen["widening"].to_numpy()
    out["doublings_beyond_training"] = doublings
    out["hardware_widening"], out["unseen_hardware"] = hardware, unseen["note"].to_numpy()
    if std is not None:
        out["range_low"], out["range_high"] = widened((pred - 2 * std) * scale, (pred + 2 * std) * scale, doublings,
                                                      hardware)
    try:  # the 80% interval of a member wrapped with it (perfzoo.zoo.interval.Interval)
        low, high = predictor.predict_interval(X)
        out["interval_low"], out["interval_high"] = widened(low * scale, high * scale, doublings, hardware)
    except (NotFittedError, AttributeError):
        pass
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
    # what each config leaves out, less the keys of kinds of model it is not (a dense model's expert keys)
    # (a filled ep=1 makes no dense model one of experts)
    stated_cfgs = [{k: v for k, v in d.config.items() if k not in d.filled} for d in done]
    out["unknown_inputs"] = [", ".join(c for c in unknown if llmconfig.applies(base_key(c), cfg)) for cfg in stated_cfgs]
    # knobs the predictor never saw in training: the analytic breakdown prices them, the prediction cannot
    # (a model's name is not one: the catalog spells it out as the shape keys; nor a value filled for it)
    not_read = [c for c in frame.columns if c.startswith("config.") and c not in cols and c != "config.model_name"]
    warned = outside_training(frame, est["n_params"].to_numpy(dtype=float), seen)
    for w, host, cfg, row in zip(warned, launch_bound(est), stated_cfgs, frame[not_read].notna().to_numpy()):
        w.extend(host)
        given = [base_key(c) for c, on in zip(not_read, row) if on and (base_key(c) in cfg or c in cfg)]
        if given:
            w.append(f"the predictor does not read {', '.join(given)} (never stated in its training data): "
                     "only the analytic breakdown uses it")
    out["warnings"] = ["; ".join(w) for w in warned]
    out["software"] = [software_note(training.frame, training.target, cfg.get("framework"), release, training.name)
                       for cfg, release in zip(configs, releases)]
    if isinstance(predictor, calibrate.Calibrated):  # which of the user's runs moved each prediction
        out["calibration"] = predictor.explain(X)
        out.attrs["calibration"] = predictor.describe(X)
    out.attrs["predictor"] = name
    out.attrs["dataset"] = training.name
    out.attrs["memory_margin"] = memory_margin
    return out


def memory_text(row: dict) -> str:
    """A config's memory in one line: the peak allocated (what ``torch.cuda.max_memory_allocated``
    reports), then what the device needs with the allocator's overheads against its capacity and
    the margin, and the verdict."""
    need, peak = row["analytic.memory_bytes"] / GIB, row.get("analytic.peak_allocated_bytes", np.nan) / GIB
    device = row.get("device_memory_bytes", np.nan) / GIB
    margin = row.get("memory_margin")
    rule = MemoryRule(None if margin is None or not np.isfinite(margin) else float(margin))
    fits_ = {True: "fits", False: "does NOT fit", None: "unknown fit"}[row["fits_in_memory"]]
    if not np.isfinite(peak) or not np.isfinite(device):
        return f"{need:,.1f} GiB per device ({fits_})"
    return (f"peak allocated {peak:,.1f} GiB per device (what torch.cuda.max_memory_allocated reports); with the "
            f"allocator's overheads (CUDA context, fragmentation, NCCL buffers: {need - peak:,.1f} GiB) the device "
            f"needs {need:,.1f} GiB of its {device:,.1f} GiB; the rule: {rule.describe(device)}: {fits_}")


def _show(table: pd.DataFrame) -> str:
    lines = [f"unseen hardware: {note}" for note in dict.fromkeys(table.get("unseen_hardware", ())) if note]
    lines += [f"predictor: {table.attrs.get('predictor')} fitted on {table.attrs.get('dataset')}"
             + (f"; {table.attrs['calibration']}" if table.attrs.get("calibration") else "")]
    for i, row in table.iterrows():
        rng = (f" (range {row['range_low']:,.0f} .. {row['range_high']:,.0f})" if "range_low" in row and
               np.isfinite(row["range_low"]) else "")
        if "interval_low" in row:
            rng += f" (80% interval {row['interval_low']:,.0f} .. {row['interval_high']:,.0f})"
        step = (f"step {row['predicted_step_time_s']:.3g} s" if np.isfinite(row["predicted_step_time_s"])
                else "step time: give global_batch_size")
        lines.append(f"config {i + 1}: {row['predicted_tokens_per_s']:,.0f} tokens/s "
                     f"({row['predicted_tokens_per_s_per_device']:,.1f} per device){rng}; {step}")
        if "model" in row:
            lines.append(f"  model: {row['model']}")
            lines.append(f"  filled: {row['filled']}" + (f"; {row['read_as']}" if row["read_as"] else ""))
            lines.append(f"  {row['framework']}")
        lines.append(f"  memory: {memory_text(row)}")
        lines.append(f"  analytic: compute {row['analytic.compute_time_s']:.3g} s, communication "
                     f"{row['analytic.comm_time_s']:.3g} s (dp {row['analytic.comm_dp_bytes'] / GIB:.2f} GiB, "
                     f"tp {row['analytic.comm_tp_bytes'] / GIB:.2f} GiB, pp {row['analytic.comm_pp_bytes'] / GIB:.2f} "
                     f"GiB, cp {row['analytic.comm_cp_bytes'] / GIB:.2f} GiB, ep {row['analytic.comm_ep_bytes'] / GIB:.2f} "
                     f"GiB), waiting on the host {row['analytic.host_time_s']:.3g} s, bubble {row['analytic.bubble']:.1%}; "
                     f"ideal step {row['analytic.step_time_s']:.3g} s")
        if row.get("software"):
            lines.append(f"  software: {row['software']}")
        if row.get("calibration"):
            lines.append(f"  calibration: {row['calibration']}")
        if row["unknown_inputs"]:
            lines.append(f"  unknown inputs (treated as missing): {row['unknown_inputs']}")
        if row["warnings"]:
            lines.append(f"  warning: {row['warnings']}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m perfzoo.predict", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=llmconfig.help_text())
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--set", dest="knobs", nargs="+", action="extend", metavar="KEY=VALUE",
                     help="one config, knob by knob (hardware keys too: accelerator=H100-SXM-80GB)")
    src.add_argument("--configs", metavar="FILE", help="configs from a CSV or a JSONL file")
    p.add_argument("--dataset", help=f"the predictor's training data (default {PredictConfig.dataset})")
    p.add_argument("--predictor",
                   help="'best' (the leaderboard's for --dataset), a zoo member fitted on --dataset, or a saved folder")
    p.add_argument("--calibrate", metavar="FILE",
                   help="your measured jobs (a published-table CSV or a record store) join the training data")
    p.add_argument("--external-dir", metavar="DIR", help="the external-data directory")
    p.add_argument("--memory-margin", type=float,
                   help="fraction of device memory kept free of the whole memory estimate, instead of the rule derived from measured peaks (the peak allocated x its error at 5%% risk + overheads within the device)")
    p.add_argument("--json", action="store_true", help="one JSON object per config")
    p.set_defaults(**field_defaults(PredictConfig))  # every default lives once, in PredictConfig
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit status (0 done, 1 interrupted, 2 usage or input error)."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    check_options(parser, argv)
    args = parser.parse_args(argv)

    def body() -> int:
        table = run(config_from_args(PredictConfig, args))
        if args.json:
            for rec in table.to_dict("records"):
                print(json.dumps({k: (None if isinstance(v, float) and not np.isfinite(v) else v)
                                  for k, v in rec.items()}, default=str))
        else:
            print(_show(table))
        refused = table.attrs.get("refused", [])
        for where, reason in refused:
            print(f"perfzoo.predict: refused {where}: {reason}", file=sys.stderr)
        if refused:
            print(f"perfzoo.predict: {len(refused)} of {len(refused) + len(table)} configs refused (above); the "
                  f"other {len(table)} priced", file=sys.stderr)
        return 1 if refused else 0

    return guarded("perfzoo.predict", body)


def run(config: PredictConfig) -> pd.DataFrame:
    """The predictions for the configs ``config`` gives, one row per config (:func:`predict_frame`)."""
    located = config.located_configs()
    training = load_dataset(config.dataset, external_dir=config.external_dir)
    if config.configs is None:
        kept, refused = [0], []
        checked_configs([located[0][1]], training)  # before any fit: a bad config fails fast
    else:  # a file: every config that can be priced is, the others listed with their reasons
        kept, refused = screen(located, training)
        if not kept:
            reasons = "; ".join(f"{where}: {reason}" for where, reason in refused[:3])
            raise RunFailed(f"--configs {config.configs}: none of its {len(refused)} configs can be priced ({reasons}"
                            + (f"; and {len(refused) - 3} more" if len(refused) > 3 else "") + ")")
    configs = [located[i][1] for i in kept]
    runs = load_dataset(config.calibrate, external_dir=config.external_dir) if config.calibrate else None
    predictor = None
    if Path(config.predictor).is_dir():
        predictor = zoo.load(config.predictor)
    elif config.predictor != "best":
        predictor = calibrate.fit_with_interval(zoo.make(config.predictor), training)
    elif runs is not None:  # the leaderboard's member for anchoring (zoo.anchor_member)
        try:
            predictor = calibrate.anchor_base(training)
        except (FileNotFoundError, KeyError):
            predictor = calibrate.fit_with_interval(zoo.make("ridge"), training)
    if runs is not None:  # anchored on the runs, and refitted with them (perfzoo.zoo.calibrate.calibrated)
        predictor = calibrate.calibrated(predictor, training, runs, config.calibrate)
    table = predict_frame(configs, training, predictor, memory_margin=config.memory_margin)
    table.index = pd.Index(kept)  # each config's place among those given
    table.attrs["refused"] = refused
    return table


if __name__ == "__main__":
    sys.exit(main())
