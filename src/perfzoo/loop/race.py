"""The race that names each arm's champion: noise-proof comparison of the loop's arms.

The arms are ``loop`` (random phase + search rounds), ``random`` (random phase + control),
``hand-tuned`` and ``expert`` (the baselines). Each arm's :func:`candidates` are its ``race``
best configs by a single measurement (a baseline: the one rung that ran); the ``confirm`` phase
measures them again (:func:`confirm_todo`), and :func:`confirmed` names as champion the candidate
with the best median over every measurement (a run that did not finish ``ok`` counts as 0), so a
lucky single measurement cannot win.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np

from perfzoo.records import JobRecord, canonical_json

SEARCHED_ARMS = ("loop", "random")  # arms that race several candidates; a baseline has one


def config_id(config: dict) -> str:
    """A config's identity in the loop: its canonical JSON (complete configs compare equal)."""
    return canonical_json(config)


def arms(by_phase: dict[str, list[JobRecord]], loop_phases: Sequence[str]) -> dict[str, list[JobRecord]]:
    """The records of each arm, from the records of each phase (``loop_phases``: the random
    phase and the rounds)."""
    return {"loop": [r for n in loop_phases if n in by_phase for r in by_phase[n]],
            "random": by_phase["random"] + by_phase.get("control", []),
            "hand-tuned": by_phase.get("baseline", []),
            "expert": by_phase.get("expert", [])}


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


def confirm_todo(raced: dict[str, list[dict]], records: Sequence[JobRecord], confirm: int) -> list[dict]:
    """The candidates with fewer than ``1 + confirm`` measurements in ``records``, each once."""
    seen: dict[str, dict] = {}
    for configs in raced.values():
        for cfg in configs:
            seen.setdefault(config_id(cfg), cfg)
    counts = Counter(config_id(r.config) for r in records)
    return [cfg for cid, cfg in seen.items() if counts[cid] < 1 + confirm]


def confirmed(raced: dict[str, list[dict]], records: Sequence[JobRecord]) -> dict[str, dict]:
    """Each arm's champion: of its candidates, the one with the best median over every
    measurement in ``records`` (a run that did not finish ``ok`` counts as 0), with its values and
    the medians of the candidates it beat."""
    out = {}
    for name, configs in raced.items():
        entries = []
        for cfg in configs:
            cid = config_id(cfg)
            vals = [r.metrics.throughput if r.status == "ok" and r.metrics.throughput is not None else 0.0
                    for r in records if config_id(r.config) == cid]
            entries.append({"median": float(np.median(vals)), "n": len(vals),
                            "ok": sum(v > 0 for v in vals), "values": [float(v) for v in vals], "config": cfg})
        best = max(entries, key=lambda c: c["median"])
        out[name] = {**best, "raced": [c["median"] for c in entries]}
    return out


__all__ = ["arms", "candidates", "config_id", "confirm_todo", "confirmed"]
