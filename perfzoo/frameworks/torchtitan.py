"""torchtitan (0.3.0): ``--module/--config`` names a config function of its registry, dotted
flags override it, and activation checkpointing is a subcommand at the end of the line::

    torchrun --standalone --nproc-per-node 8 -m torchtitan.train --module llama3 --config llama3_8b \\
      --training.local-batch-size 1 --training.global-batch-size 64 --training.seq-len 8192 \\
      --parallelism.tensor-parallel-degree 2 ... activation-checkpoint:selective

How a layout is spelled (flags as ``python -m torchtitan.train --module llama3 --config llama3_8b
--help`` lists them in 0.3.0):

* degrees: ``--parallelism.{tensor,pipeline,context,expert}-parallel-degree``; the data-parallel
  ranks are FSDP2's ``data-parallel-shard-degree`` (``full_shard``: ``fsdp-reshard-after-forward
  always``; ``shard_grad_op``: ``never``) or DDP's ``data-parallel-replicate-degree``
  (``no_shard``). torchtitan has no ZeRO-1 (Megatron's distributed optimizer): a plan for
  torchtitan leaves ``zero1`` out;
* batch: without pipelining torchtitan accumulates gradients over ``global / (local x dp)``
  steps, so ``local-batch-size`` is the micro batch; with pipelining the local batch is all of a
  step's micro-batches (``micro_batch_size x grad_accum``), split into
  ``pipeline-parallel-microbatch-size`` ones;
* stages: ``pipeline-parallel-layers-per-stage = layers / (pp x vp)`` with no layers taken off
  the first and last stages, schedule ``1F1B`` (``Interleaved1F1B`` with ``vp > 1``);
* CUDA graphs (on by default in 0.3.0) are turned off with pipelining or expert parallelism,
  which 0.3.0 refuses them with (``--training.disable-cuda-graphs``);
* precision: float8 is a config function's converter in 0.3.0, not a flag: an FP8 layout is
  written with the model's float8 config where the registry has one (:data:`CONFIGS`).

Reading a user's line back (``plan --baseline-from``): with torchtitan installed its own
``ConfigManager`` parses it (the config function's settings included); without it the flags
are read as written and a degree the line leaves to its config function is refused. Older
releases' TOML files (``[training]`` / ``[parallelism]`` / ``[activation_checkpoint]`` /
``[float8]`` tables) are read too (:func:`read_toml`). Layers per stage become virtual stages once
the caller knows the model's layers (:meth:`~perfzoo.frameworks.Baseline.settle`).

What torchtitan runs (no ZeRO-1, no fp16, its pipeline split), what the cost model assumes of it
(FlashAttention-2, the float8 all-gather, pipelined FSDP, fused RMSNorm, its selective "op" policy,
expandable segments) and what a published row of it leaves to its recipe are :data:`FRAMEWORK`'s
declarations.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from perfzoo.frameworks._base import (ALTERNATE_MATMULS, Baseline, ExportError, Framework, Physics, Recipe, Runs,
                                      check_expanded, equal_stages, unequal)

# catalog model -> (module, config function or None, float8 config function or None) of torchtitan 0.3.0's registry
CONFIGS = {
    "llama3-8b": ("llama3", "llama3_8b", None),
    "llama3-70b": ("llama3", "llama3_70b", None),
    "llama3.1-405b": ("llama3", None, "llama3_405b"),  # its one config is Float8 (with compile and async TP)
    "qwen3-14b": ("qwen3", "qwen3_14b", None),
    "qwen3-32b": ("qwen3", "qwen3_32b", None),
    "qwen3-30b-a3b": ("qwen3", "qwen3_30b_a3b", None),
    "deepseek-v3": ("deepseek_v3", "deepseek_v3_671b", "deepseek_v3_671b_float8"),
    "gpt-oss-20b": ("gpt_oss", "gpt_oss_20b", None),
    "gpt-oss-120b": ("gpt_oss", "gpt_oss_120b", None),
}
# an older release's [model] name and flavor -> catalog model
TOML_MODELS = {("llama3", "8B"): "llama3-8b", ("llama3", "70B"): "llama3-70b", ("llama3", "405B"): "llama3.1-405b",
               ("llama2", "7B"): "llama2-7b", ("llama2", "13B"): "llama2-13b", ("llama2", "70B"): "llama2-70b",
               ("deepseek_v3", "671B"): "deepseek-v3", ("deepseek_v3", "16B"): "deepseek-moe-16b",
               ("qwen3", "14B"): "qwen3-14b", ("qwen3", "32B"): "qwen3-32b", ("qwen3", "30B-A3B"): "qwen3-30b-a3b"}
SHARDING = {"full_shard": "always", "shard_grad_op": "never"}  # fsdp -> fsdp-reshard-after-forward
AC_PREFIX = "activation-checkpoint:"
# the flags a layout sets, as (dest, flag); a line may spell them with _ or -
FLAGS = {
    "local_batch": "--training.local-batch-size", "global_batch": "--training.global-batch-size",
    "seq_len": "--training.seq-len", "tp": "--parallelism.tensor-parallel-degree",
    "pp": "--parallelism.pipeline-parallel-degree", "cp": "--parallelism.context-parallel-degree",
    "ep": "--parallelism.expert-parallel-degree", "dp_shard": "--parallelism.data-parallel-shard-degree",
    "dp_replicate": "--parallelism.data-parallel-replicate-degree",
    "reshard": "--parallelism.fsdp-reshard-after-forward",
    "microbatch": "--parallelism.pipeline-parallel-microbatch-size",
    "layers_per_stage": "--parallelism.pipeline-parallel-layers-per-stage",
    "schedule": "--parallelism.pipeline-parallel-schedule",
    "first_less": "--parallelism.pipeline-parallel-first-stage-less-layers",
    "last_less": "--parallelism.pipeline-parallel-last-stage-less-layers",
}
DEGREES = ("tp", "pp", "cp", "ep", "dp_shard", "dp_replicate")
NO_FP16 = ("torchtitan trains in bf16 or fp32 (its --training.mixed-precision-param takes bfloat16 or float32, no "
           "fp16), its linears also in fp8, mxfp8 or nvfp4 (torchao)")


@dataclass(frozen=True)
class Torchtitan(Framework):
    """torchtitan's launch line (the module docstring) and its layer split (:func:`pipeline_split`)."""

    def split(self, n_layers: int, pp: int, vp: int) -> Optional[str]:
        why = super().split(n_layers, pp, vp)
        if why is None and vp == 1 and pp > 1 and equal_stages(n_layers, pp, 1) is None:
            per = -(-n_layers // pp)
            if -(-n_layers // per) != pp:
                return (f"torchtitan's pipeline_split puts ceil({n_layers}/{pp}) = {per} layers on a stage, which "
                        f"makes {-(-n_layers // per)} stages of the {n_layers} layers, not pp = {pp}; choose another pp")
        return why

    def check_export(self, model: Mapping[str, Any], precisions: Sequence[str], catalog_name: Optional[str],
                     unlike: str = "") -> None:
        super().check_export(model, precisions, catalog_name, unlike)
        name = catalog_name
        if name is None:
            raise ExportError(f"--export for torchtitan: torchtitan {self.version} takes the model from a config "
                              f"function of its registry, and perfzoo knows none for {model.get('model_name')}"
                              f"{unlike}; those it knows: {', '.join(CONFIGS)} (or --framework megatron-lm, whose "
                              "flags give any shape)")
        if any(p != "fp8" for p in precisions) and CONFIGS[name][1] is None:  # Trainer.Config.model_spec: Suppress
            raise ExportError(f"--export for torchtitan: torchtitan {self.version}'s one config of {name} "
                              f"({CONFIGS[name][2]}) builds its model with the Float8 converter, and its command line "
                              "cannot take the converter off (the model spec is no flag), so a "
                              f"{'/'.join(precisions)} plan would launch an FP8 run: plan --precision fp8, or "
                              "--framework megatron-lm / megatron-bridge")
        if "fp8" in precisions and CONFIGS[name][2] is None:
            raise ExportError(f"--export for torchtitan: torchtitan {self.version} turns float8 on in a config "
                              f"function, and its registry has no float8 config of {name}: plan --precision bf16, "
                              "or --framework megatron-lm / megatron-bridge for FP8")

    def arguments(self, c: Mapping[str, Any], model: Optional[str] = None) -> list[str]:
        if model not in CONFIGS:
            raise ExportError(f"torchtitan {self.version} has no config function of {model} in perfzoo's list")
        module, config, fp8 = CONFIGS[model]
        tp, pp, vp, cp, ep, dp = (int(c[k]) for k in ("tp", "pp", "vp", "cp", "ep", "dp"))
        mb, accum = int(c["micro_batch_size"]), int(c["grad_accum"])
        fsdp = c["fsdp"]
        shard, replicate = (1, dp) if fsdp == "no_shard" or dp == 1 else (dp, 1)
        args = ["--module", module, "--config", fp8 if c["precision"] == "fp8" else config,
                FLAGS["local_batch"], str(mb * accum if pp > 1 else mb), FLAGS["global_batch"],
                str(int(c["global_batch_size"])), FLAGS["seq_len"], str(int(c["seq_len"])),
                FLAGS["tp"], str(tp), FLAGS["pp"], str(pp), FLAGS["cp"], str(cp), FLAGS["ep"], str(ep),
                FLAGS["dp_shard"], str(shard), FLAGS["dp_replicate"], str(replicate)]
        if fsdp in SHARDING and dp * cp > 1:  # FSDP2 shards over the data and context ranks
            args += [FLAGS["reshard"], SHARDING[fsdp]]
        if pp > 1 or ep > 1:  # 0.3.0 refuses CUDA graphs with pipelining and with its default EP dispatcher
            args.append("--training.disable-cuda-graphs")
        if pp > 1:
            per, less = pipeline_split(int(c["n_layers"]), pp, vp)
            args += [FLAGS["microbatch"], str(mb), FLAGS["schedule"], "Interleaved1F1B" if vp > 1 else "1F1B",
                     FLAGS["layers_per_stage"], str(per), FLAGS["first_less"], str(less), FLAGS["last_less"], str(less)]
        return [*args, AC_PREFIX + str(c["activation_checkpointing"])]

    def read(self, args: Sequence[str], source: str) -> Baseline:
        check_expanded([_canonical(a) for a in args], {*FLAGS.values(), "--module", "--config"}, source)
        try:
            from torchtitan.config import ConfigManager
        except ImportError:
            return _read_flags(args, source)
        said = io.StringIO()
        try:  # tyro prints a box and exits on a bad line: its message, on one line
            with contextlib.redirect_stderr(said), contextlib.redirect_stdout(said):
                cfg = ConfigManager().parse_args(list(args))
        except SystemExit:
            text = " ".join(re.sub(r"[│╭╮╰╯─|+]|-{3,}", " ", said.getvalue()).split())  # the box, Unicode or ASCII
            found = re.search(r"Error parsing (.*?)(?: For full helptext| Argument helptext|$)", text)
            raise ExportError(f"{source}: torchtitan {self.version} refuses it: "
                              f"{found.group(1) if found else text[-300:]}") from None
        except (ValueError, ImportError) as exc:
            raise ExportError(f"{source}: torchtitan {self.version} refuses it: {' '.join(str(exc).split())}") from None
        return _read_config(cfg, args, source)


def _canonical(word: str) -> str:
    """A torchtitan flag as 0.3.0's help spells it (tyro takes ``_`` and ``-`` alike)."""
    if not word.startswith("--"):
        return word
    name, eq, value = word.partition("=")
    return name.replace("_", "-") + eq + value


def _model(module: Optional[str], config: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    """The catalog model and precision of a ``--module/--config`` pair (None where unknown)."""
    for name, (mod, cfg, fp8) in CONFIGS.items():
        if module in (mod, f"torchtitan.models.{mod}") and config in (cfg, fp8):
            return name, "fp8" if config == fp8 else "bf16"
    return None, None


def pipeline_split(n_layers: int, pp: int, vp: int) -> tuple[int, int]:
    """``(layers per stage, first and last stage less layers)`` for torchtitan, which makes
    ``ceil((layers + first less + last less) / layers per stage)`` stages: the forms of
    :func:`~perfzoo.frameworks._base.equal_stages`, or without virtual stages ``ceil(L/pp)`` a stage, the
    last holding what is left (DeepSeek-V3's 61 on 8: 7 x 8 and 5); an :class:`ExportError` where
    neither makes ``pp x vp`` stages (:meth:`Torchtitan.split` keeps such layouts out of a plan).

    >>> pipeline_split(126, 16, 8), pipeline_split(61, 8, 1)
    ((1, 1), (8, 0))
    """
    found = equal_stages(n_layers, pp, vp)
    if found is not None:
        return found
    per = -(-n_layers // pp)
    if vp > 1 or -(-n_layers // per) != pp:
        raise ExportError(unequal(n_layers, pp, vp))
    return per, 0


def _layout(values: dict, source: str) -> Baseline:
    """A :class:`Baseline` of torchtitan's settings (``values``: the :data:`FLAGS` dests): its layout
    knobs and workload keys, its layers per stage kept for :meth:`~perfzoo.frameworks.Baseline.settle`."""
    tp, pp, cp, ep = (int(values[k]) for k in ("tp", "pp", "cp", "ep"))
    shard, replicate = int(values["dp_shard"]), int(values["dp_replicate"])
    local, micro = int(values["local_batch"]), int(values.get("microbatch") or 1)
    layout = {"tp": tp, "pp": pp, "cp": cp, "ep": ep, "micro_batch_size": micro if pp > 1 else local,
              "activation_checkpointing": values["ac"], "precision": values.get("precision", "bf16")}
    if replicate > 1 and shard > 1:
        layout["fsdp"] = "hybrid_shard"
    elif replicate > 1:
        layout["fsdp"] = "no_shard"
    elif shard > 1 or shard == -1 or cp > 1:  # FSDP2 shards over the data and context ranks
        # "default" keeps the parameters gathered after the forward with pipelining, reshards them without
        reshard = values.get("reshard") or "default"
        layout["fsdp"] = "shard_grad_op" if reshard == "never" or (reshard == "default" and pp > 1) else "full_shard"
    else:
        layout["fsdp"] = "none"
    lps = values.get("layers_per_stage")
    stages = None
    if pp > 1 and lps:  # torchtitan's ceil((layers + first less + last less) / layers per stage) stages
        stages = (int(lps), int(values.get("first_less", 1)), int(values.get("last_less", 1)))
    multi = pp > 1 and values.get("schedule", "1F1B") not in ("1F1B", "GPipe")  # a multi-stage schedule
    layout["vp"] = FRAMEWORK.recipe.stages_per_rank if multi else 1  # its default without layers per stage
    workload = {"seq_len": int(values["seq_len"]), "local_batch_size": local}
    if values.get("global_batch") not in (None, -1):
        workload["global_batch_size"] = int(values["global_batch"])
    return Baseline("torchtitan", layout, workload, stages=stages)


def _read_flags(args: Sequence[str], source: str) -> Baseline:
    """torchtitan's flags read as written (torchtitan not installed): every degree must be given."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    parser.add_argument("--module")
    parser.add_argument("--config")
    for dest, flag in FLAGS.items():
        parser.add_argument(flag, dest=dest)
    try:
        known, rest = parser.parse_known_args([_canonical(a) for a in args])
    except argparse.ArgumentError as exc:
        raise ExportError(f"{source}: not a torchtitan argument list ({exc})") from None
    values = {k: v for k, v in vars(known).items() if v is not None}
    values["ac"] = next((w[len(AC_PREFIX):] for w in rest if w.startswith(AC_PREFIX)), None)
    model, precision = _model(values.get("module"), values.get("config"))
    missing = [FLAGS[k] for k in (*DEGREES[:4], "local_batch", "seq_len") if k not in values]
    if values["ac"] is None:
        missing.append(AC_PREFIX + "...")
    if missing:
        raise ExportError(f"{source}: the line leaves {', '.join(missing)} to its config function "
                          f"{values.get('config')}; give them on the line, or install torchtitan "
                          "(pip install torchtitan==0.3.0) so perfzoo reads the config function")
    values.setdefault("dp_shard", -1)
    values.setdefault("dp_replicate", 1)
    values["precision"] = precision or "bf16"
    baseline = _layout(values, source)
    baseline.model = model
    if not model:
        baseline.notes.append(f"{source}: --module {values.get('module')} --config {values.get('config')} is no "
                              "config perfzoo knows: give the model with --model or --set")
    return baseline


def _read_config(cfg: Any, args: Sequence[str], source: str) -> Baseline:
    """A config torchtitan's own ``ConfigManager`` parsed."""
    par, tr = cfg.parallelism, cfg.training
    kind = type(cfg.activation_checkpoint).__qualname__.split(".")[0]
    ac = {"FullAC": "full", "SelectiveAC": "selective", "NoneType": "none"}.get(kind)
    if ac is None:
        raise ExportError(f"{source}: activation checkpointing {kind} has no perfzoo counterpart; use "
                          f"{AC_PREFIX}none, selective or full")
    module = next((args[i + 1] for i, a in enumerate(args[:-1]) if a == "--module"), None)
    config = next((args[i + 1] for i, a in enumerate(args[:-1]) if a == "--config"), None)
    model, precision = _model(module, config)
    values = {"tp": par.tensor_parallel_degree, "pp": par.pipeline_parallel_degree,
              "cp": par.context_parallel_degree, "ep": par.expert_parallel_degree,
              "dp_shard": par.data_parallel_shard_degree, "dp_replicate": par.data_parallel_replicate_degree,
              "reshard": par.fsdp_reshard_after_forward, "microbatch": par.pipeline_parallel_microbatch_size,
              "layers_per_stage": par.pipeline_parallel_layers_per_stage,
              "schedule": par.pipeline_parallel_schedule,
              "first_less": par.pipeline_parallel_first_stage_less_layers,
              "last_less": par.pipeline_parallel_last_stage_less_layers,
              "local_batch": tr.local_batch_size, "global_batch": tr.global_batch_size, "seq_len": tr.seq_len,
              "ac": ac, "precision": precision or "bf16"}
    layers = getattr(getattr(cfg, "model_spec", None), "model", None)
    baseline = _layout(values, source)
    baseline.model = model
    return baseline.settle(len(layers.layers) if layers is not None and hasattr(layers, "layers") else None)


INTEGER_KEYS = frozenset({"tensor_parallel_degree", "pipeline_parallel_degree", "context_parallel_degree",
                          "expert_parallel_degree", "expert_tensor_parallel_degree", "data_parallel_shard_degree",
                          "data_parallel_replicate_degree", "pipeline_parallel_microbatch_size",
                          "local_batch_size", "batch_size", "global_batch_size", "seq_len"})


def read_toml(data: Mapping[str, Any], source: str) -> Baseline:
    """An older torchtitan release's TOML job file (0.1-0.2: ``[model] name/flavor``,
    ``[training]``, ``[parallelism]`` (0.1: degrees in ``[training]``), ``[activation_checkpoint]
    mode``, ``[float8] enable_float8_linear``). What the file leaves out is that release's
    ``JobConfig`` default (tensor, pipeline, context, expert degree 1; the shard degree the
    rest; selective checkpointing), each said in ``notes``."""
    model_t, training, par = data.get("model", {}), data.get("training", {}), data.get("parallelism", {})
    notes: list[str] = []

    def get(key: str, default: Any, *tables: Mapping[str, Any]) -> Any:
        for t in tables:
            if key in t:
                return t[key]
        notes.append(f"{source}: {key} not given: torchtitan's default {default}")
        return default

    for table in (training, par, data.get("experimental", {})):  # a bad value named before what is missing
        for key, value in table.items():
            if key in INTEGER_KEYS and (isinstance(value, bool) or not isinstance(value, int)):
                raise ExportError(f"{source}: {key} = {value!r} is not an integer: give a whole number")
    local = training.get("local_batch_size", training.get("batch_size"))
    if local is None:
        raise ExportError(f"{source}: [training] gives no local_batch_size (or batch_size): add it")
    values = {"tp": get("tensor_parallel_degree", 1, par, training),
              "pp": get("pipeline_parallel_degree", 1, par, data.get("experimental", {}), training),
              "cp": get("context_parallel_degree", 1, par, data.get("experimental", {}), training),
              "ep": par.get("expert_parallel_degree", 1),
              "dp_shard": get("data_parallel_shard_degree", -1, par, training),
              "dp_replicate": get("data_parallel_replicate_degree", 1, par, training),
              "reshard": par.get("fsdp_reshard_after_forward", "default"),
              "microbatch": par.get("pipeline_parallel_microbatch_size", 1),
              "layers_per_stage": par.get("pipeline_parallel_layers_per_stage"),
              "schedule": par.get("pipeline_parallel_schedule", "1F1B"),
              "local_batch": local, "global_batch": training.get("global_batch_size"),
              "seq_len": get("seq_len", 2048, training),
              "ac": get("mode", "selective", data.get("activation_checkpoint", {})),
              "precision": "fp8" if data.get("float8", {}).get("enable_float8_linear")
              or "float8" in model_t.get("converters", []) else "bf16"}
    model = TOML_MODELS.get((model_t.get("name"), model_t.get("flavor")))
    if model is None:
        notes.append(f"{source}: [model] {model_t.get('name')} {model_t.get('flavor')} is no model perfzoo knows: "
                     "give it with --model or --set")
    baseline = _layout(values, source)
    baseline.model, baseline.notes = model, notes
    return baseline


FRAMEWORK = Torchtitan(
    name="torchtitan", phrases=("torchtitan",), read_before=("pytorch",), entry=("-m", "torchtitan.train"),
    version="0.3.0", models=tuple(CONFIGS),
    runs=Runs(shardings=("full_shard", "shard_grad_op", "hybrid_shard", "no_shard", "none"),
              sharding_rule="torchtitan has no ZeRO-1 (its data parallelism is FSDP2 or DDP)",
              data_parallel="full_shard", data_parallel_is="FSDP2, torchtitan's data parallelism",
              trains_in=("bf16", "fp32", "fp8", "mxfp8", "nvfp4"), precision_rule=NO_FP16, writes=("bf16", "fp8"),
              schedules=("1F1B", "Interleaved1F1B", "GPipe", "InterleavedZeroBubble", "ZBVZeroBubble"),
              # torch.distributed.pipelining's interleaved schedules run their micro-batches in rounds of pp
              # its MoE token dispatcher is the config function's (0.3.0 builds DeepEP only into its debug models'
              # configs, qwen3_moe_deepep; the model spec is no flag, --override.imports replaces no dispatcher of an
              # all-to-all spec): all-to-all, dropless; no MoE module recompute; experts not tensor-parallel (EP
              # borrows the FSDP and TP ranks, ParallelismConfig.expert_parallel_degree); no dispatch overlap
              interleave_rounds=True, dispatchers=("alltoall",), moe_recompute=(), expert_tp=False, token_drop=False,
              moe_overlaps=()),
    # FlashAttention-2 through SDPA; torchao's float8 all-gather in its FP8 presets; under a pipeline FSDP keeps
    # each stage gathered (reshard_after_forward=False) and reduces after the last micro-batch; fused_rmsnorm;
    # the selective "op" policy; its launcher sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
    physics=Physics(fa2_attention=True, fp8_param_gather=True, pipelined_fsdp=True, fused_norm=True,
                    selective_policy=ALTERNATE_MATMULS, expandable_segments=True),
    # JobConfig's activation_checkpoint.mode "selective" (the default since 2024); the loss compiled with the
    # model since commit bbb1b616e (2025-04-02, "refactor train_spec.loss_fn to build_loss_fn & chunked loss");
    # llama3_8b_nvfp4_mixed converts the leading 85% of the decoder layers (nvfp4.md); a rank's local batch runs
    # in pp micro-batches while pipeline_parallel_microbatches is unset; two stages per rank for a multi-stage
    # schedule without split points (generate_split_points, 2024-12)
    recipe=Recipe(defaults=(("activation_checkpointing", "selective"),), compiled_loss_since="2025-04-02",
                  low_precision_share=0.85, local_batch_split=True, stages_per_rank=2))

__all__ = ["CONFIGS", "FRAMEWORK", "Torchtitan", "pipeline_split", "read_toml"]
