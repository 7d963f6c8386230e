"""The plan: every layout of a model on a cluster, checked against the memory model and ranked.

:func:`plan` builds the layout space (:mod:`perfzoo.plan.layouts`), enumerates its valid
layouts with numpy, drops those the memory model says do not fit (and counts them), and ranks
the rest by the scorer's predicted tokens/s per GPU (:mod:`perfzoo.plan.scoring`):
exhaustively when the space holds at most ``exhaustive_limit`` valid layouts, otherwise with
the REINFORCE searcher over the same space (:mod:`perfzoo.search`), a layout that does not fit
getting the lowest reward. Baselines (a user's layout, the published ones) are priced by the
same scorer, the knobs a user's baseline leaves out filled as ``predict`` fills them
(:mod:`perfzoo.llmconfig.layout_defaults`); the :class:`Plan` says where each ranks and what the top pick
gains over it, and, where the scorer gives an interval, which layouts are predicted inside the top
pick's (``Plan.tie``: their order is within the predictor's error, and so is a gain over a baseline
inside it). A predictor that returns NaN for a layout that fits is an error naming the predictor.

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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np
import pandas as pd

from harness.environment import cpu_cores
from perfzoo import frameworks, llmconfig
from perfzoo.console import RunFailed
from perfzoo.llmconfig import huggingface, layout_defaults
from perfzoo.plan.layouts import DERIVED_KNOBS, LAYOUT_KNOBS, Cluster, PlanError, as_run, layout_space
from perfzoo.plan.scoring import MEMORY_MARGIN, Scorer
from perfzoo.records.columns import Columns
from perfzoo.search import Objective, Reinforce, Searcher
from perfzoo.spaces import Constraint, Space
from perfzoo.spaces.codec import SpaceCodec
from perfzoo.zoo.best import load_best
from perfzoo.zoo.features import as_columns

EXHAUSTIVE_LIMIT = 250_000  # valid layouts scored one by one; past this, REINFORCE
CHUNK = 2 ** 16  # grid points checked for validity at once (their index rows stay in the cache)
COUNT_LIMIT = 50_000_000  # past this many grid points the valid ones are not counted
SHAPE_KEYS = ("n_layers", "hidden_dim", "n_heads", "vocab_size")
KNOBS = LAYOUT_KNOBS + DERIVED_KNOBS


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
    with (``label``, ``rank`` among the layouts, ``gain``: the top pick's predicted speed-up over
    it; ``measured_tokens_per_s_per_device`` where published); ``counts``: ``grid`` points,
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

    def configs(self, k: int = 10) -> list[dict]:
        """The top ``k`` layouts as complete configs of :attr:`space` (model, workload, layout)."""
        codec = SpaceCodec(self.space)
        return codec.configs(codec.decode(self.layouts["key"].head(k).to_numpy(dtype=np.int64)))


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
    out = pd.DataFrame({k: pd.Series(layouts.full(f"config.{k}")).to_numpy(dtype=object) for k in KNOBS},
                       index=layouts.index)
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


def _valid(codec: SpaceCodec, keep: bool) -> tuple[int, Optional[np.ndarray]]:
    """How many grid points are valid layouts, and (``keep``) their index rows."""
    if codec.size > COUNT_LIMIT:
        return -1, None
    count, rows = 0, []
    for start in range(0, codec.size, CHUNK):
        idx = codec.all_indices(start, start + CHUNK)
        ok = codec.valid(idx)
        count += int(ok.sum())
        if keep:
            rows.append(idx[ok])
    return count, (np.concatenate(rows) if keep and rows else None)


def _fits_nowhere(model: dict, cluster: Cluster, memory: pd.DataFrame, margin: float, n: int) -> PlanError:
    lean = float(np.nanmin(memory["memory_gib"]))
    device = float(np.nanmedian(memory["device_memory_gib"]))
    usable = (1.0 - margin) * device
    return PlanError(f"{model.get('model_name', 'the model')} fits in none of the {n:,} layouts on "
                     f"{cluster.describe()}: the leanest needs {lean:,.1f} GiB per GPU, {lean - usable:,.1f} GiB more "
                     f"than the {usable:,.1f} GiB usable ({device:,.0f} GiB less the {margin:.0%} margin); use more "
                     "GPUs or an accelerator with more memory")


def plan(model: Union[str, Path, dict], cluster: Cluster, *, seq_len: int, global_batch: int,
         precisions: Sequence[str] = ("bf16",), scorer: Optional[Scorer] = None,
         baseline: Optional[dict] = None, published: Optional[pd.DataFrame] = None,
         exhaustive_limit: int = EXHAUSTIVE_LIMIT, searcher: Optional[Searcher] = None,
         tp_beyond_node: bool = False, framework: Optional[str] = None,
         log: Optional[Callable[[str], Any]] = None, n_jobs: Optional[int] = None) -> Plan:
    """The ranked layouts of ``model`` on ``cluster`` (see the module docstring).

    Parameters
    ----------
    model : a catalog name, a ``config.json`` path, or a dict of shape keys.
    cluster : the GPUs (:class:`~perfzoo.plan.layouts.Cluster`).
    seq_len, global_batch : tokens per sequence, sequences per optimizer step.
    precisions : the precisions to consider (each checked against the accelerator).
    scorer : the :class:`~perfzoo.plan.scoring.Scorer` (default: the leaderboard's best for
        ``published-llm``, 10% memory margin).
    baseline : a layout to compare with (``{"tp": 4, "pp": 8}``; unnamed knobs as
        :func:`perfzoo.llmconfig.layout_defaults.complete` fills them, precision the first of ``precisions``).
    published : published layouts to compare with (:func:`~perfzoo.plan.recipes.published_layouts`).
    exhaustive_limit : the most valid layouts scored one by one; past it, ``searcher``
        (default: :class:`~perfzoo.search.Reinforce`, the paper's settings).
    tp_beyond_node : let tensor parallelism span NVLink domains.
    framework : price every layout as this framework runs it, and keep to the layouts it can run
        (:mod:`perfzoo.frameworks`; default: the model's ``framework`` key, else none).
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
    if scorer is None:
        scorer = default_scorer()
    space = layout_space(shape, cluster, workload["seq_len"], workload["global_batch_size"], precisions,
                         tp_beyond_node=tp_beyond_node)
    if shape.get("framework") in frameworks.FRAMEWORKS:  # only the layouts the framework runs
        runs = frameworks.get(shape["framework"]).refuses
        space = replace(space, constraints=[*space.constraints, Constraint(f"runs_in_{shape['framework']}", runs)])
    codec = SpaceCodec(space)
    count, idx = _valid(codec, keep=codec.size <= 4 * exhaustive_limit)
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
            raise _fits_nowhere(shape, cluster, memory, scorer.memory_margin, count)
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
            raise _fits_nowhere(shape, cluster, table, scorer.memory_margin, len(table))
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
                  sources=sources)
    result.tie = _tie(result)
    result.baselines = _baselines(result, baseline, published)
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
                   precision: str) -> tuple[pd.DataFrame, layout_defaults.Completed]:
    """A user's baseline layout as a one-row frame, and what was filled: its degrees and batch
    checked by the front door, the knobs it leaves out completed as ``predict`` completes them
    (:func:`perfzoo.llmconfig.layout_defaults.complete`; precision: ``precision``), so both price it alike."""
    unknown = [k for k in knobs if k not in KNOBS]
    if unknown:
        raise llmconfig.unknown_key_error(unknown[0], KNOBS, listed=f"the layout knobs {', '.join(KNOBS)}")
    cfg = llmconfig.check({**shape, "precision": precision, **knobs, "seq_len": seq_len,
                           "global_batch_size": global_batch, "n_gpus": cluster.gpus, "accelerator": cluster.spec.name})
    done = layout_defaults.complete({**cfg, "nodes": cluster.nodes})
    return pd.DataFrame([{**llmconfig.as_columns(done.config), **cluster.hardware()}]), done


def _baselines(result: Plan, baseline: Optional[dict], published: Optional[pd.DataFrame]) -> pd.DataFrame:
    frames, labels, measured, filled = [], [], [], []
    if baseline:
        frame, done = baseline_frame(result.model, result.cluster, result.seq_len, result.global_batch, baseline,
                                     result.precisions[0])
        frames.append(frame)
        labels.append("your baseline")
        measured.append(np.nan)
        filled.append("; ".join([f"filled {done.describe()}", *done.read_as]))
    if published is not None and len(published):
        for _, row in published.iterrows():
            cfg = {c: row[c] for c in published.columns if c.startswith(("config.", "hardware."))}
            frames.append(as_run(pd.DataFrame([cfg])))
            labels.append(f"published: {row['label']}" + ("" if row.get("same_batch", True) else
                                                           f" (global batch {row.get('config.global_batch_size'):,.0f})"))
            measured.append(row["measured_tokens_per_s_per_device"])
            filled.append("")
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
    best = result.layouts["predicted_tokens_per_s_per_device"]
    pred = out["predicted_tokens_per_s_per_device"].to_numpy()
    out["rank"] = [int((best > p).sum()) + 1 if np.isfinite(p) else None for p in pred]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["gain"] = float(best.iloc[0]) / pred - 1.0
    out["within_error"] = [bool(np.isfinite(p) and result.within_error(p)) for p in pred]
    return out


def default_scorer(memory_margin: float = MEMORY_MARGIN) -> Scorer:
    """The leaderboard's best predictor for the published LLM tables (whose target is tokens/s per GPU)."""
    return Scorer(load_best("published-llm"), per_device=True, memory_margin=memory_margin)


__all__ = ["EXHAUSTIVE_LIMIT", "Plan", "baseline_frame", "default_scorer", "plan",
           "resolve_model"]
