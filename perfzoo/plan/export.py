"""A plan taken to a training framework: ``plan --framework NAME --export DIR`` writes the top
layouts as that framework's launch lines, and ``plan --baseline-from FILE`` reads the user's own
launch line as the baseline (:mod:`perfzoo.frameworks` spells and reads each framework's flags).

::

    python -m perfzoo.plan --model llama3-8b --gpus 8 --accelerator H100-SXM-80GB --seq-len 8192 \\
        --global-batch 64 --framework torchtitan --export plan-titan/      # plan-titan/rank01.sh ...
    python -m perfzoo.plan --baseline-from my_titan_job.sh --accelerator H100-SXM-80GB   # how much faster?

Each ``rankNN.sh`` is a bash script: comment lines (the layout, its predicted tokens/s per GPU
and memory, what the framework needs beside the line) and one ``torchrun`` line that runs it. Every
layout written is checked against the framework's rules and spelled before the first file is
written (the plan's space holds only layouts the framework runs, so none is refused). What a launch
line needs of the model catalog is resolved here: the catalog model a recipe or config function
names (:func:`catalog_model`), the layers a line's stages split (:func:`with_baseline`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Collection, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo import frameworks
from perfzoo.analytic.shape import ModelShape
from perfzoo.console import InputError
from perfzoo.llmconfig import catalog
from perfzoo.plan.planner import Plan
from perfzoo.plan.report import check_layouts, layout_text

SCRIPT = "rank{:02d}.sh"


def _priced(keys: Mapping[str, Any]) -> np.ndarray:
    """What the cost model prices of a model's shape ``keys`` (its stated size and name left out)."""
    shape = ModelShape(pd.DataFrame([{k: v for k, v in keys.items() if k in catalog.SHAPE_KEYS and k != "n_params"}]))
    return np.array([np.ravel(x)[0] for x in (shape.L, shape.d, shape.a, shape.kv_heads, shape.h_qk, shape.h_v, shape.V,
                                              shape.tied, shape.mtp, shape.total_params, shape.matmul_params,
                                              shape.expert_params, shape.core_flops_per_token(True))], dtype=float)


def catalog_model(model: Mapping[str, Any], known: Collection[str]) -> tuple[Optional[str], str]:
    """``(name, why not)``: the model of ``known`` (catalog models a framework has a recipe or config
    for) that ``model`` is: its ``model_name``, else the catalog model whose shape a Hugging Face
    ``config.json`` gives (named after the file), where all the cost model prices of the two agrees;
    else None and, where the shape is only like a catalog model's, what differs.

    >>> catalog_model({"model_name": "llama3-8b"}, ("llama3-8b",))
    ('llama3-8b', '')
    """
    name = str(model.get("model_name"))
    if name in known:
        return name, ""
    match = catalog.by_shape(model)
    if match not in known:
        return None, ""
    mine, theirs = _priced(model), _priced(catalog.get(match))
    if np.allclose(mine, theirs, rtol=1e-9, equal_nan=True):
        return match, ""
    return None, (f" (its layers, width and heads are {match}'s, but not all of its shape: {mine[9] / 1e9:,.1f}B "
                  f"parameters against {theirs[9] / 1e9:,.1f}B)")


def check(model: Mapping[str, Any], precisions: Sequence[str], written: bool) -> None:
    """Before a plan is made: an :class:`~perfzoo.frameworks.ExportError` where ``model``'s framework
    trains in none of ``precisions`` (or not in one), and, where its launch lines are ``written``
    (``--export``), where no layout of ``model`` in ``precisions`` can be written."""
    framework = frameworks.get(model.get("framework"))
    framework.check_precisions(precisions)
    if written:
        framework = frameworks.writer(framework.name)
        name, unlike = catalog_model(model, framework.models) if framework.models is not None else (None, "")
        framework.check_export(model, precisions, name, unlike)


def check_folder(folder: str) -> None:
    """Refuse ``--export`` ``folder`` before any work: its parent must exist and it must hold no
    earlier export (nothing written is silently replaced)."""
    path = Path(folder)
    if not path.resolve().parent.is_dir():
        raise InputError(f"--export {folder}: the folder {path.resolve().parent} does not exist")
    if path.exists() and not path.is_dir():
        raise InputError(f"--export {folder}: a file, not a folder")
    if path.is_dir() and any(path.glob("rank*.sh")):
        raise InputError(f"--export {folder} already holds an export (rank*.sh): give a new or empty folder")


def write(plan: Plan, framework: str, folder: str, k: int = 10) -> list[Path]:
    """The top ``k`` layouts of ``plan`` (its proposed ones where it has them) as ``framework``'s
    launch scripts in ``folder`` (``rank01.sh`` the first); returns their paths. Every layout is
    checked (:meth:`~perfzoo.frameworks.Framework.refuses`) and spelled before any file is written."""
    fw = frameworks.writer(framework)
    launch = frameworks.Launch(nodes=plan.cluster.nodes, gpus_per_node=min(plan.cluster.node_size, plan.cluster.gpus))
    model = catalog_model(plan.model, fw.models)[0] if fw.models is not None else None
    rows = plan.written(k)
    configs = plan.configs(rows=rows)
    lines = launch_lines(fw, configs, launch, model)
    out = Path(folder)
    out.mkdir(exist_ok=True)
    paths = []
    for rank, (line, row, config) in enumerate(zip(lines, rows.to_dict("records"), configs), 1):
        comments = [f"perfzoo plan, {'proposed to measure' if plan.proposed is not None else 'rank'} {rank} (rank "
                    f"{row['rank']} of the plan): {plan.model.get('model_name')} on {plan.cluster.describe()}, "
                    f"{fw.name} {fw.version}",
                    f"layout {layout_text(row)}: predicted {row['predicted_tokens_per_s_per_device']:,.0f} tokens/s "
                    f"per GPU ({plan.scorer.name}), {row['memory_gib']:,.1f} GiB per GPU (memory model)"]
        if launch.nodes > 1:
            comments.append(f"run on each of the {launch.nodes} nodes with MASTER_ADDR set to the first node")
        path = out / SCRIPT.format(rank)
        path.write_text(frameworks.script(line, comments, fw.environment(config)))
        paths.append(path)
    return paths


def launch_lines(framework: frameworks.Framework, configs: list[dict], launch: frameworks.Launch,
                 model: Optional[str]) -> list[list[str]]:
    """Every one of ``configs`` (layouts of catalog ``model``) as ``framework``'s launch line, each
    checked against its rules first (:func:`~perfzoo.plan.report.check_layouts`): all or none."""
    check_layouts(framework, configs, "--export")
    return [framework.command(config, launch, model) for config in configs]


def with_baseline(config: Any, log: Optional[Callable[[str], Any]] = None) -> Any:
    """``config`` (a :class:`~perfzoo.plan.command.PlanConfig`) with what its ``--baseline-from``
    file gives filled in where the command line is silent: the baseline layout, the framework,
    the model (a catalog name or the shape the line gives), the GPUs, the sequence and the batch.
    What the file left to a default is logged."""
    log = log or (lambda _msg: None)
    if config.baseline:
        raise InputError("give --baseline KNOB=VALUE or --baseline-from FILE, not both")
    read = frameworks.read_baseline(config.baseline_from)
    for note in read.notes:
        log(f"baseline: {note}")
    fill: dict[str, Any] = {"baseline_from": None}
    if config.framework is None:
        fill["framework"] = read.framework
    model = read.model or (catalog.by_shape(read.shape) if read.shape else None)
    read.settle(catalog.get(model)["n_layers"] if model else read.shape.get("n_layers"))  # a line's stages
    if config.model is None and model is not None:
        fill["model"] = model
        if read.model is None:
            log(f"baseline: the shape {config.baseline_from} gives is {model}'s (the catalog's); planned as {model}")
    given = {k.split("=", 1)[0] for k in config.knobs}
    knobs = list(config.knobs)
    if config.model is None and model is None and read.shape:
        knobs += [f"{k}={json.dumps(v)}" for k, v in read.shape.items() if k not in given]
        if "model_name" not in given:  # named after its file, not "None"
            knobs.append(f"model_name={json.dumps(Path(config.baseline_from).stem)}")
    for key, value in read.settings.items():  # every layout priced as the line runs (like for like)
        if key not in given:
            knobs.append(f"{key}={json.dumps(value)}")
            log(f"baseline: {config.baseline_from} sets {key}={value}; every layout is priced with it")
    fill["knobs"] = knobs
    gpus = config.gpus if config.gpus is not None else read.gpus
    fill["gpus"] = gpus
    if config.seq_len is None:
        fill["seq_len"] = read.workload.get("seq_len")
    layout = dict(read.layout)
    dp = gpus // (layout["tp"] * layout["pp"] * layout["cp"]) if gpus else None
    if dp is not None and dp * layout["cp"] == 1:
        layout["fsdp"] = "none"  # nothing to shard over
    if config.global_batch is None:
        batch = read.workload.get("global_batch_size")
        if batch is None and dp and "local_batch_size" in read.workload:  # torchtitan's default: local x dp
            batch = read.workload["local_batch_size"] * dp
        fill["global_batch"] = batch
    fill["baseline"] = [f"{k}={json.dumps(v)}" for k, v in layout.items()]
    log(f"baseline: {config.baseline_from} read as {read.framework}: {layout_text({**layout, 'dp': dp})}"
        + (f" on {gpus} GPUs" if gpus else ""))
    return replace(config, **fill)


__all__ = ["SCRIPT", "catalog_model", "check", "check_folder", "launch_lines", "with_baseline", "write"]
