"""Analytic performance estimates: what a config should cost, before anyone runs it.

Every function here is vectorised: it takes a flat frame (``config.*`` / ``hardware.*``
columns, as in ``Dataset.frame`` or ``Dataset.X``; the prefixes may also be left out) and
returns a :class:`pandas.Series` / :class:`pandas.DataFrame` aligned with it, or it takes one
config as a mapping and returns a float / dict. They are pure numpy, so scoring millions of
configurations during a search costs about a second. Unknown inputs give ``NaN`` (never an
exception): e.g. an accelerator missing from the accelerator table (:mod:`perfzoo.hardware.accelerators`,
which warns once naming it) has no peak FLOP/s, so its ideal step time is ``NaN``; predictors
treat those as missing values.

One module per concept: :mod:`.llm` (the transformer cost model and its conventions: layout,
communication, step time; :mod:`.quantities` its quantities one function each), :mod:`.shape` (a decoder's layers, parameters and FLOPs: dense, MLA,
sliding windows, MTP, hybrid Mamba), :mod:`.moe` (mixture-of-experts layers and routing),
:mod:`.precision` (which matmuls run in low precision), :mod:`.fsdp` (FSDP's per-layer collectives
at scale), :mod:`.memory` (peak memory per device),
:mod:`.traffic` (what a step moves through HBM, and the softmax beside the matmuls),
:mod:`.hardware` (per-row device figures), :mod:`.estimates` (every row to its workload's cost
model), :mod:`.calibration` (a roofline whose efficiency factors are fitted to measurements);
a workload's own cost model lives in its bundle (the recommendation model's in
:mod:`perfzoo.workloads.fsdp_ads.cost`); the categorical vocabulary is :mod:`perfzoo.records.vocabulary`.
What a training framework changes is read from the traits its bundle declares (:mod:`perfzoo.frameworks`,
``_frame.trait``), never from its name.

>>> est = estimate({"n_layers": 24, "hidden_dim": 1024, "n_heads": 16, "seq_len": 1024,
...                 "global_batch_size": 16, "micro_batch_size": 4, "n_gpus": 4, "tp": 2,
...                 "dp": 2, "pp": 1, "accelerator": "A100-80GB"})
>>> round(est["throughput"]) > 0
True
"""

from __future__ import annotations

from perfzoo.analytic._frame import compact
from perfzoo.analytic.calibration import Calibration, calibrate, calibrate_throughput
from perfzoo.analytic.estimates import ESTIMATE_COLUMNS, estimate, estimate_arrays, least_recompute, throughput
from perfzoo.analytic.hardware import HARDWARE
from perfzoo.analytic.llm import LLMCost
from perfzoo.analytic.quantities import (activation_bytes_per_device, comm_bytes_per_device, flops_per_device_step,
                                         flops_per_step, flops_per_token, ideal_step_time, memory_per_device,
                                         param_count, pipeline_bubble, state_bytes_per_device)

__all__ = [
    "Calibration", "ESTIMATE_COLUMNS", "HARDWARE", "LLMCost", "activation_bytes_per_device", "calibrate", "calibrate_throughput",
    "comm_bytes_per_device", "compact", "estimate", "estimate_arrays", "flops_per_device_step", "flops_per_step",
    "flops_per_token", "ideal_step_time", "least_recompute", "memory_per_device", "param_count", "pipeline_bubble",
    "state_bytes_per_device", "throughput",
]
