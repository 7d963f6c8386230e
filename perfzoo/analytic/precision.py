"""Low precision as training recipes run it: which matmuls run in FP8 / MXFP8 / NVFP4 and which
stay in BF16, so that a step's compute time is each part's FLOPs at its own peak.

* FP8 with per-tensor scales (delayed or current scaling), per-row or blockwise scales (Transformer
  Engine's ``DelayedScaling`` / ``Float8CurrentScaling`` / ``Float8BlockScaling``, torchao's
  ``Float8Linear`` tensorwise / rowwise), MXFP8 (``MXFP8BlockScaling``) and NVFP4
  (``NVFP4BlockScaling``) quantize the inputs of the transformer blocks' linear layers: the
  attention projections, the MLPs and the experts, forward and backward (fprop, dgrad, wgrad). The
  attention core (softmax(QK^T)V), the embedding and the LM head, the MoE router, the Mamba scan and
  the optimizer stay in BF16 / FP32 (Megatron-Core keeps its output layer out of the FP8 autocast;
  TE's FP8 attention is off unless asked for; torchtitan's float8 converts ``nn.Linear`` inside the
  blocks only). Micikevicius et al. 2022, "FP8 formats for deep learning"; NVIDIA 2025,
  "Pretraining large language models with NVFP4"; TE and torchao documentation.
* So compute time = ``linear FLOPs / peak[format] + (head + attention FLOPs) / peak[bf16]``: a
  FLOP-weighted harmonic mix, not the low-precision peak for everything. At 8k tokens of Llama 3 70B
  the attention core is 13% of the model FLOPs (7% of what a causal kernel computes); in NVFP4 on
  GB300 (15 PF against 2.5 PF in BF16) it takes 30% of the ideal compute time, the LM head another 6%.
  A recipe may keep whole decoder layers in BF16 (``bf16_layers``: Megatron's
  ``num_layers_at_start_in_bf16`` / ``num_layers_at_end_in_bf16``; torchtitan's
  ``llama3_8b_nvfp4_mixed``, the last 15% of the layers, after "Pretraining LLMs with NVFP4"): that
  share of the blocks' linear FLOPs runs at the BF16 peak. A recipe may quantize the forward GEMM
  only (``low_precision_backward`` false: perfzoo's llm workload, ``harness.workloads.llm``): the data-
  and weight-gradient GEMMs, 4 of every 6 linear FLOPs (4 of 8 with full recompute), run at the BF16
  peak too (:meth:`perfzoo.analytic.llm.LLMCost.linear_bf16_share`).
* The peak of a format is the accelerator table's (:mod:`perfzoo.hardware.accelerators`): FP8 and MXFP8 run
  at the FP8 peak, NVFP4 and MXFP4 at the FP4 peak. A device without the format (MXFP8 or NVFP4 on
  H100, FP8 on A100) has no peak for it: the estimate is NaN, never a fallback (the
  front door refuses the config). Quantization casts are memory-bound kernels outside this roofline.

>>> parts = {"linear": np.array([6e9]), "head": np.array([1e9]), "attention": np.array([1e9])}
>>> float(compute_seconds(parts, peak=np.array(2e12), peak_bf16=np.array(1e12))[0])  # 6/2 + 2/1 ms
0.005
>>> round(float(compute_seconds(parts, np.array(2e12), np.array(1e12), bf16_share=np.array(0.5))[0]), 6)  # 3/2+3/1+2/1 ms
0.0065
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfzoo.analytic._frame import coded, is_code
from perfzoo.records.vocabulary import FORMATS, PRECISIONS, normalize_precision, precision_format


def precision_codes(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(precision class codes into :data:`PRECISIONS`, format codes into :data:`FORMATS`)."""
    return coded(df, "precision", normalize_precision, PRECISIONS), coded(df, "precision", precision_format, FORMATS)


def format_width(precision: np.ndarray, formats: np.ndarray) -> np.ndarray:
    """Bytes per element of a linear layer's quantized GEMM inputs (what its kernels read and its
    backward keeps): 4 fp32, 2 16-bit, 1 FP8 and MXFP8, 1/2 NVFP4 and MXFP4 (block scales aside).

    >>> p, f = precision_codes(pd.DataFrame({"precision": ["bf16", "FP8-MX", "nvfp4"]}))
    >>> format_width(p, f).tolist()
    [2.0, 1.0, 0.5]
    """
    fp4 = is_code(formats, FORMATS, "nvfp4", "mxfp4")
    fp8 = is_code(formats, FORMATS, "fp8", "mxfp8")
    return np.select([is_code(precision, PRECISIONS, "fp32"), fp4, fp8], [4.0, 0.5, 1.0], 2.0)


def compute_seconds(flops: dict[str, np.ndarray], peak: np.ndarray, peak_bf16: np.ndarray,
                    bf16_share: np.ndarray = np.array(0.0)) -> np.ndarray:
    """Seconds for FLOPs split by part (``linear``, ``head``, ``attention``): the blocks' linear
    layers at the row's precision peak but for ``bf16_share`` of them (the layers kept in BF16), the
    rest at the 16-bit peak."""
    linear = flops["linear"] * ((1.0 - bf16_share) / peak + bf16_share / peak_bf16)
    return linear + (flops["head"] + flops["attention"]) / peak_bf16
