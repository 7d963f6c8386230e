"""The host's pace: the host launches every kernel of a layer pass (forward and backward of one
layer on one micro-batch), and where the GPU finishes a pass sooner, it waits. The step is at least
``layer_passes * HOST_PASS_S`` (``host_time_s``: the wait) in every framework whose host time shows:
all but those whose bundle declares ``graphs_hide_host`` (:class:`perfzoo.frameworks.Physics`:
Megatron-Core's recipes capture CUDA graphs and overlap the launches, and Megatron-LM's and NeMo's
tables show no such floor down to 1 ms per pass) for their dense layers and their token-dropping MoE
(experts padded to capacity: static shapes, no token counts copied to the host; Megatron-Bridge's
token-drop rows run at 2 ms per pass). Dropless MoE waits: its dispatcher needs each expert's token
count on the host to size the all-to-all.

:data:`HOST_PASS_S` = 5 ms is what perfzoo's H100 jobs (eager PyTorch, FSDP2) took per pass however
small the layer (against the GPU's time alone, micro batch 1 ran at 0.31 of the ideal and 16 at 0.69;
with the host priced, 0.57 and 0.69, and with the factors below and the eager kernels at their
measured bandwidth, 0.78 and 0.88: ``python scripts/efficiency_table.py --dataset llm-h100 --by
micro_batch_size``); llm-foundry's smallest MPTs take ~10 ms, Megatron-Bridge's dropless MoE at micro
batch 1 ~9 ms. In eager PyTorch (``compile`` false) the host's time per pass grows with what it runs
(:func:`pass_factor`): the recomputed forward under ``torch.utils.checkpoint`` (:data:`HOST_RECOMPUTE`,
full 1.73x, PyTorch's selective policy, a Python callback on every operator, 2.2x) and eager
low-precision casts (:data:`HOST_EAGER_CASTS`, 1.31x), the medians of the host-paced jobs of
``llm-h100`` against its BF16 jobs without checkpointing (``docs/studies/eager-step-1128``,
``host_per_pass.py``; the H200 machine's jobs, not used, give 1.45x, 2.05x and 1.27x).

>>> import pandas as pd
>>> from perfzoo.analytic.llm import LLMCost
>>> row = {"n_layers": 4, "hidden_dim": 256, "n_heads": 4, "seq_len": 128, "compile": False,
...        "activation_checkpointing": "full", "precision": "fp8", "accelerator": "H100-80GB"}
>>> round(float(pass_factor(LLMCost(pd.DataFrame([row])))[0]), 4)  # 1.73 x 1.31
2.2663
"""

from __future__ import annotations

import numpy as np

from perfzoo.analytic._frame import is_code, trait
from perfzoo.analytic.memory import EAGER
from perfzoo.records.vocabulary import CHECKPOINTING

HOST_PASS_S = 5e-3  # the host's time per layer pass, the least a pass takes where it shows (module docstring)
HOST_RECOMPUTE = {"full": 1.73, "selective": 2.2}  # eager PyTorch: a pass's host time with checkpointing, x
HOST_EAGER_CASTS = 1.31  # eager PyTorch: a pass's host time with eager low-precision casts, x


def pass_factor(cost) -> np.ndarray:
    """How many times :data:`HOST_PASS_S` the host takes per layer pass of an
    :class:`~perfzoo.analytic.llm.LLMCost`'s rows: 1, and in eager PyTorch on a GPU more with
    checkpointing and with low-precision casts (module docstring; measured there)."""
    full = is_code(cost.ac, CHECKPOINTING, "full")
    selective = is_code(cost.ac, CHECKPOINTING, "selective")
    recompute = np.where(full, HOST_RECOMPUTE["full"], np.where(selective, HOST_RECOMPUTE["selective"], 1.0))
    casts = np.where(cost.width < 2.0, HOST_EAGER_CASTS, 1.0)
    return np.where((cost.memory.profile == EAGER) & ~cost.hw.cpu, recompute * casts, 1.0)


def shows(cost) -> np.ndarray:
    """Whether the host's time per layer pass can pace the step: in any framework but for the dense
    layers and token-dropping MoE of one whose launches CUDA graphs hide (module docstring)."""
    hidden = trait(cost.framework, "graphs_hide_host")
    return ~(hidden & (~cost.shape.moe.is_moe | cost.token_drop))


def host_wait(cost, step: np.ndarray) -> np.ndarray:
    """Seconds a step of ``step`` seconds waits on the host: what its layer passes' host time exceeds it by."""
    floor = cost.call_counts()["layer_passes"] * HOST_PASS_S * pass_factor(cost)
    return np.where(shows(cost), np.maximum(0.0, floor - step), 0.0)


__all__ = ["HOST_EAGER_CASTS", "HOST_PASS_S", "HOST_RECOMPUTE", "host_wait", "pass_factor", "shows"]
