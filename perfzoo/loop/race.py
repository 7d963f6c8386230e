"""The race that names each arm's champion: successive halving over re-measured candidates.

The arms are ``loop`` (random phase + search rounds), ``random`` (random phase + control),
``hand-tuned``, ``expert`` and ``user`` (the baselines, :data:`BASELINE_ARMS`). Each searched
arm enters its ``race`` best configs by a single measurement (:func:`candidates`; a baseline:
the one rung that ran). The race runs in two stages, every stage one collect over the
candidates of *all* arms, repeats interleaved (all configs' first re-run, then all configs'
second, ...), so the machine's drift hits every arm alike:

1. every candidate is measured :data:`FIRST_RUNS` more times;
2. of each searched arm the better half by the median of stage 1 (:func:`finalists`; a
   baseline goes on) is measured until it has ``confirm`` race runs.

The champion (:func:`confirmed`) is the finalist with the best median over its race runs (a run
that did not finish ``ok`` counts as 0). The single run that made a config a candidate is not
in the median: it was chosen for being high, so it would flatter every arm's best.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np

from perfzoo.records import JobRecord, canonical_json

SEARCHED_ARMS = ("loop", "random")  # arms that race several candidates; a baseline has one
# the baseline phases of the loop and their arms: the workload's ladders (``baseline``: the
# hand-tuned one, ``expert``) and the user's own configs (``user``: tune's ``--baseline FILE``)
BASELINE_ARMS = {"baseline": "hand-tuned", "expert": "expert", "user": "user"}
FIRST_RUNS = 2  # race runs of every candidate before the worse half of each searched arm drops out


def config_id(config: dict) -> str:
    """A config's identity in the loop: its canonical JSON (complete configs compare equal)."""
    return canonical_json(config)


def arms(by_phase: dict[str, list[JobRecord]], loop_phases: Sequence[str]) -> dict[str, list[JobRecord]]:
    """The records of each arm, from the records of each phase (``loop_phases``: the random
    phase and the rounds); a baseline arm only where its phase ran."""
    return {"loop": [r for n in loop_phases if n in by_phase for r in by_phase[n]],
            "random": by_phase["random"] + by_phase.get("control", []),
            **{arm: by_phase[phase] for phase, arm in BASELINE_ARMS.items() if phase in by_phase}}


def candidates(arm_records: dict[str, list[JobRecord]], race: int) -> dict[str, list[dict]]:
    """Each arm's configs in the race: its ``race`` best by a single measurement (a baseline:
    the one rung that ran)."""
    out = {}
    for name, recs in arm_records.items():
        ok = sorted((r for r in recs if r.status == "ok" and r.metrics.throughput is not None),
                    key=lambda r: -r.metrics.throughput)
        configs: dict[str, dict] = {}
        for r in ok:
            if len(configs) < (race if name in SEARCHED_ARMS else 1):
                configs.setdefault(config_id(r.config), r.config)
        if configs:
            out[name] = list(configs.values())
    return out


def race_values(race_records: Sequence[JobRecord]) -> dict[str, list[float]]:
    """Each config's race runs in launch order: its throughput, 0 where the run failed."""
    out: dict[str, list[float]] = defaultdict(list)
    for r in sorted(race_records, key=lambda r: r.started_at):
        ok = r.status == "ok" and r.metrics.throughput is not None
        out[config_id(r.config)].append(float(r.metrics.throughput) if ok else 0.0)
    return out


def first_stage_runs(confirm: int) -> int:
    """Race runs of every candidate before the halving (all ``confirm`` when that is fewer).

    >>> first_stage_runs(6), first_stage_runs(1)
    (2, 1)
    """
    return min(FIRST_RUNS, confirm)


def finalists(raced: dict[str, list[dict]], values: dict[str, list[float]], confirm: int) -> dict[str, list[dict]]:
    """Each arm's configs in the race's second stage (``values``: :func:`race_values`): of a
    searched arm the better half (rounded up) by the median of its first-stage runs, a
    baseline's one config."""
    first = first_stage_runs(confirm)
    if first == confirm:
        return raced
    out = {}
    for name, configs in raced.items():
        if name not in SEARCHED_ARMS:
            out[name] = configs
            continue
        score = [float(np.median(values[config_id(c)][:first] or [0.0])) for c in configs]
        keep = sorted(range(len(configs)), key=lambda i: -score[i])[:(len(configs) + 1) // 2]
        out[name] = [configs[i] for i in sorted(keep)]
    return out


def confirmed(raced: dict[str, list[dict]], race_records: Sequence[JobRecord], confirm: int) -> dict[str, dict]:
    """Each arm's champion: of its finalists, the one with the best median over its race runs,
    with its values and the race medians of every candidate of the arm."""
    values = race_values(race_records)

    def entry(cfg: dict) -> dict:
        runs = values[config_id(cfg)]
        return {"median": float(np.median(runs or [0.0])), "n": len(runs), "ok": sum(v > 0 for v in runs),
                "values": runs or [0.0], "config": cfg}

    out = {}
    for name, final in finalists(raced, values, confirm).items():
        entries = [entry(c) for c in raced[name]]  # final is a subset of raced[name]
        by_id = {config_id(e["config"]): e for e in entries}
        best = max((by_id[config_id(c)] for c in final), key=lambda e: e["median"])
        out[name] = {**best, "raced": [e["median"] for e in entries]}
    return out


__all__ = ["BASELINE_ARMS", "FIRST_RUNS", "SEARCHED_ARMS", "arms", "candidates", "config_id", "confirmed", "finalists",
           "first_stage_runs", "race_values"]
