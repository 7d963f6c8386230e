"""The analytic estimates against numbers worked out by hand (the working is in the comments)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from perfzoo import analytic as A
from perfzoo.hardware.accelerators import spec as accelerator_spec
from perfzoo.records import vocabulary
from perfzoo.workloads.fsdp_ads import fsdp_estimate

# A vTrain-like GPT: L=24, d=1024, a=16 heads (k = a), f = 4d, vocabulary unknown (-> 0), s=1024.
GPT = {"n_layers": 24, "hidden_dim": 1024, "n_heads": 16, "seq_len": 1024}
# per layer: attention 2*d^2 + 2*d^2*(k/a) = 4 * 1024^2 = 4,194,304
#            MLP (not gated, f = 4d) 2*d*f = 2 * 1024 * 4096 = 8,388,608
#            block = 12,582,912;  N = 24 * 12,582,912 = 301,989,888
GPT_N = 301_989_888
# FLOPs per token = 6N + 12*L*d*s = 1,811,939,328 + 12*24*1024*1024 (= 301,989,888) = 2,113,929,216
GPT_FLOPS_PER_TOKEN = 2_113_929_216


@pytest.fixture
def peak_rates(monkeypatch):
    """Every kernel at the reference GEMM's rate: the hand-worked roofline below, with the shapes'
    rates (:mod:`perfzoo.analytic.kernels`, worked by hand in tests/test_kernels.py) left out."""
    monkeypatch.setattr(A.llm, "shape_efficiency", lambda cost: {"linear": 1.0, "head": 1.0, "attention": 1.0})


def test_gpt_params_and_flops_per_token():
    assert A.param_count(GPT) == GPT_N
    assert A.flops_per_token(GPT) == GPT_FLOPS_PER_TOKEN


def test_llama3_8b_params_and_flops():
    # Llama 3 8B: L=32, d=4096, a=32, k=8, f=14336 (gated: f != 4d), V=128256, untied.
    # attention 2*4096^2 + 2*4096*(4096*8/32 = 1024) = 33,554,432 + 8,388,608 = 41,943,040
    # MLP 3*4096*14336 = 176,160,768; block 218,103,808; 32 blocks 6,979,321,856
    # embedding + LM head 2*128256*4096 = 1,050,673,152 -> total 8,029,995,008 (published: 8.03e9)
    cfg = {"n_layers": 32, "hidden_dim": 4096, "n_heads": 32, "n_kv_heads": 8, "ffn_dim": 14336,
           "vocab_size": 128256, "seq_len": 8192}
    assert A.param_count(cfg) == 8_029_995_008
    # FLOP-relevant N = blocks + LM head = 6,979,321,856 + 525,336,576 = 7,504,658,432
    # 6N = 45,027,950,592; 12*L*d*s = 12*32*4096*8192 = 12,884,901,888; sum 57,912,852,480
    assert A.flops_per_token(cfg) == 57_912_852_480
    # full recompute adds a forward: 2N + 4*L*d*s = 15,009,316,864 + 4,294,967,296 = 19,304,284,160
    full = A.flops_per_token({**cfg, "activation_checkpointing": "full"}, recompute=True)
    assert full == 57_912_852_480 + 19_304_284_160
    # selective adds the attention-core forward only: 4*L*d*s = 4,294,967,296
    sel = A.flops_per_token({**cfg, "activation_checkpointing": "selective op"}, recompute=True)
    assert sel == 57_912_852_480 + 4_294_967_296
    # tied embeddings count the matrix once: 8,029,995,008 - 525,336,576
    assert A.param_count({**cfg, "tie_embeddings": True}) == 8_029_995_008 - 525_336_576


def test_flops_per_step_and_per_device():
    # B=16 sequences of 1024 tokens = 16,384 tokens; x 2,113,929,216 = 34,634,616,274,944 FLOPs;
    # over 4 GPUs (tp=2, dp=2): 8,658,654,068,736 each
    cfg = {**GPT, "global_batch_size": 16, "micro_batch_size": 4, "n_gpus": 4, "tp": 2, "dp": 2}
    assert A.flops_per_step(cfg) == 16_384 * GPT_FLOPS_PER_TOKEN == 34_634_616_274_944
    assert A.flops_per_device_step(cfg) == 8_658_654_068_736


def test_pipeline_bubble():
    # (pp-1)/(m+pp-1): pp=4, m=8 -> 3/11; interleaved vp=2 -> 3/(16+3); no PP -> 0
    assert A.pipeline_bubble({"pp": 4, "grad_accum": 8}) == pytest.approx(3 / 11)
    assert A.pipeline_bubble({"pp": 4, "grad_accum": 8, "vp": 2}) == pytest.approx(3 / 19)
    assert A.pipeline_bubble({"pp": 1, "grad_accum": 8}) == 0.0
    # m from the batch: B=32, b=2, dp=2 -> m = 32/(2*2) = 8
    assert A.pipeline_bubble({"pp": 2, "global_batch_size": 32, "micro_batch_size": 2, "dp": 2}) == pytest.approx(1 / 9)


@pytest.mark.parametrize("fsdp, expected", [
    # N_local = 301,989,888 / tp(2) = 150,994,944 (no vocabulary: no embedding); D = dp = 4.
    # Megatron DP (none, zero1): bf16 params 2 B, fp32 main grads 4 B, fp32 master + Adam 12 B,
    # the optimizer sharded over D (the distributed optimizer): 12 * N_local / 4 = 452,984,832
    ("none", (301_989_888, 603_979_776, 452_984_832)),
    ("zero1", (301_989_888, 603_979_776, 452_984_832)),
    # torch FSDP: fp32 params 4 B, fp32 grads 4 B, Adam 8 B; NO_SHARD replicates all of it
    ("NO_SHARD", (603_979_776, 603_979_776, 1_207_959_552)),
    # SHARD_GRAD_OP shards the fp32 params at rest too: 4*N_local/4, 4*N_local/4, 8*N_local/4
    ("SHARD_GRAD_OP", (150_994_944, 150_994_944, 301_989_888)),
    ("FULL_SHARD", (150_994_944, 150_994_944, 301_989_888)),
    (3, (150_994_944, 150_994_944, 301_989_888)),                       # ZeRO stage 3 spelled as a number
])
def test_state_bytes_by_sharding(fsdp, expected):
    cfg = {**GPT, "n_gpus": 8, "tp": 2, "dp": 4, "fsdp": fsdp, "precision": "bf16"}
    got = A.state_bytes_per_device(cfg)
    assert (got["param_bytes"], got["grad_bytes"], got["optimizer_bytes"]) == expected


def test_state_bytes_fp32_and_pipeline():
    # fp32: 4 + 4 + 8 bytes; tp=1, pp=2 -> N_local = 150,994,944; dp=1: nothing to shard over
    cfg = {**GPT, "n_gpus": 2, "pp": 2, "dp": 1, "precision": "fp32"}
    got = A.state_bytes_per_device(cfg)
    assert got == {"param_bytes": 603_979_776, "grad_bytes": 603_979_776, "optimizer_bytes": 1_207_959_552}
    # the first and last stages also hold the embedding / LM head: V*d/tp on top of half the blocks
    big = A.state_bytes_per_device({**cfg, "vocab_size": 1000})
    assert big["param_bytes"] == 4 * (150_994_944 + 1000 * 1024)


def test_hybrid_shard_shards_within_a_node():
    # dp=16 over 2 nodes of 8: HYBRID_SHARD shards over 8, FULL_SHARD over 16 (fp32 params, 4 B)
    base = {**GPT, "n_gpus": 16, "dp": 16, "precision": "bf16", "accelerator": "H100-80GB"}
    hybrid = A.state_bytes_per_device({**base, "fsdp": "HYBRID_SHARD"})["param_bytes"]
    full = A.state_bytes_per_device({**base, "fsdp": "FULL_SHARD"})["param_bytes"]
    assert hybrid == 4 * GPT_N / 8 and full == 4 * GPT_N / 16


def test_comm_bytes():
    # B=16, b=4, dp=4 -> m = 1; tp=2 -> N_local = 150,994,944; ring factor (D-1)/D = 3/4;
    # parameters travel in bf16 (2 B), gradients in fp32 (4 B)
    cfg = {**GPT, "global_batch_size": 16, "micro_batch_size": 4, "n_gpus": 8, "tp": 2, "dp": 4}
    # Megatron DP all-reduce of fp32 grads: 2 * 3/4 * 150,994,944 * 4 B = 905,969,664
    assert A.comm_bytes_per_device({**cfg, "fsdp": "none"})["comm_dp_bytes"] == 905_969_664
    # FULL_SHARD: m * 3/4 * N_local * (2*2 + 4) = 0.75 * 150,994,944 * 8 = 905,969,664
    assert A.comm_bytes_per_device({**cfg, "fsdp": "full_shard"})["comm_dp_bytes"] == 905_969_664
    # SHARD_GRAD_OP: m * 3/4 * N_local * (2 + 4) = 679,477,248
    assert A.comm_bytes_per_device({**cfg, "fsdp": "shard_grad_op"})["comm_dp_bytes"] == 679_477_248
    # torchtitan's FP8 gathers the blocks' linears in FP8 (its presets' float8 all-gather; GPT has no
    # vocabulary, so every local parameter is a block's): 0.75 * 150,994,944 * (2*1 + 4) = 679,477,248;
    # rowwise scales (fp8_param_gather false), BF16 or another framework gather in BF16
    fp8 = {**cfg, "fsdp": "full_shard", "precision": "fp8"}
    assert A.comm_bytes_per_device({**fp8, "framework": "torchtitan"})["comm_dp_bytes"] == 679_477_248
    for other in ({**fp8, "framework": "torchtitan", "fp8_param_gather": False}, {**fp8, "framework": "megatron-lm"},
                  {**fp8, "framework": "torchtitan", "precision": "bf16"}):
        assert A.comm_bytes_per_device(other)["comm_dp_bytes"] == 905_969_664
    assert A.comm_bytes_per_device({**fp8, "framework": "megatron-lm", "fp8_param_gather": True})["comm_dp_bytes"] \
        == 679_477_248
    # TP: activations b*s*d*2 B = 4*1024*1024*2 = 8,388,608; 2 all-reduces per sublayer
    # (attention, MLP), each 2*(t-1)/t = 1 x that; x 48 sublayers x m=1 -> 805,306,368
    got = A.comm_bytes_per_device(cfg)
    assert got["comm_tp_bytes"] == 805_306_368
    assert got["comm_pp_bytes"] == 0 and got["comm_cp_bytes"] == 0
    # PP=2 (tp=1, dp=4 -> B=16, b=4 -> m=1): 2*(pp-1)/pp * 8,388,608 = 8,388,608; interleaved vp=2: twice
    pp = A.comm_bytes_per_device({**cfg, "tp": 1, "pp": 2})
    assert pp["comm_pp_bytes"] == 8_388_608
    assert A.comm_bytes_per_device({**cfg, "tp": 1, "pp": 2, "vp": 2})["comm_pp_bytes"] == 2 * 8_388_608
    # CP=2 (dp=4, k=a): K,V chunk b*(s/cp)*kv*(h+h)*2 B = 4*512*16*128*2 = 8,388,608;
    # x 3 (fwd + bwd) x (cp-1) x 24 layers x m=1 = 603,979,776
    cp = A.comm_bytes_per_device({**cfg, "tp": 1, "cp": 2})
    assert cp["comm_cp_bytes"] == 603_979_776
    # tp=2 holds half the heads (half the bytes), with dp=2 twice the micro-batches (m = 16/(4*2))
    assert A.comm_bytes_per_device({**cfg, "cp": 2, "dp": 2})["comm_cp_bytes"] == 2 * 603_979_776 / 2


# GPT on 4 x A100 (312 TFLOP/s bf16, 2.039 TB/s HBM, 2.44e12 exponentials/s, fp32 19.5 TFLOP/s), DDP (fsdp none:
# Megatron's mixed precision), dp=4, B=16, b=4 (m=1): T = 4,096 tokens per device and micro-batch.
# Megatron-LM: its dense layers do not wait for the host (24 passes of ~1 ms would, elsewhere)
A100_DDP = {**GPT, "global_batch_size": 16, "micro_batch_size": 4, "n_gpus": 4, "dp": 4,
            "accelerator": "A100-SXM-80GB", "precision": "bf16", "framework": "megatron-lm"}
# compute: 6N = 1,811,939,328 linear FLOPs per token + the causal attention core
# 6 * 24 layers * (s/2 = 512) * 16 heads * (64 + 64) = 150,994,944 + FlashAttention's recomputed
# scores 2 * 24 * 512 * 16 * 64 = 25,165,824 = 176,160,768, x 4,096 tokens at 312 TFLOP/s; the
# A100's flash kernel (FlashAttention-2, whatever the framework) takes its attention 1.27 times the
# roofline's time (flash_slowdown: 78% of the peak priced, 61.5% reached)
A100_COMPUTE = 4096 * (1_811_939_328 + 1.27 * 176_160_768) / 312e12
# softmax: 4,096 tokens x 16 heads x 24 x 512 scores, each with 2 exponentials (forward +
# FlashAttention backward) at 2.44e12/s and 3.5 + 4 fp32 vector operations at 19.5e12 / 2 per second,
# x 1.27 as the attention core's matmuls
A100_EXP = 1.27 * 4096 * 16 * 24 * 512 * (2 / 2.44e12 + 7.5 / 9.75e12)
# HBM, per micro-batch: GEMM operands per token and layer q,k,v (d -> 3d) + o (d -> d) = 6d, MLP
# (f = 4d, not gated) d -> 4d -> d = 10d, 16,384 elements x 6 B (three GEMMs, 16-bit) x 24 layers
# x 4,096 tokens = 9,663,676,416; weights 301,989,888 x (2 reads x 2 B + fp32 gradient accumulated,
# read + written, 2 x 4 B) = 3,623,878,656. Elementwise forward per token and layer: 2 norms x 4d,
# 2 residual adds x 6d, rotary 4 B x (16 + 16 heads) x 64 = 8d, GELU 4f = 16d: 44d = 45,056 B x
# 24 x 4,096 = 4,429,185,024, x 3 with the backward. No vocabulary: no loss.
A100_MEMORY = (9_663_676_416 + 3_623_878_656 + 3 * 4_429_185_024) / 2.039e12
# optimizer: 2 x the state, N x (2 B bf16 parameters + 4 B fp32 gradients + 12 B / dp=4 of master and Adam)
A100_OPTIMIZER = 2 * GPT_N * (2 + 4 + 3) / 2.039e12


def test_memory_bound_terms_by_hand(peak_rates):
    est = A.estimate(A100_DDP)
    assert est["compute_time_s"] == pytest.approx(A100_COMPUTE, rel=1e-12)
    assert est["softmax_time_s"] == pytest.approx(A100_EXP, rel=1e-12)
    assert est["memory_time_s"] == pytest.approx(A100_MEMORY, rel=1e-12)
    assert est["optimizer_time_s"] == pytest.approx(A100_OPTIMIZER, rel=1e-12)
    # FP8 GEMMs read 1-byte inputs but write 16-bit outputs, and every quantized input is cast first:
    # 2e + 2 + (2 + 2e) = 8 B per element instead of 6; weights read at 1 B (H100: 3.35 TB/s)
    h100 = {**A100_DDP, "accelerator": "H100-80GB"}
    fp8 = A.estimate({**h100, "precision": "fp8"})["memory_time_s"] - A.estimate(h100)["memory_time_s"]
    assert fp8 * 3.35e12 == pytest.approx(9_663_676_416 * (8 / 6 - 1) - 2 * GPT_N, rel=1e-12)
    # the same step on an H200 (4.8 TB/s) spends 3.35/4.8 of the H100's time in memory-bound kernels:
    # H200 and H100 have the same peak FLOP/s, they differ only there
    h200 = A.estimate({**h100, "accelerator": "H200"})
    assert h200["compute_time_s"] == pytest.approx(A.estimate(h100)["compute_time_s"], rel=1e-12)
    assert h200["memory_time_s"] == pytest.approx(A.estimate(h100)["memory_time_s"] * 3.35 / 4.8, rel=1e-12)
    assert h200["step_time_s"] < A.estimate(h100)["step_time_s"]
    # eager PyTorch (compile false) runs an RMSNorm in 36 B per element instead of 4, rotary 48 instead
    # of 4: 2 x 32d + 44 x 8d = ... per token and layer more, x 3 with the backward
    eager = A.estimate({**A100_DDP, "compile": False})["memory_time_s"] - est["memory_time_s"]
    assert eager * 2.039e12 == pytest.approx(3 * 24 * 4096 * (2 * 32 * 1024 + 44 * 32 * 64), rel=1e-12)


def test_ideal_step_time_and_throughput(peak_rates):
    # step = compute + softmax + memory-bound kernels + optimizer; the DP all-reduce
    # 2*(3/4)*301,989,888*4 B = 1,811,939,328 B at 300 GB/s = 0.00604 s hides behind them, its 16 NCCL
    # channels holding 16 of the A100's 108 SMs meanwhile
    cfg = A100_DDP
    t = A100_COMPUTE + A100_EXP + A100_MEMORY + A100_OPTIMIZER + 1_811_939_328 / 300e9 * 16 / 108
    assert A.ideal_step_time(cfg) == pytest.approx(t, rel=1e-12)
    assert A.throughput(cfg) == pytest.approx(16_384 / t, rel=1e-12)
    assert A.throughput(cfg, per_device=True) == pytest.approx(16_384 / t / 4, rel=1e-12)
    # pp=2, dp=2, b=2 -> m = 4 micro-batches of 2,048 tokens through 12 layers: the same FLOPs and
    # softmax work per device, stretched by the bubble 1/(1 - 1/5); memory per micro-batch:
    # GEMM operands 16,384 x 6 B x 12 x 2,048 + weights N/2 x 12 B + elementwise 3 x 45,056 x 12 x 2,048
    pp = {**cfg, "pp": 2, "dp": 2, "micro_batch_size": 2}
    memory = 4 * (16_384 * 6 * 12 * 2048 + GPT_N / 2 * 12 + 3 * 45_056 * 12 * 2048) / 2.039e12
    optimizer = 2 * GPT_N / 2 * (2 + 4 + 6) / 2.039e12  # N/2 local parameters, Adam sharded over dp=2
    t_pp_comm = 4 * 2 * 0.5 * (2 * 1024 * 1024 * 2) / 300e9   # m * 2(pp-1)/pp * b*s*d*2 B over NVLink
    busy = A100_COMPUTE + A100_EXP + memory
    hidden = 2 * 0.5 * (GPT_N / 2) * 4 / 300e9
    assert hidden < busy  # the DP all-reduce stays hidden (on 16 of the 108 SMs)
    assert A.ideal_step_time(pp) == pytest.approx(busy / (1 - 1 / 5) + t_pp_comm + optimizer + hidden * 16 / 108,
                                                  rel=1e-12)
    # fp8 on H100: the linear layers at the fp8 peak (1979 TFLOP/s), the attention core at bf16 (989)
    h100 = 4096 * (1_811_939_328 / 1979e12 + (150_994_944 + 25_165_824) / 989e12)
    assert A.estimate({**cfg, "accelerator": "H100-80GB", "precision": "amp_fp8"})["compute_time_s"] == \
        pytest.approx(h100, rel=1e-12)
    # A100 has no fp8 tensor cores and H100 no fp4: NaN, never a fallback
    assert math.isnan(A.ideal_step_time({**cfg, "precision": "fp8"}))
    assert math.isnan(A.ideal_step_time({**cfg, "accelerator": "H100-80GB", "precision": "nvfp4"}))


def test_low_precision_runs_the_linear_layers_only(peak_rates):
    # GB300: NVFP4 15 PF, FP8/MXFP8 5 PF, BF16 2.5 PF. Per token: linear 1,811,939,328 FLOPs,
    # causal attention core 150,994,944 + FlashAttention's recomputed scores 25,165,824 (stays in
    # BF16); 4,096 tokens per device
    cfg = {**GPT, "global_batch_size": 16, "micro_batch_size": 4, "n_gpus": 4, "dp": 4, "accelerator": "GB300"}
    nvfp4 = 4096 * (1_811_939_328 / 15000e12 + 176_160_768 / 2500e12)
    mxfp8 = 4096 * (1_811_939_328 / 5000e12 + 176_160_768 / 2500e12)
    est = A.estimate({**cfg, "precision": "NVFP4"})
    assert est["compute_time_s"] == pytest.approx(nvfp4, rel=1e-12)
    assert A.estimate({**cfg, "precision": "FP8-MX"})["compute_time_s"] == pytest.approx(mxfp8, rel=1e-12)
    # the effective peak is the FLOP-weighted harmonic mix: 10 PF here, below the NVFP4 figure
    assert est["effective_peak_flops"] == pytest.approx(4096 * 1_988_100_096 / nvfp4, rel=1e-12)
    assert 2500e12 < est["effective_peak_flops"] < 0.75 * 15000e12
    # the LM head stays in BF16 too: V=1000 adds 6*V*d = 6,144,000 FLOPs per token at 2.5 PF
    head = A.estimate({**cfg, "precision": "NVFP4", "vocab_size": 1000})["compute_time_s"]
    assert head == pytest.approx(nvfp4 + 4096 * 6 * 1000 * 1024 / 2500e12, rel=1e-12)


def test_an_nvfp4_cast_reads_its_input_twice():
    # NVFP4's per-tensor FP32 scale needs the tensor's amax before any 16-element block is quantized:
    # each quantized GEMM input is read once more in 16-bit than in MXFP4 (one-level block scales).
    # Per token the linear layers have K + N = 6,144 (q,k,v + o) + 10,240 (MLP d -> 4d -> d)
    # elements, 1,024 tokens, 2 bytes more each, over the B200's 8 TB/s
    row = {"n_layers": 1, "hidden_dim": 1024, "n_heads": 8, "seq_len": 1024, "micro_batch_size": 1,
           "global_batch_size": 1, "n_gpus": 1, "accelerator": "B200"}
    nv, mx = A.estimate({**row, "precision": "nvfp4"}), A.estimate({**row, "precision": "mxfp4"})
    assert nv["compute_time_s"] == pytest.approx(mx["compute_time_s"], rel=1e-12)  # the same FP4 peak
    assert nv["memory_time_s"] - mx["memory_time_s"] == pytest.approx(2 * 1024 * 16_384 / 8.0e12, rel=1e-9)
    # FP8 and MXFP8 take one pass (delayed or block scales)
    fp8 = A.estimate({**row, "precision": "fp8"})["memory_time_s"]
    assert A.estimate({**row, "precision": "mxfp8"})["memory_time_s"] == pytest.approx(fp8, rel=1e-12)


def test_layers_a_recipe_keeps_in_bf16_run_at_the_bf16_peak_and_cast_nothing(peak_rates):
    # one of four layers in BF16 (bf16_layers=1): a quarter of the blocks' linear FLOPs, 6 x 12,582,912
    # per token and layer (q,k,v,o 4d^2 + MLP 8d^2 at d = 1,024) x 1,024 tokens x 4 layers, moves from the
    # B200's FP4 peak (9 PF) to its BF16 peak (2.25 PF); its GEMM operands move 3 x 2 bytes per element, not
    # NVFP4's 8 (16,384 elements per token and layer)
    row = {"n_layers": 4, "hidden_dim": 1024, "n_heads": 8, "seq_len": 1024, "micro_batch_size": 1,
           "global_batch_size": 1, "n_gpus": 1, "accelerator": "B200", "precision": "nvfp4"}
    low, mixed = A.estimate(row), A.estimate({**row, "bf16_layers": 1})
    linear = 6 * 12_582_912 * 1024 * 4
    assert mixed["compute_time_s"] - low["compute_time_s"] == pytest.approx(linear / 4 * (1 / 2.25e15 - 1 / 9e15),
                                                                           rel=1e-9)
    assert low["memory_time_s"] - mixed["memory_time_s"] == pytest.approx(2 * 16_384 * 1024 / 8.0e12, rel=1e-9)
    # in a BF16 run there is nothing to keep in BF16
    bf16 = {**row, "precision": "bf16"}
    assert A.estimate({**bf16, "bf16_layers": 1})["step_time_s"] == pytest.approx(A.estimate(bf16)["step_time_s"],
                                                                                 rel=1e-12)


def test_flashattention2_on_hopper_takes_the_table_slowdown(peak_rates):
    # torchtitan, llm-foundry and plain PyTorch run FlashAttention-2 (PyTorch SDPA's flash backend,
    # flash-attn 2); on an H100 its attention core takes fa2_slowdown = 75/35 = 2.14 times the
    # roofline's (FA2 reaches 35% of the peak, FA3 75%): the causal core + FlashAttention's recomputed
    # scores, 176,160,768 FLOPs per token x 4,096 tokens at 989 TFLOP/s, and the softmax
    h100 = {**A100_DDP, "accelerator": "H100-80GB"}
    te = A.estimate({**h100, "framework": "megatron-lm"})
    attention = 4096 * 176_160_768 / 989e12
    for framework in ("torchtitan", "llm-foundry", "pytorch"):
        fa2 = A.estimate({**h100, "framework": framework})
        assert fa2["compute_time_s"] - te["compute_time_s"] == pytest.approx(1.14 * attention, rel=1e-9)
        assert fa2["softmax_time_s"] == pytest.approx(2.14 * te["softmax_time_s"], rel=1e-12)
        assert fa2["memory_time_s"] == pytest.approx(te["memory_time_s"], rel=1e-12)
    # an unknown framework runs the device's own kernel (Transformer Engine's cuDNN attention)
    unknown = A.estimate({k: v for k, v in h100.items() if k != "framework"})
    for term in ("compute_time_s", "softmax_time_s", "memory_time_s"):
        assert unknown[term] == pytest.approx(te[term], rel=1e-12)
    # FlashAttention-2 is the A100's own kernel, so every framework takes the A100's 1.27 (its
    # compute and softmax by hand: test_memory_bound_terms_by_hand); without flash attention no
    # factor applies
    for cfg in ({**A100_DDP, "framework": "llm-foundry"}, {**h100, "framework": "torchtitan", "flash_attention": False}):
        est, base = A.estimate(cfg), A.estimate({**cfg, "framework": "megatron-lm"})
        assert est["step_time_s"] - est["host_time_s"] == pytest.approx(base["step_time_s"], rel=1e-12)
    # an A100 without a flash kernel: batched GEMMs over the whole score matrix (ctx = s = 1,024, not
    # s/2: 2 x 150,994,944 FLOPs per token), no recomputed scores, no kernel factor; the scores they
    # materialise, 4,096 tokens x 16 heads x 1,024 x 24 layers, move 13 B forward + 19 B backward each
    eager = A.estimate({**A100_DDP, "flash_attention": False})
    assert eager["compute_time_s"] == pytest.approx(4096 * (1_811_939_328 + 2 * 150_994_944) / 312e12, rel=1e-12)
    scores = 4096 * 16 * 1024 * 24
    assert eager["memory_time_s"] - A100_MEMORY == pytest.approx(scores * 32 / 2.039e12, rel=1e-9)
    # a recomputed forward moves its 13 B again; fp32 training twice the bytes
    full = A.estimate({**A100_DDP, "flash_attention": False, "activation_checkpointing": "full"})
    with_flash = A.estimate({**A100_DDP, "activation_checkpointing": "full"})
    assert full["memory_time_s"] - with_flash["memory_time_s"] == pytest.approx(scores * 45 / 2.039e12, rel=1e-9)
    fp32 = {**A100_DDP, "precision": "fp32"}
    assert (A.estimate({**fp32, "flash_attention": False})["memory_time_s"] - A.estimate(fp32)["memory_time_s"]
            == pytest.approx(scores * 64 / 2.039e12, rel=1e-9))


def test_tp_communication_overlaps_the_gemms_in_nemo_and_megatron_bridge(peak_rates):
    # GPT at tp=2 on 8 H100s: 805,306,368 B (test_comm_bytes) in 96 all-reduces (2 per sublayer of 24
    # layers, one micro-batch) of 8.4 MB, each at NCCL's Simple protocol: 8.4 us + 2 steps x 3.4 us of
    # latency and the bytes at 450 GB/s (NVLink): 3.25 ms, far less than the compute, so with userbuffers
    # overlap none of it is exposed
    cfg = {**GPT, "global_batch_size": 16, "micro_batch_size": 4, "n_gpus": 8, "tp": 2, "dp": 4,
           "accelerator": "H100-80GB", "precision": "bf16"}
    plain = A.estimate({**cfg, "framework": "megatron-lm"})
    assert plain["tp_time_s"] == pytest.approx(96 * 15.2e-6 + 805_306_368 / 450e9, rel=1e-9)
    for framework in ("nemo", "megatron-bridge"):
        over = A.estimate({**cfg, "framework": framework})
        exposed = A.estimate({**cfg, "framework": framework, "tp_comm_overlap": False})
        assert over["tp_time_s"] == 0.0 and exposed["tp_time_s"] == plain["tp_time_s"]
        assert over["step_time_s"] == pytest.approx(exposed["step_time_s"] - exposed["tp_time_s"], rel=1e-12)
    # the key decides either way; without sequence parallelism there is nothing to overlap
    assert A.estimate({**cfg, "framework": "megatron-lm", "tp_comm_overlap": True})["tp_time_s"] == 0.0
    no_sp = A.estimate({**cfg, "framework": "nemo", "sequence_parallel": False})
    assert no_sp["tp_time_s"] == pytest.approx(plain["tp_time_s"], rel=1e-12)
    # a TP group slower than its GEMMs shows the excess: tp=16 spans two 8-GPU hosts, so part of its
    # traffic crosses the network (15.1 ms a step against 2.06 ms of compute)
    slow = {**cfg, "framework": "nemo", "n_gpus": 16, "tp": 16, "dp": 1}
    over, exposed = A.estimate(slow), A.estimate({**slow, "tp_comm_overlap": False})
    assert exposed["tp_time_s"] > exposed["compute_time_s"] > 0
    assert over["tp_time_s"] == pytest.approx(exposed["tp_time_s"] - exposed["compute_time_s"], rel=1e-12)


def test_torchtitan_fsdp_under_a_pipeline_gathers_and_reduces_once_per_step():
    # pp=2, dp=4 (FSDP), B=64, b=4 -> m = 4 micro-batches; local parameters N_local (stage of 12
    # layers + the LM head's V*d = 0: no vocabulary) = 150,994,944; ring 3/4. Per micro-batch FSDP moves
    # 3/4 x N_local x (2 all-gathers x 2 B + reduce-scatter 4 B); torchtitan's pipeline keeps the stage
    # gathered (one all-gather) and reduces after the last micro-batch (one reduce-scatter), once per step
    cfg = {**GPT, "global_batch_size": 64, "micro_batch_size": 4, "n_gpus": 8, "pp": 2, "dp": 4,
           "fsdp": "full_shard", "accelerator": "H100-80GB"}
    per_micro_batch = A.comm_bytes_per_device(cfg)["comm_dp_bytes"]
    assert per_micro_batch == 4 * 0.75 * 150_994_944 * (2 * 2 + 4)
    assert A.comm_bytes_per_device({**cfg, "framework": "torchtitan"})["comm_dp_bytes"] == 0.75 * 150_994_944 * (2 + 4)
    # without a pipeline torchtitan's FSDP gathers per micro-batch like any FSDP2
    flat = {**cfg, "pp": 1, "dp": 8, "global_batch_size": 128}
    assert (A.comm_bytes_per_device({**flat, "framework": "torchtitan"})["comm_dp_bytes"]
            == A.comm_bytes_per_device(flat)["comm_dp_bytes"])


def test_defaults_for_what_published_tables_leave_out():
    # Megatron's tables give no micro batch and no grad_accum: b = 1, m = B / dp
    cfg = {**GPT, "global_batch_size": 64, "n_gpus": 16, "tp": 2, "dp": 8, "accelerator": "A100-80GB"}
    assert A.comm_bytes_per_device(cfg)["comm_tp_bytes"] == A.comm_bytes_per_device(
        {**cfg, "micro_batch_size": 1, "grad_accum": 8})["comm_tp_bytes"] > 0
    assert math.isfinite(A.ideal_step_time(cfg))
    # a shape known only by its size: d = (128 N / 12)^(1/3), L = d / 128, the stated N kept
    sized = A.estimate({"n_params": 5e9, "seq_len": 2048, "global_batch_size": 8, "n_gpus": 8,
                        "accelerator": "H100-80GB"})
    assert sized["n_params"] == 5e9 and math.isfinite(sized["throughput"])
    named = A.estimate({"model_name": "GPT3-5B", "seq_len": 2048, "global_batch_size": 8, "n_gpus": 8,
                        "accelerator": "H100-80GB"})
    assert named["throughput"] == pytest.approx(sized["throughput"])
    d = (128 * 5e9 / 12) ** (1 / 3)
    assert A.flops_per_token({"n_params": 5e9, "seq_len": 2048}) == pytest.approx(
        6 * 5e9 + 12 * round(d / 128) * d * 2048)


def test_moe_adapters_and_where_groups_land():
    dense = {**GPT, "ffn_dim": 4096, "global_batch_size": 64, "micro_batch_size": 1, "n_gpus": 16, "dp": 16,
             "accelerator": "H100-80GB"}
    moe = {**dense, "n_experts": 8, "experts_per_token": 2}
    # MLP per expert 2*d*f = 8,388,608 (no moe_ffn_dim: the expert is ffn_dim wide); 8 experts +
    # router d*8 per layer; FLOPs use the 2 active experts, and the router's 6*d*E
    mlp = 2 * 1024 * 4096
    assert A.param_count(moe) == GPT_N + 24 * (7 * mlp + 1024 * 8)
    assert A.flops_per_token(moe) == GPT_FLOPS_PER_TOKEN + 6 * 24 * mlp + 6 * 24 * 1024 * 8
    # EP=8 all-to-alls: 4 per MoE layer pass of K*b*s*d*2 B, 7/8 leaving the device (m = 64/16 = 4)
    ep = A.comm_bytes_per_device({**moe, "ep": 8})["comm_ep_bytes"]
    assert ep == 4 * 24 * 4 * (7 / 8) * 2 * 1024 * 1024 * 2
    assert A.comm_bytes_per_device(moe)["comm_ep_bytes"] == 0 and A.comm_bytes_per_device(dense)["comm_ep_bytes"] == 0
    # EP splits the experts' state: 7 of 8 experts' parameters leave each device
    assert (A.state_bytes_per_device(moe)["param_bytes"] - A.state_bytes_per_device({**moe, "ep": 8})["param_bytes"]
            == 24 * 8 * mlp * (7 / 8) * 2)
    # LoRA: no weight gradients (4N + 12Lds), no gradient or optimizer state
    lora = {**GPT, "task": "LoRA"}
    assert A.flops_per_token(lora) == GPT_FLOPS_PER_TOKEN - 2 * GPT_N
    state = A.state_bytes_per_device({**lora, "n_gpus": 1})
    assert state["grad_bytes"] == 0 and state["optimizer_bytes"] == 0 and state["param_bytes"] == 2 * GPT_N
    # the DP group of tp=2 x dp=4 spans 8 ranks: one H100 node (NVLink); tp=2 x dp=8 spans two,
    # and the 4 members in each node share their 4 rails: min(450, 4 x 50) = 200 GB/s per device
    h100 = A.HARDWARE["H100-80GB"]
    inside = A.estimate({**dense, "n_gpus": 8, "tp": 2, "dp": 4, "global_batch_size": 4})
    across = A.estimate({**dense, "n_gpus": 16, "tp": 2, "dp": 8, "global_batch_size": 8})
    assert inside["dp_time_s"] == pytest.approx(inside["comm_dp_bytes"] / h100.intra_bw)
    assert across["dp_time_s"] == pytest.approx(across["comm_dp_bytes"] / (4 * h100.inter_bw))
    # tp=8 puts one DP member in each node: the device's own rail
    rail = A.estimate({**dense, "n_gpus": 16, "tp": 8, "dp": 2, "global_batch_size": 2})
    assert rail["dp_time_s"] == pytest.approx(rail["comm_dp_bytes"] / h100.inter_bw)


def test_nvl72_keeps_groups_of_up_to_72_on_nvlink():
    # 64 GPUs in 16 trays of 4: GB200's NVLink domain is the 72-GPU rack, so a DP group of 64 is
    # on NVLink (900 GB/s); B200's domain is its 8-GPU board, so the same group crosses the
    # network with 8 members per board sharing 8 rails: min(900, 8 x 50) = 400 GB/s (the distributed
    # optimizer's gradient traffic, bytes over bandwidth; FSDP's rings add their latency, priced below)
    cfg = {**GPT, "global_batch_size": 64, "micro_batch_size": 1, "n_gpus": 64, "dp": 64, "precision": "bf16",
           "fsdp": "none"}
    gb200 = A.estimate({**cfg, "accelerator": "GB200", "nodes": 16, "accelerator_count": 64})
    b200 = A.estimate({**cfg, "accelerator": "B200", "nodes": 8, "accelerator_count": 64})
    assert gb200["dp_time_s"] == pytest.approx(gb200["comm_dp_bytes"] / 900e9)
    assert b200["dp_time_s"] == pytest.approx(b200["comm_dp_bytes"] / 400e9)
    # 128 GB200 span two racks: 64 members per rack share their 64 rails (capped by NVLink)
    big = A.estimate({**cfg, "n_gpus": 128, "dp": 128, "global_batch_size": 128, "accelerator": "GB200",
                      "nodes": 32, "accelerator_count": 128})
    assert big["dp_time_s"] == pytest.approx(big["comm_dp_bytes"] / 900e9)


def test_expert_all_to_all_splits_between_nvlink_and_the_network():
    # ep=16 on H100 (8 per node): each device sends 7/15 of its routed bytes inside its node
    # (450 GB/s) and 8/15 over its rail (50 GB/s), in parallel: the network part sets the time.
    # NCCL's all-to-all (the default dispatcher) sends every copy; a hierarchical one (DeepEP, flex)
    # sends a token's K=2 copies to the other node once when both land there: of 2 domains a token
    # reaches 2(1 - 1/2^2) = 1.5 on average, so the network carries 1.5/2 of the copies
    moe = {**GPT, "ffn_dim": 4096, "n_experts": 16, "experts_per_token": 2, "global_batch_size": 16,
           "micro_batch_size": 1, "n_gpus": 16, "dp": 16, "ep": 16, "accelerator": "H100-80GB"}
    est = A.estimate(moe)
    sent = est["comm_ep_bytes"]
    assert sent == 4 * 24 * 1 * (15 / 16) * 2 * 1024 * 1024 * 2  # m = 1
    assert est["ep_time_s"] == pytest.approx(max(sent * 7 / 15 / 450e9, sent * 8 / 15 / 50e9))
    deepep = A.estimate({**moe, "moe_dispatcher": "deepep"})
    assert deepep["comm_ep_bytes"] == sent
    assert deepep["ep_time_s"] == pytest.approx(max(sent * 7 / 15 / 450e9, sent * 8 / 15 * 0.75 / 50e9))


def test_expert_tensor_parallelism_gathers_the_routed_tokens_outside_the_tp_overlap():
    # tp=4, ep=2 on 8 H100 (one node, NVLink 450 GB/s), m = 8/2 = 4 micro-batches of 1,024 tokens:
    # with etp=1 an MoE sublayer without shared experts moves nothing over TP (sequence-parallel
    # tokens go straight to the all-to-all), so TP carries the 24 attention sublayers only; with
    # etp=4 each MoE layer gathers its K=2 copies of the 256 local tokens over the 4 expert-TP ranks
    # and scatters them back, forward and backward: 4 collectives of 3 x 2 x 256 x 1024 x 2 B, which
    # NeMo's TP overlap (the dense linears' userbuffers) does not hide
    moe = {**GPT, "ffn_dim": 4096, "n_experts": 8, "experts_per_token": 2, "global_batch_size": 8,
           "micro_batch_size": 1, "n_gpus": 8, "tp": 4, "dp": 2, "ep": 2, "accelerator": "H100-80GB",
           "framework": "nemo"}
    one, four = A.estimate(moe), A.estimate({**moe, "etp": 4})
    attention_only = 4 * 24 * 2 * 2 * (3 / 4) * 1024 * 1024 * 2
    assert one["comm_tp_bytes"] == four["comm_tp_bytes"] == pytest.approx(attention_only)
    assert A.estimate({**GPT, "ffn_dim": 4096, **{k: moe[k] for k in ("global_batch_size", "micro_batch_size",
                                                                      "n_gpus", "tp", "dp")}})[
        "comm_tp_bytes"] == pytest.approx(2 * attention_only)  # dense: attention and MLP sublayers
    gathered = 4 * 24 * 4 * 3 * 2 * 256 * 1024 * 2
    assert four["comm_ep_bytes"] - one["comm_ep_bytes"] == pytest.approx(gathered)
    assert four["ep_time_s"] - one["ep_time_s"] == pytest.approx(gathered / 450e9)
    # shared experts run over TP like a dense MLP: their MoE sublayers keep the TP traffic
    shared = A.estimate({**moe, "n_shared_experts": 1})
    assert shared["comm_tp_bytes"] == pytest.approx(2 * attention_only)


def test_a_rank_holding_several_experts_sorts_its_received_tokens_by_expert():
    # Megatron's all-to-all dispatcher sorts the tokens a rank receives by its local experts and back
    # (sort_chunks_by_idxs): 8 more bytes per routed copy and element of d forward, where ep < E
    moe = {**GPT, "ffn_dim": 4096, "n_experts": 8, "experts_per_token": 2, "global_batch_size": 8,
           "micro_batch_size": 1, "n_gpus": 8, "dp": 8, "accelerator": "H100-80GB"}
    costs = [A.LLMCost(pd.DataFrame([{**moe, "ep": ep}])).traffic.elementwise_forward_bytes()[0] for ep in (4, 8)]
    assert costs[0] - costs[1] == pytest.approx(24 * 1024 * 2 * 8 * 1024)  # layers x tokens x K x 8 B x d


def test_expert_gradients_reduce_over_the_expert_data_parallel_group():
    # 16 H100 in 2 nodes, dp=16, ep=8: the dense parameters (GPT_N less the 24 dense MLPs, plus
    # the routers: 100,859,904) reduce over all 16 ranks, 8 per node sharing 8 rails
    # (min(450, 8 x 50) = 400 GB/s); each device's 24 x 8/8 experts (201,326,592 parameters)
    # reduce over the 16/8 = 2 ranks holding the same experts, 8 ranks apart: one per node, on
    # the device's own rail (50 GB/s). Distributed optimizer: reduce-scatter + all-gather of fp32
    # gradients, 2 x (n-1)/n x params x 4 B
    moe = {**GPT, "ffn_dim": 4096, "n_experts": 8, "experts_per_token": 2, "global_batch_size": 16,
           "micro_batch_size": 1, "n_gpus": 16, "dp": 16, "ep": 8, "accelerator": "H100-80GB"}
    dense, expert = 2 * 15 / 16 * 100_859_904 * 4, 2 * 1 / 2 * 201_326_592 * 4
    est = A.estimate(moe)
    assert est["comm_dp_bytes"] == pytest.approx(dense + expert)
    assert est["dp_time_s"] == pytest.approx(dense / 400e9 + expert / 50e9)


def test_moe_shape_of_deepseek_v3_by_hand():
    # DeepSeek-V3 (the catalog's row, MTP off): MLA attention per layer
    #   query d*ql + ql*a*(nope+rope) = 7168*1536 + 1536*128*192 = 11,010,048 + 37,748,736
    #   keys/values d*(kvl+rope) + kvl*a*(nope+v) = 7168*576 + 512*128*256 = 4,128,768 + 16,777,216
    #   output a*v*d = 128*128*7168 = 117,440,512                    -> 187,105,280 x 61 layers
    # 3 dense MLPs 3*7168*18432 = 396,361,728 each; 58 MoE layers of 256 experts 3*7168*2048 =
    # 44,040,192 each + 1 shared expert of 2048 + router 7168*256 = 11,320,164,352 each;
    # embedding + LM head 2*129280*7168 = 1,853,358,080
    from perfzoo.llmconfig import catalog
    cfg = {**catalog.get("deepseek-v3"), "mtp_layers": 0}
    total = 187_105_280 * 61 + 396_361_728 * 3 + 11_320_164_352 * 58 + 1_853_358_080
    assert total == 671_025_397_760 and A.param_count(cfg) == total  # published: 671B
    # active: attention + dense + 58 x (8 + 1 shared experts) + routers + LM head = 36.6B (published 37B)
    active = (187_105_280 * 61 + 396_361_728 * 3 + 58 * 9 * 44_040_192 + 58 * 7168 * 256 + 129_280 * 7168)
    assert A.estimate(cfg)["active_params"] == active == 36_624_596_992
    # MTP adds one block (attention + MoE layer + eh_proj 2*d*d) and a second LM-head pass
    mtp = A.param_count({**cfg, "mtp_layers": 1}) - total
    assert mtp == 187_105_280 + 11_320_164_352 + 2 * 7168 * 7168


def test_sliding_windows_and_hybrid_mamba_layers(peak_rates):
    # a window of 128 over 8,192 tokens: the causal context is w - w(w-1)/(2s) instead of s/2
    base = {"n_layers": 4, "hidden_dim": 1024, "n_heads": 8, "seq_len": 8192}
    full = A.estimate({**base, "n_gpus": 1, "accelerator": "H100-80GB", "global_batch_size": 1})
    windowed = A.estimate({**base, "sliding_window": 128, "n_sliding_layers": 2, "n_gpus": 1,
                           "accelerator": "H100-80GB", "global_batch_size": 1})
    ctx = 128 - 128 * 127 / (2 * 8192)
    core = lambda c: (6 * (128 + 128) + 2 * 128) * c * 8  # per layer and token, FlashAttention's backward included
    assert (full["compute_time_s"] - windowed["compute_time_s"]) * 989e12 / 8192 == pytest.approx(
        2 * (core(4096) - core(ctx)), rel=1e-9)
    # model FLOPs (non-causal) count the window as the context: 2 layers of s, 2 of w
    assert A.flops_per_token({**base, "sliding_window": 128, "n_sliding_layers": 2}) == pytest.approx(
        A.flops_per_token(base) - 2 * 6 * (8192 - 128) * 8 * 256)
    # hybrid: 2 Mamba-2 mixers (64 heads x 64 = 4096 channels, state 128, 8 groups), 1 attention,
    # 1 MLP layer: in-projection d*(2*4096 + 2*8*128 + 64), out-projection 4096*d
    hybrid = {**base, "n_mamba_layers": 2, "n_attention_layers": 1, "mamba_heads": 64, "mamba_head_dim": 64,
              "mamba_state_dim": 128, "mamba_groups": 8, "ffn_dim": 4096}
    mamba = 1024 * (2 * 4096 + 2 * 8 * 128 + 64) + 4096 * 1024
    attention, mlp = 4 * 1024 * 1024, 2 * 1024 * 4096
    assert A.param_count(hybrid) == 2 * mamba + attention + mlp
    # FLOPs: 6 x those matmul parameters, the scan 3 * 7 * 4096 * 128 per Mamba layer, one attention core
    assert A.flops_per_token(hybrid) == 6 * (2 * mamba + attention + mlp) + 2 * 3 * 7 * 4096 * 128 + 6 * 8192 * 8 * 256


def test_packed_samples_attend_within_themselves(peak_rates):
    # 16 samples of 512 tokens packed into 8,192: every attention layer's context is a 512-token
    # sequence's (model FLOPs: 512, not 8,192); the linear layers still run all 8,192 tokens
    base = {"n_layers": 4, "hidden_dim": 1024, "n_heads": 8, "seq_len": 8192}
    packed = {**base, "packed_sample_len": 512}
    assert A.flops_per_token(packed) == pytest.approx(A.flops_per_token(base) - 4 * 6 * (8192 - 512) * 8 * 256)
    assert A.flops_per_token({**base, "seq_len": 512}) == pytest.approx(A.flops_per_token(packed))  # per token
    one = {"n_gpus": 1, "accelerator": "H100-80GB", "global_batch_size": 1}
    full, short = A.estimate({**base, **one}), A.estimate({**packed, **one})
    core = lambda c: (6 * (128 + 128) + 2 * 128) * c * 8  # causal, per layer and token, FlashAttention's backward
    assert (full["compute_time_s"] - short["compute_time_s"]) * 989e12 / 8192 == pytest.approx(
        4 * (core(4096) - core(256)), rel=1e-9)
    assert short["memory_bytes"] == full["memory_bytes"]  # FlashAttention keeps no s x s scores either way
    assert A.flops_per_token({**base, "packed_sample_len": 8192}) == A.flops_per_token(base)


def test_calibration_recovers_the_efficiency_factors():
    rng = np.random.default_rng(0)
    n = 60
    jobs = pd.DataFrame({"n_layers": rng.choice([4, 8, 16], n), "hidden_dim": rng.choice([512, 1024, 2048], n),
                         "n_heads": 16, "seq_len": 1024, "global_batch_size": rng.choice([8, 32], n),
                         "micro_batch_size": rng.choice([1, 2, 4], n), "n_gpus": 8,
                         "tp": rng.choice([1, 2, 4], n), "precision": rng.choice(["bf16", "fp8"], n),
                         "accelerator": "H100-80GB"})
    jobs["dp"] = 8 // jobs["tp"]
    terms = A.calibration.estimate_step_terms(jobs)
    truth = dict.fromkeys(A.calibration.TERMS, 0.0)
    truth.update(compute_bf16=2.0, compute_fp8=3.0, critical_comm=1.5, exposed_dp_comm=1.0, per_layer_pass=2e-4)
    measured = terms @ np.array([truth[t] for t in A.calibration.TERMS])
    cal = A.calibrate(jobs, measured)
    for term in ("compute_bf16", "compute_fp8", "critical_comm", "per_layer_pass"):
        assert cal.factors[term] == pytest.approx(truth[term], rel=1e-6), term
    assert cal.factors["compute_fp4"] == pytest.approx(2.5)  # unseen precision: the median compute factor
    assert np.allclose(cal.step_time(jobs), measured)
    # from throughput: tokens per step over the measured step
    tput = jobs["global_batch_size"] * 1024 / measured
    assert A.calibrate_throughput(jobs, tput).factors["compute_fp8"] == pytest.approx(3.0, rel=1e-6)


def test_a_cost_the_link_cannot_explain_is_not_scaled_by_a_slower_link():
    # one node's jobs whose pipeline sends cost 300x NVLink's time (what vTrain's single-node
    # Megatron-DeepSpeed jobs fit to): within the node the calibration reproduces them, but the
    # link keeps its datasheet figure (the jobs cannot tell its time from a cost per GB) and the
    # rest is a cost per GB, so the same job across two nodes pays the network's time once, not
    # 300 times
    rng = np.random.default_rng(1)
    n = 40
    jobs = pd.DataFrame({"n_layers": 16, "hidden_dim": rng.choice([1024, 2048, 4096], n), "n_heads": 16,
                         "seq_len": 2048, "global_batch_size": rng.choice([16, 64], n), "micro_batch_size": 1,
                         "n_gpus": 8, "tp": 1, "pp": rng.choice([2, 4, 8], n), "accelerator": "A100-80GB"})
    jobs["dp"] = 8 // jobs["pp"]
    truth = dict.fromkeys(A.calibration.TERMS, 0.0)
    truth.update(compute_bf16=2.0, memory=1.0, pipeline_comm=300.0, per_layer_pass=2e-4)
    weights = np.array([truth[t] for t in A.calibration.TERMS])
    cal = A.calibrate(jobs, A.calibration.estimate_step_terms(jobs) @ weights)
    assert cal.factors["pipeline_comm"] == pytest.approx(1.0, abs=1e-3) and cal.factors["per_pipeline_gb"] > 0
    in_node = A.calibration.estimate_step_terms(jobs) @ weights
    assert np.allclose(cal.step_time(jobs), in_node, rtol=1e-6)
    across = jobs.assign(n_gpus=16, dp=16 // jobs["pp"], global_batch_size=2 * jobs["global_batch_size"])
    unbounded = A.calibration.estimate_step_terms(across) @ weights  # 300x the network's time
    added = cal.step_time(across) - cal.step_time(jobs)  # the network's time over NVLink's, once
    assert (added > 0).all() and (added < (unbounded - in_node) / 100).all()
    # where jobs on both links tell the link's time apart, its factor still stops at the bound
    both = pd.concat([jobs, across], ignore_index=True)
    slow = dict(truth, pipeline_comm=20.0)
    fitted = A.calibrate(both, A.calibration.estimate_step_terms(both) @ np.array([slow[t] for t in A.calibration.TERMS]))
    assert fitted.factors["pipeline_comm"] == pytest.approx(A.calibration.MAX_LINK_FACTOR)


def test_unknown_hardware_is_nan_not_an_error():
    cfg = {**GPT, "global_batch_size": 16, "micro_batch_size": 4, "n_gpus": 4, "dp": 4}
    with pytest.warns(UserWarning, match="unknown accelerator 'TPU v99'"):
        assert math.isnan(A.ideal_step_time({**cfg, "accelerator": "TPU v99"}))
    assert math.isnan(A.ideal_step_time(cfg))  # no accelerator at all
    assert A.flops_per_token(cfg) == GPT_FLOPS_PER_TOKEN  # the hardware-free estimates still work
    assert A.ideal_step_time({**cfg, "accelerator": "cpu"}) > 0


def test_accelerator_lookup_and_normalisers():
    assert accelerator_spec("A100-SXM-40GB").name == "A100-40GB"
    assert accelerator_spec("A100").name == "A100-80GB"
    assert accelerator_spec("H100-SXM-96GB-HBM2e (lower TDP)").name == "H100-96GB"
    assert accelerator_spec("NVIDIA H200").name == "H200"
    assert accelerator_spec("B200 (power limited)").name == "B200"
    assert accelerator_spec("GB200").name == "GB200"
    assert accelerator_spec("cpu").name == "cpu"
    assert accelerator_spec("MI300X").name == "MI300X"
    assert accelerator_spec("DGX-H100").name == accelerator_spec("NVIDIA H100-SXM-80GB").name == "H100-80GB"
    with pytest.warns(UserWarning, match="unknown accelerator 'Quantum QPU-7'"):
        assert accelerator_spec("Quantum QPU-7") is None
    assert vocabulary.normalize_sharding("FSDP2 (dp_shard=8)") == "full_shard"
    assert vocabulary.normalize_sharding("replicate") == "no_shard"
    assert vocabulary.normalize_checkpointing("selective layer") == "selective"
    assert vocabulary.normalize_precision("NVFP4 (bf16 tail)") == "fp4"
    assert vocabulary.normalize_precision("MXFP8") == "fp8"


def test_an_accelerator_row_with_more_fields_than_the_header_is_refused(tmp_path, monkeypatch):
    # an unquoted comma in a source text splits it into an extra field, which a plain DictReader
    # would drop (the V100 and cpu rows lost their source's tail that way)
    import perfzoo.hardware.accelerators as acc
    header = [line for line in acc.TABLE.read_text(encoding="utf-8").splitlines() if line.startswith("name,")]
    bad = tmp_path / "accelerators.csv"
    bad.write_text(header[0] + "\nX1,NVIDIA X,X1,100,,,10,,80,2,,,,,132,300,8,8,25,a datasheet, page 2\n", encoding="utf-8")
    monkeypatch.setattr(acc, "TABLE", bad)
    acc.table.cache_clear()
    try:
        with pytest.raises(ValueError, match="row 'X1' has 21 fields, the header 20; quote its source text"):
            acc.table()
    finally:
        monkeypatch.undo()
        acc.table.cache_clear()
    assert all(spec.source for _, spec in acc.table())


def test_fsdp_recommendation_workload():
    # 2 layers: layer 0 maps n_tables*emb_dim = 4*50 = 200 inputs to width 1000, layer 1 1000->1000:
    # P0 = 200*1000 + 1000 = 201,000 (FULL_SHARD), P1 = 1000^2 + 1000 = 1,001,000 (NO_SHARD);
    # embeddings 4 tables * 100 rows * 50 = 20,000 (replicated). W = 4 CPU ranks, fp32 (4/4/8 B).
    cfg = {"n_layers": 2, "width": 1000, "n_tables": 4, "rows_per_table": 100, "emb_dim": 50,
           "local_batch": 10, "world_size": 4, "precision": "fp32", "accelerator": "cpu",
           "shard_00": "FULL_SHARD", "shard_01": "NO_SHARD"}
    e = fsdp_estimate(cfg)
    assert e["dense_params"] == 1_202_000 and e["n_params"] == 1_222_000
    # params: 201,000*4/4 + 1,001,000*4 + 20,000*4 = 201,000 + 4,004,000 + 80,000; grads the same
    assert e["param_bytes"] == 4_285_000 and e["grad_bytes"] == 4_285_000
    # optimizer: 201,000*8/4 + 1,001,000*8 + 20,000*8 = 402,000 + 8,008,000 + 160,000
    assert e["optimizer_bytes"] == 8_570_000
    # comm (ring 3/4): FULL_SHARD 0.75*201,000*(2*4+4) = 1,809,000; NO_SHARD 2*0.75*1,001,000*4
    # = 6,006,000; embeddings 2*0.75*20,000*4 = 120,000 -> 7,935,000
    assert e["comm_dp_bytes"] == pytest.approx(7_935_000)
    # activations (2*10*1000*2 layers + 10*4*50) * 4 B = 168,000; memory = 2*4,285,000 + 8,570,000 + 168,000
    assert e["activation_bytes"] == 168_000 and e["memory_bytes"] == 17_308_000
    # compute 6*1,202,000*10 = 72,120,000 FLOPs at 1e11 -> 7.212e-4 s; comm 7,935,000 B at 5e9 B/s
    # -> 1.587e-3 s; step 2.3082e-3 s; 10 * 4 / step queries/s
    assert e["step_time_s"] == pytest.approx(7.212e-4 + 1.587e-3, rel=1e-12)
    assert e["throughput"] == pytest.approx(40 / (7.212e-4 + 1.587e-3), rel=1e-12)
    assert (e["n_full_shard"], e["n_no_shard"], e["n_shard_grad_op"]) == (1, 1, 0)
    # sharding every layer fully must cut memory and raise communication
    full = fsdp_estimate({**cfg, "shard_01": "FULL_SHARD"})
    assert full["memory_bytes"] < e["memory_bytes"] and full["comm_dp_bytes"] > e["comm_dp_bytes"]
    # a memory budget turns memory into a fraction of it
    assert fsdp_estimate({**cfg, "memory_budget_gib": 1.0})["memory_fraction"] == pytest.approx(17_308_000 / 2**30)


def test_vectorised_matches_row_by_row_and_handles_mixed_workloads():
    rows = [
        {**GPT, "global_batch_size": 16, "micro_batch_size": 4, "n_gpus": 4, "tp": 2, "dp": 2, "accelerator": "A100"},
        {**GPT, "global_batch_size": 32, "micro_batch_size": 2, "n_gpus": 8, "pp": 2, "dp": 4, "accelerator": "H100-80GB",
         "fsdp": "FULL_SHARD", "activation_checkpointing": "full"},
        {"width": 512, "n_layers": 11, "local_batch": 1024, "world_size": 2, "accelerator": "cpu"},
        {"n_layers": 2},  # nothing known: NaN, no exception
    ]
    frame = pd.DataFrame([{f"config.{k}" if k != "accelerator" else "hardware.accelerator": v for k, v in r.items()}
                          for r in rows])
    est = A.estimate(frame)
    assert list(est.columns) == list(A.ESTIMATE_COLUMNS) and len(est) == 4
    for i, r in enumerate(rows):
        one = A.estimate(r)
        for col in A.ESTIMATE_COLUMNS:
            a, b = est[col].iloc[i], one[col]
            assert (np.isnan(a) and np.isnan(b)) or a == pytest.approx(b, rel=1e-12), (i, col)
    assert np.isfinite(est["throughput"].iloc[:3]).all() and np.isnan(est["throughput"].iloc[3])


def test_fast_on_a_million_configs():
    import time

    frame = pd.DataFrame({
        "config.n_layers": np.tile([12, 24], 500_000), "config.hidden_dim": 1024, "config.n_heads": 16,
        "config.seq_len": 1024, "config.global_batch_size": 16, "config.micro_batch_size": 2,
        "config.n_gpus": 8, "config.tp": np.tile([1, 2, 4, 8], 250_000), "config.pp": 1,
        "hardware.accelerator": "A100",
    })
    start = time.perf_counter()
    est = A.estimate(frame)
    # ~1 s on an idle core; the bound only catches a per-row Python loop (minutes), not load
    assert time.perf_counter() - start < 60.0
    assert np.isfinite(est["throughput"]).all()


def test_the_accelerator_table_covers_public_tables_with_a_source_each():
    from perfzoo.hardware import accelerators

    wanted = ["V100", "A100 40GB", "A100 80GB", "H100 SXM", "H100 PCIe", "H200", "B200", "B300", "GB200",
              "GB300", "MI250X", "MI300X", "MI325X", "MI350X", "MI355X", "TPU v4", "TPU v5e", "TPU v5p", "TPU v6e", "Gaudi 2",
              "Gaudi 3", "L40S"]
    found = {name: accelerators.spec(name) for name in wanted}
    assert all(found.values()), [n for n, s in found.items() if s is None]
    assert len({s.name for s in found.values()}) == len(wanted)  # each its own row
    for s in found.values():
        assert s.source and s.flops("bf16") > 1e14 and s.memory_gib > 0 and s.intra_bw > 0 and s.inter_bw > 0
    assert found["B300"].flops("fp4") > found["B300"].flops("fp8") > found["B300"].flops("bf16")
    assert found["GB300"].flops("fp4") == 15e15 and found["GB300"].nvlink_domain == 72
    # formats: no fp8 on A100 (no fallback to bf16), no NVFP4 or MXFP8 on H100
    assert found["A100 80GB"].flops("fp8") is None and found["A100 80GB"].peak("fp8") is None
    assert found["H100 SXM"].peak("fp8") == 1979e12 and found["H100 SXM"].peak("mxfp8") is None
    assert found["H100 SXM"].peak("nvfp4") is None and found["B200"].peak("nvfp4") == 9e15
    # CDNA 4 doubles CDNA 3's matrix rate per clock and adds the OCP MX formats, not NVIDIA's NVFP4
    assert found["MI355X"].flops("bf16") > 1.9 * found["MI325X"].flops("bf16")
    assert found["MI355X"].peak("mxfp4") == 2 * found["MI355X"].peak("fp8") and found["MI355X"].peak("nvfp4") is None
    assert found["MI350X"].flops("bf16") < found["MI355X"].flops("bf16")
    qwen = {"model_name": None, "n_layers": 28, "hidden_dim": 3584, "ffn_dim": 18944, "n_heads": 28, "n_kv_heads": 4,
            "seq_len": 4096, "global_batch_size": 64, "micro_batch_size": 8, "n_gpus": 8, "accelerator": "MI355X",
            "framework": "megatron-lm"}
    tokens = {p: A.throughput({**qwen, "precision": p}) for p in ("bf16", "fp8", "mxfp4")}
    assert tokens["bf16"] < tokens["fp8"] < tokens["mxfp4"]
    assert np.isnan(A.throughput({**qwen, "precision": "nvfp4"}))  # no NVFP4 on CDNA 4: no price
    assert A.throughput({"n_layers": 24, "hidden_dim": 1024, "n_heads": 16, "seq_len": 1024, "global_batch_size": 16,
                         "micro_batch_size": 2, "n_gpus": 8, "accelerator": "TPU v5p"}) > 0


def test_export_variants_keep_the_compute_and_lose_the_nvlink():
    """H800 and A800: the H100's and A100's compute and memory, NVLink at 400 GB/s bidirectional
    (200 per direction, against 450 and 300): one GPU runs the same, TP over NVLink slower, and a
    PCIe or 40 GB variant matches no row (refused, never priced as the SXM part)."""
    for variant, base in (("H800", "H100 SXM"), ("A800", "A100 80GB")):
        v, b = accelerator_spec(variant), accelerator_spec(base)
        assert (v.flops("bf16"), v.flops("fp8"), v.memory_gib, v.hbm_bw) == (b.flops("bf16"), b.flops("fp8"),
                                                                           b.memory_gib, b.hbm_bw)
        assert v.intra_bw == 200e9 < b.intra_bw and v.inter_bw == b.inter_bw
    llama = {"model_name": "llama3-70b", "n_layers": 80, "hidden_dim": 8192, "ffn_dim": 28672, "n_heads": 64,
             "n_kv_heads": 8, "vocab_size": 128256, "seq_len": 8192, "global_batch_size": 64, "micro_batch_size": 1,
             "precision": "bf16", "framework": "megatron-lm"}
    one = {**llama, "n_layers": 2, "n_gpus": 1, "tp": 1, "pp": 1, "global_batch_size": 4}
    assert A.throughput({**one, "accelerator": "H800"}) == pytest.approx(A.throughput({**one, "accelerator": "H100"}))
    tp8 = {**llama, "n_gpus": 64, "tp": 8, "pp": 1}
    h800 = A.estimate({**tp8, "accelerator": "H800"})
    h100 = A.estimate({**tp8, "accelerator": "H100"})
    # 2,560 all-reduces of 134 MB (8 micro-batches x 160 sublayers x 2), NCCL's Simple protocol: the same
    # latency, 8.4 us + 14 steps x 3.4 us each, the bytes at 200 GB/s instead of 450
    latency = 2560 * 56e-6
    assert h800["tp_time_s"] - latency == pytest.approx((h100["tp_time_s"] - latency) * 450 / 200)
    assert h800["compute_time_s"] == pytest.approx(h100["compute_time_s"])
    assert h800["throughput"] < h100["throughput"]
    with pytest.warns(UserWarning, match="unknown accelerator"):
        assert accelerator_spec("H800 PCIe") is None and accelerator_spec("A800 40GB") is None
    # a device the table has no row for is refused, not priced as the part whose name it contains:
    # Microsoft's Maia 100 is no A100; a Grace Hopper GH200 (96 or 144 GB, four to a node or one) and
    # the PCIe H200 NVL (835 dense BF16 TFLOP/s) are no 8-GPU HGX H200; the MI300A APU (228 compute
    # units) is no MI300X (304); an A10G (AWS's part) is no A10
    for other in ("Maia 100", "GH200", "H200 NVL", "MI300A", "A10G"):
        with pytest.warns(UserWarning, match="unknown accelerator"):
            assert accelerator_spec(other) is None, other
    assert accelerator_spec("NVIDIA H200 141GB").name == "H200" and accelerator_spec("MI300X").name == "MI300X"
    assert accelerator_spec("V100 (DGX-2)").name == "V100"
    assert accelerator_spec("DGX A100").name == "A100-80GB" and accelerator_spec("A100-SXM4-40GB").name == "A100-40GB"


def test_the_fsdp_cost_model_counts_the_parameters_of_each_tower_layer_and_reads_the_live_tensor_budget():
    from harness.workloads.fsdp_shapes import tower_layer_params
    from perfzoo import spaces
    from perfzoo.workloads.fsdp_ads import fsdp_estimate

    cfg = spaces.get("fsdp-ads-v3").sample(1, seed=3)[0]
    est = fsdp_estimate(cfg)
    assert est["dense_params"] == sum(tower_layer_params(cfg))
    assert est["memory_fraction"] == pytest.approx(est["memory_bytes"] / (cfg["tensor_budget_mib"] * 2**20))


def test_every_published_source_runs_at_a_like_fraction_of_the_ideal(external):
    """Measured / analytic-ideal throughput, median per published source, without any fitted factor
    (``scripts/efficiency_table.py`` prints it by any column): each source between 45 and 85% of the
    roofline (today 0.58-0.68). A wrong peak table or a misread model shape moves a whole source."""
    from perfzoo.datasets import load_dataset
    from perfzoo.zoo.targets import analytic_log_throughput

    ds = load_dataset("published-llm", external_dir=str(external)).labelled().ok()
    ratio = np.exp(np.log(np.asarray(ds.y, dtype=float)) - analytic_log_throughput(ds.X, ds.target.endswith("_per_device")))
    median = pd.Series(ratio).groupby(ds.frame["annotations.file"].to_numpy()).median()
    assert len(median) == ds.frame["annotations.file"].nunique() >= 5
    assert median.between(0.45, 0.85).all(), median.round(3).to_dict()


def test_the_efficiency_table_reads_a_measured_dataset_too():
    """``scripts/efficiency_table.py --dataset llm-h100 --by micro_batch_size``: perfzoo's own H100
    jobs (one source, no published file). Against the GPU's time alone their micro batch 1 ran at
    0.31 of the ideal and 16 at 0.69; with the host's time per layer pass priced (``HOST_PASS_S``)
    the small micro batches come near the large ones, and with the eager kernels at the bandwidth
    they reach, perfzoo's FP8 recipe and the host's checkpointing priced (docs/studies/eager-step-1128)
    every micro batch runs at 0.75-0.88 of the estimate, below it."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "scripts" / "efficiency_table.py"
    spec = importlib.util.spec_from_file_location("efficiency_table", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    rows = script.ratios("llm-h100")
    assert set(rows["source"]) == {"llm-h100"} and not rows["is_moe"].any()
    by_batch = script.table(rows, ["micro_batch_size"])["median"]
    assert by_batch.loc[1] > 0.75 * by_batch.loc[16] and by_batch.between(0.7, 0.95).all()


def test_a_layer_pass_shorter_than_the_hosts_time_waits_for_the_host():
    # a 4-layer model at micro batch 1: 8 micro-batches x 4 layers = 32 layer passes per step, each far
    # shorter than the 5 ms the host takes to launch one (HOST_PASS_S): the step is 32 x 5 ms = 0.16 s,
    # the wait the step time over the GPU's; Megatron-Core's dense layers (CUDA graphs) do not wait
    tiny = {"n_layers": 4, "hidden_dim": 256, "n_heads": 4, "seq_len": 128, "vocab_size": 1000,
            "global_batch_size": 8, "micro_batch_size": 1, "n_gpus": 1, "accelerator": "H100-80GB"}
    assert A.host.HOST_PASS_S == 0.005
    for framework in ("torchtitan", "llm-foundry", None):
        est = A.estimate({**tiny, "framework": framework})
        assert est["layer_passes"] == 32 and est["step_time_s"] == pytest.approx(0.16, rel=1e-12)
        assert 0 < est["host_time_s"] < 0.16
    megatron = A.estimate({**tiny, "framework": "megatron-lm"})
    assert megatron["host_time_s"] == 0 and megatron["step_time_s"] < 0.01
    # Megatron-Core's MoE layers (dropless, token counts synchronised with the host) wait as well
    moe = A.estimate({**tiny, "framework": "megatron-bridge", "n_experts": 8, "experts_per_token": 2})
    assert moe["step_time_s"] == pytest.approx(0.16, rel=1e-12) and moe["host_time_s"] > 0
    # ... but not its token-dropping MoE: experts padded to capacity, static shapes
    assert A.estimate({**tiny, "framework": "megatron-bridge", "n_experts": 8, "experts_per_token": 2,
                       "moe_token_drop": True})["host_time_s"] == 0
    # a pass longer than the host's time hides it
    big = A.estimate({**tiny, "framework": "torchtitan", "hidden_dim": 4096, "n_heads": 32, "seq_len": 8192})
    assert big["host_time_s"] == 0 and big["step_time_s"] > 32 * 0.005


def test_in_eager_pytorch_the_hosts_pass_grows_with_checkpointing_and_casts():
    # the same 32 host-paced passes in eager PyTorch (compile false) on an H100: full checkpointing
    # 1.73 x 5 ms per pass, PyTorch's selective policy 2.2 x, eager FP8 casts 1.31 x more
    # (docs/studies/eager-step-1128, host_per_pass.py); compiled blocks and CPU ranks keep 5 ms
    tiny = {"n_layers": 4, "hidden_dim": 256, "n_heads": 4, "seq_len": 128, "vocab_size": 1000,
            "global_batch_size": 8, "micro_batch_size": 1, "n_gpus": 1, "accelerator": "H100-80GB",
            "compile": False}
    for ac, precision, factor in (("none", "bf16", 1.0), ("full", "bf16", 1.73), ("selective", "bf16", 2.2),
                                  ("none", "fp8", 1.31), ("full", "fp8", 1.73 * 1.31)):
        est = A.estimate({**tiny, "activation_checkpointing": ac, "precision": precision})
        assert est["step_time_s"] == pytest.approx(32 * 0.005 * factor, rel=1e-12), (ac, precision)
    compiled = A.estimate({**tiny, "activation_checkpointing": "full", "precision": "fp8", "compile": True})
    assert compiled["step_time_s"] == pytest.approx(32 * 0.005, rel=1e-12)
    cpu = A.llm.LLMCost(pd.DataFrame([{**tiny, "activation_checkpointing": "full", "accelerator": "cpu"}]))
    assert cpu.host_pass_factor()[0] == 1.0


def test_eager_elementwise_kernels_move_their_bytes_at_the_rate_measured_for_them():
    # an H100 moves eager PyTorch's elementwise bytes at 2.1 TB/s, not its HBM's 3.35 (the accelerator
    # table's eager_tb_s, profiled: docs/studies/eager-step-1128); GEMM operands and the loss at 3.35
    row = {**GPT, "vocab_size": 32000, "global_batch_size": 4, "micro_batch_size": 4, "n_gpus": 1,
           "precision": "bf16", "accelerator": "H100-80GB", "compile": False}
    cost = A.llm.LLMCost(pd.DataFrame([row]))
    tr = cost.traffic
    expected = (tr.gemm_bytes() + tr.loss_bytes()) / 3.35e12 + tr.elementwise_bytes() / 2.1e12
    assert tr.seconds()["memory_time_s"][0] == pytest.approx(expected[0], rel=1e-12)
    compiled = A.llm.LLMCost(pd.DataFrame([{**row, "compile": True}])).traffic
    moved = compiled.gemm_bytes() + compiled.loss_bytes() + compiled.elementwise_bytes()
    assert compiled.seconds()["memory_time_s"][0] == pytest.approx(moved[0] / 3.35e12, rel=1e-12)
    # a card without the measurement (A100): its HBM figure for every byte
    a100 = A.llm.LLMCost(pd.DataFrame([{**row, "accelerator": "A100-80GB"}])).traffic
    moved = a100.gemm_bytes() + a100.loss_bytes() + a100.elementwise_bytes()
    assert a100.seconds()["memory_time_s"][0] == pytest.approx(moved[0] / 2.039e12, rel=1e-12)
    assert accelerator_spec("H200").eager_bw == 2.6e12 and accelerator_spec("B200").eager_bw is None


def test_fp8_in_the_forward_gemm_only_runs_the_backward_at_the_bf16_peak(peak_rates):
    # perfzoo's llm workload quantizes the forward GEMM only (low_precision_backward false): of the 6
    # FLOPs per weight and token, the 4 of the backward run at the BF16 peak; with full recompute the
    # forward runs twice in FP8: 4 of 8 at the BF16 peak
    row = {**GPT, "vocab_size": 32000, "global_batch_size": 4, "micro_batch_size": 4, "n_gpus": 1,
           "precision": "fp8", "accelerator": "H100-80GB"}
    te = A.llm.LLMCost(pd.DataFrame([row]))
    ours = A.llm.LLMCost(pd.DataFrame([{**row, "low_precision_backward": False}]))
    assert te.linear_bf16_share()[0] == 0 and ours.linear_bf16_share()[0] == pytest.approx(4 / 6)
    full = A.llm.LLMCost(pd.DataFrame([{**row, "low_precision_backward": False, "activation_checkpointing": "full"}]))
    assert full.linear_bf16_share()[0] == pytest.approx(4 / 8)
    linear = te.flops_parts(causal=True, recompute=True, executed=True)["linear"][0] * te.tokens_per_step()[0]
    extra = linear * 4 / 6 * (1 / 989e12 - 1 / 1979e12)
    assert ours.compute_time()[0] - te.compute_time()[0] == pytest.approx(extra, rel=1e-9)
    # BF16 rows are not touched by the key
    bf16 = {**row, "precision": "bf16"}
    assert A.estimate({**bf16, "low_precision_backward": False})["step_time_s"] == A.estimate(bf16)["step_time_s"]


def test_quantization_casts_cost_what_their_kernels_move():
    # per element cast: a fused kernel reads 16 bits and writes the format (2 + e = 3 bytes in FP8);
    # eager PyTorch's abs, amax, float, mul, clamp and to move 33. All GEMMs in FP8 (Transformer
    # Engine): the forward input and the output gradient plus transposed copies, 3 + 1 per element of
    # K + N; forward only: half of K + N, and the weights once per micro-batch
    row = {**GPT, "vocab_size": 32000, "global_batch_size": 4, "micro_batch_size": 4, "n_gpus": 1,
           "precision": "fp8", "accelerator": "H100-80GB"}
    fused = A.llm.LLMCost(pd.DataFrame([row])).traffic
    elements = fused.linear_elements()[0]
    assert fused.cast_bytes()[0] == pytest.approx(4.0 * elements)
    eager = A.llm.LLMCost(pd.DataFrame([{**row, "compile": False, "low_precision_backward": False}]))
    dense, expert = eager.memory.local_params
    assert eager.traffic.cast_bytes()[0] == pytest.approx(33.0 / 2 * elements + 33.0 * (dense + expert)[0])
    assert A.llm.LLMCost(pd.DataFrame([{**row, "precision": "bf16"}])).traffic.cast_bytes()[0] == 0


def test_fsdp_gathers_pay_nccl_ring_latency_across_boards_by_hand():
    # GPT (N = 301,989,888, no vocabulary) in torch FSDP full_shard on H100s, 16 sequences per GPU, m = 1:
    # per step each of the 24 layers gathers twice and reduce-scatters once, 72 ring calls; each device
    # sends (n-1)/n of the 2 B gathers and the 4 B gradients, (2 x 2 + 4) N (n-1)/n bytes in all
    def row(n):
        return {**GPT, "fsdp": "full_shard", "n_gpus": n, "micro_batch_size": 16, "global_batch_size": 16 * n,
                "accelerator": "H100-80GB"}

    est = A.estimate(pd.DataFrame([row(8), row(128)]))
    per_call = [8 * GPT_N * (n - 1) / n / 72 for n in (8, 128)]
    # 8 GPUs, one NVLink board at 450 GB/s: LL128, 10 us + 7 steps x 1.9 us, at 0.92 of the link
    one_board = 72 * (10e-6 + 7 * 1.9e-6 + per_call[0] / (0.92 * 450e9))
    # 128 GPUs on 16 boards, 8 NICs of 50 GB/s each: 127 steps, 15 between boards at 4 us, the other 112
    # at 1.9 us (over the 1 us network floor): LL128 (Simple pays 533 us of latency, LL a quarter of the bandwidth)
    boards = 72 * (10e-6 + 112 * 1.9e-6 + 15 * 4e-6 + per_call[1] / (0.92 * 400e9))
    assert est["dp_time_s"].tolist() == pytest.approx([one_board, boards], rel=1e-9)
    assert (one_board, boards) == pytest.approx((6.78e-3, 26.88e-3), rel=1e-3)
    # a micro-batch's first gather and the step's last reduce-scatter hide under nothing: 2 of 72 calls
    # on the critical path; the other 70 run under the kernels, holding 16 of the 132 SMs meanwhile
    big = est.iloc[1]
    busy = big["compute_time_s"] + big["softmax_time_s"] + big["memory_time_s"]
    exposed = boards * 2 / 72
    assert boards - exposed < busy
    expected = busy + big["optimizer_time_s"] + exposed + (boards - exposed) * 16 / 132
    assert big["step_time_s"] - big["host_time_s"] == pytest.approx(expected, rel=1e-9)  # the host's pace: tests of host.py
