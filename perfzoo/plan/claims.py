"""Whether a plan's gain over a recipe is a claim: beyond the error, and backed where it leaves an EP recipe.

A top pick expected faster than a baseline with its 80% interval above zero (:mod:`perfzoo.plan.shrinkage`)
claims to beat it, but the predictor errs about twice as much on expert-parallel layouts as on dense ones:
where the baseline runs expert parallelism and the pick leaves its structure (:func:`left`: its EP degree,
the dispatcher it states, or its dispatch without an overlap the pick turns on), the gain is claimed only
where some published run of the same model, on any cluster (the shared tables, :func:`published_runs`), has
the pick's structure: its EP placement (:func:`placement`: no EP, EP inside one NVLink domain, EP across
domains, by the accelerator's NVLink domain as :attr:`perfzoo.plan.layouts.Cluster.domain` counts it),
where the baseline states a dispatcher, the pick's, and the dispatch overlaps the pick turns on
(:data:`OVERLAPS`: no shared table states one, so a gain that rests on one is not claimed). :func:`verdict` says ``claimed``, ``tie`` (the interval holds 0), ``slower``, or
``unbacked: no published run of <model> has <structure>``.

>>> left({"ep": 8, "moe_dispatcher": "deepep"}, {"ep": 16, "moe_dispatcher": "alltoall"})
'EP 16 and the alltoall dispatcher'
>>> left({"ep": 16, "moe_dispatcher": "alltoall"}, {"ep": 16, "moe_dispatcher": None}) is None
True
>>> left({"ep": 16, "moe_a2a_overlap": True}, {"ep": 16})
'its dispatch without the A2A overlap'
>>> placement(16, 1, 8), placement(1, 4, 8), placement(64, 1, 72)
('EP across NVLink domains', 'no EP', 'EP inside one NVLink domain')
>>> runs = pd.DataFrame({"model": ["qwen3-30b-a3b"], "placement": ["EP inside one NVLink domain"], "dispatcher": [None]})
>>> recipe = {"ep": 16, "moe_dispatcher": None}
>>> verdict((0.2, 0.05, 0.4), {"ep": 1, "etp": 1}, recipe, "qwen3-30b-a3b", 8, runs)
'unbacked: no published run of qwen3-30b-a3b has no EP'
>>> verdict((0.2, 0.05, 0.4), {"ep": 8, "etp": 1}, recipe, "qwen3-30b-a3b", 8, runs)
'claimed'
>>> verdict((0.02, -0.2, 0.3), {"ep": 1, "etp": 1}, recipe, "qwen3-30b-a3b", 8, runs)
'tie'
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping, Optional

import numpy as np
import pandas as pd

from perfzoo import llmconfig
from perfzoo.datasets import load_dataset
from perfzoo.plan.layouts import Cluster
from perfzoo.plan.recipes import catalog_name
from perfzoo.records.vocabulary import given, to_bool

PUBLISHED = "published-llm"  # the shared tables a claim's structure is looked for in
PLACEMENTS = ("no EP", "EP inside one NVLink domain", "EP across NVLink domains")
OVERLAPS = {"moe_a2a_overlap": "the A2A overlap", "moe_shared_expert_overlap": "the shared-expert overlap"}


def overlaps(layout: Mapping[str, Any], prefix: str = "") -> tuple[str, ...]:
    """The dispatch overlaps (:data:`OVERLAPS` keys) a layout turns on (its keys under ``prefix``)."""
    return tuple(k for k in OVERLAPS if to_bool(layout.get(prefix + k)) == 1.0)


def left(pick: Mapping[str, Any], recipe: Mapping[str, Any]) -> Optional[str]:
    """What of an EP ``recipe`` the ``pick`` leaves (its EP degree, the dispatcher the recipe states), or None."""
    if int(given(recipe.get("ep")) or 1) <= 1:
        return None
    parts = []
    if int(given(pick.get("ep")) or 1) != int(recipe["ep"]):
        parts.append(f"EP {int(recipe['ep'])}")
    said = given(recipe.get("moe_dispatcher"))
    if said is not None and given(pick.get("moe_dispatcher")) != said:
        parts.append(f"the {said} dispatcher")
    added = [OVERLAPS[k] for k in overlaps(pick) if k not in overlaps(recipe)]
    if added:
        parts.append(f"its dispatch without {' and '.join(added)}")
    return " and ".join(parts) or None


def placement(ep: Any, etp: Any, domain: int) -> str:
    """Where a layout's EP group (``ep x etp`` consecutive ranks, as :func:`perfzoo.plan.layouts.moe_rule`
    places it) lies: one of :data:`PLACEMENTS`, for NVLink domains of ``domain`` GPUs."""
    ep = int(given(ep) or 1)
    if ep <= 1:
        return PLACEMENTS[0]
    return PLACEMENTS[1] if ep * int(given(etp) or 1) <= domain else PLACEMENTS[2]


def structure(pick: Mapping[str, Any], recipe: Mapping[str, Any], domain: int) -> tuple[str, Optional[str], tuple]:
    """The pick's placement, its dispatcher where the recipe states one and the pick moves tokens (EP), and
    the dispatch overlaps it turns on."""
    where = placement(pick.get("ep"), pick.get("etp"), domain)
    said = given(recipe.get("moe_dispatcher")) is not None and where != PLACEMENTS[0]
    return where, (given(pick.get("moe_dispatcher")) if said else None), overlaps(pick)


def structures(frame: pd.DataFrame) -> pd.DataFrame:
    """Each run of a published ``frame`` that ran (``status`` ok): its ``model`` (catalog name), EP
    ``placement`` on its accelerator's NVLink domains, ``dispatcher`` (None where it states none) and
    ``overlaps`` (:func:`overlaps`, those it states on)."""
    ok = frame[frame["status"] == "ok"] if "status" in frame else frame.iloc[:0]
    domains = {a: _domain(a) for a in ok.get("hardware.accelerator", pd.Series(dtype=object)).dropna().unique()}
    out = []
    for row in ok.to_dict("records"):
        model, domain = catalog_name(row.get("config.model_name")), domains.get(row.get("hardware.accelerator"))
        if model is None or domain is None:
            continue  # a run the catalog or the accelerator table does not know backs no structure
        out.append({"model": model, "placement": placement(row.get("config.ep"), row.get("config.etp"), domain),
                    "dispatcher": given(row.get("config.moe_dispatcher")), "overlaps": overlaps(row, "config.")})
    return pd.DataFrame(out, columns=["model", "placement", "dispatcher", "overlaps"])


def _domain(accelerator: Any) -> Optional[int]:
    spec = llmconfig.known_accelerator(accelerator)
    return None if spec is None else Cluster(gpus=spec.node_size, accelerator=spec.name).domain


@lru_cache(maxsize=4)
def published_runs(external_dir: Optional[str] = None) -> pd.DataFrame:
    """:func:`structures` of the shared tables (:data:`PUBLISHED`), loaded once per ``external_dir``."""
    return structures(load_dataset(PUBLISHED, external_dir=external_dir).frame)


def verdict(gain: tuple[float, float, float], pick: Mapping[str, Any], recipe: Mapping[str, Any], model: Optional[str],
            domain: int, runs: Optional[pd.DataFrame] = None) -> Optional[str]:
    """Whether the pick's expected ``gain`` (central, low, high) over ``recipe`` is a claim (the module
    docstring): None where it is not priced; ``runs``: :func:`structures` (default :func:`published_runs`,
    read only where the pick leaves an EP recipe; without the tables, unbacked and saying so)."""
    _, low, high = gain
    if not (np.isfinite(low) and np.isfinite(high)):
        return None
    if low <= 0 <= high:
        return "tie"
    if high < 0:
        return "slower"
    if left(pick, recipe) is None:
        return "claimed"
    where, dispatcher, on = structure(pick, recipe, domain)
    said = where + (f" with the {dispatcher} dispatcher" if dispatcher is not None else "") + "".join(
        f" and {OVERLAPS[k]}" for k in on)
    if runs is None:
        try:
            runs = published_runs()
        except (FileNotFoundError, KeyError, ValueError):  # no tables here: nothing backs it, and it says why
            return f"unbacked: no published tables ({PUBLISHED}) here to find a run of {model or 'the model'} with {said}"
    mine = runs[(runs["model"] == model) & (runs["placement"] == where)]
    if dispatcher is not None:
        mine = mine[mine["dispatcher"] == dispatcher]
    if on and len(mine):
        mine = mine[[set(on) <= set(o) for o in mine.get("overlaps", pd.Series([()] * len(mine)))]]
    return "claimed" if len(mine) else f"unbacked: no published run of {model or 'the model'} has {said}"


__all__ = ["OVERLAPS", "PLACEMENTS", "PUBLISHED", "left", "overlaps", "placement", "published_runs", "structure", "structures", "verdict"]
