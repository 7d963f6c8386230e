"""``python -m perfzoo.plan benchmark``: does plan pick the layout that measured fastest?

On every group of measured layouts of one model at one scale on one accelerator (the
dataset's ``comparable_columns`` plus the sequence length and the task; repeats of one
configuration merged by their median), plan's scorer, fitted WITHOUT that group (leave-one-group-out: every
job of the same model, GPU count, accelerator and sequence length left out of the training
pool, whichever table it comes from), ranks the measured layouts and picks the fastest it
predicts among those the memory model lets through (as :func:`perfzoo.plan.plan` does). Per
group: top-1 regret and precision@3 (:mod:`perfzoo.evaluation.metrics`), Kendall's tau, and
whether the pick is the measured best or within 5% of it; beside the same for a random pick
(a constant prediction: the metrics break ties at random and return the expectation).

The training pool is the published tables (``published-llm``) plus ``vtrain-a100`` and
``llm-h100``, each job's target as tokens/s per GPU. Also reported: for each published
pre-training recipe of a catalog model (NeMo, Megatron-Bridge, torchtitan), the layout plan would choose instead
(with the scorer fitted without that model and cluster; the recipe priced as plan prices its own layouts, both
under the recipe's framework) and its gain, predicted and net of the winner's curse
(:mod:`perfzoo.plan.shrinkage`, with its 80% interval) and whether it is claimed (:mod:`perfzoo.plan.claims`:
a gain over an EP recipe the pick leaves needs a published run of the pick's structure), with how many recipes
are claimed beaten, overall and of MoE models; the share of a predicted advantage that measured
real inside the groups, per kind of model, and plan's pick as reported over as measured; and how many
jobs that ran out of memory the memory model calls feasible, and whether plan picked one.

>>> summarise(pd.DataFrame({"dataset": ["a", "a"], "regret": [0.0, 0.1], "random_regret": [0.2, 0.3],
...                         "p_at_3": [1.0, 0.5], "random_p_at_3": [0.5, 0.5], "kendall": [0.5, 1.0],
...                         "is_best": [1.0, 0.0], "random_is_best": [0.2, 0.2], "within_5": [1.0, 0.0],
...                         "random_within_5": [0.3, 0.3], "within_5_unfiltered": [1.0, 0.0],
...                         "layouts": [3, 4]}))["median_regret"].tolist()
[0.05, 0.05]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo import pricing, zoo
from perfzoo.analytic import least_recompute
from perfzoo.console import check_writable, config_from_args, field_defaults, guarded
from perfzoo.datasets import list_datasets, load_dataset
from perfzoo.datasets.dataset import Dataset
from perfzoo.evaluation.metrics import kendall, precision_at_k, top_k_regret
from perfzoo.llmconfig import catalog
from perfzoo.plan.layouts import Cluster, PlanError, as_run
from perfzoo.plan.planner import plan
from perfzoo.plan.recipes import accelerator_name, catalog_name
from perfzoo.plan.report import layout_text
from perfzoo.plan import claims, shrinkage
from perfzoo.plan.scoring import Scorer

# the measured groups: every dataset where several layouts of one model, scale and hardware were measured
GROUP_DATASETS = ("vtrain-a100", "published-mosaicml", "published-torchtitan", "published-nemo",
                  ("published-megatron-bridge", "nvidia-megatron-bridge-perf-summary"), "llm-h100")
POOL = ("published-llm", "vtrain-a100", "llm-h100")  # the training pool (published-llm holds every published table)
RECIPE_SOURCES = ("published-nemo", ("published-megatron-bridge", "nvidia-megatron-bridge-perf-summary"),
                  "published-torchtitan")
WITHIN = 0.05


def _name(entry) -> Optional[str]:
    """The first of a dataset's names the registry lists (a renamed dataset has two)."""
    names = (entry,) if isinstance(entry, str) else entry
    known = set(list_datasets())
    return next((n for n in names if n in known), None)


def _model_id(frame: pd.DataFrame) -> pd.Series:
    """A model's identity across tables: its catalog name, else the published name, else its shape."""
    shape = frame.reindex(columns=["config.n_layers", "config.hidden_dim", "config.ffn_dim", "config.n_heads"])
    by_shape = shape.map(str).agg("x".join, axis=1)
    names = frame.get("config.model_name", pd.Series(np.nan, index=frame.index))
    catalog = {n: catalog_name(n) or n for n in names.dropna().unique()}
    return names.map(catalog).where(names.notna(), "shape:" + by_shape)


def _accelerator_id(frame: pd.DataFrame) -> pd.Series:
    col = frame["hardware.accelerator"]
    return col.map({n: accelerator_name(n) or str(n) for n in col.dropna().unique()})


def situation(frame: pd.DataFrame) -> pd.Series:
    """What plan is asked about a job: model, GPUs, accelerator, sequence length (the group left out)."""
    parts = [_model_id(frame), frame["config.n_gpus"].map(str), _accelerator_id(frame),
             frame["config.seq_len"].map(str)]
    return parts[0].str.cat(parts[1:], sep=" | ")


def per_device(ds: Dataset) -> np.ndarray:
    """The dataset's target as tokens/s per GPU."""
    y = np.asarray(ds.y, dtype=float)
    if ds.target.endswith("_per_device"):
        return y
    return y / pd.to_numeric(ds.frame["config.n_gpus"], errors="coerce").to_numpy(dtype=float)


@dataclass
class Pool:
    """Every labelled successful job of the training pool: ``X``, tokens/s per GPU ``y``, and
    each job's :func:`situation`."""

    X: pd.DataFrame
    y: np.ndarray
    situation: np.ndarray

    @classmethod
    def load(cls, external_dir: Optional[str] = None) -> "Pool":
        Xs, ys = [], []
        for name in POOL:
            ds = load_dataset(name, external_dir=external_dir).labelled().ok()
            Xs.append(ds.frame)
            ys.append(per_device(ds))
        frame = pd.concat(Xs, ignore_index=True, sort=False)
        cols = sorted({c for c in frame.columns if c.startswith(("config.", "hardware."))})
        return cls(frame[cols], np.concatenate(ys), situation(frame).to_numpy())

    def fit(self, member: str, leave_out: str):
        keep = self.situation != leave_out
        return zoo.make(member).fit(self.X[keep], self.y[keep])


def groups_of(ds: Dataset) -> pd.DataFrame:
    """The dataset's measured layouts, one row per configuration (the median of its repeats;
    OOM jobs kept, ``measured`` NaN), with ``group`` (its comparable columns and sequence length)
    and ``situation``; only groups with two or more distinct measured layouts."""
    frame = ds.frame.assign(measured=np.where(ds.is_labelled, per_device(ds), np.nan))
    frame = frame[ds.is_labelled | (frame["status"] == "oom").to_numpy()].copy()
    cols = [c for c in dict.fromkeys([*ds.comparable_columns, "config.seq_len", "config.task"]) if c in frame]
    frame["group"] = frame[cols].map(str).agg(" | ".join, axis=1)
    frame["situation"] = situation(frame)
    med = frame.groupby("config_key")["measured"].median()
    frame = frame.drop_duplicates("config_key").copy()
    frame["measured"] = frame["config_key"].map(med)
    ok_layouts = frame[frame["measured"].notna()].groupby("group")["measured"].nunique()
    return frame[frame["group"].isin(ok_layouts[ok_layouts >= 2].index)]


def score_group(rows: pd.DataFrame, scorer: Scorer) -> dict:
    """Plan's pick among one group's measured layouts (priced as plan prices its own,
    :func:`~perfzoo.plan.layouts.as_run`), and the metrics of its ranking."""
    rows = as_run(rows)
    least = least_recompute(rows, scorer.rule)  # a row that leaves its checkpointing out: the least that fits
    rows = rows.assign(**{"config.activation_checkpointing": least["activation_checkpointing"].to_numpy()})
    pred, _ = scorer.predict(rows)
    fits = least["fits"].to_numpy()
    ok = rows["measured"].notna().to_numpy()
    t, p = rows["measured"].to_numpy(dtype=float)[ok], pred[ok]
    # plan's pick: the fastest predicted among the layouts the memory model lets through (OOM jobs too)
    allowed = fits if fits.any() else np.ones(len(rows), dtype=bool)
    score = np.where(allowed & np.isfinite(pred), pred, -np.inf)
    top = np.flatnonzero(score == score.max())
    best = t.max()
    picked_measured = rows["measured"].to_numpy(dtype=float)[top]
    flat = np.zeros(len(t))
    # the winner's curse (perfzoo.plan.shrinkage): log advantages centred in the group
    mc, pc = shrinkage.centred(t, np.where(p > 0, p, np.nan))
    offset = float(np.nanmean(np.log(np.where(p > 0, p, np.nan))) - np.nanmean(np.log(t)))
    pick = int(np.searchsorted(np.flatnonzero(ok), top[0])) if ok[top[0]] else None  # its place among the measured
    return {
        "layouts": int(ok.sum()), "oom_jobs": int((~ok).sum()),
        "regret": top_k_regret(t, np.where(fits[ok], p, -np.inf) if fits[ok].any() else p, 1),
        "random_regret": top_k_regret(t, flat, 1),
        "p_at_3": precision_at_k(t, p, 3), "random_p_at_3": precision_at_k(t, flat, 3),
        "kendall": kendall(t, p),
        "is_best": float(np.mean(np.nan_to_num(picked_measured, nan=-1.0) >= best)),
        "random_is_best": float(np.mean(t >= best)),
        "within_5": float(np.mean(np.nan_to_num(picked_measured, nan=-1.0) >= (1 - WITHIN) * best)),
        # the predictor alone, no memory filter: what the filter costs or saves
        "within_5_unfiltered": float(np.mean(t[p == p.max()] >= (1 - WITHIN) * best)) if np.isfinite(p).any() else 0.0,
        "random_within_5": float(np.mean(t >= (1 - WITHIN) * best)),
        "picked_oom": float(np.mean(np.isnan(picked_measured))),
        "ran_but_called_infeasible": int((ok & ~fits).sum()),
        "oom_called_feasible": int((~ok & fits).sum()),
        **shrinkage.moments(mc, pc), "pick_offset": offset,
        "pick_pc": np.nan if pick is None else float(pc[pick]), "pick_mc": np.nan if pick is None else float(mc[pick]),
    }


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    """Per dataset and over all groups: groups, median top-1 regret, mean P@3, mean Kendall, how
    often the pick is the best / within 5%, each beside the random pick's."""
    def agg(g: pd.DataFrame) -> pd.Series:
        return pd.Series({
            "groups": len(g), "layouts": int(g["layouts"].sum()),
            "median_regret": g["regret"].median(), "random_median_regret": g["random_regret"].median(),
            "mean_p_at_3": g["p_at_3"].mean(), "random_p_at_3": g["random_p_at_3"].mean(),
            "grouped_kendall": g["kendall"].mean(),
            "pick_is_best": g["is_best"].mean(), "random_is_best": g["random_is_best"].mean(),
            "pick_within_5": g["within_5"].mean(), "random_within_5": g["random_within_5"].mean(),
            "unfiltered_within_5": g["within_5_unfiltered"].mean(),
        })

    rows = {name: agg(g) for name, g in table.groupby("dataset", sort=False)}
    rows["all"] = agg(table)
    return pd.DataFrame(rows).T


@dataclass(frozen=True)
class BenchmarkConfig:
    """The plan benchmark, as :func:`run` takes it (``python -m perfzoo.plan benchmark``)."""

    predictor: str = "best"  # the member plan ranks with: 'best' (the leaderboard's for published-llm) or a zoo name
    memory_margin: Optional[float] = None  # as plan's
    recipes: bool = True  # also run plan on each published recipe
    external_dir: Optional[str] = None  # the external-data directory
    json: bool = False  # print JSON instead of tables
    out: Optional[str] = None  # also write the report (markdown) here

    def __post_init__(self):
        if self.out is not None:
            check_writable("--out", self.out)  # before the minutes of work, not after


def run(config: BenchmarkConfig, log=None) -> dict:
    """Every group scored, the summary, the recipes and the OOM counts (see the module docstring)."""
    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    member = pricing.shipped_member(pricing.PUBLISHED)[0] if config.predictor == "best" else config.predictor
    if member not in zoo.names():  # refitted per group: a member of the zoo, not a saved folder
        raise PlanError(f"--predictor {member!r}: not a zoo member ({', '.join(zoo.names())})")
    t0 = time.perf_counter()
    pool = Pool.load(config.external_dir)
    log(f"benchmark: {member} refitted per left-out group on a pool of {len(pool.y):,} jobs ({', '.join(POOL)})")
    fits: dict[str, Scorer] = {}

    def scorer(situation_: str) -> Scorer:
        if situation_ not in fits:
            fits[situation_] = Scorer(pool.fit(member, situation_), per_device=True,
                                      memory_margin=config.memory_margin)
        return fits[situation_]

    results = []
    for entry in GROUP_DATASETS:
        name = _name(entry)
        if name is None:
            log(f"benchmark: no dataset {entry} here; skipped")
            continue
        rows = groups_of(load_dataset(name, external_dir=config.external_dir))
        for group, g in rows.groupby("group", sort=False):
            results.append({"dataset": name, "group": group, "kind": shrinkage.kind_of_rows(g),
                            **score_group(g, scorer(g["situation"].iloc[0]))})
        log(f"benchmark: {name}: {rows['group'].nunique()} groups ({time.perf_counter() - t0:.0f} s)")
    table = pd.DataFrame(results)
    # the share of a predicted advantage that is real per kind of model, and each group's pick as plan reports it,
    # with its kind's share fitted without that group (leave-one-group-out)
    curse = {kind: (len(g), *shrinkage.fit(g)) for kind, g in table.groupby("kind")}
    sums = table.groupby("kind")[["mp", "pp"]].transform("sum")
    k_out = (sums["mp"] - table["mp"]) / (sums["pp"] - table["pp"])
    table["pick_reported_over_measured"] = np.exp(table["pick_offset"] + k_out * table["pick_pc"] - table["pick_mc"])
    log(f"benchmark: the winner's curse: {_curse_text(curse)}; the pick as reported over as measured, median "
        f"{table['pick_reported_over_measured'].median():.3f}")
    out = {"member": member, "groups": table, "summary": summarise(table), "curse": curse,
           "oom": {"oom_jobs": int(table["oom_jobs"].sum()),
                   "oom_called_feasible": int(table["oom_called_feasible"].sum()),
                   "groups_whose_pick_ran_out_of_memory": int((table["picked_oom"] > 0).sum()),
                   "jobs_that_ran_called_infeasible": int(table["ran_but_called_infeasible"].sum())}}
    if config.recipes:
        out["recipes"] = recipes(config, scorer, log)
    out["seconds"] = time.perf_counter() - t0
    return out


def _curse_text(curse: dict) -> str:
    """Each kind's fitted share and residual beside the constants plan uses.

    >>> _curse_text({"dense": (3, 0.9, 0.15)}).startswith("dense (3 groups): measured / predicted advantage 0.900")
    True
    """
    return "; ".join(f"{kind} ({n} groups): measured / predicted advantage {k:.3f}, residual log sd {r:.3f} "
                     f"(plan uses {shrinkage.SHRINK[kind]:g} and {shrinkage.RESIDUAL_SD[kind]:g})"
                     for kind, (n, k, r) in curse.items())


def recipes(config: BenchmarkConfig, scorer, log) -> pd.DataFrame:
    """For each published recipe of a catalog model: plan's pick on the same model, cluster,
    sequence, batch and precision (the scorer fitted without that situation), its predicted gain."""
    rows = []
    runs = claims.published_runs(config.external_dir)  # the published structures a claim is backed by, loaded once
    for entry in RECIPE_SOURCES:
        name = _name(entry)
        if name is None:
            continue
        ds = load_dataset(name, external_dir=config.external_dir)
        ok = ds.labelled().ok()
        frame = ok.frame.assign(measured=per_device(ok), situation=situation(ok.frame), model=_model_id(ok.frame))
        frame = frame.drop_duplicates("config_key")
        for rec in frame.to_dict("records"):
            if catalog.lookup(str(rec["model"])) is None or pd.isna(rec.get("config.global_batch_size")):
                continue
            if not pd.isna(rec.get("config.task")) and "pre" not in str(rec["config.task"]).lower():
                continue  # plan lays out pre-training; fine-tuning and adapter recipes are another job
            sc = scorer(rec["situation"])
            framework = rec.get("config.framework")  # the pick priced as the recipe's framework runs it: like for like
            recipe = pd.DataFrame([{**{k: v for k, v in rec.items() if str(k).startswith(("config.", "hardware."))},
                                    "label": "recipe", "measured_tokens_per_s_per_device": rec["measured"]}])
            try:
                cluster = Cluster(gpus=int(rec["config.n_gpus"]), accelerator=str(rec["hardware.accelerator"]))
                p = plan(str(rec["model"]), cluster, seq_len=int(rec["config.seq_len"]),
                         global_batch=int(rec["config.global_batch_size"]),
                         precisions=(str(rec.get("config.precision") or "bf16"),), scorer=sc, published=recipe,
                         framework=framework if isinstance(framework, str) else None, runs=runs)
            except (PlanError, ValueError) as exc:
                rows.append({"dataset": name, "model": rec["model"], "gpus": rec["config.n_gpus"],
                             "accelerator": accelerator_name(rec.get("hardware.accelerator")) or str(rec.get("hardware.accelerator")), "recipe": layout_text(_knobs(rec)),
                             "note": " ".join(str(exc).split())[:120]})
                continue
            top, base = p.layouts.iloc[0], p.baselines.iloc[0]  # the recipe's knobs priced as plan prices its own
            rows.append({"dataset": name, "model": rec["model"], "gpus": int(rec["config.n_gpus"]),
                         "accelerator": accelerator_name(rec.get("hardware.accelerator")) or str(rec.get("hardware.accelerator")), "precision": rec.get("config.precision"),
                         "recipe": layout_text(_knobs(rec)), "measured": rec["measured"],
                         "predicted": float(base["predicted_tokens_per_s_per_device"]), "recipe_fits": bool(base["fits"]),
                         "plan_pick": layout_text(top.to_dict()),
                         "pick_predicted": float(top["predicted_tokens_per_s_per_device"]),
                         **{k: float(base[k]) for k in ("predicted_gain", "gain", "gain_low", "gain_high")},
                         "kind": shrinkage.kind(p.model), "claim": base["claim"]})
    log(f"benchmark: {len(rows)} published recipes planned")
    return pd.DataFrame(rows)


def _knobs(rec: dict) -> dict:
    return {k: rec.get(f"config.{k}") for k in ("tp", "pp", "vp", "cp", "ep", "dp", "micro_batch_size", "grad_accum",
                                                "activation_checkpointing", "fsdp", "precision")}


def markdown(result: dict) -> str:
    """The report: the summary table (plan beside a random pick), the OOM counts, the recipes."""
    s = result["summary"]
    lines = [f"Plan benchmark: {result['member']} fitted without each group (leave-one-group-out), "
             f"{int(s.loc['all', 'groups'])} groups of measured layouts.", "",
             "| dataset | groups | layouts | median top-1 regret (random) | P@3 (random) | Kendall | pick is best "
             "(random) | pick within 5% (random) | within 5%, no memory filter |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, r in s.iterrows():
        lines.append(f"| {name} | {int(r['groups'])} | {int(r['layouts'])} | {r['median_regret']:.1%} "
                     f"({r['random_median_regret']:.1%}) | {r['mean_p_at_3']:.2f} ({r['random_p_at_3']:.2f}) | "
                     f"{r['grouped_kendall']:.2f} | {r['pick_is_best']:.0%} ({r['random_is_best']:.0%}) | "
                     f"{r['pick_within_5']:.0%} ({r['random_within_5']:.0%}) | {r['unfiltered_within_5']:.0%} |")
    if "curse" in result:
        lines += ["", f"Winner's curse, per kind of model: {_curse_text(result['curse'])}; plan's pick as reported (its "
                      "advantage shrunk by its kind's share fitted without its group) over as measured: median "
                      f"{result['groups']['pick_reported_over_measured'].median():.3f}."]
    o = result["oom"]
    lines += ["", f"Out of memory: {o['oom_jobs']} measured OOM jobs in these groups, {o['oom_called_feasible']} of "
                  f"them called feasible by the memory model; plan's pick ran out of memory in "
                  f"{o['groups_whose_pick_ran_out_of_memory']} group(s); {o['jobs_that_ran_called_infeasible']} jobs "
                  "that ran are called infeasible."]
    rec = result.get("recipes")
    if rec is not None and len(rec):
        priced = rec.dropna(subset=["predicted_gain"]) if "predicted_gain" in rec else rec.iloc[:0]
        ties = int(((priced["gain_low"] <= 0) & (priced["gain_high"] >= 0)).sum())
        c = claim_counts(priced)
        lines += ["", f"Published recipes: {len(rec)} planned, {len(priced)} priced; median gain of plan's pick over the "
                      f"recipe net of the winner's curse {priced['gain'].median():+.1%} (predicted "
                      f"{priced['predicted_gain'].median():+.1%}), {ties} inside their 80% interval (ties); the memory "
                      f"model calls {int((~priced['recipe_fits'].astype(bool)).sum())} recipes infeasible.",
                  "", f"Claimed beaten (an 80% interval above zero, backed by a published run of the pick's structure "
                      f"where the pick leaves an EP recipe's): {c['claimed']} recipes, {c['moe_claimed']} of the "
                      f"{c['moe']} MoE ones ({c['unbacked']} MoE gains above zero unbacked); MoE recipes' median "
                      f"expected gain {c['moe_median_gain']:+.1%}.", "",
                  "| source | model | GPUs | recipe | fits | measured | predicted | plan's pick | predicted gain | "
                  "expected gain (80%) | claim |",
                  "| --- | --- | --- | --- | --- | ---: | ---: | --- | ---: | ---: | --- |"]
        for r in priced.to_dict("records"):
            lines.append(f"| {r['dataset']} | {r['model']} | {r['gpus']} x {r['accelerator']} | {r['recipe']} | "
                         f"{'yes' if r['recipe_fits'] else 'no'} | {r['measured']:,.0f} | {r['predicted']:,.0f} | "
                         f"{r['plan_pick']} | {r['predicted_gain']:+.1%} | {r['gain']:+.1%} ({r['gain_low']:+.1%} .. "
                         f"{r['gain_high']:+.1%}) | {r['claim'] or '-'} |")
    return "\n".join(lines)


def claim_counts(priced: pd.DataFrame) -> dict:
    """Of the priced recipes (their ``kind``, ``claim`` and ``gain``): how many are claimed beaten, overall and
    of MoE models, how many MoE gains above zero are unbacked, and the MoE recipes' median expected gain.

    >>> claim_counts(pd.DataFrame({"kind": ["dense", "moe", "moe"], "claim": ["claimed", "tie", "unbacked: x"],
    ...                            "gain": [0.3, 0.1, 0.5]}))
    {'claimed': 1, 'moe': 2, 'moe_claimed': 0, 'unbacked': 1, 'moe_median_gain': 0.3}
    """
    moe = priced[priced["kind"] == "moe"]
    claimed = priced["claim"] == "claimed"
    return {"claimed": int(claimed.sum()), "moe": len(moe), "moe_claimed": int(claimed[moe.index].sum()),
            "unbacked": int(moe["claim"].astype(str).str.startswith("unbacked").sum()),
            "moe_median_gain": float(moe["gain"].median()) if len(moe) else float("nan")}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m perfzoo.plan benchmark", description=__doc__.split("\n\n")[0])
    p.add_argument("--predictor", help="the member plan ranks with (default: the leaderboard's best for published-llm)")
    p.add_argument("--memory-margin", type=float, help="as plan's (default: the rule derived from measured peaks)")
    p.add_argument("--no-recipes", dest="recipes", action="store_false", help="skip planning each published recipe")
    p.add_argument("--external-dir", metavar="DIR", help="the external-data directory")
    p.add_argument("--json", action="store_true", help="print the summary and groups as JSON")
    p.add_argument("--out", metavar="FILE.md", help="also write the report here")
    p.set_defaults(**field_defaults(BenchmarkConfig))
    return p


def write_page(path: str, title: str, argv: Sequence[str], seconds: float, text: str) -> None:
    """A generated page of the documentation: ``text`` under ``title``, with the command that wrote it."""
    with open(path, "w") as f:
        f.write(f"# {title}\n\nWritten by `python -m perfzoo.plan benchmark {' '.join(argv)}` on "
                f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} ({seconds:.0f} s); do not edit by hand.\n\n"
                f"{text}\n")


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)

    def body() -> int:
        config = config_from_args(BenchmarkConfig, args)
        result = run(config)
        text = markdown(result)
        if config.json:
            rec = result.get("recipes", pd.DataFrame())
            claimed = claim_counts(rec.dropna(subset=["predicted_gain"])) if "claim" in rec else None
            print(json.dumps({"member": result["member"], "summary": result["summary"].to_dict("index"),
                              "oom": result["oom"], "curse": result["curse"], "claims": claimed,
                              "groups": result["groups"].to_dict("records"), "recipes": rec.to_dict("records")},
                             default=str))
        else:
            print(text)
            print(f"\n({result['seconds']:.0f} s)")
        if config.out:  # a page of the documentation (docs/results/plan-benchmark.md)
            write_page(config.out, "Plan benchmark", argv, result["seconds"], text)
        return 0

    return guarded("perfzoo.plan benchmark", body)


__all__ = ["BenchmarkConfig", "GROUP_DATASETS", "Pool", "claim_counts", "groups_of", "main", "run", "score_group",
           "summarise"]
