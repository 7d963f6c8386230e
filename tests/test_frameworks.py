"""plan --framework / --export / --baseline-from: layouts priced as a framework runs them, written
as its launch lines, and a user's own launch line read back as the baseline (perfzoo.frameworks,
perfzoo.plan.export)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfzoo import frameworks
from perfzoo.analytic.llm import LLMCost
from perfzoo.console import InputError, assignments
from perfzoo.frameworks import megatron_bridge, torchtitan
from perfzoo.llmconfig import catalog
from perfzoo.plan import Cluster, plan
from perfzoo.plan import export
from perfzoo.plan.layouts import layout_space
from perfzoo.plan.cli import build_parser, main
from perfzoo.plan.command import PlanConfig
from perfzoo.plan.scoring import Scorer
from perfzoo.search import Formula
from perfzoo.spaces import SpaceError

H100 = "H100-SXM-80GB"
# torchtitan 0.3.0 comes with the test extra (pip install -e ".[test]", as CI and the README install it): a checkout
# installed without that extra has no ConfigManager to parse the lines with
NO_TORCHTITAN = "torchtitan is not installed: install the test extra, pip install -e \".[test]\""
SEEN: dict = {}  # what the toy scorer was given, by framework


def toy(framework):
    def predict(X):  # records the framework column every layout is priced with; ranks layouts at random
        SEEN[framework] = set(X["config.framework"].astype(str)) if "config.framework" in X else {"(none)"}
        return np.random.default_rng(len(X)).random(len(X)) + 1.0
    return Scorer(Formula(predict))


def diverse(p, want=("pp", "vp", "cp", "fsdp", "activation_checkpointing", "micro_batch_size")):
    """Configs of plan ``p`` covering, between them, every value each knob of ``want`` takes in it."""
    configs = p.configs(len(p.layouts))
    picked, seen = [], set()
    for c in configs:
        new = {(k, c[k]) for k in want} - seen
        if new:
            picked.append(c)
            seen |= new
    return picked


@pytest.fixture(scope="module")
def titan_plan():
    return plan("llama3-8b", Cluster(gpus=16, accelerator=H100), seq_len=8192, global_batch=64,
                framework="torchtitan", scorer=toy("torchtitan"))


@pytest.fixture(scope="module")
def megatron_plan():
    return plan("qwen3-30b-a3b", Cluster(gpus=16, accelerator=H100), seq_len=8192, global_batch=128,
                precisions=("bf16", "fp8"), framework="megatron-lm", scorer=toy("megatron-lm"))


LAUNCH = frameworks.Launch(nodes=2, gpus_per_node=8)


def program_args(fw, config):
    """The framework's arguments as the written script gives them to its program (after the entry), its
    model resolved as the exporter resolves it."""
    model = export.catalog_model(config, fw.models)[0] if fw.models is not None else None
    words = frameworks.script_command(frameworks.script(fw.command(config, LAUNCH, model), ["x"]))
    return words[words.index(fw.entry[-1]) + 1:]


def test_the_framework_prices_every_layout_and_keeps_to_those_it_runs(titan_plan):
    assert SEEN["torchtitan"] == {"torchtitan"}  # every generated layout priced as torchtitan runs it
    assert titan_plan.model["framework"] == "torchtitan"
    assert "zero1" not in set(titan_plan.layouts["fsdp"])  # torchtitan has no ZeRO-1
    plain = plan("llama3-8b", Cluster(gpus=16, accelerator=H100), seq_len=8192, global_batch=64, scorer=toy(None))
    assert "zero1" in set(plain.layouts["fsdp"]) and SEEN[None] == {"(none)"}
    assert "framework: torchtitan" in __import__("perfzoo.plan.report", fromlist=["table"]).table(titan_plan, 1)


def test_torchtitan_keeps_fp16_out_of_its_layouts():
    """torchtitan's FSDP2 mixed precision takes bf16 or fp32: an fp16 layout is refused, with the reason."""
    p = plan("llama3-8b", Cluster(gpus=8, accelerator=H100), seq_len=4096, global_batch=64, precisions=("bf16", "fp16"),
             framework="torchtitan", scorer=toy("fp16"))
    assert set(p.layouts["precision"]) == {"bf16"}
    reason = torchtitan.FRAMEWORK.refuses({"fsdp": "full_shard", "precision": "fp16"})
    assert reason.startswith("precision=fp16 under framework=torchtitan: torchtitan trains in bf16 or fp32")
    assert "\n" not in reason and reason.endswith("give precision=bf16, fp32, fp8, mxfp8 or nvfp4")
    assert frameworks.get("megatron-lm").refuses({"fsdp": "zero1", "precision": "fp16"}) is None


@pytest.mark.parametrize("model, layers", [("llama3-8b", 32), ("qwen3-30b-a3b", 48)])
def test_torchtitan_arguments_parse_with_torchtitans_config_manager(titan_plan, model, layers):
    """The exported line parsed by torchtitan 0.3.0's own ConfigManager (the ``test`` extra installs
    torchtitan beside the CPU torch) into the planned degrees, batch, sequence and checkpointing."""
    manager = pytest.importorskip("torchtitan.config", reason=NO_TORCHTITAN).ConfigManager
    split_layers = pytest.importorskip("torchtitan.distributed.pipeline_parallel",
                                       reason=NO_TORCHTITAN)._generate_llm_fqn_per_model_part
    ac_class = {"none": "NoneType", "selective": "SelectiveAC", "full": "FullAC"}
    p = titan_plan if model == "llama3-8b" else plan(model, Cluster(gpus=16, accelerator=H100), seq_len=8192,
                                                      global_batch=64, framework="torchtitan", scorer=toy("moe"))
    picked = diverse(p, want=("pp", "vp", "cp", "ep", "fsdp", "activation_checkpointing", "micro_batch_size"))
    assert (max(c["ep"] for c in picked) > 1) == (model != "llama3-8b")
    for c in picked:
        cfg = manager().parse_args(program_args(torchtitan.FRAMEWORK, c))
        par, tr = cfg.parallelism, cfg.training
        assert (par.tensor_parallel_degree, par.pipeline_parallel_degree, par.context_parallel_degree,
                par.expert_parallel_degree) == (c["tp"], c["pp"], c["cp"], c["ep"])
        assert par.data_parallel_shard_degree * par.data_parallel_replicate_degree == c["dp"]
        assert c["tp"] * c["pp"] * c["cp"] * c["dp"] == 16
        assert tr.seq_len == 8192 and tr.global_batch_size == 64
        if c["pp"] > 1:  # a step's micro-batches go through the pipeline in one local batch
            assert par.pipeline_parallel_microbatch_size == c["micro_batch_size"]
            assert tr.local_batch_size == c["micro_batch_size"] * c["grad_accum"]
            # torchtitan's own stage count and split (pipeline_parallel.py): every layer on one stage
            first, last = par.pipeline_parallel_first_stage_less_layers, par.pipeline_parallel_last_stage_less_layers
            stages = -(-(layers + first + last) // par.pipeline_parallel_layers_per_stage)
            assert stages == c["pp"] * c["vp"]
            split = split_layers(stages, layers, first, last)
            assert sorted(n for part in split for n in part if n.startswith("layers.")) == sorted(
                f"layers.{i}" for i in range(layers))
        else:  # torchtitan accumulates global / (local x dp) steps
            assert tr.local_batch_size == c["micro_batch_size"]
            assert tr.global_batch_size // (tr.local_batch_size * c["dp"]) == c["grad_accum"]
        assert type(cfg.activation_checkpoint).__qualname__.split(".")[0] == ac_class[c["activation_checkpointing"]]
        if c["dp"] * c["cp"] > 1:
            assert par.fsdp_reshard_after_forward == {"full_shard": "always", "shard_grad_op": "never"}[c["fsdp"]]


# the flags torchtitan 0.3.0's `python -m torchtitan.train --module llama3 --config llama3_8b --help` lists
# (those a layout uses), and its activation-checkpoint subcommands
TORCHTITAN_DECLARED = {
    "--module", "--config", "--training.local-batch-size", "--training.global-batch-size", "--training.seq-len",
    "--training.disable-cuda-graphs", "--parallelism.tensor-parallel-degree", "--parallelism.pipeline-parallel-degree",
    "--parallelism.context-parallel-degree", "--parallelism.expert-parallel-degree",
    "--parallelism.data-parallel-shard-degree", "--parallelism.data-parallel-replicate-degree",
    "--parallelism.fsdp-reshard-after-forward", "--parallelism.pipeline-parallel-microbatch-size",
    "--parallelism.pipeline-parallel-schedule", "--parallelism.pipeline-parallel-layers-per-stage",
    "--parallelism.pipeline-parallel-first-stage-less-layers", "--parallelism.pipeline-parallel-last-stage-less-layers"}


def test_torchtitans_own_refusal_of_a_line_is_one_line():
    pytest.importorskip("torchtitan.config", reason=NO_TORCHTITAN)
    with pytest.raises(InputError, match=r"job: torchtitan 0.3.0 refuses it: --parallelism.tensor-parallel-degree: "
                                         r"invalid literal for int\(\) with base 10: 'x'"):
        torchtitan.FRAMEWORK.read(["--module", "llama3", "--config", "llama3_70b",
                                   "--parallelism.tensor_parallel_degree", "x"], "job")
    with pytest.raises(InputError, match="job: torchtitan 0.3.0 refuses it: Config: CUDA graphs do not support pipeline "
                                         "parallelism yet. Set --training.disable_cuda_graphs.$"):
        torchtitan.FRAMEWORK.read(["--module", "llama3", "--config", "llama3_70b",
                                   "--parallelism.pipeline_parallel_degree", "2"], "job")


def test_torchtitan_arguments_use_declared_flags_and_read_back_as_the_layout(titan_plan):
    for c in diverse(titan_plan):
        args = program_args(torchtitan.FRAMEWORK, c)
        assert {a for a in args if a.startswith("--")} <= TORCHTITAN_DECLARED
        assert args[-1] == f"activation-checkpoint:{c['activation_checkpointing']}"
        back = torchtitan.FRAMEWORK.read(args, "test")
        assert back.model == "llama3-8b" and back.workload["seq_len"] == 8192
        want = {k: c[k] for k in ("tp", "pp", "vp", "cp", "ep", "micro_batch_size", "activation_checkpointing",
                                  "precision")}
        assert {k: back.layout[k] for k in want} == want
        assert back.layout["fsdp"] == (c["fsdp"] if c["dp"] * c["cp"] > 1 else back.layout["fsdp"])


def megatron_parser():
    """Megatron-LM's flags a layout uses, as megatron/training/arguments.py declares them (checked by
    parsing perfzoo's exports with Megatron-LM's own parse_args, commit d98e8a6, 2026-08; it does not
    install from PyPI: megatron.training is not in the megatron-core wheel). Unknown flags fail."""
    p = argparse.ArgumentParser(allow_abbrev=False)
    for flag in ("--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads", "--num-query-groups",
                 "--kv-channels", "--num-experts", "--moe-router-topk", "--moe-ffn-hidden-size", "--vocab-size",
                 "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size",
                 "--expert-model-parallel-size", "--num-layers-per-virtual-pipeline-stage", "--micro-batch-size",
                 "--global-batch-size", "--seq-length", "--max-position-embeddings", "--recompute-num-layers",
                 "--train-iters", "--eval-iters", "--log-interval", "--moe-shared-expert-intermediate-size",
                 "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers", "--kv-lora-rank",
                 "--q-lora-rank", "--qk-head-dim", "--qk-pos-emb-head-dim", "--v-head-dim",
                 "--expert-tensor-parallel-size", "--mtp-num-layers"):
        p.add_argument(flag, type=int)
    for flag in ("--recompute-granularity", "--recompute-method", "--data-parallel-sharding-strategy", "--fp8-format",
                 "--pipeline-model-parallel-layout",
                 "--normalization", "--position-embedding-type", "--tokenizer-type", "--moe-token-dispatcher-type",
                 "--lr", "--moe-layer-freq", "--moe-flex-dispatcher-backend", "--ckpt-format", "--fp8-recipe",
                 "--window-size", "--window-attn-skip-freq"):
        p.add_argument(flag)
    for flag in ("--group-query-attention", "--sequence-parallel", "--use-distributed-optimizer", "--use-megatron-fsdp",
                 "--bf16", "--swiglu", "--untie-embeddings-and-output-weights", "--disable-bias-linear", "--mock-data",
                 "--moe-grouped-gemm", "--account-for-embedding-in-pipeline-split",
                 "--account-for-loss-in-pipeline-split",
                 "--multi-latent-attention", "--overlap-grad-reduce", "--overlap-param-gather", "--moe-permute-fusion"):
        p.add_argument(flag, action="store_true")
    p.add_argument("--recompute-modules", nargs="+")
    return p


def test_megatron_lm_arguments_hold_the_planned_layout(megatron_plan):
    assert SEEN["megatron-lm"] == {"megatron-lm"}
    fw = frameworks.get("megatron-lm")
    picked = diverse(megatron_plan, want=("pp", "vp", "cp", "ep", "fsdp", "activation_checkpointing", "precision"))
    assert {c["precision"] for c in picked} == {"bf16", "fp8"} and max(c["ep"] for c in picked) > 1
    for c in picked:
        a = megatron_parser().parse_args(program_args(fw, c))
        assert (a.tensor_model_parallel_size, a.pipeline_model_parallel_size, a.context_parallel_size,
                a.expert_model_parallel_size) == (c["tp"], c["pp"], c["cp"], c["ep"])
        # equal stages of the layers, or of the layers, the embedding and the loss (Megatron's check); else a layout
        # of pp x vp stages in model order holding every layer once, the embedding first and the loss last
        counted = 48 + 2 * a.account_for_embedding_in_pipeline_split
        assert a.account_for_embedding_in_pipeline_split == a.account_for_loss_in_pipeline_split
        if a.pipeline_model_parallel_layout:
            stages = a.pipeline_model_parallel_layout.split("|")
            assert len(stages) == c["pp"] * c["vp"] and "".join(stages) == "E" + "t" * 48 + "L" and all(stages)
        else:
            assert (a.num_layers_per_virtual_pipeline_stage or counted // c["pp"]) * c["pp"] * c["vp"] == counted
        assert (a.micro_batch_size, a.global_batch_size, a.seq_length) == (c["micro_batch_size"], 128, 8192)
        assert a.sequence_parallel == (c["tp"] > 1)
        assert (a.recompute_granularity or "none") == c["activation_checkpointing"]
        assert a.use_distributed_optimizer == (c["fsdp"] != "no_shard" and c["dp"] * c["cp"] > 1)
        assert a.use_megatron_fsdp == (c["fsdp"] in ("full_shard", "shard_grad_op"))
        # what the pricing assumes: DP traffic under the kernels, experts not tensor-parallel (Megatron's default is TP)
        assert a.overlap_grad_reduce == a.overlap_param_gather == (c["dp"] * c["cp"] > 1)
        assert a.expert_tensor_parallel_size == c["etp"]
        assert a.bf16 and (a.fp8_format == "hybrid") == (c["precision"] == "fp8")
        assert (a.num_layers, a.hidden_size, a.num_experts, a.moe_router_topk, a.moe_ffn_hidden_size) == (
            48, 2048, 128, 8, 768)
        back = fw.read(program_args(fw, c), "test")
        assert {k: back.layout[k] for k in ("tp", "pp", "vp", "cp", "ep", "micro_batch_size", "precision")} == {
            k: c[k] for k in ("tp", "pp", "vp", "cp", "ep", "micro_batch_size", "precision")}


# the ConfigContainer fields the overrides name, as megatron-bridge 0.3.1 and megatron-core 0.16.1 declare
# them (read from their sources: megatron-bridge does not install CPU-only, its transformer-engine needs CUDA)
BRIDGE_FIELDS = {
    "model": {"tensor_model_parallel_size", "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
              "pipeline_model_parallel_layout",
              "context_parallel_size", "expert_model_parallel_size", "sequence_parallel", "seq_length",
              "recompute_granularity", "recompute_method", "recompute_num_layers", "tp_comm_overlap",
              # an MoE layout's (megatron-core 0.16's TransformerConfig)
              "expert_tensor_parallel_size", "moe_token_dispatcher_type", "moe_flex_dispatcher_backend",
              "moe_grouped_gemm", "moe_permute_fusion", "moe_expert_capacity_factor", "recompute_modules",
              "moe_shared_expert_overlap", "overlap_moe_expert_parallel_comm"},
    "comm_overlap": {"overlap_moe_expert_parallel_comm"},  # megatron-bridge 0.3.1's CommOverlapConfig
    "checkpoint": {"ckpt_format"},
    "train": {"micro_batch_size", "global_batch_size"}, "dataset": {"sequence_length"},
    "ddp": {"use_distributed_optimizer", "use_megatron_fsdp", "data_parallel_sharding_strategy",
            "grad_reduce_in_fp32"},
    "optimizer": {"use_distributed_optimizer"}}
BRIDGE_PRECISIONS = {"bf16_mixed", "bf16_with_fp8_current_scaling_mixed"}  # megatron.bridge.training.mixed_precision


@pytest.mark.parametrize("name", ["megatron-bridge", "nemo"])
def test_megatron_bridge_overrides_name_its_config_fields_and_hold_the_layout(megatron_plan, name):
    fw = frameworks.get(name)
    for c in diverse(megatron_plan, want=("pp", "vp", "cp", "ep", "fsdp", "activation_checkpointing", "precision")):
        c = {**c, "framework": name}  # priced as the framework that writes it (as a plan for it is)
        args = program_args(fw, c)
        assert args[:2] == ["--recipe", "qwen3_30b_a3b_pretrain_config"]
        over = dict(a.split("=", 1) for a in args[2:])
        for key in over:
            section, _, name_ = key.partition(".")
            assert (name_ in BRIDGE_FIELDS[section]) if name_ else (section == "mixed_precision"), key
        assert over["mixed_precision"] in BRIDGE_PRECISIONS
        vp = over["model.virtual_pipeline_model_parallel_size"]
        assert [int(over[f"model.{k}"]) for k in ("tensor_model_parallel_size", "pipeline_model_parallel_size",
                                                  "context_parallel_size", "expert_model_parallel_size")] + [
            1 if vp == "null" else int(vp)] == [c["tp"], c["pp"], c["cp"], c["ep"], c["vp"]]
        assert over["train.micro_batch_size"] == str(c["micro_batch_size"]) and over["train.global_batch_size"] == "128"
        assert over["model.seq_length"] == over["dataset.sequence_length"] == "8192"
        granularity = over["model.recompute_granularity"]
        assert (granularity if granularity != "null" else "none") == c["activation_checkpointing"]
        assert over["ddp.use_distributed_optimizer"] == over["optimizer.use_distributed_optimizer"]
        assert (over["ddp.use_megatron_fsdp"] == "true") == (c["fsdp"] in ("full_shard", "shard_grad_op"))
        cost = LLMCost(pd.DataFrame([c]))  # what the layout was priced with
        assert over["model.tp_comm_overlap"] == ("true" if cost.tp_overlap[0] else "false")
        grad_bytes = cost.memory.bytes_per_param()[1][0]
        assert over["ddp.grad_reduce_in_fp32"] == {4.0: "true", 2.0: "false"}[grad_bytes]


def test_nemo_and_megatron_bridge_exports_say_what_each_was_priced_with():
    """NeMo's export was the Megatron-Bridge script byte for byte while the two are priced apart
    (Megatron-Bridge's performance recipes reduce gradients in bf16, NeMo in fp32): each writes its own."""
    c = {**catalog.get("llama3-70b"), "tp": 4, "pp": 2, "vp": 1, "cp": 1, "ep": 1, "dp": 2, "micro_batch_size": 1,
         "grad_accum": 64, "global_batch_size": 128, "seq_len": 8192, "activation_checkpointing": "none",
         "fsdp": "zero1", "precision": "bf16", "n_gpus": 16}
    bridge, nemo = (dict(a.split("=", 1) for a in program_args(frameworks.get(name), {**c, "framework": name})[2:])
                    for name in ("megatron-bridge", "nemo"))
    assert (bridge["ddp.grad_reduce_in_fp32"], nemo["ddp.grad_reduce_in_fp32"]) == ("false", "true")
    assert bridge["model.tp_comm_overlap"] == nemo["model.tp_comm_overlap"] == "true"  # tp 4 with SP: overlapped
    assert {k: v for k, v in bridge.items() if k != "ddp.grad_reduce_in_fp32"} == {
        k: v for k, v in nemo.items() if k != "ddp.grad_reduce_in_fp32"}
    off = dict(a.split("=", 1) for a in program_args(frameworks.get("nemo"), {**c, "framework": "nemo",
                                                                                "tp_comm_overlap": False})[2:])
    assert off["model.tp_comm_overlap"] == "false"  # --set tp_comm_overlap=false prices (and writes) it off


def test_a_config_json_of_a_catalog_models_shape_exports_as_that_model(tmp_path):
    """``--model config.json`` of DeepSeek-V3 could not be exported ("knows none for deepseek_v3") while
    ``--model deepseek-v3`` could: a config.json whose whole priced shape is a catalog model's is written with
    that model's recipe / config function; one that differs (no MTP block) is refused, saying so."""
    from perfzoo.plan.planner import model_keys

    raw = {"model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 61,
           "hidden_size": 7168, "vocab_size": 129280, "num_attention_heads": 128, "num_nextn_predict_layers": 1}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    shape, _ = model_keys(str(path))
    assert shape["model_name"] == "deepseek_v3"
    c = {**shape, "tp": 8, "pp": 8, "vp": 1, "cp": 1, "ep": 8, "dp": 4, "micro_batch_size": 1, "grad_accum": 256,
         "global_batch_size": 1024, "seq_len": 4096, "activation_checkpointing": "full", "fsdp": "zero1",
         "precision": "bf16", "n_gpus": 256}
    for name, want in (("megatron-bridge", ["--recipe", "deepseek_v3_pretrain_config"]),
                       ("nemo", ["--recipe", "deepseek_v3_pretrain_config"]),
                       ("torchtitan", ["--module", "deepseek_v3", "--config", "deepseek_v3_671b"])):
        fw = frameworks.get(name)
        export.check({**shape, "framework": name}, ("bf16",), written=True)
        assert program_args(fw, {**c, "framework": name})[:len(want)] == want, name
    path.write_text(json.dumps({**raw, "num_nextn_predict_layers": 0}))
    shape, _ = model_keys(str(path))
    with pytest.raises(InputError, match=r"knows none for deepseek_v3 \(its layers, width and heads are deepseek-v3's, "
                                         r"but not all of its shape: 671.0B parameters against 682.6B\)"):
        export.check({**shape, "framework": "megatron-bridge"}, ("bf16",), written=True)
    llama, _ = model_keys(str(Path(__file__).resolve().parents[1] / "examples" / "llama-config" / "config.json"))
    export.check({**llama, "framework": "megatron-bridge"}, ("bf16",), written=True)  # Llama 3.2 3B: its recipe
    with pytest.raises(InputError, match="torchtitan 0.3.0 takes the model from a config function .* none for llama"):
        export.check({**llama, "framework": "torchtitan"}, ("bf16",), written=True)  # 0.3.0 has no Llama 3.2 3B


def test_export_writes_the_top_layouts_as_scripts_and_refuses_an_old_export(tmp_path, titan_plan):
    paths = export.write(titan_plan, "torchtitan", str(tmp_path / "out"), k=3)
    assert [p.name for p in paths] == ["rank01.sh", "rank02.sh", "rank03.sh"]
    top = titan_plan.configs(3)
    for path, c in zip(paths, top):
        text = path.read_text()
        assert text.startswith("#!/usr/bin/env bash\n# perfzoo plan, rank ") and "MASTER_ADDR" in text
        words = frameworks.script_command(text)
        assert words[:3] == ["torchrun", "--nnodes", "2"]
        assert words[words.index("--parallelism.tensor-parallel-degree") + 1] == str(c["tp"])
    with pytest.raises(InputError, match="already holds an export"):
        export.check_folder(str(tmp_path / "out"))
    with pytest.raises(InputError, match="does not exist"):
        export.check_folder(str(tmp_path / "no" / "out"))


@pytest.mark.parametrize("argv, message", [
    (["--export", "{tmp}/x"], "--export .*: give --framework torchtitan|megatron-bridge|megatron-lm|nemo"),
    (["--framework", "torchtitan", "--export", "{tmp}/x", "--model", "llama2-13b"],
     "torchtitan 0.3.0 takes the model from a config function .* none for llama2-13b"),
    (["--framework", "torchtitan", "--export", "{tmp}/x", "--precision", "bf16,fp8"],
     "no float8 config of llama3-8b"),
    (["--framework", "torchtitan", "--export", "{tmp}/x", "--model", "llama3.1-405b"],  # a bf16 plan, an FP8 preset
     r"one config of llama3.1-405b \(llama3_405b\) builds its model with the Float8 converter, .* so a bf16 plan would launch an FP8 run"),
    (["--framework", "megatron-bridge", "--export", "{tmp}/x", "--set", "n_layers=12", "hidden_dim=1024", "n_heads=16",
      "vocab_size=32000", "model_name=mine"], "Megatron-Bridge takes the model from a recipe"),
    (["--framework", "torchtitan", "--set", "framework=nemo"], "--framework torchtitan and --set framework=nemo"),
    (["--framework", "torchtitan", "--precision", "bf16,fp16"],  # planned, it was: FSDP2 takes bf16 or fp32
     r"--precision bf16,fp16 for torchtitan: torchtitan trains in bf16 or fp32 .*; plan --precision bf16"),
    (["--baseline-from", "{tmp}/missing.sh"], "--baseline-from .*missing.sh: no such file"),
])
def test_framework_export_and_baseline_errors_are_one_line(tmp_path, capsys, argv, message):
    base = ["--model", "llama3-8b", "--gpus", "8", "--accelerator", H100, "--seq-len", "4096", "--global-batch", "64"]
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    if "--model" in argv or "model_name=mine" in argv:  # a model of its own: no --model beside it
        base = base[2:]
    assert main(base + argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(message, err), err
    assert not (tmp_path / "x").exists()  # refused before any work


def test_help_lists_the_frameworks():
    text = build_parser().format_help()
    assert "--framework {megatron-bridge,megatron-lm,nemo,torchtitan}" in text
    assert "--export DIR" in text and "--baseline-from FILE" in text


TITAN_LINE = """#!/bin/bash
# my job
torchrun --nnodes 2 --nproc_per_node 8 -m torchtitan.train --module llama3 --config llama3_70b \\
  --parallelism.tensor_parallel_degree 8 --parallelism.pipeline_parallel_degree 2 \\
  --parallelism.context_parallel_degree 1 --parallelism.expert_parallel_degree 1 \\
  --training.local_batch_size 8 --training.seq_len 8192 --parallelism.pipeline_parallel_microbatch_size 1 \\
  --parallelism.pipeline_parallel_schedule 1F1B --training.disable_cuda_graphs activation-checkpoint:full
"""
TITAN_TOML = """
[model]
name = "llama3"
flavor = "8B"
[training]
batch_size = 2
seq_len = 8192
tensor_parallel_degree = 2
data_parallel_shard_degree = -1
[activation_checkpoint]
mode = "selective"
[float8]
enable_float8_linear = true
"""
MEGATRON_LINE = """torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 \\
  --num-attention-heads 32 --group-query-attention --num-query-groups 8 --swiglu --vocab-size 128256 \\
  --untie-embeddings-and-output-weights --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \\
  --num-layers-per-virtual-pipeline-stage 4 --micro-batch-size 1 --global-batch-size 128 --seq-length 4096 \\
  --recompute-granularity full --recompute-method uniform --use-distributed-optimizer --bf16 --fp8-format hybrid
"""


@pytest.mark.parametrize("name, text, want", [
    ("job.sh", TITAN_LINE, {"framework": "torchtitan", "model": "llama3-70b", "gpus": 16, "seq_len": 8192,
                            "global_batch": 8, "baseline": {"tp": 8, "pp": 2, "cp": 1, "ep": 1, "micro_batch_size": 1,
                                                            "activation_checkpointing": "full", "vp": 1,
                                                            "fsdp": "none", "precision": "bf16"}}),
    ("titan.toml", TITAN_TOML, {"framework": "torchtitan", "model": "llama3-8b", "gpus": 8, "seq_len": 8192,
                                "global_batch": 8, "baseline": {"tp": 2, "pp": 1, "cp": 1, "ep": 1,
                                                                "micro_batch_size": 2, "vp": 1, "fsdp": "full_shard",
                                                                "activation_checkpointing": "selective",
                                                                "precision": "fp8"}}),
    ("megatron.sh", MEGATRON_LINE, {"framework": "megatron-lm", "model": "llama3-8b", "gpus": 8, "seq_len": 4096,
                                    "global_batch": 128, "baseline": {"tp": 2, "pp": 2, "cp": 1, "ep": 1, "vp": 4,
                                                                      "micro_batch_size": 1, "fsdp": "zero1",
                                                                      "activation_checkpointing": "full",
                                                                      "precision": "fp8"}}),
])
def test_baseline_from_reads_each_form(tmp_path, name, text, want):
    path = tmp_path / name
    path.write_text(text)
    extra = {"gpus": 8} if name.endswith(".toml") else {}  # a TOML file does not say how many GPUs
    config = export.with_baseline(PlanConfig(baseline_from=str(path), accelerator=H100, **extra))
    got = {"framework": config.framework, "model": config.model, "gpus": config.gpus, "seq_len": config.seq_len,
           "global_batch": config.global_batch, "baseline": assignments(config.baseline, "--baseline")}
    assert got == want
    if name == "megatron.sh":  # the line gives Llama 3 8B's shape: planned as that model, with its published layouts
        assert config.knobs == []


def test_a_baseline_line_of_a_shape_of_its_own_keeps_its_settings(tmp_path):
    """A shape the catalog lacks is named after its file (it printed "None" and hid nothing else); the
    line's --tp-comm-overlap, which moved its price 21%, prices every layout of the plan."""
    path = tmp_path / "mine.sh"
    path.write_text(MEGATRON_LINE.replace("--num-layers 32", "--num-layers 30").replace("--bf16",
                                                                                      "--bf16 --tp-comm-overlap"))
    said = []
    config = export.with_baseline(PlanConfig(baseline_from=str(path), accelerator=H100), log=said.append)
    assert config.model is None
    assert assignments(config.knobs, "--set") == {"n_layers": 30, "hidden_dim": 4096, "ffn_dim": 14336, "n_heads": 32,
                                                  "vocab_size": 128256, "n_kv_heads": 8, "gated_mlp": True,
                                                  "tie_embeddings": False, "model_name": "mine",
                                                  "tp_comm_overlap": True}
    assert any("sets tp_comm_overlap=True; every layout is priced with it" in line for line in said)


def test_a_baseline_from_file_is_planned_against(tmp_path):
    path = tmp_path / "megatron.sh"
    path.write_text(MEGATRON_LINE)
    config = export.with_baseline(PlanConfig(baseline_from=str(path), accelerator=H100, precision="bf16,fp8"))
    shape = {**catalog.get(config.model), "framework": config.framework}
    p = plan(shape, Cluster(gpus=config.gpus, accelerator=H100), seq_len=config.seq_len,
             global_batch=config.global_batch, precisions=("bf16", "fp8"), scorer=toy("megatron-lm"),
             baseline=assignments(config.baseline, "--baseline"))
    base = p.baselines.iloc[0]
    assert base["label"] == "your baseline" and (base["tp"], base["pp"], base["vp"]) == (2, 2, 4)
    assert base["precision"] == "fp8" and np.isfinite(base["predicted_tokens_per_s_per_device"])


def test_without_torchtitan_a_line_leaving_degrees_to_its_config_function_is_refused():
    # torchtitan installed reads the config function's own settings (the test above, in the test extra)
    with pytest.raises(InputError, match="leaves --parallelism.tensor-parallel-degree, .* to its config function "
                                         "llama3_70b; give them on the line, or install torchtitan"):
        torchtitan._read_flags(["--module", "llama3", "--config", "llama3_70b", "--training.seq_len", "8192"], "job")


@pytest.mark.parametrize("text, message", [
    ("python train.py --lr 3e-4", "neither torchtitan arguments"),
    ("pretrain_gpt.py --tensor-model-parallel-size 2", "needs --micro-batch-size and --seq-length"),
])
def test_a_baseline_file_that_cannot_be_read_says_why(tmp_path, text, message):
    path = tmp_path / "job.sh"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        frameworks.read_baseline(path)


@pytest.mark.parametrize("line, flag, value", [
    (("TP=4\ntorchrun --nproc-per-node 8 pretrain_gpt.py --tensor-model-parallel-size $TP --micro-batch-size 1 "
      "--seq-length 4096"), "--tensor-model-parallel-size", "$TP"),
    (("torchrun --nproc-per-node 8 -m torchtitan.train --module llama3 --config llama3_8b "
      "--parallelism.tensor_parallel_degree=${TP} --training.seq-len 4096"), "--parallelism.tensor-parallel-degree",
     "${TP}"),
])
def test_a_shell_variable_in_a_baseline_file_is_one_line_naming_it(tmp_path, capsys, line, flag, value):
    """The shell is not there to expand ``$TP``: one line naming the variable and the fix, no usage line of
    the reader's own parser (it leaked one)."""
    path = tmp_path / "job.sh"
    path.write_text(line + "\n")
    assert main(["--baseline-from", str(path), "--accelerator", H100, "--gpus", "8"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"perfzoo.plan: error: --baseline-from {path}: {flag} {value} is a shell variable, which perfzoo "
                   f"does not expand (it reads the file as written): write its value in its place, e.g. {flag} 4")
    path.write_text(line.replace("$TP", "four").replace("${TP}", "four") + "\n")  # not a number: still one line
    assert main(["--baseline-from", str(path), "--accelerator", H100, "--gpus", "8"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "usage:" not in err and "four" in err, err


def test_an_undecodable_baseline_file_is_named(tmp_path):
    path = tmp_path / "job.sh"
    path.write_bytes(b"\xff\xfe--tensor")
    with pytest.raises(InputError, match=f"--baseline-from {re.escape(str(path))}: not UTF-8 text"):
        frameworks.read_baseline(path)


def test_recipes_and_configs_name_catalog_models():

    names = set(catalog.catalog()["name"])
    assert set(torchtitan.CONFIGS) <= names and set(megatron_bridge.RECIPES) <= names
    assert set(torchtitan.TOML_MODELS.values()) <= names


@pytest.mark.parametrize("model, pp, vp, first, last", [("llama3-405b", 16, 8, None, None),
                                                        ("deepseek-v3", 8, 1, 7, 6), ("deepseek-v3", 16, 1, 3, 2)])
def test_uneven_splits_are_written_the_frameworks_way(model, pp, vp, first, last):
    """Llama 3.1 405B's 126 layers at pp 16 vp 8 (the newcomer's plan: Megatron was given 0 layers per
    virtual stage, torchtitan 0 per stage) and DeepSeek-V3's 61 at pp 8 and 16: each export splits the
    layers as the framework's own checks take them, and as the cost model prices the last stage."""
    shape = catalog.get(model)
    L = int(shape["n_layers"])
    c = {**shape, "tp": 8, "pp": pp, "vp": vp, "cp": 1, "ep": 1, "dp": 2, "micro_batch_size": 1, "grad_accum": 64,
         "global_batch_size": 128, "seq_len": 4096, "activation_checkpointing": "none", "fsdp": "zero1",
         "precision": "bf16", "n_gpus": 8 * pp * 2}
    a = megatron_parser().parse_args(frameworks.get("megatron-lm").arguments(c))
    assert a.mtp_num_layers == shape.get("mtp_layers")  # DeepSeek-V3's MTP block, as priced
    if vp > 1:  # Megatron: (layers + embedding + loss) / (pp x vp) layers a virtual stage
        assert a.account_for_embedding_in_pipeline_split and a.account_for_loss_in_pipeline_split
        assert a.num_layers_per_virtual_pipeline_stage * pp * vp == L + 2
    else:  # Megatron: the middle stages' layers divide evenly, first and last hold fewer
        assert (a.decoder_first_pipeline_num_layers, a.decoder_last_pipeline_num_layers) == (first, last)
        assert (L - first - last) % (pp - 2) == 0 and (L - first - last) // (pp - 2) == -(-L // pp)
        cost = LLMCost(pd.DataFrame([c]))
        assert cost.last_stage_layers[0] == last and cost.stage_layers[0] == -(-L // pp)
    per, less = torchtitan.pipeline_split(L, pp, vp)  # torchtitan: ceil((L + less + less) / per) stages
    assert -(-(L + 2 * less) // per) == pp * vp


def test_a_virtual_split_neither_framework_takes_is_refused_before_ranking():
    space = layout_space(catalog.get("deepseek-v3"), Cluster(gpus=2048, accelerator=H100), seq_len=4096,
                         global_batch=8192, precisions=("bf16",))
    knobs = {"tp": 4, "pp": 8, "vp": 4, "cp": 1, "ep": 32, "micro_batch_size": 1, "activation_checkpointing": "none",
             "fsdp": "zero1", "precision": "bf16", "etp": 1, "moe_dispatcher": "deepep", "moe_recompute": "none"}
    with pytest.raises(SpaceError, match=r"knob 'vp' = 4 is not allowed; allowed values are \[1\]"):
        space.validate(knobs)  # 61 layers: no pp of 2,048 GPUs takes virtual stages (it exported an uncheckable line)
    assert space.validate({**knobs, "vp": 1})["pp"] == 8


def test_a_torchtitan_toml_with_a_word_for_a_degree_names_the_value_not_what_is_missing(tmp_path, capsys):
    """``tensor_parallel_degree = "banana"`` in an older torchtitan TOML (no local_batch_size either): the
    one line names the bad value first (it listed the missing batch size and then failed on int())."""
    path = tmp_path / "job.toml"
    path.write_text('[model]\nname = "llama3"\nflavor = "8B"\n[parallelism]\ntensor_parallel_degree = "banana"\n')
    assert main(["--baseline-from", str(path), "--accelerator", H100, "--gpus", "8"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "tensor_parallel_degree = 'banana' is not an integer" in err, err
