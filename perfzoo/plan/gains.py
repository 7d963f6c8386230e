"""Why a plan's top pick beats an MoE recipe it leaves: the priced terms that make it faster.

A pick predicted more than :data:`GAIN` faster than a baseline that runs expert parallelism, where the
pick runs another EP degree or another token dispatcher than the baseline states, says which terms of the
analytic step (:func:`perfzoo.analytic.estimate`, the breakdown ``predict`` and the plan's "why rank 1"
note show) are shorter in the pick, most first: such a gain over a tuned recipe is a claim, and it names
what it rests on (whether a published run backs it: :mod:`perfzoo.plan.claims`).

>>> sorted(TERMS)[:3]
['EP dispatch and combine', 'TP communication', 'compute']
"""

from __future__ import annotations

from typing import Optional

import pandas as pd

from perfzoo import analytic, llmconfig
from perfzoo.plan.claims import left
from perfzoo.plan.layouts import LAYOUT_KNOBS, MOE_KNOBS
from perfzoo.plan.planner import Plan, baseline_frame
from perfzoo.records.vocabulary import given

GAIN = 0.10  # a predicted gain over an MoE recipe above this names its terms
# the analytic step's terms, as the plan's notes name them (seconds per step)
TERMS = {"compute": "compute_time_s", "softmax": "softmax_time_s", "memory traffic": "memory_time_s",
         "TP communication": "tp_time_s", "EP dispatch and combine": "ep_time_s", "pipeline sends": "pp_time_s",
         "optimizer": "optimizer_time_s", "host": "host_time_s"}


def terms(frame: pd.DataFrame) -> pd.DataFrame:
    """The analytic step's terms (seconds) of each layout of ``frame`` (config and hardware columns),
    the pipeline bubble as seconds of the step."""
    est = analytic.estimate(frame)
    out = pd.DataFrame({name: est[col].to_numpy(dtype=float) for name, col in TERMS.items()})
    out["the pipeline bubble"] = est["bubble"].to_numpy(dtype=float) * est["step_time_s"].to_numpy(dtype=float)
    out["step"] = est["step_time_s"].to_numpy(dtype=float)
    return out


def faster_by(plan: Plan) -> list[Optional[str]]:
    """Per baseline of ``plan``: where the top pick leaves its EP or dispatcher for a predicted gain above
    :data:`GAIN`, the terms shorter in the pick, most first (at most three), and the two steps; else None."""
    if plan.baselines.empty:
        return []
    pick = plan.configs(1)[0]
    mine = terms(pd.DataFrame([{**llmconfig.as_columns(pick), **plan.cluster.hardware()}])).iloc[0]
    out: list[Optional[str]] = []
    for row in plan.baselines.to_dict("records"):
        what = left(pick, row)
        gain = given(row.get("predicted_gain"))
        if what is None or gain is None or gain <= GAIN or given(row.get("refused")) is not None:
            out.append(None)
            continue
        knobs = {k: given(row.get(k)) for k in LAYOUT_KNOBS + MOE_KNOBS if given(row.get(k)) is not None}
        knobs = {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in knobs.items()}
        frame, _ = baseline_frame(plan.model, plan.cluster, plan.seq_len, plan.global_batch, knobs,
                                  str(knobs.get("precision", plan.precisions[0])), plan.scorer.rule, refuse=False)
        theirs = terms(frame).iloc[0]
        saved = (theirs - mine).drop("step").sort_values(ascending=False)
        named = [f"{name} {seconds:.2f} s less" for name, seconds in saved.items() if seconds > 0.005][:3]
        out.append(f"the top pick leaves its {what} for a predicted {gain:+.0%}: priced faster by "
                   f"{', '.join(named) or 'no term of the analytic step (the predictor alone)'} (analytic step "
                   f"{mine['step']:.2f} s against {theirs['step']:.2f} s)")
    return out


__all__ = ["GAIN", "TERMS", "faster_by", "terms"]
