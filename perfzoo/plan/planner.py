"""The plan: every layout of a model on a cluster, checked against the memory model and ranked.

:func:`plan` builds the layout space (:mod:`perfzoo.plan.layouts`), enumerates its valid
layouts with numpy, drops those the memory model says do not fit (and counts them), and ranks
the rest by the scorer's predicted tokens/s per GPU (:mod:`perfzoo.plan.scoring`):
exhaustively when the space holds at most ``exhaustive_limit`` valid layouts, otherwise with
the REINFORCE searcher over the same space (:mod:`perfzoo.search`), a layout that does not fit
getting the lowest reward. Baselines (a user's layout, the published ones) are priced by the
same scorer, the knobs a user's baseline leaves out filled as ``predict`` fills them
(:mod:`perfzoo.llmconfig.layout_defaults`); the :class:`Plan` says where each ranks and what the top pick
gains over it, net of the winner's curse (:mod:`perfzoo.plan.shrinkage`: a gain whose 80% interval
holds 0 is a tie), whether that is a claim (:mod:`perfzoo.plan.claims`: one over an EP recipe the pick
leaves needs a published run of the pick's structure), and, where the scorer gives an interval, which layouts are predicted inside the
top pick's (``Plan.tie``: their order is within the predictor's error). A predictor that returns NaN for a layout that fits is an error naming the predictor.

>>> from perfzoo.search import Formula
>>> from perfzoo.plan.scoring import Scorer
>>> fewer_stages = Scorer(Formula(lambda X: 1000.0 / X["config.pp"].to_numpy()))   # a toy predictor
>>> p = plan({"n_layers": 8, "hidden_dim": 1024, "n_heads": 8, "vocab_size": 32000},
...          Cluster(gpus=1, accelerator="H100-SXM-80GB"), seq_len=2048, global_batch=8, scorer=fewer_stages)
>>> top = p.top(1).iloc[0]
>>> int(top["tp"]), int(top["pp"]), p.method
(1, 1, 'exhaustive')
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np
import pandas as pd

from harness.environment import cpu_cores
from perfzoo import frameworks, llmconfig, pricing
from perfzoo.console import RunFailed
from perfzoo.analytic.memory import MemoryRule
from perfzoo.llmconfig import huggingface, layout_defaults
from perfzoo.plan.layouts import DERIVED_KNOBS, LAYOUT_KNOBS, MOE_KNOBS, Cluster, PlanError, as_run, layout_space
from perfzoo.plan import claims, shrinkage
from perfzoo.plan.scoring import Scorer
from perfzoo.records.columns import Columns
from perfzoo.search import Objective, Reinforce, Searcher
from perfzoo.spaces import Space
from perfzoo.spaces.codec import SpaceCodec
from perfzoo.zoo.analytic_features import estimates, host_paced
from perfzoo.zoo.features import as_columns

SHORTFALL = 0.75  # a baseline predicted under this share of its measurement says which term weighs most
EXHAUSTIVE_LIMIT = 250_000  # valid layouts scored one by one; past this, REINFORCE
CHUNK = 2 ** 16  # grid points checked for validity at once (their index rows stay in the cache)
COUNT_LIMIT = 50_000_000  # past this many grid points the valid ones are not counted
SHAPE_KEYS = ("n_layers", "hidden_dim", "n_heads", "vocab_size")
KNOBS = LAYOUT_KNOBS + MOE_KNOBS + DERIVED_KNOBS


def resolve_model(model: Union[str, Path, dict], overrides: Optional[dict] = None) -> dict:
    """The checked shape keys of ``model``: a catalog name, a Hugging Face ``config.json`` path
    (read locally, :func:`perfzoo.llmconfig.huggingface.read`) or a dict of keys; ``overrides`` (``--set``)
    win. A :class:`PlanError` names what is missing."""
    return model_keys(model, overrides)[0]


def model_keys(model: Union[str, Path, dict, None], overrides: Optional[dict] = None) -> tuple[dict, dict]:
    """:func:`resolve_model`'s keys, and where each came from (``catalog (NAME)``, ``config.json``,
    a ``transformers`` default, ``--set`` or ``given``)."""
    overrides = dict(overrides or {})
    from_file = not isinstance(model, dict) and model is not None and (Path(str(model)).is_file()
                                                                       or str(model).endswith(".json"))
    if isinstance(model, dict):
        keys, sources = dict(model), {k: "given" for k in model}
    elif model is None:
        keys, sources = {}, {}
    elif from_file:
        try:
            keys, sources = huggingface.read(model, overrides)
        except ValueError as exc:
            raise PlanError(str(exc)) from None
    else:
        keys = llmconfig.preset(str(model))
        sources = {k: f"catalog ({keys['model_name']})" for k in keys}
    sources.update({k: "--set" for k in overrides})
    # a config.json's model is what the file says: its name must not fill the file's gaps from the catalog
    name = keys.pop("model_name", None) if from_file and "model_name" not in overrides else None
    keys = llmconfig.check({**keys, **overrides}, require=False)
    if name is not None:
        keys["model_name"] = name
    missing = [k for k in SHAPE_KEYS if k not in keys]
    if keys.get("n_experts", 1) > 1 and "experts_per_token" not in keys:
        missing.append("experts_per_token")
    if missing:
        raise PlanError(f"the model gives no {', '.join(missing)}: name a catalog model (--list-models), a "
                        "config.json, or --set " + " ".join(f"{k}=..." for k in missing))
    return keys, sources


@dataclass
class Plan:
    """What :func:`plan` found.

    ``layouts``: every scored layout (they all fit), its knobs and the scorer's columns, ranked
    (``rank`` 1 = the fastest predicted); ``baselines``: the layouts it was asked to compare
    with (``label``, ``rank`` among the layouts, ``predicted_gain``: the top pick's predicted
    speed-up over it, ``gain`` with ``gain_low`` .. ``gain_high``: the speed-up expected net of the
    winner's curse and its 80% interval, :mod:`perfzoo.plan.shrinkage`, ``within_error`` where that
    holds 0; ``claim``: :func:`perfzoo.plan.claims.verdict`; ``measured_tokens_per_s_per_device`` where
    published); every layout's
    ``expected_tokens_per_s_per_device``: its prediction with its advantage over the layouts it
    was chosen among (the tie set) shrunk; ``counts``: ``grid`` points,
    ``generated`` (valid layouts), ``memory_checked``, ``feasible``, ``infeasible`` and
    ``scored``; ``method`` and ``reason``: how they were scored and why; ``sources``: where each
    model key came from (:func:`model_keys`); ``tie``: the top pick's interval (``low``, ``high``,
    ``what``) and ``ranks``, how many of the ranked layouts are predicted inside it (None when the
    predictor gives no interval): their order is within the predictor's error.
    """

    model: dict
    cluster: Cluster
    seq_len: int
    global_batch: int
    precisions: tuple
    space: Space
    layouts: pd.DataFrame
    baselines: pd.DataFrame
    counts: dict
    method: str
    reason: str
    scorer: Scorer
    notes: list[str] = field(default_factory=list)
    sources: dict = field(default_factory=dict)
    tie: Optional[dict] = None
    proposed: Optional[pd.DataFrame] = None  # the layouts to measure (plan --propose, perfzoo.plan.propose)
    stop: Optional[str] = None  # after --calibrate: stop, or which to measure next (perfzoo.plan.propose.step)
    codec: Optional[SpaceCodec] = field(default=None, repr=False)  # the space's, made once (its tables take time)

    def within_error(self, predicted: float) -> bool:
        """Whether a prediction (tokens/s per GPU) lies inside the top pick's interval: no
        measurable difference from it."""
        return self.tie is not None and self.tie["low"] <= predicted <= self.tie["high"]

    def top(self, k: int = 10) -> pd.DataFrame:
        """The ``k`` best layouts, best first."""
        return self.layouts.head(k)

    def to_frame(self, k: Optional[int] = None) -> pd.DataFrame:
        """The top ``k`` layouts (all when None) with ``role`` ``candidate``, then the baselines
        with ``role`` ``baseline``."""
        cand = (self.layouts if k is None else self.layouts.head(k)).assign(role="candidate")
        return pd.concat([cand, self.baselines.assign(role="baseline")], ignore_index=True, sort=False)

    def written(self, k: int = 10) -> pd.DataFrame:
        """What ``--out`` and ``--export`` write: the layouts :attr:`proposed` to measure, else the top ``k``."""
        return self.top(k) if self.proposed is None else self.proposed

    def configs(self, k: int = 10, rows: Optional[pd.DataFrame] = None) -> list[dict]:
        """The top ``k`` layouts (or ``rows`` of :attr:`layouts`) as complete configs of :attr:`space`
        (model, workload, layout)."""
        if self.codec is None:
            self.codec = SpaceCodec(self.space)
        codec = self.codec
        keys = (self.layouts["key"].head(k) if rows is None else rows["key"]).to_numpy(dtype=np.int64)
        return codec.configs(codec.decode(keys))


class _Recorder:
    """The search's model: the scorer's prediction where a layout fits, NaN (the lowest reward)
    where it does not; keeps every frame it priced so the plan can show them all."""

    output = "throughput"
    has_std = False

    def __init__(self, scorer: Scorer, codec: SpaceCodec):
        self.scorer = scorer
        self.codec = codec
        self.parts: list[pd.DataFrame] = []

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        layouts = as_columns(X)
        memory = self.scorer.memory(layouts)
        scored = _scored(self.scorer, layouts, memory, _keys(self.codec, X))
        self.parts.append(scored)
        out = np.full(len(X), np.nan)
        out[memory["fits"].to_numpy()] = scored.loc[scored["fits"], "predicted_tokens_per_s_per_device"].to_numpy()
        return out


def _keys(codec: SpaceCodec, frame: pd.DataFrame) -> np.ndarray:
    """The codec keys of a frame's layouts (vectorised: each knob's value to its index)."""
    idx = np.column_stack([pd.Index(list(values)).get_indexer(frame[f"config.{name}"].astype(object))
                           for name, values in zip(codec.names, codec.values)])
    return codec.keys(idx)


def _scored(scorer: Scorer, layouts: Columns, memory: pd.DataFrame, keys: np.ndarray, n_jobs: int = 1) -> pd.DataFrame:
    """The knobs, key and memory of every layout; the scorer's columns where it fits."""
    out = pd.DataFrame({k: pd.Series(layouts.full(f"config.{k}") if f"config.{k}" in layouts else [None] * len(
        layouts)).to_numpy(dtype=object) for k in KNOBS}, index=layouts.index)  # a dense model has no MoE knob
    out["key"] = keys
    fits = memory["fits"].to_numpy()
    scored = _in_parts(scorer.score, layouts.take(fits), n_jobs, memory[fits])
    out = out.join(memory)
    for col in scored.columns.difference(memory.columns):
        out[col] = np.nan
        out.loc[fits, col] = scored[col].to_numpy()
    return out.reset_index(drop=True)


def _in_parts(fn: Callable[..., pd.DataFrame], layouts: Columns, n_jobs: int, *frames: pd.DataFrame) -> pd.DataFrame:
    """``fn(layouts, *frames)``, as ``n_jobs`` calls on consecutive slices of the rows, each in its own
    thread (numpy and LightGBM leave the interpreter while they compute): the same rows as one
    call, since the memory model and the predictors price each layout by itself."""
    if n_jobs <= 1 or len(layouts) < 2 * n_jobs:
        return fn(layouts, *frames)
    cuts = np.linspace(0, len(layouts), n_jobs + 1).astype(int)
    parts = [(layouts.take(np.arange(a, b)), *(f.iloc[a:b] for f in frames)) for a, b in zip(cuts[:-1], cuts[1:])]
    with ThreadPoolExecutor(n_jobs) as pool:
        done = list(pool.map(lambda part: fn(*part), parts))
    return pd.concat(done).set_axis(frames[0].index if frames else layouts.index)


def _valid(codec: SpaceCodec, keep: int) -> tuple[int, Optional[np.ndarray]]:
    """How many grid points are valid layouts, and their index rows where there are at most ``keep``."""
    if codec.size > COUNT_LIMIT:
        return -1, None
    count, rows = 0, []
    for start in range(0, codec.size, CHUNK):
        idx = codec.all_indices(start, start + CHUNK)
        ok = codec.valid(idx)
        count += int(ok.sum())
        rows = rows + [idx[ok]] if count <= keep else []
    return count, (np.concatenate(rows) if rows else None)


def _fits_nowhere(model: dict, cluster: Cluster, memory: pd.DataFrame, rule: MemoryRule, n: int) -> PlanError:
    lean = int(np.nanargmin(rule.needed(memory["peak_allocated_gib"], memory["memory_gib"])))
    need = float(rule.needed(memory["peak_allocated_gib"].iloc[lean], memory["memory_gib"].iloc[lean]))
    device = float(memory["device_memory_gib"].iloc[lean])
    usable = device if rule.margin is None else (1.0 - rule.margin) * device
    what = ("with the memory model's error at its stated risk" if rule.margin is None else
            f"of the {usable:,.1f} GiB usable ({device:,.0f} GiB less the {rule.margin:.0%} margin)")
    return PlanError(f"{model.get('model_name', 'the model')} fits in none of the {n:,} layouts on "
                     f"{cluster.describe()}: the leanest needs {need:,.1f} GiB per GPU {what}, {need - usable:,.1f} GiB "
                     f"more than the {usable:,.1f} GiB of a GPU; use more GPUs or an accelerator with more memory")


def plan(model: Union[str, Path, dict], cluster: Cluster, *, seq_len: int, global_batch: int,
         precisions: Sequence[str] = ("bf16",), scorer: Optional[Scorer] = None,
         baseline: Optional[dict] = None, published: Optional[pd.DataFrame] = None,
         runs: Optional[pd.DataFrame] = None, exhaustive_limit: int = EXHAUSTIVE_LIMIT, searcher: Optional[Searcher] = None,
         tp_beyond_node: bool = False, framework: Optional[str] = None, token_drop: bool = False,
         log: Optional[Callable[[str], Any]] = None, n_jobs: Optional[int] = None) -> Plan:
    """The ranked layouts of ``model`` on ``cluster`` (see the module docstring).

    Parameters
    ----------
    model : a catalog name, a ``config.json`` path, or a dict of shape keys.
    cluster : the GPUs (:class:`~perfzoo.plan.layouts.Cluster`).
    seq_len, global_batch : tokens per sequence, sequences per optimizer step.
    precisions : the precisions to consider (each checked against the accelerator).
    scorer : the :class:`~perfzoo.plan.scoring.Scorer` (default: the leaderboard's best for
        ``published-llm``, the memory rule derived from measured peaks).
    baseline : a layout to compare with (``{"tp": 4, "pp": 8}``; unnamed knobs as
        :func:`perfzoo.llmconfig.layout_defaults.complete` fills them, precision the first of ``precisions``).
    published : published layouts to compare with (:func:`~perfzoo.plan.recipes.published_layouts`).
    runs : the published runs' structures a gain over an EP baseline is backed by
        (:func:`perfzoo.plan.claims.structures`; default: the shared tables', read once where needed).
    exhaustive_limit : the most valid layouts scored one by one; past it, ``searcher``
        (default: :class:`~perfzoo.search.Reinforce`, the paper's settings).
    tp_beyond_node : let tensor parallelism span NVLink domains.
    token_drop : let an MoE model's layouts drop tokens over an expert's capacity (dropless otherwise).
    framework : price every layout as this framework runs it, and keep to the layouts it can run
        (:mod:`perfzoo.frameworks`; default: the model's ``framework`` key, else none in particular);
        a baseline it cannot run is refused (``baseline``) or shown unpriced, with its rule (``published``).
    log : where progress lines go (default: nowhere).
    n_jobs : threads pricing the layouts scored one by one (default: the cores this process may
        use); the plan does not depend on it.
    """
    log = log or (lambda _msg: None)
    shape, sources = model_keys(model, {"framework": framework} if framework else None)
    # checked with the model's keys: a packed sample must fit the sequence
    workload = llmconfig.check({**shape, "seq_len": seq_len, "global_batch_size": global_batch}, require=False)
    precisions = tuple(dict.fromkeys(llmconfig.check({"precision": p}, require=False)["precision"]
                                     for p in (precisions or ())))
    if not precisions:
        raise PlanError("--precision: give at least one precision, e.g. bf16")
    for p in precisions:
        llmconfig.check_precision(p, cluster.spec)
    trains = frameworks.get(shape.get("framework"))  # those it trains in (the space says its rule where none)
    precisions = tuple(p for p in precisions if trains.takes("precision", p)) or precisions
    if scorer is None:
        scorer = default_scorer()
    space = layout_space(shape, cluster, workload["seq_len"], workload["global_batch_size"], precisions,
                         tp_beyond_node=tp_beyond_node, token_drop=token_drop)  # only those the framework runs
    yours = None  # the user's baseline, refused before any layout is priced where the framework cannot run it
    if baseline:
        try:
            yours = baseline_frame(shape, cluster, workload["seq_len"], workload["global_batch_size"], baseline,
                                   precisions[0], scorer.rule)
        except llmconfig.ConfigError as exc:
            raise PlanError(f"--baseline {' '.join(f'{k}={v}' for k, v in baseline.items())}: {exc}") from None
    codec = SpaceCodec(space)
    count, idx = _valid(codec, keep=exhaustive_limit)
    if count == 0:
        raise PlanError(f"no layout of {shape.get('model_name', 'the model')} on {cluster.describe()} divides the "
                        f"global batch of {workload['global_batch_size']} into whole micro-batches: give a global "
                        "batch that is a multiple of the data-parallel degrees")
    counts = {"grid": codec.size, "generated": count}
    if 0 < count <= exhaustive_limit:
        method = "exhaustive"
        reason = f"{count:,} valid layouts <= {exhaustive_limit:,}: every one checked and scored"
        log(f"plan: exhaustive ({reason})")
        layouts = codec.columns(idx, fixed=cluster.hardware())  # arrays, constants held once: no frame
        n_jobs = n_jobs or cpu_cores()
        memory = _in_parts(scorer.memory, layouts, n_jobs)
        if not memory["fits"].any():
            raise _fits_nowhere(shape, cluster, memory, scorer.rule, count)
        table = _scored(scorer, layouts, memory, codec.keys(idx), n_jobs)
    else:
        searcher = searcher or Reinforce()
        method = searcher.name
        many = f"{count:,}" if count > 0 else f"more than {COUNT_LIMIT:,} grid points of"
        reason = (f"{many} valid layouts > {exhaustive_limit:,}: {searcher.name} samples the space, each sampled "
                  "layout checked against the memory model and scored")
        log(f"plan: {searcher.name} ({reason})")
        recorder = _Recorder(scorer, codec)
        objective = Objective(codec, recorder, fixed=cluster.hardware(), seed=searcher.seed)
        searcher.propose(objective, 1)
        table = pd.concat(recorder.parts, ignore_index=True).drop_duplicates("key")
        if not table["fits"].any():
            raise _fits_nowhere(shape, cluster, table, scorer.rule, len(table))
    predicted = table["predicted_tokens_per_s_per_device"].to_numpy(dtype=float)
    unpriced = table["fits"].to_numpy(dtype=bool) & ~np.isfinite(predicted)
    if unpriced.any():  # a member that cannot price a layout is named, not its layouts dropped
        raise RunFailed(f"predictor {scorer.name} returned {predicted[unpriced][0]} for {int(unpriced.sum()):,} of the "
                        f"{int(table['fits'].sum()):,} layouts that fit: it cannot price them; choose another with "
                        "--predictor")
    counts["memory_checked"] = len(table)
    counts["feasible"] = int(table["fits"].sum())
    counts["infeasible"] = counts["memory_checked"] - counts["feasible"]
    # ties (equal predictions): less memory first, then the simpler layout (fewer model-parallel ranks, stages)
    ranked = table[table["fits"]].assign(_parts=lambda t: (t["tp"] * t["pp"] * t["cp"] * t["vp"] * t["ep"]).astype(float))
    ranked = ranked.sort_values(["predicted_tokens_per_s_per_device", "memory_gib", "_parts"],
                                ascending=[False, True, True], kind="stable").drop(columns="_parts").reset_index(drop=True)
    counts["scored"] = len(ranked)
    ranked.insert(0, "rank", np.arange(1, len(ranked) + 1))
    result = Plan(model=shape, cluster=cluster, seq_len=workload["seq_len"],
                  global_batch=workload["global_batch_size"], precisions=precisions, space=space, layouts=ranked,
                  baselines=pd.DataFrame(), counts=counts, method=method, reason=reason, scorer=scorer,
                  sources=sources, codec=codec)
    result.tie = _tie(result)
    predicted = result.layouts["predicted_tokens_per_s_per_device"]
    contenders = predicted.head(max(2, (result.tie or {}).get("ranks", 10)))  # what the top pick was chosen among
    result.layouts["expected_tokens_per_s_per_device"] = shrinkage.expected(predicted, contenders, shrinkage.kind(shape))
    result.baselines = _baselines(result, yours, published, runs)
    return result


def _tie(result: Plan) -> Optional[dict]:
    """The band around the top pick within which a layout's rank is within the predictor's error, and
    how many ranked layouts lie in it (None without one): the predictor's error between two layouts of
    one model where it has one (:meth:`~perfzoo.plan.scoring.Scorer.relative`: the layouts of a plan
    share their model's offset), else the top pick's own interval."""
    if result.layouts.empty:
        return None
    best = float(result.layouts["predicted_tokens_per_s_per_device"].iloc[0])
    relative = result.scorer.relative()
    if relative is not None:
        low, high = best / relative[1], best / relative[0]
        what = "80% error between two layouts of one model"
        ranks = int((result.layouts["predicted_tokens_per_s_per_device"] >= low).sum())
        return {"low": low, "high": high, "what": what, "ranks": ranks}
    top = pd.DataFrame([{**llmconfig.as_columns(result.configs(1)[0]), **result.cluster.hardware()}])
    found = result.scorer.interval(top)
    if found is None:
        return None
    low, high, what = float(found[0][0]), float(found[1][0]), found[2]
    ranks = int((result.layouts["predicted_tokens_per_s_per_device"] >= low).sum())
    return {"low": low, "high": high, "what": what, "ranks": ranks}


def baseline_frame(shape: dict, cluster: Cluster, seq_len: int, global_batch: int, knobs: dict,
                   precision: str, rule: MemoryRule = MemoryRule(),
                   refuse: bool = True) -> tuple[pd.DataFrame, layout_defaults.Completed]:
    """A user's baseline layout as a one-row frame, and what was filled: its degrees and batch
    checked by the front door, the knobs it leaves out completed as ``predict`` completes them
    (:func:`perfzoo.llmconfig.layout_defaults.complete`; precision: ``precision``), so both price it alike;
    one the framework cannot run is a :class:`~perfzoo.llmconfig.ConfigError` with its rule (``refuse``)."""
    unknown = [k for k in knobs if k not in KNOBS]
    if unknown:
        raise llmconfig.unknown_key_error(unknown[0], KNOBS, listed=f"the layout knobs {', '.join(KNOBS)}")
    cfg = llmconfig.check({**shape, "precision": precision, **knobs, "seq_len": seq_len,
                           "global_batch_size": global_batch, "n_gpus": cluster.gpus, "accelerator": cluster.spec.name})
    done = layout_defaults.complete({**cfg, "nodes": cluster.nodes}, rule, refuse=refuse)
    return pd.DataFrame([{**llmconfig.as_columns(done.config), **cluster.hardware()}]), done


def _published_knobs(row: dict) -> dict:
    """The layout knobs a published row states (whole numbers as ints)."""
    out = {}
    for key in LAYOUT_KNOBS + MOE_KNOBS:
        value = row.get(f"config.{key}")
        if value is None or (isinstance(value, float) and not np.isfinite(value)):
            continue
        out[key] = int(value) if isinstance(value, (float, np.floating)) and float(value).is_integer() else value
    return out


def _shortfall(frame: pd.DataFrame) -> list[str]:
    """Per layout, the term of the analytic step that weighs most: what a prediction far under a
    measurement points at (the host floor where the layout is host-paced)."""
    est = estimates(frame)
    _, paced = host_paced(est)
    terms = {"the pipeline bubble": est["bubble"] * est["step_time_s"], "TP communication": est["tp_time_s"],
             "EP all-to-all": est["ep_time_s"], "pipeline sends": est["pp_time_s"],
             "exposed DP/CP traffic": np.maximum(est["dp_time_s"] + est["cp_time_s"] - est["compute_time_s"], 0.0)}
    names, values = list(terms), np.column_stack([np.asarray(v, dtype=float) for v in terms.values()])
    return ["the host floor (a layer pass under the host's time)" if p else
            f"{names[int(np.nanargmax(v))]} ({float(np.nanmax(v)):.2f} s of a {float(t):.2f} s step)"
            for p, v, t in zip(paced, values, est["step_time_s"])]


def _baselines(result: Plan, baseline: Optional[tuple[pd.DataFrame, layout_defaults.Completed]],
               published: Optional[pd.DataFrame], runs: Optional[pd.DataFrame] = None) -> pd.DataFrame:
    """Each baseline priced as the plan prices its own layouts: its knobs on the plan's model, job
    and framework (:func:`baseline_frame`); a published one also as its own framework ran it where
    that is another, or where the plan's framework cannot run it (``refused``: its rule; then not
    priced as the plan's), with its measurement (``own_framework``, ``own_predicted``)."""
    rule = result.scorer.rule
    frames, labels, measured, filled, own, refused = [], [], [], [], [], []
    if baseline is not None:  # the user's, completed (plan)
        frame, done = baseline
        frames.append(frame)
        labels.append("your baseline")
        measured.append(np.nan)
        filled.append("; ".join([f"filled {done.describe()}", *done.read_as]))
        own.append(None)
        refused.append(None)
    planned = result.model.get("framework")
    for row in ([] if published is None else published.to_dict("records")):
        knobs = _published_knobs(row)
        frame, done = baseline_frame(result.model, result.cluster, result.seq_len, result.global_batch, knobs,
                                     str(knobs.get("precision", result.precisions[0])), rule, refuse=False)
        refused.append(frameworks.refusal(done.config))
        frames.append(frame)
        labels.append(f"published: {row['label']}")
        measured.append(row["measured_tokens_per_s_per_device"])
        shown = done.describe(LAYOUT_KNOBS)
        filled.append("; ".join([f"filled {shown}" if shown != "none" else "", *done.read_as]).strip("; "))
        framework = row.get("config.framework")
        if isinstance(framework, str) and (framework != planned or refused[-1]):  # also as its framework ran it
            cfg = {c: row[c] for c in row if c.startswith(("config.", "hardware."))}
            cfg["config.activation_checkpointing"] = done.config["activation_checkpointing"]
            own.append((framework, as_run(pd.DataFrame([cfg]))))
        else:
            own.append(None)
    if not frames:
        return pd.DataFrame()
    frame = pd.concat(frames, ignore_index=True, sort=False)
    memory = result.scorer.memory(frame)
    scored = result.scorer.score(frame, memory)
    out = pd.DataFrame({k: frame.get(f"config.{k}", pd.Series([None] * len(frame))).to_numpy() for k in KNOBS})
    out = out.join(scored.reset_index(drop=True))
    out["label"] = labels
    out["filled"] = filled
    out["measured_tokens_per_s_per_device"] = measured
    out["own_framework"] = [None if o is None else o[0] for o in own]
    out["own_predicted"] = [np.nan if o is None else float(result.scorer.predict(o[1])[0][0]) for o in own]
    out["refused"] = refused  # not priced as the plan's framework, which cannot run it: its rule
    blank = np.array([r is not None for r in refused])
    for col in scored.columns if blank.any() else ():
        out[col] = out[col].where(~blank, np.nan) if out[col].dtype.kind == "f" else out[col].astype(object).where(
            ~blank, None)
    pred = out["predicted_tokens_per_s_per_device"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        short = np.asarray(measured, dtype=float) > pred / SHORTFALL
    terms = _shortfall(frame) if short.any() else [None] * len(frame)  # the breakdown only where it is asked for
    out["shortfall"] = [t if s else None for t, s in zip(terms, short)]
    best = result.layouts["predicted_tokens_per_s_per_device"]
    out["rank"] = [int((best > p).sum()) + 1 if np.isfinite(p) else None for p in pred]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["predicted_gain"] = float(best.iloc[0]) / pred - 1.0
    kind = shrinkage.kind(result.model)
    gains = np.array([shrinkage.gain(float(best.iloc[0]), p, kind) if np.isfinite(p) and p > 0
                      else (np.nan,) * 3 for p in pred]).reshape(-1, 3)
    out["gain"], out["gain_low"], out["gain_high"] = gains.T
    out["within_error"] = (gains[:, 1] <= 0) & (gains[:, 2] >= 0)  # an expected gain whose interval holds 0: a tie
    pick = result.layouts.iloc[0].to_dict()  # a gain over an EP recipe it leaves: a claim only where a run backs it
    out["claim"] = [claims.verdict(tuple(g), pick, row, result.model.get("model_name"), result.cluster.domain, runs)
                    for g, row in zip(gains, out.to_dict("records"))]
    # yours first, then the recipes in the top pick's precision: a gain across precisions is no recipe's to claim
    order = np.lexsort((out["precision"] != result.layouts["precision"].iloc[0], out["label"] != "your baseline"))
    return out.iloc[order].reset_index(drop=True)


def default_scorer(memory_margin: Optional[float] = None) -> Scorer:
    """The leaderboard's best predictor for the published LLM tables (:func:`perfzoo.pricing.resolve`)."""
    resolved = pricing.resolve("best", pricing.PUBLISHED)
    return Scorer(resolved.predictor, per_device=resolved.per_device, memory_margin=memory_margin)


__all__ = ["EXHAUSTIVE_LIMIT", "Plan", "baseline_frame", "default_scorer", "plan",
           "resolve_model"]
