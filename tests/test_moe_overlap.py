"""The MoE dispatch overlaps (``moe_shared_expert_overlap``, ``moe_a2a_overlap``): what they hide, worked by hand
(:mod:`perfzoo.analytic.dispatch`), the rules Megatron-Core runs them under (``TransformerConfig.__post_init__`` at
NVIDIA/Megatron-LM d98e8a64), and how its launch lines and Megatron-Bridge's overrides write them."""

import numpy as np
import pandas as pd
import pytest

from megatron_rules import violations
from perfzoo import frameworks, llmconfig
from perfzoo.analytic.dispatch import hidden
from perfzoo.analytic.llm import LLMCost
from perfzoo.console import InputError
from perfzoo.frameworks import megatron_bridge

# DeepSeek-V3-like: 61 layers, 3 dense, 256 experts of 2048, top-8, one shared expert of 2048; EP 64 over H100 nodes
DSV3 = {"n_layers": 61, "n_dense_layers": 3, "hidden_dim": 7168, "n_heads": 128, "ffn_dim": 18432,
        "moe_ffn_dim": 2048, "n_experts": 256, "experts_per_token": 8, "n_shared_experts": 1, "vocab_size": 129280,
        "seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 256, "n_gpus": 64, "tp": 1, "pp": 1, "ep": 64,
        "precision": "bf16", "accelerator": "H100"}


def cost(**changes):
    return LLMCost(pd.DataFrame([DSV3 | changes]))


def test_hidden_by_hand():
    """2 s of dispatch: the shared experts' 0.5 s of compute hide 0.5 s (1.5 s exposed); with 4 micro-batches
    3 of 4 are paired, 3/4 x 2 s = 1.5 s hide under 8 s of MoE layers (0.5 s exposed), 3/4 x 1 s = 0.75 s under
    1 s; one micro-batch hides nothing; both: 0.5 s, then 3/4 of the 1.5 s left = 1.125 s."""
    two, half, eight, four = np.array(2.0), np.array(0.5), np.array(8.0), np.array(4.0)
    assert 2.0 - float(hidden(two, half, eight, four, True, False)) == 1.5
    assert 2.0 - float(hidden(two, half, eight, four, False, True)) == 0.5
    assert float(hidden(two, half, np.array(1.0), four, False, True)) == 0.75
    assert float(hidden(two, half, eight, np.array(1.0), False, True)) == 0.0
    assert float(hidden(two, half, eight, four, True, True)) == 0.5 + 1.125
    assert float(hidden(two, half, eight, four, False, False)) == 0.0


def test_deepseek_v3_shared_experts_hide_their_compute_of_the_dispatch():
    """The shared expert's forward and backward: 6 x 58 layers x 3 x 7168 x 2048 = 15.33 GFLOP a token of all
    the FLOPs executed; that share of the compute hides as much of the dispatch (1.907 s a micro-batch, 4 here)."""
    c = cost(moe_shared_expert_overlap=True)
    compute = c.compute_time()
    executed = sum(c.flops_parts(causal=True, recompute=True, executed=True).values())
    shared_s = compute * 6 * 58 * 3 * 7168 * 2048 / executed
    assert float(c.dispatch.seconds()[0]) == pytest.approx(4 * 1.907, abs=4e-3)
    assert float(shared_s[0]) < float(c.dispatch.seconds()[0])  # all of the shared compute hides dispatch
    assert float(c.dispatch.exposed(compute)[0]) == pytest.approx(float(c.dispatch.seconds()[0] - shared_s[0]))
    off = cost()
    assert float(off.dispatch.exposed(off.compute_time())[0]) == float(off.dispatch.seconds()[0])  # the default


def test_deepseek_v3_a2a_overlap_pairs_micro_batches_under_the_moe_layers():
    """4 micro-batches: 3/4 of min(dispatch, 58/61 of the compute) hide; one micro-batch hides none. ep_time_s is
    what shows, and the step is shorter by the hidden part (less the SMs it holds)."""
    c = cost(moe_a2a_overlap=True)
    compute, seconds = c.compute_time(), c.dispatch.seconds()
    want = 0.75 * np.minimum(seconds, compute * 58 / 61)
    assert float(c.dispatch.hidden(compute)[0]) == pytest.approx(float(want[0]))
    on, off = c.step_time(), cost().step_time()
    assert float(off["ep_time_s"][0] - on["ep_time_s"][0]) == pytest.approx(float(want[0]))
    assert float(on["step_time_s"][0]) < float(off["step_time_s"][0])
    one = cost(moe_a2a_overlap=True, global_batch_size=64)
    assert float(one.dispatch.hidden(one.compute_time())[0]) == 0.0


@pytest.mark.parametrize("changes, said", [
    ({"n_experts": None, "moe_a2a_overlap": True}, "is dense"),
    ({"ep": 1, "moe_shared_expert_overlap": True}, "has ep 1"),
    ({"n_shared_experts": 0, "moe_shared_expert_overlap": True}, "the model has none"),
])
def test_an_overlap_with_nothing_to_overlap_is_refused(changes, said):
    with pytest.raises(InputError, match=said) as err:
        cost(**changes)
    assert "\n" not in str(err.value)
    cost(**{**changes, **{k: False for k in changes if k.endswith("overlap")}})  # off: priced


def test_the_keys_and_megatron_cores_rules():
    assert llmconfig.KEYS["moe_a2a_overlap"].kind == llmconfig.KEYS["moe_shared_expert_overlap"].kind == "bool"
    assert not llmconfig.applies("moe_a2a_overlap", {"n_layers": 32})
    megatron, titan = frameworks.get("megatron-lm"), frameworks.get("torchtitan")
    ok = {"moe_a2a_overlap": True, "pp": 4, "vp": 2, "moe_dispatcher": "deepep", "activation_checkpointing": "selective",
          "precision": "fp8", "mtp_layers": 1}
    assert megatron.refuses(ok) is None
    for broken, said in [({"vp": 1}, "virtual stages"), ({"moe_dispatcher": "allgather"}, "allgather"),
                         ({"activation_checkpointing": "full"}, "full recompute"), ({"precision": "fp32"}, "16-bit"),
                         ({"mtp_layers": 2}, "one MTP layer"), ({"moe_shared_expert_overlap": True}, "one MoE overlap")]:
        assert said in megatron.refuses({**ok, **broken}), broken
    assert "allgather" in megatron.refuses({"moe_shared_expert_overlap": True, "moe_dispatcher": "allgather"})
    assert titan.refuses({"moe_shared_expert_overlap": True}) == (
        "moe_shared_expert_overlap=true under framework=torchtitan: it overlaps no MoE dispatch; give "
        "moe_shared_expert_overlap=false")
    assert frameworks.get("megatron-bridge").physics.moe_a2a_overlap is False  # 0.3.1's configs: one model, one GPU


def test_the_checker_refuses_what_megatron_refuses_of_the_overlaps():
    base = ("torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py --num-layers 8 --hidden-size 64 "
            "--num-attention-heads 8 --micro-batch-size 1 --global-batch-size 8 --seq-length 16 --bf16 "
            "--num-experts 8 --moe-shared-expert-intermediate-size 64 --expert-model-parallel-size ")
    assert violations(base + "8 --moe-token-dispatcher-type alltoall --overlap-moe-expert-parallel-comm", 9) == []
    assert violations(base + "8 --overlap-moe-expert-parallel-comm --moe-shared-expert-overlap", 9) == [
        "the A2A overlap needs the alltoall or flex dispatcher",
        "the A2A overlap and the shared-expert overlap exclude each other",
        "the shared-expert overlap needs the alltoall or flex dispatcher"]
    assert violations(base + "4 --moe-token-dispatcher-type alltoall --overlap-moe-expert-parallel-comm "
                      "--pipeline-model-parallel-size 2 --recompute-granularity full --recompute-method uniform", 9) == [
        "the A2A overlap under a pipeline needs virtual stages",
        "the A2A overlap refuses full recompute, a recompute method or layer count, and moe recomputed"]


def test_bridge_writes_the_overlaps_as_priced_where_its_recipe_reads_them():
    """Off unless the layout says (the bundle's traits), written either way: the DeepSeek provider turns the
    shared-expert overlap on; the A2A overlap in the comm_overlap block of a recipe that has one."""
    bridge = megatron_bridge.FRAMEWORK
    layout = {"tp": 1, "pp": 1, "vp": 1, "cp": 1, "ep": 8, "dp": 8, "n_layers": 48, "seq_len": 4096,
              "micro_batch_size": 1, "global_batch_size": 64, "activation_checkpointing": "none", "fsdp": "zero1",
              "precision": "bf16", "n_experts": 128, "moe_dispatcher": "alltoall"}
    over = bridge.overrides(layout)
    assert (over["model.moe_shared_expert_overlap"], over["model.overlap_moe_expert_parallel_comm"]) == (
        "false", "false")
    args = bridge.arguments({**layout, "moe_a2a_overlap": True}, "qwen3-30b-a3b")
    assert "model.overlap_moe_expert_parallel_comm=true" in args
    args = bridge.arguments({**layout, "moe_a2a_overlap": True}, "deepseek-v3")
    assert "comm_overlap.overlap_moe_expert_parallel_comm=true" in args
    assert not any(a.startswith("model.overlap_moe") for a in args)
    tp2 = bridge.arguments({**layout, "tp": 2, "dp": 4}, "deepseek-v3")  # the block's TP overlap, not the model's
    assert "comm_overlap.tp_comm_overlap=true" in tp2 and not any(a.startswith("model.tp_comm_overlap") for a in tp2)
    assert bridge.overrides({**layout, "n_experts": None}).get("model.moe_shared_expert_overlap") is None  # dense
