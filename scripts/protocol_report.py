"""The numbers a protocol dataset card states, computed from the store (so a card never
disagrees with its data): status counts, the repeat CV and OOM determinism of the
``*-repeat`` sweep, the machine's load while measuring, throughput spread, the baselines.

    python scripts/protocol_report.py datasets/fsdp-cpu
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

import numpy as np

from perfzoo.records.store import RecordStore


def config_key(config: dict) -> str:
    return json.dumps(config, sort_keys=True, default=str)


def report(path: str) -> dict:
    records = RecordStore(path, create=False).records()
    out: dict = {"jobs": len(records), "status": {}}
    for r in records:
        out["status"][r.status] = out["status"].get(r.status, 0) + 1
    by_sweep = defaultdict(list)
    for r in records:
        by_sweep[r.sweep_id].append(r)
    out["sweeps"] = {k: len(v) for k, v in by_sweep.items()}
    repeat = [r for r in records if (r.sweep_id or "").endswith("-repeat")]
    groups = defaultdict(list)
    for r in repeat:
        groups[config_key(r.config)].append(r)
    out["repeat"] = []
    for rs in groups.values():
        tput = [r.metrics.throughput for r in rs if r.status == "ok"]
        out["repeat"].append({"runs": len(rs), "statuses": sorted({r.status for r in rs}),
                              "median": float(np.median(tput)) if tput else None,
                              "cv": float(np.std(tput, ddof=1) / np.mean(tput)) if len(tput) > 1 else None,
                              "tensor_peaks_mib": sorted({r.annotations["tensor_peak_mib"] for r in rs
                                                          if r.annotations.get("tensor_peak_mib") is not None})})
    ext = [r.annotations.get("external_load_cores") for r in records if r.annotations.get("external_load_cores") is not None]
    load = [r.annotations.get("loadavg_1m") for r in records if r.annotations.get("loadavg_1m") is not None]
    out["external_load_cores"] = {"median": float(np.median(ext)), "max": float(max(ext)),
                                  "over_0.25": int(sum(e > 0.25 for e in ext))} if ext else None
    out["loadavg_1m"] = {"median": float(np.median(load)), "max": float(max(load))} if load else None
    ok = [r for r in records if r.status == "ok"]
    iqr = [r.metrics.noise_iqr_over_median for r in ok if r.metrics.noise_iqr_over_median is not None]
    out["iqr_over_median_median"] = float(np.median(iqr)) if iqr else None
    times = sorted(r.started_at for r in records)
    hours = (max(r.ended_at or r.started_at for r in records) - times[0]).total_seconds() / 3600
    out["collected"] = [times[0].isoformat(), times[-1].isoformat(), round(hours, 2),
                        round(len(records) / hours) if hours else None]
    steps = [r.metrics.step_time_p50_s for r in ok if r.metrics.step_time_p50_s]
    out["step_p50_s"] = [float(np.min(steps)), float(np.median(steps)), float(np.max(steps))] if steps else None
    scale_key = "local_batch" if "local_batch" in records[0].config else "n_gpus"
    spread = defaultdict(list)
    for r in ok:
        spread[r.config.get(scale_key)].append(r.metrics.throughput)
    out["by_" + scale_key] = {str(k): [len(v), float(min(v)), float(np.median(v)), float(max(v))]
                              for k, v in sorted(spread.items())}
    knob = next((k for k in ("tensor_budget_mib", "memory_headroom_gib") if k in records[0].config), None)
    if knob:
        cell = defaultdict(list)
        for r in ok:
            if not (r.sweep_id or "").endswith(("-repeat", "-baselines")):
                cell[(r.config["local_batch"], r.config[knob])].append(r.metrics.throughput)
        ratios = [max(v) / min(v) for v in cell.values() if len(v) >= 3]
        out["best_over_worst_at_fixed_batch_and_memory"] = {
            "cells": len(ratios), "median": float(np.median(ratios)) if ratios else None,
            "max": float(max(ratios)) if ratios else None}
        status = defaultdict(lambda: defaultdict(int))
        for r in records:
            status[r.config[knob]][r.status] += 1
        out[f"status_by_{knob}"] = {str(k): dict(v) for k, v in sorted(status.items())}
        base = defaultdict(list)
        for r in by_sweep.get(next((s for s in by_sweep if s and s.endswith("-baselines")), None), []):
            shards = "".join(r.config[f"shard_{i:02d}"][0] for i in range(11))
            base[(r.config["local_batch"], shards)].append((r.status, r.metrics.throughput))
        out["baselines"] = {f"{b} {s}": v for (b, s), v in sorted(base.items(), reverse=True)}
    return out


if __name__ == "__main__":
    print(json.dumps(report(sys.argv[1]), indent=1, default=str))
