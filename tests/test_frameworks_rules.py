"""Issue 66, one room per framework: each framework's bundle declares what it runs, and predict, plan's
layouts, plan's baselines and every exporter apply the one rule it gives (perfzoo.frameworks); the cost
model reads the bundles' traits, never a framework's name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfzoo import frameworks, llmconfig, zoo
from perfzoo.datasets import load_dataset
from perfzoo.llmconfig import layout_defaults
from perfzoo.plan import Cluster, PlanError, plan
from perfzoo.plan.export import launch_lines, write
from perfzoo.plan.layouts import layout_space
from perfzoo.plan.planner import baseline_frame
from perfzoo.plan.report import check_layouts, table
from perfzoo.plan.scoring import Scorer
from perfzoo.predict import main as predict_main
from perfzoo.search import Formula
from perfzoo.spaces import SpaceError

ROOT = Path(__file__).resolve().parents[1]
H100 = "H100-SXM-80GB"
FLAT = Scorer(Formula(lambda X: 1000.0 / X["config.pp"].to_numpy()))  # a toy predictor: fewer stages first
# the predict line: Llama 3 8B on 8 H100s, tp 2
LINE = ["model=llama3-8b", "n_gpus=8", "accelerator=H100-SXM-80GB", "seq_len=2048", "global_batch_size=64", "tp=2",
        "pp=1", "micro_batch_size=1"]


@pytest.fixture(scope="module")
def lab(synthetic):
    training = load_dataset(str(synthetic / "lab_benchmarks.csv"))
    ok = training.labelled().ok()
    return training, zoo.make("ridge").fit(ok.X, ok.y, dataset=training.name)


def _predict(synthetic, capsys, items):
    code = predict_main(["--dataset", str(synthetic / "lab_benchmarks.csv"), "--predictor", "ridge", "--set", *items])
    captured = capsys.readouterr()
    return code, captured.out, captured.err.strip()


# -- the silent cases, each a one-line refusal naming the framework's rule -------------------------------

@pytest.mark.parametrize("items, message", [
    (["fsdp=zero1", "framework=torchtitan"], r"fsdp=zero1 under framework=torchtitan: torchtitan has no ZeRO-1 \(its "
                                             r"data parallelism is FSDP2 or DDP\); give fsdp=full_shard, "),
    (["precision=fp16", "framework=torchtitan"], r"precision=fp16 under framework=torchtitan: torchtitan trains in bf16 "
                                                 r"or fp32 .*; give precision=bf16, fp32"),
    (["pp=2", "vp=3"], r"pp=2 vp=3: 32 layers do not split over pp 2 x vp 3 = 6 stages, evenly or with the embedding "
                       r"and the loss counted as a layer each \(34\); choose another pp or vp"),
    (["pp=2", "vp=3", "framework=torchtitan", "fsdp=full_shard"], r"pp=2 vp=3 under framework=torchtitan: 32 layers "
                                                                  r"do not split"),
    (["pp=2", "vp=3", "framework=megatron-lm"], None),  # Megatron-Core runs it as a pipeline_model_parallel_layout
    (["pp=2", "vp=2", "micro_batch_size=4", "framework=nemo"],  # 64 / (4 x 2 ranks) = 8... a multiple: runs
     None),
    (["pp=4", "vp=2", "global_batch_size=6", "micro_batch_size=3", "tp=1"],  # 6 / (3 x 2) = 1 micro-batch < pp
     r"pp=4 vp=2: its interleaved schedule runs micro-batches in rounds of pp = 4, and a step has 1"),
])
def test_predict_refuses_what_the_framework_cannot_run_in_one_line(synthetic, capsys, items, message):
    keys = {i.split("=", 1)[0] for i in items}
    code, out, err = _predict(synthetic, capsys, [i for i in LINE if i.split("=", 1)[0] not in keys] + items)
    if message is None:
        assert code == 0 and "tokens/s" in out, err
        return
    assert code == 2 and len(err.splitlines()) == 1 and re.search(message, err), err


def test_a_layout_left_unsharded_gets_the_frameworks_data_parallelism():
    """torchtitan's data parallelism is FSDP2: a config silent on sharding is filled full_shard (it was filled
    zero1, which torchtitan does not run); fsdp=none over data ranks is read as it, and said."""
    cfg = llmconfig.check({"model": "llama3-8b", "seq_len": 2048, "global_batch_size": 64, "n_gpus": 8, "tp": 2,
                           "accelerator": H100})
    assert layout_defaults.complete(cfg).config["fsdp"] == "zero1"
    titan = layout_defaults.complete({**cfg, "framework": "torchtitan"})
    assert titan.filled["fsdp"] == "full_shard"
    read = layout_defaults.complete({**cfg, "framework": "torchtitan", "fsdp": "none"})
    assert read.config["fsdp"] == "full_shard" and read.read_as == [
        "fsdp=none with 4 data-parallel ranks read as full_shard (FSDP2, torchtitan's data parallelism; give "
        "fsdp=no_shard for plain DDP)"]


@pytest.mark.parametrize("knobs, message", [
    ({"fsdp": "zero1", "tp": 2}, r"--baseline fsdp=zero1 tp=2: fsdp=zero1 under framework=torchtitan: torchtitan has "
                                 r"no ZeRO-1"),
    ({"tp": 2, "pp": 2, "vp": 3}, r"--baseline tp=2 pp=2 vp=3: pp=2 vp=3 under framework=torchtitan: 32 layers do not "
                                  r"split over pp 2 x vp 3 = 6 stages"),
])
def test_plan_refuses_a_baseline_its_framework_cannot_run_before_pricing_a_layout(knobs, message):
    calls = []
    counting = Scorer(Formula(lambda X: calls.append(len(X)) or np.ones(len(X))))
    with pytest.raises(PlanError, match=message):
        plan("llama3-8b", Cluster(gpus=8, accelerator=H100), seq_len=2048, global_batch=64, framework="torchtitan",
             scorer=counting, baseline=knobs)
    assert calls == []  # refused at once, no layout priced


def test_a_plans_baseline_is_filled_with_its_frameworks_data_parallelism():
    """``--baseline tp=1 pp=16 ep=64`` under torchtitan was filled with fsdp=zero1."""
    p = plan("qwen3-30b-a3b", Cluster(gpus=64, accelerator=H100), seq_len=4096, global_batch=256,
             framework="torchtitan", scorer=FLAT, baseline={"tp": 1, "pp": 4, "ep": 16})
    base = p.baselines.iloc[0]
    assert base["fsdp"] == "full_shard" and "fsdp=full_shard" in base["filled"]
    assert np.isfinite(base["predicted_tokens_per_s_per_device"])


def test_a_published_run_its_framework_cannot_run_is_shown_as_it_ran_not_priced_as_the_plans():
    """A Megatron-Bridge run with the distributed optimizer beside a torchtitan plan: shown, priced as its own
    framework ran it, and not as torchtitan's (which has no ZeRO-1), the rule said."""
    shape = {f"config.{k}": v for k, v in llmconfig.preset("llama3-8b").items()}
    row = {**shape, "config.tp": 2, "config.pp": 1, "config.cp": 1, "config.micro_batch_size": 1,
           "config.fsdp": "zero1", "config.precision": "bf16", "config.activation_checkpointing": "none",
           "config.framework": "megatron-bridge", "config.n_gpus": 8, "config.seq_len": 2048,
           "config.global_batch_size": 64, "hardware.accelerator": H100, "label": "a published run",
           "measured_tokens_per_s_per_device": 5000.0}
    published = pd.DataFrame([row, {**row, "config.fsdp": "full_shard", "label": "a sharded run"}])
    p = plan("llama3-8b", Cluster(gpus=8, accelerator=H100), seq_len=2048, global_batch=64, framework="torchtitan",
             scorer=FLAT, published=published)
    zero1, sharded = p.baselines.to_dict("records")
    assert zero1["refused"].startswith("fsdp=zero1 under framework=torchtitan: torchtitan has no ZeRO-1")
    assert np.isnan(zero1["predicted_tokens_per_s_per_device"]) and pd.isna(zero1["rank"])
    assert zero1["own_framework"] == "megatron-bridge" and np.isfinite(zero1["own_predicted"])
    assert pd.isna(sharded["refused"]) and np.isfinite(sharded["predicted_tokens_per_s_per_device"])
    text = table(p, 1)
    assert "not priced: fsdp=zero1 under framework=torchtitan" in text and "measured 5,000 tok/s/GPU" in text


def test_a_torchtitan_plan_holds_no_split_its_exporter_refuses(tmp_path):
    """DeepSeek-V3's 61 layers on pp 32 (torchtitan's pipeline_split would make 31 stages): ranked, then refused
    by the exporter after rank01-rank19 were written. The space now leaves it out, and an exporter checks every
    layout before its first file."""
    cluster = Cluster(gpus=2048, accelerator=H100)
    model = {**llmconfig.preset("deepseek-v3")}
    generic = layout_space(model, cluster, seq_len=4096, global_batch=8192, precisions=("bf16",))
    titan = layout_space({**model, "framework": "torchtitan"}, cluster, seq_len=4096, global_batch=8192,
                         precisions=("bf16",))
    assert 32 in generic.dimension("pp").values and 32 not in titan.dimension("pp").values
    assert "zero1" not in titan.dimension("fsdp").values
    with pytest.raises(SpaceError, match="'pp' = 32 is not allowed"):
        titan.validate({"tp": 4, "pp": 32, "vp": 1, "cp": 1, "ep": 8, "micro_batch_size": 1, **MOE,
                        "activation_checkpointing": "full", "fsdp": "full_shard", "precision": "bf16"})
    # a plan of no framework ranks zero1 layouts after the sharded ones: written as torchtitan's, refused before
    # any file, the sharded ones above it included
    sharded_first = Scorer(Formula(lambda X: 1.0 + (X["config.fsdp"] == "full_shard").to_numpy()))
    p = plan("llama3-8b", Cluster(gpus=8, accelerator=H100), seq_len=2048, global_batch=64, scorer=sharded_first)
    first = int(np.flatnonzero(p.layouts["fsdp"].to_numpy() == "zero1")[0]) + 1
    assert first > 1 and all(frameworks.REGISTRY["torchtitan"].refuses(c) is None for c in p.configs(first - 1))
    with pytest.raises(frameworks.ExportError, match=rf"--export: layout {first} \(.*zero1.*\): fsdp=zero1 under "
                                                     "framework=torchtitan"):
        write(p, "torchtitan", str(tmp_path / "out"), k=first)
    assert not (tmp_path / "out").exists()


# -- every command agrees with each bundle's rule ------------------------------------------------------------------

# a 62-layer model: 62 + 2 split into 4 and 8 virtual stages, not 6; torchtitan's ceil split takes pp 16, not 32
SHAPE = {"model_name": "probe-62", "n_layers": 62, "hidden_dim": 1024, "n_heads": 8, "vocab_size": 32000,
         "n_experts": 8, "experts_per_token": 2, "moe_ffn_dim": 512}
GPUS, SEQ, BATCH = 64, 4096, 256
MOE = {"etp": 1, "moe_dispatcher": "alltoall", "moe_recompute": "none"}  # an MoE layout's knobs beside ep
PROBES = [dict(zip(("tp", "pp", "vp", "ep", "micro_batch_size", "fsdp", "precision"), values)) for values in (
    (1, 1, 1, 1, 1, "zero1", "bf16"), (1, 1, 1, 1, 1, "full_shard", "bf16"), (2, 1, 1, 1, 2, "shard_grad_op", "bf16"),
    (1, 2, 1, 8, 1, "zero1", "fp8"), (1, 2, 1, 1, 1, "full_shard", "fp16"), (1, 2, 2, 1, 1, "zero1", "bf16"),
    (1, 2, 3, 1, 1, "full_shard", "bf16"), (1, 4, 2, 1, 1, "full_shard", "bf16"), (2, 16, 1, 1, 1, "full_shard", "bf16"),
    (1, 32, 1, 1, 1, "full_shard", "bf16"), (1, 32, 1, 1, 1, "zero1", "bf16"),
    (1, 4, 2, 1, 16, "full_shard", "bf16"),  # 256 / (16 x 16 ranks) = 1 micro-batch: no rounds of 4
)]


def _config(framework: str, knobs: dict) -> dict:
    return {**SHAPE, **knobs, "framework": framework, "cp": 1, "activation_checkpointing": "none", "seq_len": SEQ,
            "global_batch_size": BATCH, "n_gpus": GPUS, "accelerator": H100}


@pytest.mark.parametrize("name", list(frameworks.REGISTRY))
def test_predict_plans_layouts_baselines_and_exporters_agree_on_each_frameworks_rule(name):
    framework = frameworks.REGISTRY[name]
    cluster = Cluster(gpus=GPUS, accelerator=H100)
    space = layout_space({**SHAPE, "framework": name}, cluster, SEQ, BATCH, precisions=("bf16", "fp8", "fp16"))
    launch = frameworks.Launch(nodes=8, gpus_per_node=8)
    verdicts = set()
    for knobs in PROBES:
        checked = llmconfig.check(_config(name, knobs))
        why = framework.refuses(checked)
        assert why == frameworks.refusal(checked)
        verdicts.add(why is None)
        # predict: the front door completes the layout and refuses it with the rule
        try:
            layout_defaults.complete(checked)
            predicted = None
        except llmconfig.ConfigError as exc:
            predicted = str(exc)
        # plan's layouts: the space holds it or not
        try:
            space.validate({**knobs, "cp": 1, "activation_checkpointing": "none", **MOE})
            in_space = True
        except SpaceError:
            in_space = False
        # plan's baselines: a user's is refused, a published one shown unpriced with the rule
        try:
            baseline_frame({**SHAPE, "framework": name}, cluster, SEQ, BATCH, knobs, knobs["precision"])
            baseline = None
        except llmconfig.ConfigError as exc:
            baseline = str(exc)
        # every exporter: all layouts checked before a file (--out, --export), then spelled
        try:
            check_layouts(framework, [checked], "--out")
            out = None
        except frameworks.ExportError as exc:
            out = str(exc)
        assert (predicted, baseline) == (why, why), knobs
        assert in_space == (why is None), knobs
        assert (out is None) == (why is None) and (out is None or out.endswith(why)), knobs
        if framework.entry:
            model = "llama3-8b" if framework.models is not None else None  # a name its registry has
            written = {**checked, "dp": GPUS // (knobs["tp"] * knobs["pp"]),
                       "grad_accum": BATCH // (knobs["micro_batch_size"] * GPUS // (knobs["tp"] * knobs["pp"]))}
            if why is None and knobs["precision"] in framework.runs.writes:
                assert launch_lines(framework, [written], launch, model)[0][:len(launch.torchrun())] == launch.torchrun()
            elif why is not None:
                with pytest.raises(frameworks.ExportError, match=re.escape(why)):
                    launch_lines(framework, [written], launch, model)
    assert verdicts == {True, False}  # each framework runs some of the probes and refuses others


def test_the_bundles_declare_what_the_rules_read():
    titan, bridge = frameworks.REGISTRY["torchtitan"], frameworks.REGISTRY["megatron-bridge"]
    assert titan.split(61, 32, 1).startswith("torchtitan's pipeline_split puts ceil(61/32) = 2 layers on a stage")
    assert titan.split(61, 8, 1) is None and frameworks.REGISTRY["megatron-lm"].split(61, 32, 1) is None
    assert not titan.takes("moe_dispatcher", "allgather") and bridge.takes("moe_dispatcher", "flex")
    assert titan.refuses({"moe_dispatcher": "allgather"}).startswith("moe_dispatcher=allgather under framework="
                                                                      "torchtitan")
    assert frameworks.refusal({"framework": None, "fsdp": "zero1", "n_layers": 32, "pp": 33}) == \
        "pp=33 vp=1: pp = 33 is more than the 32 layers"
    writers = {n for n, f in frameworks.REGISTRY.items() if f.entry}
    assert writers == set(frameworks.FRAMEWORKS) == {"torchtitan", "megatron-lm", "megatron-bridge", "nemo"}
    assert all(frameworks.REGISTRY[n].runs.writes for n in writers)
    with pytest.raises(frameworks.ExportError, match="perfzoo writes no pytorch launch line; give --framework"):
        frameworks.writer("pytorch")


# -- the physics reads traits, never names ---------------------------------------------------------------------------

# a table's spelling of a blank cell, not the framework of that name
ALLOWED = {("perfzoo/datasets/sources/_csv.py", frameworks.UNKNOWN)}


def _named(path: Path, rel: str) -> list[tuple[int, str]]:
    """``(line, text)`` of each string constant in ``path`` (``rel`` from the root) that is a framework's name,
    docstrings left out."""
    tree = ast.parse(path.read_text())
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
            and node.value in frameworks.REGISTRY and (rel, node.value) not in ALLOWED]


@pytest.mark.parametrize("package", ["analytic", "records", "llmconfig", "datasets"])
def test_no_framework_name_is_written_in_the_physics_or_the_readers(package):
    found = {rel: hits for p in sorted((ROOT / "perfzoo" / package).rglob("*.py"))
             if (hits := _named(p, rel := p.relative_to(ROOT).as_posix()))}
    assert found == {}


def test_the_name_check_sees_a_name(tmp_path):
    path = tmp_path / "m.py"
    path.write_text('"""torchtitan in a docstring is prose."""\nX = ("megatron-lm", "nothing")\n\n\n'
                    'def f():\n    """nemo too."""\n    return "nemo"\n')
    assert _named(path, "m.py") == [(2, "megatron-lm"), (7, "nemo")]


def test_no_run_the_published_tables_measured_is_refused_by_its_own_framework(external):
    """What ran, runs: NVIDIA's DeepSeek-V3 runs put 61 layers on 4 x 4 virtual stages (Megatron-Core's custom
    layout); a rule that refused them would drop them from calibration and from plan's baselines."""
    frame = load_dataset("published-llm", external_dir=str(external)).frame
    refused = []
    for rec in frame.to_dict("records"):
        cfg = {k.split(".", 1)[1]: v for k, v in rec.items() if k.startswith("config.") and not pd.isna(v)}
        why = frameworks.refusal(cfg)
        if why is not None:
            refused.append((cfg.get("framework"), why))
    assert len(frame) > 1000 and refused == []
