"""The plan command as a library: :class:`PlanConfig` and :func:`run`, what ``python -m
perfzoo.plan`` (:mod:`perfzoo.plan.cli`) does with a parsed command line: the model resolved
(catalog name, ``config.json`` or ``--set``), the scorer (the leaderboard's best for the
published tables, another zoo member, a saved predictor; anchored on ``--calibrate`` runs),
the published layouts of the same model and cluster, the plan, and the files it writes.

Python API
----------
::

    from perfzoo.plan.command import PlanConfig, run
    result = run(PlanConfig(model="llama3-70b", gpus=64, accelerator="H100-SXM-80GB", seq_len=8192,
                            global_batch=256, precision="fp8"))
    result.plan.top(10)
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pandas as pd

from perfzoo import analytic, frameworks, llmconfig, pricing
from perfzoo.console import InputError, assignments, check_figure, check_writable
from perfzoo.datasets import load_dataset
from perfzoo.datasets.dataset import Dataset
from perfzoo.plan import claims, export, gains, report
from perfzoo.plan.layouts import LAYOUT_KNOBS, MOE_KNOBS, Cluster
from perfzoo.plan.planner import EXHAUSTIVE_LIMIT, Plan, model_keys, plan
from perfzoo.plan.propose import PROPOSERS, STOP_MARGIN, step
from perfzoo.plan.recipes import published_layouts, slot_mask, task_kind
from perfzoo.plan.scoring import Scorer
from perfzoo.search import Reinforce
from perfzoo.zoo.extrapolation import outside_training

PUBLISHED = pricing.PUBLISHED  # the shared published tables: the default training data and the baselines


@dataclass(frozen=True)
class PlanConfig:
    """One plan request, as :func:`run` takes it; ``python -m perfzoo.plan`` translates its flags
    onto it field for field (``--set`` is ``knobs``, ``--baseline`` is ``baseline``).

    >>> PlanConfig(model="llama3-8b", gpus=8, accelerator="H100", seq_len=4096, global_batch=64, top_k=0)
    Traceback (most recent call last):
    ...
    perfzoo.console.InputError: --top-k must be at least 1
    """

    model: Optional[str] = None  # a catalog name (--list-models) or a config.json path; or the shape in --set
    gpus: Optional[int] = None  # GPUs in the cluster
    accelerator: Optional[str] = None  # a row of the accelerator table
    seq_len: Optional[int] = None  # tokens per sequence
    global_batch: Optional[int] = None  # sequences per optimizer step
    precision: str = "bf16"  # comma-separated precisions to consider (bf16,fp8)
    nodes_of: Optional[int] = None  # GPUs per node and NVLink domain (default: the table's host and domain)
    top_k: int = 10  # layouts shown and written
    knobs: list[str] = field(default_factory=list)  # KEY=VALUE model keys (--set n_layers=... hidden_dim=...)
    baseline: list[str] = field(default_factory=list)  # KEY=VALUE layout knobs of your own layout (tp=4 pp=8)
    predictor: str = "best"  # 'best' (the leaderboard's for dataset), a zoo member fitted on dataset, or a saved folder
    dataset: str = PUBLISHED  # the predictor's training data (a zoo member is fitted on it)
    calibrate: Optional[str] = None  # your measured runs: they anchor the predictor (perfzoo.zoo.calibrate.calibrated)
    memory_margin: Optional[float] = None  # a fraction of device memory kept free (default: the rule from measured peaks)
    exhaustive_limit: int = EXHAUSTIVE_LIMIT  # the most valid layouts scored one by one (else REINFORCE)
    tp_beyond_node: bool = False  # let tensor parallelism span NVLink domains
    allow_token_drop: bool = False  # an MoE model's layouts may drop tokens over capacity (dropless otherwise)
    seed: int = 0  # the searcher's seed
    out: Optional[str] = None  # write the top k here as collect configs (and the space beside it, .toml)
    plot: Optional[str] = None  # write the plot here (.png)
    external_dir: Optional[str] = None  # the external-data directory (published tables)
    framework: Optional[str] = None  # price every layout as this framework runs it (perfzoo.frameworks)
    export: Optional[str] = None  # write the top k as the framework's launch scripts in this folder
    baseline_from: Optional[str] = None  # your torchtitan / Megatron-LM launch line or torchtitan TOML: the baseline
    propose: Optional[int] = None  # pick this many layouts worth measuring; --out / --export write them
    proposer: str = "ei"  # how: ei, thompson or topk (perfzoo.plan.propose)
    stop_margin: float = STOP_MARGIN  # the stopping rule: stop once no unmeasured layout's 80% upper bound beats
    # the best measured by more than this

    def __post_init__(self):
        if self.top_k < 1:
            raise InputError("--top-k must be at least 1")
        if self.propose is not None and self.propose < 1:
            raise InputError(f"--propose {self.propose}: give how many layouts to measure, 1 or more")
        if self.proposer not in PROPOSERS:
            raise InputError(f"--proposer {self.proposer}: one of {', '.join(PROPOSERS)}")
        if not 0 <= self.stop_margin < 1:
            raise InputError(f"--stop-margin {self.stop_margin}: give a fraction, e.g. 0.02 for 2%")
        if self.exhaustive_limit < 1:
            raise InputError(f"--exhaustive-limit {self.exhaustive_limit}: give the most layouts to score one by "
                             f"one, 1 or more (default {EXHAUSTIVE_LIMIT:,})")
        pricing.check_spec(self.predictor)
        pricing.check_dataset(self.dataset, self.external_dir)
        if self.framework is not None:
            frameworks.get(self.framework)
        if self.export is not None:
            if self.framework is None and self.baseline_from is None and not any(
                    k.replace(" ", "").startswith("framework=") for k in self.knobs):
                raise InputError(f"--export {self.export}: give --framework {'|'.join(frameworks.FRAMEWORKS)}, "
                                 "the framework whose launch lines it writes")
            export.check_folder(self.export)
            folder = Path(self.export)  # a file must go in it (or beside it, where it is still to be made)
            check_writable("--export", folder / "rank01.sh" if folder.is_dir() else folder)
        if self.out is not None and report.space_file(self.out) == Path(self.out):
            raise InputError(f"--out {self.out}: its space is written beside it as .toml; give a .jsonl path")
        for flag, path in (("--out", self.out), ("--out", report.space_file(self.out) if self.out else None)):
            if path is not None:
                check_writable(flag, path, make_folder=True)  # write_configs makes its folder (runs/)
        if self.plot is not None:
            check_figure("--plot", self.plot)
        if self.baseline_from is not None:
            if not Path(self.baseline_from).is_file():
                raise InputError(f"--baseline-from {self.baseline_from}: no such file")
            return  # the rest is checked once the file has filled in what it gives (export.with_baseline)
        if self.model is None and not self.knobs:
            raise InputError("give --model NAME_OR_CONFIG (python -m perfzoo.plan --list-models) or the shape with "
                             "--set n_layers=... hidden_dim=... n_heads=... vocab_size=...")
        for flag, value in (("--gpus", self.gpus), ("--accelerator", self.accelerator), ("--seq-len", self.seq_len),
                            ("--global-batch", self.global_batch)):
            if value is None:
                raise InputError(f"give {flag}: a plan is for one cluster and one training job")
        for flag, value, unit in (("--seq-len", self.seq_len, "tokens"), ("--global-batch", self.global_batch,
                                                                          "sequences")):
            if value < 1:
                raise InputError(f"{flag} {value}: give a whole number of {unit}, 1 or more")
        for key, value in assignments(self.knobs, "--set").items():
            flag = FLAG_KEYS.get(key)
            if flag is not None and (flag != "--model" or self.model is not None):  # a shape of your own may be named
                raise InputError(f"--set {key}={value}: {flag} says that in a plan; give it once, with {flag}")
        for key, value in assignments(self.baseline, "--baseline").items():
            if key not in LAYOUT_KNOBS + MOE_KNOBS:
                raise InputError(f"--baseline '{key}={value}': {key} is not a layout knob; knobs are "
                                 f"{', '.join(LAYOUT_KNOBS + MOE_KNOBS)}")
        if self.calibrate is not None and not Path(self.calibrate).exists():
            raise InputError(f"--calibrate {self.calibrate}: no such file or folder; give a runs CSV, a "
                             "published-table CSV or a record store")

    def precisions(self) -> tuple[str, ...]:
        return tuple(p.strip() for p in str(self.precision).split(",") if p.strip())


# model keys a plan takes from its own flags, never from --set (a second value would be dropped unseen)
FLAG_KEYS = {"model": "--model", "model_name": "--model", "n_gpus": "--gpus", "accelerator": "--accelerator",
             "seq_len": "--seq-len", "global_batch_size": "--global-batch"}


@dataclass
class PlanResult:
    """What :func:`run` returns: the :class:`~perfzoo.plan.planner.Plan`, the files written and the log;
    ``unseen_hardware``: the note on an accelerator the published tables have no row of (the
    command prints it first), empty when they have one."""

    plan: Plan
    unseen_hardware: str = ""
    out: Optional[Path] = None
    space_file: Optional[Path] = None
    plot: Optional[Path] = None
    exported: list[Path] = field(default_factory=list)
    seconds: float = 0.0


def published_tables(external_dir: Optional[str], log) -> Optional[Dataset]:
    """The published tables the baselines come from; None (and a log line saying why) without them."""
    try:
        return load_dataset(PUBLISHED, external_dir=external_dir)
    except (FileNotFoundError, KeyError, ValueError) as exc:
        log(f"baseline: no published tables to compare with ({' '.join(str(exc).split())[:160]})")
        return None


def interval(result: Plan, resolved: pricing.Resolved, top: pd.DataFrame) -> str:
    """The predictor's 80% interval for the top layouts (``top``: their configs, best first), widened
    beyond its training data and for an accelerator it never saw (:func:`perfzoo.pricing.interval`),
    as the plan's ``range_low`` and ``range_high`` of those rows (where no standard deviation gave a
    range); the notes say why it is wider. Returns the note on an accelerator the predictor never saw
    (the command prints it first; empty where it saw it)."""
    params = analytic.estimate(top)["n_params"].to_numpy(dtype=float)
    result.notes.extend(outside_training(top.head(1), params[:1], resolved.seen)[0])
    scale = 1.0 if resolved.per_device else 1.0 / top["config.n_gpus"].to_numpy(dtype=float)
    spread = pricing.interval(resolved, top.reindex(columns=list(result.scorer.columns)), top, params, scale)
    unseen = str(spread["unseen_hardware"][0])
    if "range_low" in result.layouts or "low" not in spread:
        return unseen
    result.layouts["range_low"] = result.layouts["range_high"] = float("nan")
    rows = result.layouts.index[:len(top)]
    result.layouts.loc[rows, "range_low"], result.layouts.loc[rows, "range_high"] = spread["low"], spread["high"]
    why = [what for what, on in (("the extrapolation above", spread["doublings"].max() > 0),
                                 ("the unseen accelerator (first line)", spread["hardware_widening"][0] > 0)) if on]
    source = "calibrated on your runs" if resolved.runs else "calibrated across published sources"
    result.notes.append(f"interval: the predictor's 80% interval ({source}) for the top {len(top)}"
                        + (f", widened for {' and '.join(why)}" if why else ""))
    return unseen


def run(config: PlanConfig, log=None) -> PlanResult:
    """The plan ``config`` asks for (see the module docstring); files written where it says.
    Progress goes to ``log`` (default: stderr)."""
    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    t0 = time.perf_counter()
    if config.baseline_from is not None:
        config = export.with_baseline(config, log)
    overrides = assignments(config.knobs, "--set")
    if config.framework is not None:
        if overrides.get("framework", config.framework) != config.framework:
            raise InputError(f"--framework {config.framework} and --set framework={overrides['framework']}: keep one")
        overrides["framework"] = config.framework
    shape, sources = model_keys(config.model, overrides)
    pricing.check_stated(shape)  # what predict refuses, plan refuses: n_params another shape counts, no release
    export.check(shape, config.precisions(), written=config.export is not None)
    cluster = Cluster(gpus=config.gpus, accelerator=config.accelerator, gpus_per_node=config.nodes_of)
    tables = published_tables(config.external_dir, log)
    resolved = pricing.resolve(config.predictor, config.dataset, runs=config.calibrate, external_dir=config.external_dir,
                               log=log, training=tables if config.dataset == PUBLISHED else None)
    published, note = None, ""
    if tables is not None:
        model_name = str(shape.get("model_name"))
        published = published_layouts(tables, model_name, cluster, config.seq_len, config.global_batch,
                                      config.precisions(), shape.get("task")).head(3)
        log(f"baseline: {len(published)} published layout(s) of {model_name} on {cluster.describe()} at seq "
            f"{config.seq_len:,}, global batch {config.global_batch:,}, {task_kind(shape.get('task'))} in "
            f"{'/'.join(config.precisions())} in {PUBLISHED}")
        if len(published) and config.dataset == PUBLISHED:  # every layout priced out of sample
            slot = slot_mask(tables, model_name, cluster, config.seq_len)
            why = (f"the {int(slot.sum())} published run(s) of this model on this cluster at this sequence: every "
                   "layout, published ones too, priced out of sample")
            refit = pricing.refit_without(resolved, slot, why)
            if refit is not resolved:
                log(f"predictor: {refit.note}")
                resolved, note = refit, f"refitted without {why}"
    scorer = Scorer(resolved.predictor, per_device=resolved.per_device, memory_margin=config.memory_margin, note=note)
    baseline = assignments(config.baseline, "--baseline") or None
    result = plan(shape, cluster, seq_len=config.seq_len, global_batch=config.global_batch,
                  precisions=config.precisions(), scorer=scorer, baseline=baseline, published=published,
                  exhaustive_limit=config.exhaustive_limit, searcher=Reinforce(seed=config.seed),
                  tp_beyond_node=config.tp_beyond_node, token_drop=config.allow_token_drop, log=log,
                  runs=claims.structures(pd.DataFrame() if tables is None else tables.frame))
    result.sources = sources
    if len(result.baselines):  # a pick that leaves an MoE recipe's EP or dispatcher names the terms it gains by
        result.baselines["faster_by"] = gains.faster_by(result)
    unseen = ""
    if tables is not None or config.dataset != PUBLISHED:  # what the predictor saw, to widen its interval beyond
        top = pd.DataFrame([llmconfig.as_columns(c) for c in result.configs(config.top_k)]).assign(**cluster.hardware())
        unseen = interval(result, resolved, top)
    result.notes.extend(report.explain(result))
    if config.propose is not None or config.calibrate is not None:  # the loop's next turn, or the rule to stop it
        result.proposed, result.stop = step(result, config.propose, config.proposer, config.stop_margin)
    out = PlanResult(plan=result, unseen_hardware=unseen)
    if config.out:
        out.out, out.space_file = report.write_configs(result, config.out, config.top_k)
        log(f"wrote {out.out} and {out.space_file}; run them: {report.collect_command(out.out, out.space_file, result)}")
    if config.export:
        out.exported = export.write(result, shape["framework"], config.export, config.top_k)
        log(f"wrote {len(out.exported)} {shape['framework']} launch scripts to {config.export} "
            f"({', '.join(p.name for p in out.exported[:3])}{' ...' if len(out.exported) > 3 else ''})")
    if config.plot:
        out.plot = report.plot(result, config.plot, config.top_k)
        log(f"wrote {out.plot}")
    out.seconds = time.perf_counter() - t0
    return out


__all__ = ["PUBLISHED", "PlanConfig", "PlanResult", "interval", "published_tables", "run"]
