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
``perfzoo collect`` wrote), ``--calibrate my_runs.csv`` anchors the predictor on them and refits it
with them joined (:func:`perfzoo.zoo.calibrate.calibrated`); the output says which runs moved each prediction.

Python API
----------
:func:`run` takes a :class:`PredictConfig` (one field per flag, the same defaults) and returns the
predictions as a DataFrame, one row per config priced (``attrs["refused"]``: ``(where, reason)`` of each
config of a file it refused); :func:`perfzoo.pricing.price` takes configs as dicts and a resolved
predictor (:func:`perfzoo.pricing.resolve`)::

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
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo import llmconfig, pricing
from perfzoo.analytic.memory import MemoryRule
from perfzoo.console import (InputError, RunFailed, assignments, check_options, config_from_args, field_defaults,
                             guarded, read_located)
from perfzoo.datasets import load_dataset

GIB = float(2**30)


@dataclass(frozen=True)
class PredictConfig:
    """One prediction request, as :func:`run` takes it; ``python -m perfzoo.predict`` translates its
    flags onto it field for field (``--set`` is ``knobs``).

    >>> PredictConfig(knobs=["n_layers"])
    Traceback (most recent call last):
    ...
    perfzoo.console.InputError: --set 'n_layers': expected KEY=VALUE
    """

    knobs: Optional[list[str]] = None  # one config, KEY=VALUE items (hardware keys too: accelerator=...) ...
    configs: Optional[str] = None  # ... or the configs in this CSV or JSONL file
    dataset: str = pricing.PUBLISHED  # the predictor's training data
    predictor: str = "best"  # 'best' (the leaderboard's for dataset), a zoo member fitted on dataset, or a saved folder
    calibrate: Optional[str] = None  # your measured jobs (a published-table CSV, a record store) anchor the predictor
    external_dir: Optional[str] = None  # the external-data directory (default: $PERFZOO_EXTERNAL_DATA, ...)
    memory_margin: Optional[float] = None  # fraction of device memory kept free (default: the rule from measured peaks)

    def __post_init__(self):
        if (self.knobs is None) == (self.configs is None):
            raise InputError("give exactly one of --set and --configs")
        assignments(self.knobs or (), "--set")
        pricing.check_spec(self.predictor)
        pricing.check_dataset(self.dataset, self.external_dir)
        try:
            MemoryRule(self.memory_margin)  # its check, said once
        except ValueError as exc:
            raise InputError(str(exc)) from None

    def located_configs(self) -> list[tuple[str, dict]]:
        """``[(where, config)]``: ``--set`` for ``knobs``, else the file and line of each config in ``configs``."""
        if self.knobs is not None:
            return [("--set", assignments(self.knobs, "--set"))]
        return read_located(self.configs)


def memory_text(row: dict) -> str:
    """A config's memory in one line: the peak allocated (what ``torch.cuda.max_memory_allocated``
    reports), then what the device needs with the allocator's overheads (what ``nvidia-smi`` shows
    in use) against its capacity and the margin, and the verdict."""
    need, peak = row["analytic.memory_bytes"] / GIB, row.get("analytic.peak_allocated_bytes", np.nan) / GIB
    device = row.get("device_memory_bytes", np.nan) / GIB
    margin = row.get("memory_margin")
    rule = MemoryRule(None if margin is None or not np.isfinite(margin) else float(margin))
    fits_ = {True: "fits", False: "does NOT fit", None: "unknown fit"}[row["fits_in_memory"]]
    if not np.isfinite(peak) or not np.isfinite(device):
        return f"{need:,.1f} GiB per device ({fits_})"
    return (f"peak allocated {peak:,.1f} GiB per device (what torch.cuda.max_memory_allocated reports); with the "
            f"allocator's overheads (CUDA context, fragmentation, NCCL buffers: {need - peak:,.1f} GiB) the device "
            f"needs {need:,.1f} GiB of its {device:,.1f} GiB (what nvidia-smi shows in use: the allocator's "
            f"reserve, not its allocated bytes); the rule: {rule.describe(device)}: {fits_}")


def _show(table: pd.DataFrame) -> str:
    lines = [f"unseen hardware: {note}" for note in dict.fromkeys(table.get("unseen_hardware", ())) if note]
    lines += [(f"predictor: {table.attrs['fallback']}" if table.attrs.get("fallback") else
               f"predictor: {table.attrs.get('predictor')} fitted on {table.attrs.get('dataset')}")
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
    """The predictions for the configs ``config`` gives, one row per config priced
    (:func:`perfzoo.pricing.price`); ``attrs["refused"]``: ``(where, reason)`` of each config of a
    file it refused."""
    located = config.located_configs()
    training = load_dataset(config.dataset, external_dir=config.external_dir)
    if config.configs is None:
        kept, refused = [0], []
        pricing.completed_configs([located[0][1]], training)  # before any fit: a bad config fails fast
    else:  # a file: every config that can be priced is, the others listed with their reasons
        kept, refused = pricing.screen(located, training)
        if not kept:
            reasons = "; ".join(f"{where}: {reason}" for where, reason in refused[:3])
            raise RunFailed(f"--configs {config.configs}: none of its {len(refused)} configs can be priced ({reasons}"
                            + (f"; and {len(refused) - 3} more" if len(refused) > 3 else "") + ")")
    resolved = pricing.resolve(config.predictor, config.dataset, runs=config.calibrate,
                               external_dir=config.external_dir, training=training)
    table = pricing.price([located[i][1] for i in kept], resolved, memory_margin=config.memory_margin)
    table.index = pd.Index(kept)  # each config's place among those given
    table.attrs["refused"] = refused
    return table


if __name__ == "__main__":
    sys.exit(main())
