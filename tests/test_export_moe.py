"""Exports that pass the framework's own checks, MoE layouts in each framework's own flags, and plans of every
MoE and hybrid model of the catalog (perfzoo.plan.export, perfzoo.frameworks, perfzoo.plan.layouts).

Megatron-LM's argument validation is encoded in ``tests/megatron_rules.py`` from NVIDIA/Megatron-LM at commit
d98e8a64ddf34856e74b24714e3bedb2f5a39553 (``megatron/training/arguments.py`` ``validate_args`` and
``megatron/core/transformer/transformer_config.py``); torchtitan's lines are parsed by torchtitan 0.3.0's own
``ConfigManager`` (the ``test`` extra installs it).
"""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest

from megatron_rules import accelerator_arch, parse, violations
from perfzoo import frameworks, llmconfig
from perfzoo.frameworks import megatron_bridge, megatron_lm, torchtitan
from perfzoo.llmconfig import catalog
from perfzoo.plan import Cluster, export, plan
from perfzoo.plan.layouts import PlanError
from perfzoo.plan.scoring import Scorer
from perfzoo.search import Formula
from perfzoo.zoo.targets import analytic_log_throughput

H100 = "H100-SXM-80GB"
WANT = ("tp", "pp", "vp", "cp", "ep", "etp", "fsdp", "activation_checkpointing", "precision", "moe_dispatcher",
        "moe_recompute")
OVERLAPS = ("moe_a2a_overlap", "moe_shared_expert_overlap")


def toy():
    return Scorer(Formula(lambda X: np.random.default_rng(len(X)).random(len(X)) + 1.0))


def diverse(p, limit=4000):
    """Configs of plan ``p`` (its first ``limit``) covering, between them, every value each knob of :data:`WANT` takes."""
    picked, seen = [], set()
    for c in p.configs(min(limit, len(p.layouts))):
        new = {(k, c.get(k)) for k in WANT} - seen
        if new:
            picked.append(c)
            seen |= new
    return picked


def scripts(fw, configs, cluster):
    """Each config as the script ``--export`` writes (its environment too), its model resolved as the exporter does."""
    launch = frameworks.Launch(nodes=cluster.nodes, gpus_per_node=min(cluster.node_size, cluster.gpus))
    model = export.catalog_model(configs[0], fw.models)[0] if fw.models is not None else None
    lines = export.launch_lines(fw, configs, launch, model)
    return [frameworks.script(line, ["x"], fw.environment(c)) for line, c in zip(lines, configs)]


def megatron_ok(p, cluster, configs=None):
    configs = configs or diverse(p)
    fw = frameworks.writer("megatron-lm")
    for c, text in zip(configs, scripts(fw, configs, cluster)):
        assert violations(text, accelerator_arch(cluster.spec.name)) == [], (c, text)
    return configs


MOE_AND_HYBRID = [n for n in catalog.names() if (catalog.get(n).get("n_experts") or 1) > 1
                  or catalog.get(n).get("n_mamba_layers")]


def test_the_checker_refuses_what_megatron_refuses():
    """Each encoded rule fires on a line that breaks it (the checker is not a pass-through)."""
    base = ("torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py --num-layers 8 --hidden-size 64 "
            "--num-attention-heads 8 --micro-batch-size 1 --global-batch-size 8 --seq-length 16 ")
    assert violations(base + "--tensor-model-parallel-size 2", 9) == [
        "tensor or context parallelism before Blackwell needs CUDA_DEVICE_MAX_CONNECTIONS=1"]
    assert violations(base + "--tensor-model-parallel-size 2", 10) == []
    assert violations(base + "--use-megatron-fsdp --ckpt-format fsdp_dtensor", 9) == []
    assert violations(base + "--expert-model-parallel-size 4 --num-experts 6 --expert-tensor-parallel-size 1", 9) == [
        "the experts are a multiple of the EP degree"]
    assert violations(base + "--recompute-granularity selective --recompute-modules moe_act --fp8-format hybrid", 9) == [
        "recomputing moe_act needs grouped GEMMs", "delayed FP8 scaling refuses moe_act and layernorm recompute"]
    assert violations(base + "--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 3", 9) == [
        "layers per virtual stage divide the layers of a pipeline rank, which divide evenly"]
    assert violations(base + "--moe-flex-dispatcher-backend deepep", 9) == [
        "a flex dispatcher backend needs --moe-token-dispatcher-type flex"]
    with pytest.raises(ValueError, match="does not define"):
        parse(base + "--moe-dispatcher alltoall")


def test_moe_dispatcher_and_recompute_are_config_keys_each_framework_refuses_as_it_runs():
    assert llmconfig.KEYS["moe_dispatcher"].choices == frameworks._base.DISPATCHERS
    titan, megatron = frameworks.get("torchtitan"), frameworks.get("megatron-lm")
    assert titan.refuses({"moe_dispatcher": "allgather"}) == (
        "moe_dispatcher=allgather under framework=torchtitan: its MoE token dispatchers; give moe_dispatcher=alltoall")
    assert megatron.refuses({"moe_dispatcher": "allgather"}) is None
    assert "takes no MoE modules" in titan.refuses({"moe_recompute": "moe_act", "activation_checkpointing": "selective"})
    assert "etp=1" in titan.refuses({"etp": 2})
    assert megatron.refuses({"moe_recompute": "moe_act,layernorm", "activation_checkpointing": "selective"}) is None
    assert "selective" in megatron.refuses({"moe_recompute": "moe_act", "activation_checkpointing": "full"})
    with pytest.raises(llmconfig.ConfigError, match="did you mean moe_act"):
        llmconfig.check({"moe_recompute": "moe_actt"}, require=False)


def test_a_moe_plan_enumerates_etp_dispatchers_and_recompute_dropless_unless_allowed():
    cluster = Cluster(gpus=16, accelerator=H100)
    p = plan("qwen3-30b-a3b", cluster, seq_len=4096, global_batch=256, framework="megatron-lm", scorer=toy())
    t = p.layouts
    assert set(t["etp"]) == {1, 2, 4, 8} and (t["etp"].isin([1]) | (t["etp"] == t["tp"])).all()
    assert (t["ep"] * t["etp"] > t["dp"] * t["cp"]).any()  # EP borrows TP ranks: ep x etp divides tp x dp x cp
    crossing = t["ep"] * t["etp"] > 8  # an EP group across hosts: all-to-all or DeepEP, never all-gather
    assert set(t.loc[crossing, "moe_dispatcher"]) == {"alltoall", "deepep"}
    assert set(t.loc[~crossing & (t["ep"] > 1), "moe_dispatcher"]) == {"alltoall"}
    assert set(t.loc[(t["ep"] == 1) & (t["etp"] > 1), "moe_dispatcher"]) == {"alltoall", "allgather"}
    assert set(t["moe_recompute"]) == {"none", "moe_act"}
    assert (t.loc[t["moe_recompute"] != "none", "activation_checkpointing"] == "selective").all()
    assert set(t["moe_token_drop"]) == {False}
    dropping = plan("qwen3-30b-a3b", cluster, seq_len=4096, global_batch=256, framework="torchtitan", scorer=toy(),
                    token_drop=True)
    d = dropping.layouts
    assert set(d["moe_token_drop"]) == {False} and set(d["etp"]) == {1}  # its line runs dropless, experts whole
    assert set(plan("qwen3-30b-a3b", cluster, seq_len=4096, global_batch=256, scorer=toy(),
                    token_drop=True).layouts["moe_token_drop"]) == {False, True}
    assert set(d["moe_dispatcher"]) == {"alltoall"} and set(d["moe_recompute"]) == {"none"}


def test_a_dense_plan_keeps_its_layouts():
    """A dense model's space has no MoE knob: its layouts are what they were (the 405B x 16,384 plan's 3,996)."""
    p = plan("llama3-8b", Cluster(gpus=16, accelerator=H100), seq_len=8192, global_batch=64, scorer=toy())
    assert {d.name for d in p.space.dimensions}.isdisjoint({"etp", "moe_dispatcher", "moe_recompute"})
    assert p.layouts["etp"].isna().all()


@pytest.mark.parametrize("name", MOE_AND_HYBRID)
def test_every_moe_and_hybrid_model_plans_and_exports(name):
    """Every MoE and hybrid model of the catalog plans, and its layouts export: Megatron-LM's arguments pass the
    encoded validation (a Mamba hybrid, which pretrain_gpt.py does not run, is refused in one line and written as
    its Megatron-Bridge recipe), torchtitan's parse with its ConfigManager where torchtitan has the model."""
    model = catalog.get(name)
    for gpus in (64, 256, 1024):
        cluster = Cluster(gpus=gpus, accelerator=H100)
        try:
            p = plan(name, cluster, seq_len=4096, global_batch=256, framework="megatron-lm", scorer=toy())
            break
        except PlanError as exc:
            assert "fits in none" in str(exc)
    picked = diverse(p)
    if model.get("n_mamba_layers"):
        with pytest.raises(frameworks.ExportError, match="Mamba layers") as err:
            megatron_ok(p, cluster, picked)
        assert "\n" not in str(err.value)
        bridge = frameworks.writer("megatron-bridge")
        for c, text in zip(picked, scripts(bridge, [{**c, "framework": "megatron-bridge"} for c in picked], cluster)):
            assert f"--recipe {megatron_bridge.RECIPES[name]}" in text
    else:
        megatron_ok(p, cluster, picked)
    if name in torchtitan.CONFIGS and torchtitan.CONFIGS[name][1] is not None:
        manager = importlib.import_module("torchtitan.config").ConfigManager  # a test dependency: missing fails
        t = plan(name, cluster, seq_len=4096, global_batch=256, framework="torchtitan", scorer=toy())
        fw = frameworks.writer("torchtitan")
        picked = diverse(t, 400)
        for c, text in zip(picked, scripts(fw, picked, cluster)):
            words = frameworks.script_command(text)
            cfg = manager().parse_args(words[words.index("torchtitan.train") + 1:])
            assert cfg.parallelism.expert_parallel_degree == c["ep"] and c["etp"] == 1



def test_a_gated_delta_net_hybrid_exports_its_linear_layers_and_keeps_tp_x_cp_to_its_heads():
    """Qwen3-Next's 36 gated delta-net layers of 48 (one full-attention layer every 4) are Megatron-Core's ``gdn``
    variant on the line, not a transformer of full-attention layers; its 16 key heads bound tp x cp, as
    TransformerConfig asserts (tp 8 runs, but not with cp 4)."""
    cluster = Cluster(gpus=64, accelerator=H100)
    p = plan("qwen3-next-80b-a3b", cluster, seq_len=32768, global_batch=64, framework="megatron-lm", scorer=toy())
    t = p.layouts
    choices = {d.name: d.choices for d in p.space.dimensions}
    assert 8 in choices["tp"] and 4 in choices["cp"]  # the grid holds tp 8 x cp 4 ...
    assert (t["tp"] * t["cp"]).max() == 16 and (16 % (t["tp"] * t["cp"]) == 0).all()  # ... the rule keeps it out
    configs = megatron_ok(p, cluster, [*p.configs(5), *diverse(p, 2000)])
    _, a, _ = parse(scripts(frameworks.writer("megatron-lm"), configs[:1], cluster)[0])
    assert (a.experimental_attention_variant, a.linear_attention_freq) == ("gdn", "4")
    assert (a.linear_num_key_heads, a.linear_num_value_heads, a.linear_key_head_dim, a.linear_value_head_dim) == \
        (16, 32, 128, 128)
    words = " ".join(megatron_lm.linear_attention_arguments(catalog.get("qwen3-next-80b-a3b")))
    line = ("torchrun --nnodes 1 --nproc-per-node 32 pretrain_gpt.py --num-layers 48 --hidden-size 2048 "
            "--num-attention-heads 16 --micro-batch-size 1 --global-batch-size 8 --seq-length 32768 "
            f"--tensor-model-parallel-size 8 --context-parallel-size 4 {words}")
    assert violations(line, 10) == ["tp x cp divides the gated delta-net's key and value heads"]  # Megatron's rule
    with pytest.raises(frameworks.ExportError, match="tp x cp = 32 does not divide the linear-attention heads"):
        scripts(frameworks.writer("megatron-lm"), [{**configs[0], "tp": 8, "cp": 4, "pp": 1, "vp": 1, "ep": 1, "etp": 1,
                                                   "dp": 2, "micro_batch_size": 1}], cluster)  # perfzoo's, the same
    qwen3_next = catalog.get("qwen3-next-80b-a3b")  # the rule predict and baselines share refuses the same layout
    assert frameworks.refusal({**qwen3_next, "tp": 8, "cp": 4}).startswith("tp x cp = 32 does not divide the "
                                                                         "linear-attention heads (16, 32)")
    assert frameworks.refusal({**qwen3_next, "tp": 8, "cp": 2}) is None
    assert frameworks.refusal({**catalog.get("qwen3-30b-a3b"), "tp": 8, "cp": 4}) is None  # no linear layers
    with pytest.raises(frameworks.ExportError, match="not one full-attention layer every k"):
        megatron_lm.shape_arguments({**catalog.get("qwen3-next-80b-a3b"), "n_linear_layers": 37})

def _megatron_case(model, gpus, accelerator, seq, batch, precision):
    cluster = Cluster(gpus=gpus, accelerator=accelerator)
    p = plan(model, cluster, seq_len=seq, global_batch=batch, precisions=(precision,), framework="megatron-lm",
             scorer=toy())
    return megatron_ok(p, cluster, [*p.configs(10), *diverse(p, 2000)])


@pytest.mark.parametrize("precision", ["bf16", "fp8"])
@pytest.mark.parametrize("model, gpus, accelerator, seq, batch", [
    ("llama3-70b", 256, H100, 8192, 512), ("qwen3-30b-a3b", 16, H100, 4096, 1024),
    ("examples/llama-config/config.json", 32, H100, 4096, 256), ("llama3.1-405b", 16384, H100, 8192, 2048),
    ("deepseek-v3", 2048, H100, 4096, 8192), ("gpt-oss-120b", 64, "B200", 4096, 1280)])
def test_megatron_lm_exports_pass_its_validation(model, gpus, accelerator, seq, batch, precision):
    """The README's cases, 405B x 16,384, DeepSeek-V3 x 2,048, Qwen3-30B-A3B, GPT-OSS-120B and a config.json model:
    the top ten and layouts covering every knob's values pass Megatron-LM's rules (A100 has no FP8: H100 here)."""
    configs = _megatron_case(model, gpus, accelerator, seq, batch, precision)
    fsdp = [c for c in configs if c["fsdp"] in ("full_shard", "shard_grad_op")]
    assert fsdp or model == "llama3.1-405b"  # Megatron-FSDP layouts are among those checked


def test_megatron_moe_flags_are_the_layouts():
    cluster = Cluster(gpus=64, accelerator=H100)
    p = plan("deepseek-v3", Cluster(gpus=256, accelerator=H100), seq_len=4096, global_batch=1024,
             framework="megatron-lm", scorer=toy())
    megatron = frameworks.get("megatron-lm")
    configs = []
    for i, c in enumerate(diverse(p)):  # the overlaps are no plan knob: each turned on where Megatron-Core runs it
        on = {**c, OVERLAPS[i % 2]: True, OVERLAPS[1 - i % 2]: False}
        configs.append(on if megatron.refuses(on) is None else {**c, **dict.fromkeys(OVERLAPS, False)})
    for c in configs:
        text = scripts(frameworks.writer("megatron-lm"), [c], cluster)[0]
        _, a, _ = parse(text)
        words = frameworks.script_command(text)
        back = frameworks.writer("megatron-lm").read(words[words.index("pretrain_gpt.py") + 1:], "test")
        assert (back.layout["etp"], back.layout["moe_dispatcher"]) == (c["etp"], c["moe_dispatcher"])
        assert [back.layout[k] for k in OVERLAPS] == [c[k] for k in OVERLAPS]
        assert a.overlap_moe_expert_parallel_comm == c["moe_a2a_overlap"]
        assert (a.expert_model_parallel_size, a.expert_tensor_parallel_size) == (c["ep"], c["etp"])
        assert (a.moe_token_dispatcher_type, a.moe_flex_dispatcher_backend) == {
            "alltoall": ("alltoall", None), "allgather": ("allgather", None), "deepep": ("flex", "deepep"),
            "flex": ("flex", "hybridep")}[c["moe_dispatcher"]]
        assert a.moe_grouped_gemm and a.moe_permute_fusion and a.mtp_num_layers == 1 and a.num_experts == 256
        assert a.moe_shared_expert_intermediate_size == 2048 and a.moe_router_topk == 8
        want = None if c["moe_recompute"] == "none" or c["activation_checkpointing"] != "selective" else [
            "core_attn", *c["moe_recompute"].split(",")]
        assert a.recompute_modules == want
        over = megatron_bridge.FRAMEWORK.overrides({**c, "framework": "megatron-bridge"})
        assert over["model.expert_tensor_parallel_size"] == str(c["etp"])
        assert over["model.moe_token_dispatcher_type"] == a.moe_token_dispatcher_type
        assert over["model.moe_expert_capacity_factor"] == "null"
        assert over["model.moe_shared_expert_overlap"] == ("true" if c["moe_shared_expert_overlap"] else "false")
    assert {c[k] for c in configs for k in OVERLAPS} == {False, True}
    assert "--window-attn-skip-freq" in megatron_lm.shape_arguments(catalog.get("gpt-oss-120b"))


def test_a_torchtitan_405b_bf16_export_is_refused_because_its_line_cannot_turn_float8_off():
    """torchtitan 0.3.0's llama3_405b builds its model spec with the Float8 converter, and the spec is no flag
    (Trainer.Config.model_spec is tyro-suppressed): a bf16 line would launch FP8, so the export says so."""
    config_mod = importlib.import_module("torchtitan.trainer")
    hint = str(config_mod.Trainer.Config.__annotations__["model_spec"])
    assert "Suppress" in hint
    with pytest.raises(frameworks.ExportError, match="cannot take the converter off"):
        export.check(catalog.get("llama3.1-405b") | {"framework": "torchtitan"}, ("bf16",), written=True)


def test_a_pick_leaving_an_ep_recipe_names_the_priced_terms_it_is_faster_by():
    """A top pick predicted more than 10% faster than a published EP recipe it leaves names the analytic terms
    that are shorter in it, each the difference of the two layouts' analytic steps; the first line says dropless."""
    from perfzoo import analytic
    from perfzoo.plan import gains, report
    from perfzoo.plan.planner import baseline_frame

    knobs = {"tp": 1, "pp": 1, "vp": 1, "cp": 1, "ep": 16, "micro_batch_size": 1, "activation_checkpointing": "full",
             "fsdp": "zero1", "precision": "bf16", "moe_dispatcher": "alltoall"}
    published = pd.DataFrame([{**{f"config.{k}": v for k, v in knobs.items()}, "label": "a recipe",
                               "measured_tokens_per_s_per_device": 1000.0, "config.framework": "megatron-lm"}])
    fewer_experts_apart = Scorer(Formula(lambda X: np.exp(analytic_log_throughput(X, True))
                                         / X["config.ep"].to_numpy(dtype=float) ** 2))
    cluster = Cluster(gpus=16, accelerator=H100)
    p = plan("qwen3-30b-a3b", cluster, seq_len=4096, global_batch=256, framework="megatron-lm",
             scorer=fewer_experts_apart, published=published)
    assert p.layouts["ep"].iloc[0] == 1 and p.baselines["predicted_gain"].iloc[0] > gains.GAIN
    note = gains.faster_by(p)[0]
    assert note.startswith("the top pick leaves its EP 16 for a predicted +") and ": priced faster by " in note
    pick = pd.DataFrame([{**llmconfig.as_columns(p.configs(1)[0]), **cluster.hardware()}])
    recipe = baseline_frame(p.model, cluster, 4096, 256, knobs, "bf16", p.scorer.rule, refuse=False)[0]  # as priced
    saved = float(analytic.estimate(recipe)["ep_time_s"].iloc[0] - analytic.estimate(pick)["ep_time_s"].iloc[0])
    assert f"EP dispatch and combine {saved:.2f} s less" in note
    assert report.moe_note(p) == "; MoE: dropless (token dropping only with --allow-token-drop)"
    p.baselines["faster_by"] = gains.faster_by(p)
    assert note in report.table(p)
