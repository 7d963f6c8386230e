"""The kernels' shape model (perfzoo.analytic.kernels), worked by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfzoo.analytic import kernels as K
from perfzoo.analytic.llm import LLMCost

H100 = np.array(132.0)
# the reference, 8192^3 on 132 SMs: 64 x 32 = 2048 tiles in 16 waves of 132 (2112 slots), k 8192 / (8192 + 336)
REF = 2048 / 2112 * 8192 / 8528


def test_a_short_k_pays_the_tiles_prologue_and_epilogue():
    # 8192 x 8192 x 1024: the same tiles and waves as the reference, k 1024 / (1024 + 336)
    assert K.gemm_efficiency(8192.0, 8192.0, 1024.0, H100) == pytest.approx(2048 / 2112 * 1024 / 1360 / REF)
    # FP8's main loop runs twice as fast: the same fixed time is 672 elements of k, against its own reference
    fp8_ref = 2048 / 2112 * 8192 / (8192 + 672)
    assert K.gemm_efficiency(8192.0, 8192.0, 1024.0, H100, k_scale=2.0) == pytest.approx(
        2048 / 2112 * 1024 / 1696 / fp8_ref)


def test_the_last_wave_and_the_edge_tiles():
    # 11 x 12 = 132 tiles of 128 x 256: one full wave; 12 x 12 = 144 tiles take two (264 slots)
    full = K.gemm_efficiency(11 * 128.0, 12 * 256.0, 8192.0, H100)
    assert full == pytest.approx(1.0 * 8192 / 8528 / REF)
    spill = K.gemm_efficiency(12 * 128.0, 12 * 256.0, 8192.0, H100)
    assert spill == pytest.approx(144 / 264 * 8192 / 8528 / REF)
    # one row past a tile: 65 tile rows, the last holds 1 of its 128 rows
    edge = K.gemm_efficiency(8193.0, 8192.0, 8192.0, H100)
    assert edge == pytest.approx(8193 / (65 * 128) * (65 * 32) / 2112 * 8192 / 8528 / REF)
    # no SMs in the table (a TPU): no wave term, in the reference either; the edge tiles and k still count
    assert K.gemm_efficiency(12 * 128.0, 12 * 256.0, 8192.0, np.array(np.nan)) == pytest.approx(1.0)
    assert K.gemm_efficiency(8193.0, 8192.0, 1024.0, np.array(np.nan)) == pytest.approx(
        8193 / (65 * 128) * (1024 / 1360) / (8192 / 8528))


def test_a_grouped_gemm_fills_the_waves_with_every_expert():
    # 4 experts of 1024 x 2048 tiles: 8 x 8 = 64 tiles each, 256 in 2 waves (264 slots)
    one = K.gemm_efficiency(1024.0, 2048.0, 4096.0, H100)
    four = K.gemm_efficiency(1024.0, 2048.0, 4096.0, H100, groups=4.0)
    assert one == pytest.approx(64 / 132 * 4096 / 4432 / REF)
    assert four == pytest.approx(256 / 264 * 4096 / 4432 / REF)


def test_a_linear_layer_is_its_three_gemms_harmonically():
    m = 4096.0
    e = [K.gemm_efficiency(m, 1024.0, 4096.0, H100), K.gemm_efficiency(m, 4096.0, 1024.0, H100),
         K.gemm_efficiency(4096.0, 1024.0, m, H100)]
    assert K.linear_efficiency(m, [(4096.0, 1024.0, 1.0, 1.0, 1.0)], H100) == pytest.approx(3 / sum(1 / x for x in e))
    # two matrices weigh by their parameters
    a = K.linear_efficiency(m, [(4096.0, 1024.0, 1.0, 1.0, 1.0)], H100)
    b = K.linear_efficiency(m, [(4096.0, 4096.0, 1.0, 1.0, 1.0)], H100)
    both = K.linear_efficiency(m, [(4096.0, 1024.0, 1.0, 1.0, 1.0), (4096.0, 4096.0, 1.0, 1.0, 1.0)], H100)
    assert both == pytest.approx((1 + 4) / (1 / a + 4 / b))


def test_attention_chunks_pay_a_start_per_block():
    # 2048 tokens, 32 heads, one sequence: 32 x 16 = 512 query blocks in 4 waves (528 slots)
    assert K.attention_efficiency(2048.0, 32.0, 1.0, H100) == pytest.approx(512 / 528 * 2048 / 2948)
    assert K.attention_efficiency(65536.0, 32.0, 1.0, H100) == pytest.approx(16384 / (125 * 132) * 65536 / 66436)


LLAMA8B = {"n_layers": 32, "hidden_dim": 4096, "ffn_dim": 14336, "n_heads": 32, "n_kv_heads": 8, "vocab_size": 128256,
           "seq_len": 8192, "global_batch_size": 64, "micro_batch_size": 1, "n_gpus": 8, "accelerator": "H100-80GB",
           "framework": "megatron-lm"}


def test_tensor_and_context_parallelism_slow_the_kernels_they_narrow():
    rows = pd.DataFrame([{**LLAMA8B, "tp": 1}, {**LLAMA8B, "tp": 8}, {**LLAMA8B, "tp": 1, "cp": 8}])
    rate = K.shape_efficiency(LLMCost(rows))
    assert rate["linear"][1] < rate["linear"][0]  # TP 8: k = 1792 in the MLP's second GEMM, n = 768 in QKV
    assert rate["head"][1] < rate["head"][0]
    assert rate["attention"][2] < rate["attention"][0]  # CP 8: 512-token halves
    # the whole step prices the narrower shapes: the same FLOPs per device, more seconds
    cost = LLMCost(rows)
    assert cost.compute_time()[1] * 8 > cost.compute_time()[0] * 1.0
    assert (cost.kernel_rate() <= 1.05).all() and cost.kernel_rate()[1] < cost.kernel_rate()[0]


def test_the_last_pipeline_stage_runs_the_whole_lm_head(monkeypatch):
    import perfzoo.analytic.llm as llm
    monkeypatch.setattr(llm, "shape_efficiency", lambda cost: {"linear": 1.0, "head": 1.0, "attention": 1.0})
    rows = pd.DataFrame([{**LLAMA8B, "pp": pp, "n_gpus": 4, "global_batch_size": 4} for pp in (1, 4)])
    cost = LLMCost(rows)
    # 4 sequences on 4 GPUs: pp 1 gives each one sequence (dp 4), pp 4 gives each 8 layers of all four;
    # the layers' work per device is the same, but the last stage runs the head for all four sequences
    head = cost.flops_parts(causal=True, recompute=True, executed=True)["head"][0] * 8192 * 4 / 4  # one device's share
    assert cost.compute_time()[1] - cost.compute_time()[0] == pytest.approx(3 * head / 989e12, rel=1e-9)
