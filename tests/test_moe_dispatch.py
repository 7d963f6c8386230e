"""MoE token dispatch (:mod:`perfzoo.analytic.dispatch`) and the experts' grouped GEMMs, worked by hand
from datasheet figures (the accelerator table: H100 NVLink 4 at 450 GB/s a direction, GB200 NVLink 5 at
900 GB/s, 400 Gb/s = 50 GB/s of NIC per GPU; 8 GPUs per HGX node, 72 per NVL72 rack)."""

import numpy as np
import pandas as pd
import pytest

from perfzoo.analytic.kernels import gemm_efficiency, linear_efficiency
from perfzoo.analytic.llm import LLMCost
from perfzoo.console import InputError

# DeepSeek-V3 (config.json): 61 layers, the first 3 dense, d 7168, 256 routed experts of 2048, top-8, one shared
DSV3 = {"n_layers": 61, "n_dense_layers": 3, "hidden_dim": 7168, "n_heads": 128, "ffn_dim": 18432,
        "moe_ffn_dim": 2048, "n_experts": 256, "experts_per_token": 8, "n_shared_experts": 1, "vocab_size": 129280,
        "seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 64, "n_gpus": 64, "tp": 1, "pp": 1, "ep": 64,
        "precision": "bf16"}
A2A_BYTES = 58 * 4 * 63 / 64 * 8 * 4096 * 7168 * 2  # 107,281,907,712 B


def dispatch(**changes):
    return LLMCost(pd.DataFrame([DSV3 | changes])).dispatch


def test_deepseek_v3_ep64_on_h100_nodes_of_8():
    """One micro-batch of 4,096 tokens per GPU, 58 MoE layers, 4 all-to-alls each (dispatch, combine,
    and their gradients): 8 routed copies x 4,096 tokens x 7,168 x 2 B = 469.8 MB per all-to-all, 63/64
    of it leaving the GPU: 462.4 MB; 58 x 4 x 462.4 MB = 107.28 GB a step.

    EP 64 over 8 nodes: 7 of a GPU's 63 peers share its NVLink, 56 are behind its NIC. NCCL's
    all-to-all sends every copy: 8/9 x 107.28 GB / 50 GB/s = 1.907 s (the 1/9 over NVLink,
    0.026 s, runs meanwhile); 8.2 ms per all-to-all. DeepEP (hierarchical) sends a token once per
    destination node: of its 8 copies over 8 nodes, 8 x (1 - (7/8)^8) = 5.25 reach distinct nodes,
    0.6564 of them: 1.907 x 0.6564 = 1.252 s."""
    d = dispatch(accelerator="H100")
    assert float(d.bytes[0]) == pytest.approx(A2A_BYTES)
    assert float(d.seconds()[0]) == pytest.approx(A2A_BYTES * 8 / 9 / 50e9, rel=1e-9)
    assert float(d.seconds()[0]) == pytest.approx(1.907, abs=1e-3)
    deepep = dispatch(accelerator="H100", moe_dispatcher="deepep")
    assert float(deepep.seconds()[0]) == pytest.approx(1.907 * (1 - (7 / 8) ** 8), abs=1e-3)


def test_deepseek_v3_ep64_on_an_nvl72_rack():
    """The same 107.28 GB on GB200: 64 ranks inside one 72-GPU NVLink domain, none on the network:
    107.28 GB / 900 GB/s = 0.1192 s, 16x less than over H100 nodes; hierarchical dispatch saves
    nothing inside one domain."""
    for kind in ("alltoall", "flex"):
        d = dispatch(accelerator="GB200", moe_dispatcher=kind)
        assert float(d.seconds()[0]) == pytest.approx(A2A_BYTES / 900e9, rel=1e-9)


def test_fp8_dispatch_and_the_allgather_dispatcher():
    """DeepEP in an FP8 run dispatches 1 B + 4/128 B per element and combines in 2 B: (1.03125 + 2)/2 =
    1.515625 B on average against 2. The all-gather dispatcher gathers each token once, 63 x 4,096 x
    7,168 x 2 B = 3.70 GB per collective, 8x the all-to-all's 462 MB (K = 8 copies vs 63 peers' tokens)."""
    fp8 = dispatch(accelerator="H100", moe_dispatcher="deepep", precision="fp8")
    assert float(fp8.bytes[0]) == pytest.approx(A2A_BYTES * 1.515625 / 2)
    gathered = dispatch(accelerator="H100", moe_dispatcher="allgather")
    assert float(gathered.bytes[0]) == pytest.approx(58 * 4 * 63 * 4096 * 7168 * 2)
    for kind in ("alltoall", "flex"):  # NCCL's all-to-all and Megatron's flex dispatcher send BF16 tokens
        assert float(dispatch(accelerator="H100", precision="fp8", moe_dispatcher=kind).bytes[0]) == pytest.approx(
            A2A_BYTES)


def test_an_unknown_dispatcher_is_refused():
    with pytest.raises(InputError, match="moe_dispatcher 'ring'.*alltoall"):
        dispatch(accelerator="H100", moe_dispatcher="ring")


def test_a_dense_row_dispatches_nothing():
    assert float(dispatch(accelerator="H100", n_experts=1).bytes[0]) == 0.0


def test_grouped_gemm_at_512_tokens_per_expert():
    """DeepSeek-V3's 4 local experts (256 over EP 64) each with 512 tokens, the gated up-projection
    (k = 7168, n = 2 x 2048), on an H100's 132 SMs, against the 8,192-cubed reference.

    Forward (512 x 7168 @ 7168 x 4096): 4 x 16 tiles of 128 x 256 per expert, 256 in all: 2 waves
    of 132, 256/264 = 0.9697 full; k term 7168/(7168 + 336) = 0.95522. The reference: 2,048 tiles,
    16 waves, 0.9697 full, 8192/8528 = 0.96060. Rate 0.95522/0.96060 = 0.99440.
    Input gradient (512 x 4096 @ 4096 x 7168): 4 x 28 x 4 = 448 tiles, 4 waves (528): 0.84848;
    4096/4432 = 0.92419; rate 0.84848 x 0.92419 / (0.9697 x 0.96060) = 0.84184.
    Weight gradient (7168 x 512 @ 512 x 4096): 56 x 16 x 4 = 3,584 tiles, 28 waves (3,696): 0.9697;
    512/848 = 0.60377; rate 0.62854: the short k (the tokens) costs most.
    The layer, harmonically: 3 / (1/0.99440 + 1/0.84184 + 1/0.62854) = 0.79272."""
    units = np.array(132.0)
    forward = gemm_efficiency(np.array(512.0), np.array(4096.0), np.array(7168.0), units, groups=4.0)
    dgrad = gemm_efficiency(np.array(512.0), np.array(7168.0), np.array(4096.0), units, groups=4.0)
    wgrad = gemm_efficiency(np.array(7168.0), np.array(4096.0), np.array(512.0), units, groups=4.0)
    assert [round(float(x), 4) for x in (forward, dgrad, wgrad)] == [0.9944, 0.8418, 0.6285]
    layer = linear_efficiency(np.array(512.0), [(7168.0, 4096.0, 1.0, 4.0, 1.0)], units)
    assert float(layer) == pytest.approx(0.79272, abs=2e-5)


def _cost(**changes):
    return LLMCost(pd.DataFrame([DSV3 | {"accelerator": "H100", "activation_checkpointing": "selective"} | changes]))


def test_moe_recompute_frees_activations_and_costs_forward_flops():
    """Megatron-Core's recompute_modules on DeepSeek-V3 (BF16, fused kernels: q = 2 B per kept GEMM input).

    ``shared_experts``: one shared expert of 2048, gated: fc1's output 4 x 2048 and fc2's input 2 x 2048 =
    12,288 B per token and MoE layer freed; its forward again, 2 x 3 x 7168 x 2048 = 88.1 MFLOPs per token
    and MoE layer, 58 layers: 5.108 GFLOPs per token. ``moe_act``: the routed experts' activation
    output, 8 copies x 2 x 2048 = 32,768 B per token and MoE layer, no matmul. ``layernorm``: 2 x 7168 per
    norm: 14,336 B in each of the attention and MoE sublayers."""
    base, shared = _cost(), _cost(moe_recompute="shared_experts")
    extra = sum(shared.flops_parts(recompute=True).values()) - sum(base.flops_parts(recompute=True).values())
    assert float(extra[0]) == pytest.approx(58 * 2 * 3 * 7168 * 2048)
    tokens = 4096  # one micro-batch, tp 1
    freed = base.memory.activation_bytes() - shared.memory.activation_bytes()
    assert float(freed[0]) == pytest.approx(58 * 12288 * tokens, rel=1e-9)
    act = base.memory.activation_bytes() - _cost(moe_recompute="moe_act").memory.activation_bytes()
    assert float(act[0]) == pytest.approx(58 * 32768 * tokens, rel=1e-9)
    norms = base.memory.activation_bytes() - _cost(moe_recompute="layernorm").memory.activation_bytes()
    assert float(norms[0]) == pytest.approx(61 * 2 * 14336 * tokens, rel=1e-9)


def test_moe_recompute_needs_known_modules_and_is_moot_under_full_checkpointing():
    with pytest.raises(InputError, match="moe_recompute names 'experts'"):
        _cost(moe_recompute="moe_act,experts")
    full = _cost(activation_checkpointing="full")
    both = _cost(activation_checkpointing="full", moe_recompute="shared_experts,moe_act")
    assert float(both.memory.activation_bytes()[0]) == float(full.memory.activation_bytes()[0])
    assert float(sum(both.flops_parts(recompute=True).values())[0]) == float(
        sum(full.flops_parts(recompute=True).values())[0])


def test_the_framework_default_dispatcher_and_token_drop():
    """Megatron-Bridge's recipes run dropless MoE on the flex dispatcher (hierarchical: 1.252 s over H100
    nodes, as DeepEP above); token dropping falls back to NCCL's all-to-all (1.907 s), which Megatron-LM
    runs by default too."""
    bridge = dispatch(accelerator="H100", framework="megatron-bridge")
    assert bridge.kind.tolist() == ["flex"]
    assert float(bridge.seconds()[0]) == pytest.approx(1.907 * (1 - (7 / 8) ** 8), abs=1e-3)
    drop = dispatch(accelerator="H100", framework="megatron-bridge", moe_token_drop=True)
    assert drop.kind.tolist() == ["alltoall"] and float(drop.seconds()[0]) == pytest.approx(1.907, abs=1e-3)
    assert dispatch(accelerator="H100", framework="megatron-lm").kind.tolist() == ["alltoall"]


def test_each_framework_defaults_to_a_dispatcher_it_runs():
    from perfzoo.frameworks import REGISTRY

    for framework in REGISTRY.values():
        assert framework.physics.moe_dispatcher in framework.runs.dispatchers, framework.name


def test_deepep_buffers_of_deepseek_v3():
    """DeepEP's buffers (DeepEP's csrc/legacy/config.hpp, the configs of deep_ep/buffers/legacy.py), once
    per process, outside PyTorch's allocator: Megatron's 20 SMs = 10 channels; per token slot 7168 x 2 B
    of hidden plus an 8 B source meta, 128 top-k indices of 8 B and weights of 4 B and 128 fp32 scales:
    14,336 + 8 + 1,024 + 512 + 512 = 16,392 B.

    EP 64 over 8 H100 nodes: 8 NVLink ranks, 8 RDMA ranks. NVLink, 288 chunked receive tokens in both
    the dispatch and the combine config: 10 x 8 x (2 x 8 + 3) x 4 = 6,080 B of flags + 10 x 8 x 288 x
    16,392 = 377,671,680 B, 377,677,760 rounded up to 128 B: 377,677,824. RDMA, 128 receive tokens
    (a multiple of the 8 send tokens of both configs), each sent and received (x 2) with an int4 more:
    10 x 8 x (8 x 2 + 2) x 2 x 4 = 11,520 + 10 x 8 x 128 x 2 x (16,392 + 16) = 336,035,840: 336,047,360 B.
    EP 8 inside one node: 256 receive tokens, one RDMA rank: 10 x 8 x 5 x 4 = 1,600 + 10 x 8 x 256 x
    16,392 = 335,708,160, 335,709,760 -> 335,709,824 B, and no RDMA buffer."""
    nvl64, rdma64 = 377_677_824, 336_047_360
    nvl8 = 335_709_824
    base = LLMCost(pd.DataFrame([DSV3 | {"accelerator": "H100"}])).memory
    for kind in ("deepep", "flex"):  # flex on H100 nodes: Megatron-Core's flex dispatcher over DeepEP
        mem = LLMCost(pd.DataFrame([DSV3 | {"accelerator": "H100", "moe_dispatcher": kind}])).memory
        assert float(mem.overhead_bytes()[0] - base.overhead_bytes()[0]) == nvl64 + rdma64
        # the buffers are not torch's: the peak allocated stays the all-to-all's
        assert float(mem.columns()["peak_allocated_bytes"][0]) == float(base.columns()["peak_allocated_bytes"][0])
    one_node = {"accelerator": "H100", "n_gpus": 8, "ep": 8, "global_batch_size": 8}
    alltoall = LLMCost(pd.DataFrame([DSV3 | one_node])).memory.overhead_bytes()[0]
    deepep = LLMCost(pd.DataFrame([DSV3 | one_node | {"moe_dispatcher": "deepep"}])).memory.overhead_bytes()[0]
    assert float(deepep - alltoall) == nvl8
    # HybridEP (flex on an NVL72 rack) stages tokens in buffers sized by the tokens per rank: not DeepEP's
    rack = LLMCost(pd.DataFrame([DSV3 | {"accelerator": "GB200", "moe_dispatcher": "flex"}])).memory
    assert float(rack.overhead_bytes()[0]) == float(LLMCost(pd.DataFrame([DSV3 | {"accelerator": "GB200"}]))
                                                    .memory.overhead_bytes()[0])
    # DeepEP has no config for 12 ranks: the row fits no device
    twelve = {"accelerator": "H100", "n_gpus": 12, "ep": 12, "n_experts": 252, "global_batch_size": 12,
              "moe_dispatcher": "deepep"}
    assert np.isnan(LLMCost(pd.DataFrame([DSV3 | twelve])).memory.overhead_bytes()[0])


def test_routed_copies_are_activations_for_the_nccl_dispatchers():
    """The all-to-all's permuted tokens are PyTorch tensors: an MoE layer keeps, per local token, K x CF
    routed copies of its 2d-byte input (fused kernels: + the expert MLP's 6 f_e and its 2d output), so
    one more routed expert per token adds 2d + 6 f_e + 2d = 4 x 7168 + 6 x 2048 = 40,960 B per token."""
    mem = LLMCost(pd.DataFrame([DSV3 | {"accelerator": "H100"}])).memory
    more = LLMCost(pd.DataFrame([DSV3 | {"accelerator": "H100", "experts_per_token": 9}])).memory
    assert float(more.layer_bytes()["moe"][0] - mem.layer_bytes()["moe"][0]) == 40_960


def test_deepep_over_a_group_it_has_no_config_for_is_refused_by_the_shared_rule():
    """DeepEP asserts on EP groups it has no config for (256 ranks): refused by the one rule every command
    applies, not priced with an unknown memory; its buffer tables cover exactly the groups the rule lets through."""
    from perfzoo import frameworks
    from perfzoo.analytic import moe_memory
    assert sorted(moe_memory.DISPATCH) == sorted(moe_memory.COMBINE) == list(frameworks.DEEPEP_GROUPS)
    why = frameworks.refusal({"moe_dispatcher": "deepep", "ep": 256, "etp": 1})
    assert why.startswith("moe_dispatcher=deepep over an EP group of 256 ranks (ep x etp)")
    assert frameworks.refusal({"moe_dispatcher": "deepep", "ep": 64, "etp": 1}) is None
    assert frameworks.refusal({"moe_dispatcher": "alltoall", "ep": 256, "etp": 1}) is None
