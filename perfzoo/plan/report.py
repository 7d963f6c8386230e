"""What a plan shows: the printed table, JSON lines, the plot, and configs ``collect`` runs.

>>> layout_text({"tp": 8, "pp": 2, "vp": 10, "cp": 1, "ep": 1, "dp": 4, "micro_batch_size": 2,
...              "grad_accum": 32, "activation_checkpointing": "none", "fsdp": "zero1", "precision": "fp8"})
'tp8 pp2 vp10 cp1 dp4 mb2x32 ac:none zero1 fp8'
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from perfzoo import analytic, frameworks, llmconfig
from perfzoo.console import pyplot
from perfzoo.frameworks import ExportError, torchtitan
from perfzoo.analytic.memory import in_flight
from perfzoo.llmconfig import layout_defaults, shape_report
from perfzoo.plan.layouts import LAYOUT_KNOBS
from perfzoo.plan import shrinkage
from perfzoo.plan.planner import KNOBS, Plan
from perfzoo.zoo.analytic_features import HOST_PACE, HOST_PASS_S

JSON_KEYS = (*KNOBS, "predicted_tokens_per_s_per_device", "expected_tokens_per_s_per_device", "predicted_tokens_per_s",
             "step_time_s", "mfu", "peak_allocated_gib", "memory_gib", "headroom_gib", "fits", "layer_pass_ms",
             "host_paced", "range_low", "range_high", "rank", "role", "label", "predicted_gain", "gain", "gain_low",
             "gain_high", "within_error", "filled", "measured_tokens_per_s_per_device", "own_framework",
             "own_predicted", "shortfall", "refused", "claim")
HOST_MARK = "^"  # beside the predicted tokens/s of a layout that runs at the host's pace
TIE_MARK = "~"  # beside the rank of a layout predicted inside the top pick's interval


def _plain(value: Any) -> Any:
    """A JSON-ready scalar: numpy types unwrapped, NaN and None as None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, np.generic):
        value = value.item()
        return None if isinstance(value, float) and math.isnan(value) else value
    return value


def _int(value: Any) -> Any:
    v = _plain(value)
    return int(v) if isinstance(v, float) and v.is_integer() else v


def layout_text(row: dict) -> str:
    """One layout in a few words: degrees, micro batch x accumulation, checkpointing, sharding, precision."""
    parts = [f"{k}{_int(row.get(k))}" for k in ("tp", "pp", "vp", "cp") if _plain(row.get(k)) is not None]
    if (_int(row.get("ep")) or 1) > 1:
        parts.append(f"ep{_int(row['ep'])}")
    if (_int(row.get("etp")) or 1) > 1:
        parts.append(f"etp{_int(row['etp'])}")
    if _plain(row.get("dp")) is not None:
        parts.append(f"dp{_int(row['dp'])}")
    if _plain(row.get("micro_batch_size")) is not None:
        accum = _int(row.get("grad_accum"))
        parts.append(f"mb{_int(row['micro_batch_size'])}" + (f"x{accum}" if accum is not None else ""))
    for key, prefix in (("activation_checkpointing", "ac:"), ("fsdp", ""), ("precision", "")):
        if _plain(row.get(key)) is not None:
            parts.append(f"{prefix}{row[key]}")
    recompute = _plain(row.get("moe_recompute"))  # an MoE layout's dispatcher, recomputed modules, token dropping
    moe = [_plain(row.get("moe_dispatcher")), f"+{recompute}" if recompute not in (None, "none") else None,
           "drop" if _plain(row.get("moe_token_drop")) is True else None]
    return " ".join(parts + [m for m in moe if m])


def records(plan: Plan, k: int = 10) -> list[dict]:
    """One JSON object per layout (the top ``k``, then the baselines): its knobs as top-level
    keys, the predictions, memory, ``fits`` and ``role`` (``candidate`` or ``baseline``)."""
    context = {"model_name": plan.model.get("model_name"), "n_gpus": plan.cluster.gpus,
               "accelerator": plan.cluster.spec.name, "seq_len": plan.seq_len,
               "global_batch_size": plan.global_batch, "predictor": plan.scorer.name,
               "memory_margin": plan.scorer.memory_margin, "framework": plan.model.get("framework")}
    out = []
    for row in plan.to_frame(k).to_dict("records"):
        rec = {key: _int(row[key]) if key in KNOBS else _plain(row[key]) for key in JSON_KEYS if key in row}
        rec["fits"] = bool(row["fits"]) if _plain(row.get("fits")) is not None else None
        if row.get("role") == "candidate":
            rec["within_error"] = plan.within_error(float(row["predicted_tokens_per_s_per_device"]))
        out.append({**rec, **context})
    return out


def _num(value: Any, fmt: str = ",.0f") -> str:
    v = _plain(value)
    return "-" if v is None else format(v, fmt)


def moe_note(plan: Plan) -> str:
    """What the first line says of an MoE model's token dropping (nothing for a dense model)."""
    names = {d.name for d in plan.space.dimensions}
    if "moe_dispatcher" not in names:
        return ""
    if "moe_token_drop" in names:
        return "; MoE: layouts may drop tokens over an expert's capacity (--allow-token-drop: it changes the model's maths)"
    only = not frameworks.get(plan.model.get("framework")).runs.token_drop
    return "; MoE: dropless" + (" (its launch line runs no other)" if only else
                                " (token dropping only with --allow-token-drop)")


def table(plan: Plan, k: int = 10) -> str:
    """The printed plan: the counts, the top ``k`` layouts, the baselines and what the pick gains."""
    has_range = "range_low" in plan.layouts
    head = (f"{'rank':>5}  {'layout':<52} {'tok/s/GPU':>10} {'expected':>9} {'tok/s':>12} {'MFU*':>6} {'step s':>7} "
            f"{'alloc GiB':>9} {'mem GiB':>8} {'free GiB':>8}" + (f"  {'interval (tok/s/GPU)':>21}" if has_range else ""))
    c = plan.counts
    device = plan.layouts["device_memory_gib"].iloc[0]
    lines = [f"plan: {plan.model.get('model_name', 'model')} on {plan.cluster.describe()}, seq {plan.seq_len:,}, "
             f"global batch {plan.global_batch:,}, precision {', '.join(plan.precisions)}; every layout and baseline "
             f"priced as {plan.model.get('framework') or 'no framework in particular'}; predictor {plan.scorer.name}"
             + (f" ({plan.scorer.note})" if plan.scorer.note else "") + f"; memory: {plan.scorer.rule.describe(device)}"
             + moe_note(plan),
             f"model: {shape_report.describe(plan.model, plan.sources)}",
             "every layout runs flash attention and, with tp > 1, sequence parallelism; "
             + layout_defaults.framework_note(plan.model),
             f"layouts: {c['generated']:,} generated (valid of {c['grid']:,} grid points), "
             f"{c['memory_checked']:,} memory-checked, {c['feasible']:,} feasible ({c['infeasible']:,} dropped: "
             f"over memory), {c['scored']:,} scored; {plan.method}: {plan.reason}",
             "", head]

    marked = []  # whether each printed layout carries the host mark

    def line(rank: str, row: dict) -> str:
        mark = HOST_MARK if _plain(row.get("host_paced")) else ""
        marked.append(bool(mark))
        text = (f"{rank:>5}  {layout_text(row):<52} {_num(row['predicted_tokens_per_s_per_device']) + mark:>10} "
                f"{_num(row.get('expected_tokens_per_s_per_device')):>9} {_num(row['predicted_tokens_per_s']):>12} {_num(row['mfu'], '.1%'):>6} "
                f"{_num(row['step_time_s'], '.2f'):>7} {_num(row.get('peak_allocated_gib'), '.1f'):>9} "
                f"{_num(row['memory_gib'], '.1f'):>8} {_num(row['headroom_gib'], '.1f'):>8}")
        if has_range:
            text += f"  {_num(row.get('range_low'))} .. {_num(row.get('range_high'))}"
        return text

    shown = plan.top(k).to_dict("records")
    for row in shown:
        tied = TIE_MARK if plan.within_error(float(row["predicted_tokens_per_s_per_device"])) else ""
        lines.append(line(f"{row['rank']}{tied}", row))
    over = [str(row["rank"]) for row in shown if (_plain(row.get("mfu")) or 0.0) > 1.0]
    if over:  # faster than the device can run: the predictor's error, said, never clipped
        lines.append(f"! rank {', '.join(over)}: predicted above the accelerator's peak in its precision (MFU over "
                     "100%), which no run reaches: the predictor is wrong there; measure it before trusting its rank")
    if plan.tie is not None and plan.tie["ranks"] > 1:
        t = plan.tie
        lines.append(f"{TIE_MARK} ranks 1-{t['ranks']:,} are within the predictor's error: each is predicted inside the "
                     f"top pick's {t['what']} ({t['low']:,.0f} .. {t['high']:,.0f} tok/s/GPU), so their order is no "
                     "decision; measure the ones you would run")
    if plan.proposed is not None:
        p = plan.proposed
        left = int(p["distinct_jobs"].iloc[0]) if len(p) else 0
        lines += ["", f"proposed to measure ({len(p)}" + (f", all {left} distinct unmeasured jobs the launch command can "
                      "tell apart" if len(p) == left else "") + f"; {p['proposer'].iloc[0]}; --out / --export write "
                      "these):"]
        for row in p.to_dict("records"):
            lines.append(f"{row['rank']:>5}  {layout_text(row):<52} predicted {_num(row['predicted_tokens_per_s_per_device'])} "
                         f"tok/s/GPU, 80% up to {_num(row['upper_tokens_per_s_per_device'])}, expected improvement "
                         f"{np.expm1(row['expected_improvement']):+.1%}")
    if plan.stop is not None:
        lines += ["", plan.stop]
    if len(plan.baselines):
        best = plan.layouts.iloc[0]
        lines.append("")
        for row in plan.baselines.to_dict("records"):
            refused = _plain(row.get("refused"))
            fits = ("not priced as " + str(plan.model.get("framework") or frameworks.UNKNOWN) if refused else
                    "fits" if row["fits"] else "does NOT fit the memory model")
            lines.append(f"baseline ({row['label']}): {layout_text(row)}"
                         + (f" ({row['filled']})" if row.get("filled") else ""))
            lines.append(line("", row) + f"  ({fits})")
            rank = _plain(row.get("rank"))
            gain = _plain(row.get("gain"))
            verdict = f"  not priced: {refused}" if refused else "  not priced"
            # a baseline outside the plan's space (TP across NVLink domains, say) is no rank among its layouts
            ranks = (f"ranks {rank:,} of {c['scored']:,}" if rank is not None and rank <= c["scored"] else
                     f"slower than all {c['scored']:,} layouts scored (it is not one of them)")
            precision = row.get("precision")
            if rank is not None and gain is not None:
                across = isinstance(precision, str) and precision != best["precision"]
                same = _same_precision(plan, precision, float(row["predicted_tokens_per_s_per_device"])) if across else ""
                verdict = f"  {ranks}; {same}" + _gain_text(
                    "the top pick" + (f" ({best['precision']})" if across else ""),
                    (gain, row["gain_low"], row["gain_high"]), row["predicted_gain"], bool(row.get("within_error")),
                    f" vs {precision} recipe, across precisions" if across else "")
            if isinstance(precision, str) and precision not in plan.precisions:
                verdict += f" (the baseline runs {precision}, which this plan did not search: --precision {precision})"
            measured = _plain(row.get("measured_tokens_per_s_per_device"))
            if measured is not None:
                top = float(best["predicted_tokens_per_s_per_device"])
                verdict += f"; measured {measured:,.0f} tok/s/GPU" + (
                    "" if refused else f" (its prediction {row['predicted_tokens_per_s_per_device'] / measured - 1:+.1%};"
                    f" the top pick's prediction {top / measured - 1:+.1%} over this measurement)")
            if _plain(row.get("own_predicted")) is not None:
                verdict += (f"; as {row['own_framework']} ran it (its recipe's kernels and overlaps): "
                            f"{row['own_predicted']:,.0f} tok/s/GPU predicted")
            if _plain(row.get("faster_by")) is not None:
                verdict += f"; {row['faster_by']}"
            if _plain(row.get("shortfall")) is not None:
                verdict += f"; predicted more than 25% under its measurement: the term that weighs most is {row['shortfall']}"
            lines.append(verdict)
            if str(_plain(row.get("claim"))).startswith("unbacked: "):  # a gain over an EP recipe no published run backs
                lines.append(f"  not claimed beaten: {row['claim'].removeprefix('unbacked: ')}, and the predictor errs "
                             "most on expert-parallel layouts; measure the top pick before taking the gain")
    lines.append(f"expected: the predicted tok/s/GPU with its advantage over the layouts the top pick was chosen among "
                 f"shrunk by {shrinkage.SHRINK[shrinkage.kind(plan.model)]:g}, what one chosen as their best is expected to run at (the winner's "
                 f"curse of a {shrinkage.kind(plan.model)} model, perfzoo.plan.shrinkage); a gain over a baseline is given the same way, with "
                 "its 80% interval")
    lines.append(f"* MFU: predicted model FLOP/s per GPU over the accelerator's dense peak in the layout's own precision "
                 f"({', '.join(plan.precisions)}: a bf16 layout over the bf16 peak, an fp8 one over the fp8 peak); "
                 "alloc GiB: the predicted peak allocated (what torch.cuda.max_memory_allocated reports); mem GiB: what "
                 "the GPU needs with the allocator's, CUDA context's and NCCL's overheads; free GiB: its memory less that")
    if any(marked):
        lines.append(f"{HOST_MARK} ideal GPU time per layer pass under {1e3 * HOST_PASS_S:.0f} ms: {HOST_PACE}")
    lines.extend(f"note: {n}" for n in plan.notes)
    return "\n".join(lines)


def _gain_text(who: str, gain: tuple[float, float, float], predicted: float, tie: bool, vs: str = "") -> str:
    """What ``who`` is expected to gain (``(gain, low, high)``, net of the winner's curse) over a baseline.

    >>> _gain_text("the top pick", (0.5, 0.2, 0.9), 0.6, False, " vs bf16 recipe, across precisions")
    "the top pick is expected 50.0% faster vs bf16 recipe, across precisions (80% +20.0% .. +90.0%; predicted +60.0% before the winner's curse)"
    """
    band = f"80% {gain[1]:+.1%} .. {gain[2]:+.1%}; predicted {predicted:+.1%} before the winner's curse"
    if tie:
        return f"no measurable gain{vs}: {who}'s expected {gain[0]:+.1%} ({band}) is inside the error"
    return f"{who} is expected {abs(gain[0]):.1%} {'faster' if gain[0] >= 0 else 'slower'}{vs} ({band})"


def _same_precision(plan: Plan, precision: str, base: float) -> str:
    """The plan's best layout in a baseline's own ``precision`` against it (``base``: its predicted
    tokens/s per GPU), said before a gain across precisions; empty where the plan searched none."""
    lay = plan.layouts[plan.layouts["precision"] == precision]
    if lay.empty or not base > 0:
        return ""
    row = lay.iloc[0]
    pick = float(row["predicted_tokens_per_s_per_device"])
    gain = shrinkage.gain(pick, base, shrinkage.kind(plan.model))
    return _gain_text(f"the best {precision} layout (rank {int(row['rank']):,}, {layout_text(row.to_dict())})", gain,
                      pick / base - 1.0, gain[1] <= 0 <= gain[2], " in the same precision") + "; "


def explain(plan: Plan, rank: int = 1) -> list[str]:
    """Why the layout at ``rank`` runs at its predicted speed: its analytic step (compute, the
    communication of each kind on the critical path or hidden under the kernels, the pipeline
    bubble, the optimizer), the MFU that ideal step would reach and the predictor's share of it,
    and its memory per GPU by term (the micro-batches the first pipeline stage holds in flight): two lines."""
    row = plan.layouts.iloc[rank - 1]
    config = pd.DataFrame([llmconfig.as_columns(plan.configs(rank)[rank - 1])]).assign(**plan.cluster.hardware())
    est = analytic.estimate(config).iloc[0]
    busy = est["compute_time_s"] + est["softmax_time_s"] + est["memory_time_s"]
    overlapped = est["dp_time_s"] + est["cp_time_s"]
    exposed = max(0.0, overlapped - busy)
    ideal_mfu = float(row["mfu"]) * float(row["step_time_s"]) / est["step_time_s"]
    pp, vp, m = (float(row[k]) for k in ("pp", "vp", "grad_accum"))
    held = float(in_flight(pp, vp, m, 0.0))
    gib = 2.0 ** 30
    return [f"why rank {rank} ({layout_text(row.to_dict())}): its ideal step {est['step_time_s']:.2f} s is compute "
            f"{est['compute_time_s']:.2f} s, softmax {est['softmax_time_s']:.2f} s and memory traffic "
            f"{est['memory_time_s']:.2f} s, with on the critical path TP {est['tp_time_s']:.2f} s, EP "
            f"{est['ep_time_s']:.2f} s and PP sends {est['pp_time_s']:.2f} s; the pipeline bubble "
            f"{est['bubble']:.1%} (pp {pp:.0f}, vp {vp:.0f}, {m:.0f} micro-batch{'es' * (m != 1)}); DP "
            f"{est['dp_time_s']:.2f} s and "
            f"CP {est['cp_time_s']:.2f} s overlap the kernels ({exposed:.2f} s exposed); optimizer "
            f"{est['optimizer_time_s']:.2f} s, host {est['host_time_s']:.2f} s: {ideal_mfu:.1%} MFU ideal, "
            f"of which the predictor, fitted on measured runs, expects {float(row['mfu']) / ideal_mfu:.0%} "
            f"({float(row['mfu']):.1%} MFU)",
            f"memory of rank {rank}: {est['memory_bytes'] / gib:.1f} GiB per GPU: parameters "
            f"{est['param_bytes'] / gib:.1f}, gradients {est['grad_bytes'] / gib:.1f}, optimizer "
            f"{est['optimizer_bytes'] / gib:.1f}, activations {est['activation_bytes'] / gib:.1f} ({held:.3g} "
            f"micro-batch{'es' * (held != 1)} in flight on the first stage), overheads "
            f"{est['overhead_bytes'] / gib:.1f}"]


def plot(plan: Plan, path: str | Path, k: int = 10) -> Path:
    """Every scored layout as predicted tokens/s per GPU against memory per GPU, the device's
    memory and the margin's line, the top ``k`` and the baselines marked."""
    plt = pyplot()

    path = Path(path)
    fig, ax = plt.subplots(figsize=(8, 5.5))
    lay = plan.layouts
    ax.scatter(lay["memory_gib"], lay["predicted_tokens_per_s_per_device"], s=6, alpha=0.35, color="0.5",
               label=f"scored layouts ({len(lay):,})")
    top = lay.head(k)
    ax.scatter(top["memory_gib"], top["predicted_tokens_per_s_per_device"], s=30, color="tab:blue",
               label=f"top {len(top)}")
    if len(plan.baselines):
        base = plan.baselines
        ax.scatter(base["memory_gib"], base["predicted_tokens_per_s_per_device"], s=70, marker="*",
                   color="tab:red", label="baseline")
        for row in base.to_dict("records"):
            ax.annotate(str(row["label"])[:40], (row["memory_gib"], row["predicted_tokens_per_s_per_device"]),
                        fontsize=7, xytext=(4, 4), textcoords="offset points")
    device = float(lay["device_memory_gib"].iloc[0])
    ax.axvline(device, color="black", lw=1, label=f"device memory {device:,.0f} GiB")
    if plan.scorer.memory_margin is not None:
        ax.axvline((1 - plan.scorer.memory_margin) * device, color="black", lw=1, ls="--",
                   label=f"usable ({plan.scorer.memory_margin:.0%} margin)")
    ax.set_xlabel("memory per GPU (GiB, memory model)")
    ax.set_ylabel(f"predicted tokens/s per GPU ({plan.scorer.name})")
    ax.set_title(f"{plan.model.get('model_name', 'model')} on {plan.cluster.describe()}", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# torchtitan (0.3.0, as examples/torchtitan/space.toml spells its flags) launched by torchrun on each node; its
# local batch is what one rank runs per step, split into micro-batches only by a pipeline (accumulation: global / local x dp)
COMMAND = ("torchrun --nnodes {nodes} --nproc-per-node {gpus_per_node} -m torchtitan.train --module {titan_module} "
           "--config {titan_config} --training.steps {total_steps} --metrics.log-freq 1 "
           "--training.local-batch-size {local_batch} --training.global-batch-size {global_batch_size} "
           "--training.seq-len {seq_len} --parallelism.tensor-parallel-degree {tp} "
           "--parallelism.pipeline-parallel-degree {pp} --parallelism.pipeline-parallel-microbatch-size "
           "{micro_batch_size} --parallelism.context-parallel-degree {cp} --parallelism.expert-parallel-degree {ep} "
           "--parallelism.data-parallel-shard-degree -1 activation-checkpoint:{activation_checkpointing}")
DERIVED = {"dp": "n_gpus // (tp * pp * cp)", "grad_accum": "global_batch_size // (micro_batch_size * dp)",
           "local_batch": "micro_batch_size * grad_accum if pp > 1 else micro_batch_size", "sequence_parallel": "tp > 1", "flash_attention": "True"}


def _toml(value: Any) -> str:
    value = _plain(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def space_file(path: str | Path) -> Path:
    """Where :func:`write_configs` writes the space of the configs it writes to ``path``: beside it, ``.toml``."""
    return Path(path).with_suffix(".toml")


def titan_names(model: str, precisions) -> tuple[str, str]:
    """torchtitan's ``--module`` and ``--config`` for a catalog model as its registry spells them
    (:data:`perfzoo.frameworks.torchtitan.CONFIGS`: ``llama3_8b``, not ``llama3-8b``; the Float8 one
    for an FP8-only plan); a model it has none of is a :class:`~perfzoo.frameworks.ExportError`.

    >>> titan_names("llama3-8b", ("bf16",)), titan_names("llama3.1-405b", ("fp8",))
    (('llama3', 'llama3_8b'), ('llama3', 'llama3_405b'))
    """
    if model not in torchtitan.CONFIGS:
        raise ExportError(f"--out: torchtitan {torchtitan.FRAMEWORK.version} takes the model from a config function "
                          f"of its registry, and perfzoo knows none for {model}; those it knows: "
                          f"{', '.join(torchtitan.CONFIGS)}")
    module, plain, fp8 = torchtitan.CONFIGS[model]
    config = fp8 if set(precisions) == {"fp8"} and fp8 else plain
    if config is None:
        raise ExportError(f"--out: torchtitan's one config of {model} ({fp8}) is Float8: plan --precision fp8")
    return module, config


def check_layouts(framework: frameworks.Framework, configs: list[dict], flag: str) -> None:
    """An :class:`~perfzoo.frameworks.ExportError` naming the first of ``configs`` ``framework`` cannot
    run (:meth:`~perfzoo.frameworks.Framework.refuses`), for ``flag`` (``--out``, ``--export``): every
    layout an exporter writes is checked before its first file (a plan's space holds none it refuses)."""
    for rank, cfg in enumerate(configs, 1):
        why = framework.refuses(cfg)
        if why is not None:
            raise ExportError(f"{flag}: layout {rank} ({layout_text(cfg)}): {why}")


def write_configs(plan: Plan, path: str | Path, k: int = 10) -> tuple[Path, Path]:
    """The top ``k`` layouts (the proposed ones where the plan has them) as configs ``python -m
    perfzoo.collect --configs`` runs: ``path``
    (``{"config": ...}`` lines) and, beside it, the space they belong to (``.toml``, the
    ``command`` workload with a torchtitan launch command). Returns both paths."""
    path = Path(path)
    space_path = space_file(path)
    rows = plan.written(k)
    configs = plan.configs(rows=rows)
    check_layouts(frameworks.get(plan.model.get("framework")), configs, "--out")
    top = rows.to_dict("records")
    constants = {key: v for key, v in plan.space.constants.items()}
    module, config = titan_names(str(plan.model.get("model_name")), plan.precisions)
    constants.update(gpus_per_node=min(plan.cluster.node_size, plan.cluster.gpus), nodes=plan.cluster.nodes,
                     titan_module=module, titan_config=config)
    knobs = {name: sorted({c[name] for c in configs}, key=str) for name in LAYOUT_KNOBS}
    lines = [
        f"# Written by python -m perfzoo.plan: the {'proposed' if plan.proposed is not None else 'top'} {len(configs)} "
        f"layouts of {plan.model.get('model_name')} on "
        f"{plan.cluster.describe()} ({path.name}).",
        "# The command runs torchtitan (flags as torchtitan 0.3.0 spells them); it carries tp, pp, cp, ep, the micro",
        "# and global batch, the sequence length and activation checkpointing. vp, fsdp and precision are recorded",
        "# with each job but set in your torchtitan --config (titan_module / titan_config below); for Megatron or",
        "# another launcher give collect --command '...' with {knob} placeholders. Multi-node: collect --launcher",
        "# slurm --nodes {nodes} --gpus-per-node {gpus_per_node}.",
        f"name = {json.dumps(plan.space.name)}",
        f"description = {json.dumps(plan.space.description)}",
        'workload = "command"',
        'world_size_key = "n_gpus"',
        'throughput_unit = "tokens/s"',
        f"command = {json.dumps(COMMAND)}",
        "",
        "[knobs]",
        *(f"{name} = {{ values = [{', '.join(_toml(v) for v in values)}] }}" for name, values in knobs.items()),
        "",
        "[constants]",
        *(f"{key} = {_toml(v)}" for key, v in constants.items()),
        "",
        "[derived]",
        *(f"{key} = {json.dumps(expr)}" for key, expr in DERIVED.items()),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    space_path.write_text("\n".join(lines) + "\n")
    out = []
    for cfg, row in zip(configs, top):
        config = {key: _plain(v) for key, v in cfg.items() if key not in ("sequence_parallel", "flash_attention")}
        config.update(gpus_per_node=constants["gpus_per_node"], nodes=constants["nodes"],
                      titan_module=constants["titan_module"], titan_config=constants["titan_config"])
        out.append(json.dumps({"config": config, "rank": int(row["rank"]),
                               "predicted_tokens_per_s_per_device": _plain(row["predicted_tokens_per_s_per_device"]),
                               "memory_gib": _plain(row["memory_gib"])}))
    path.write_text("\n".join(out) + "\n")
    return path, space_path


def collect_command(path: Path, space_path: Path, plan: Plan, out: Optional[str] = None) -> str:
    """The ``collect`` command that runs the written configs."""
    slurm = (f" --launcher slurm --nodes {plan.cluster.nodes} --gpus-per-node "
             f"{min(plan.cluster.node_size, plan.cluster.gpus)}" if plan.cluster.nodes > 1 else "")
    return (f"python -m perfzoo.collect --space {space_path} --configs {path} --device cuda{slurm} "
            f"--metric-parser torchtitan --out {out or 'runs/plan'}")


__all__ = ["COMMAND", "JSON_KEYS", "check_layouts", "collect_command", "explain", "layout_text", "plot", "records", "space_file", "table",
           "write_configs"]
