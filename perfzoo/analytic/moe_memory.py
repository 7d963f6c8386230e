"""The MoE dispatcher's communication buffers: memory a process holds outside PyTorch's allocator.

DeepEP's normal (high-throughput) kernels stage tokens in one ``Buffer`` per process, whatever the
number of MoE layers: an NVLink buffer (``cudaMalloc``, shared over CUDA IPC) and, where the EP group
spans more than one NVLink domain of ``NUM_MAX_NVL_PEERS`` = 8 GPUs, an RDMA buffer (NVSHMEM's
symmetric heap). Megatron-Core's flex dispatcher (``fused_a2a.get_buffer``) sizes it as the larger of
``Buffer.get_dispatch_config(n)`` and ``get_combine_config(n)``'s ``get_nvl_buffer_size_hint`` and
``get_rdma_buffer_size_hint`` for its group of ``n = ep x etp`` ranks and ``hidden_bytes = d x
max(element, 2)`` (DeepEP ``csrc/legacy/config.hpp`` and ``deep_ep/buffers/legacy.py``, commit
dd758ca). With ``c`` = ``num_sms / 2`` channels (``moe_deepep_num_sms`` 20), ``R = max(n/8, 1)`` RDMA
ranks and ``N = min(n, 8)`` NVLink ranks, per token slot the hidden bytes, an 8 B source meta, 128
top-k indices (8 B) and weights (4 B) and 128 fp32 scales, ``h + 2056``:

* NVLink: ``c*N*(2R + 3)*4 + c*N*nvl_recv*(h + 2056)``, rounded up to 128 B;
* RDMA (``n > 8`` only): ``c*R*18*2*4 + c*R*rdma_recv*2*(h + 2056 + 16)`` (send and receive halves, a
  16 B ``int4`` per token more), ``rdma_recv`` aligned up to a multiple of ``rdma_send``, rounded up to 128 B.

DeepEP serves no other group size (its configs assert): such a row is priced NaN, which no memory
rule fits. perfzoo's ``deepep`` dispatcher runs these kernels; ``flex`` (Megatron-Core's flex
dispatcher) runs them where the NVLink domain is DeepEP's 8 GPUs (Megatron-Bridge's H100 presets) and
HybridEP on rack-scale domains (GB200 / GB300), whose buffers (sized by the tokens per rank) are not
priced here. The NCCL dispatchers (``alltoall``, ``allgather``) stage their tokens in PyTorch tensors:
the routed copies are activations (:meth:`~perfzoo.analytic.memory.Memory.layer_bytes`).

DeepSeek-V3 (``d`` 7168, BF16) over an EP group of 64 (8 nodes of 8 H100s): 10 channels, ``R = N = 8``,
``nvl_recv`` 288 (both configs), ``rdma_recv`` 128 (both: ``rdma_send`` 8 divides it):

>>> nvl, rdma = deepep_buffer_bytes(7168 * 2, 64)
>>> int(nvl), int(rdma)  # 10*8*19*4 + 10*8*288*16392 = 377,677,760 -> 377,677,824; 10*8*36*4 + 10*8*128*32816
(377677824, 336047360)
>>> [float(x) for x in deepep_buffer_bytes(7168 * 2, 12)]  # no DeepEP config for 12 ranks
[nan, nan]
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

NVL_PEERS = 8  # DeepEP's NUM_MAX_NVL_PEERS: the GPUs one NVLink buffer serves
DEEPEP_SMS = 20  # Megatron-Core's moe_deepep_num_sms (DeepEP's Buffer.num_sms): 10 channels
SLOT_BYTES = 8 + 128 * 8 + 128 * 4 + 128 * 4  # source meta, top-k indices and weights, scales per token
# (nvl_recv, rdma_send, rdma_recv) chunked tokens of get_dispatch_config / get_combine_config per group size
DISPATCH = {2: (256, 6, 128), 4: (256, 6, 128), 8: (256, 6, 128), 16: (288, 20, 128), 24: (288, 8, 128),
            32: (288, 8, 128), 48: (288, 8, 128), 64: (288, 8, 128), 96: (480, 12, 128), 128: (560, 12, 128),
            144: (720, 12, 128), 160: (720, 12, 128)}
COMBINE = {2: (256, 6, 128), 4: (256, 6, 128), 8: (256, 6, 128), 16: (288, 12, 128), 24: (288, 8, 128),
           32: (288, 8, 128), 48: (288, 8, 128), 64: (288, 8, 128), 96: (480, 8, 128), 128: (560, 8, 128),
           144: (720, 8, 128), 160: (720, 8, 128)}


def _round128(n: int) -> int:
    return (n + 127) // 128 * 128


def _config_bytes(hidden_bytes: int, ranks: int, nvl_recv: int, rdma_send: int, rdma_recv: int) -> tuple[int, int]:
    """One config's ``get_nvl_buffer_size_hint`` and ``get_rdma_buffer_size_hint`` (module docstring)."""
    c, R, N = DEEPEP_SMS // 2, max(ranks // NVL_PEERS, 1), min(ranks, NVL_PEERS)
    nvl = _round128(c * N * (2 * R + 3) * 4 + c * N * nvl_recv * (hidden_bytes + SLOT_BYTES))
    if ranks <= NVL_PEERS:
        return nvl, 0
    recv = -(-rdma_recv // rdma_send) * rdma_send
    rdma = c * R * (NVL_PEERS * 2 + 2) * 2 * 4 + c * R * recv * 2 * (hidden_bytes + SLOT_BYTES + 16)
    return nvl, _round128(rdma)


@lru_cache(maxsize=None)
def _buffer(hidden_bytes: int, ranks: int) -> tuple[float, float]:
    if ranks not in DISPATCH:
        return np.nan, np.nan
    sizes = [_config_bytes(hidden_bytes, ranks, *cfg[ranks]) for cfg in (DISPATCH, COMBINE)]
    return float(max(s[0] for s in sizes)), float(max(s[1] for s in sizes))


def deepep_buffer_bytes(hidden_bytes, ranks) -> tuple[np.ndarray, np.ndarray]:
    """(NVLink, RDMA) bytes of the DeepEP buffer a process of an EP group of ``ranks`` allocates for
    tokens of ``hidden_bytes`` (NaN where DeepEP has no config for the group)."""
    h, n = np.broadcast_arrays(np.asarray(hidden_bytes, dtype=float), np.asarray(ranks, dtype=float))
    # one lookup per distinct (hidden bytes, ranks): a plan prices many layouts of few shapes
    keys, where = np.unique(np.stack([h.ravel(), n.ravel()], axis=1), axis=0, return_inverse=True)
    sizes = np.array([_buffer(int(a), int(b)) if np.isfinite(a) and np.isfinite(b) and b == int(b) else (np.nan, np.nan)
                      for a, b in keys], dtype=float).reshape(-1, 2)
    return sizes[where.ravel(), 0].reshape(h.shape), sizes[where.ravel(), 1].reshape(h.shape)


def dispatcher_buffer_bytes(cost) -> np.ndarray:
    """Bytes per GPU of each row's dispatcher buffers outside PyTorch's allocator: DeepEP's NVLink and
    RDMA buffers where its kernels run (module docstring), 0 for the NCCL dispatchers and dense rows."""
    kind, hw = cost.dispatch.kind, cost.hw
    ranks = cost.ep * cost.etp
    deepep = (kind == "deepep") | ((kind == "flex") & (hw.domain <= NVL_PEERS))
    on = deepep & cost.shape.moe.is_moe & (ranks > 1)
    if not np.any(on):
        return np.zeros(np.shape(on))
    nvl, rdma = deepep_buffer_bytes(np.where(on, cost.shape.d * cost.act_bytes, 0.0), np.where(on, ranks, 1.0))
    return np.where(on, nvl + rdma, 0.0)


__all__ = ["deepep_buffer_bytes", "dispatcher_buffer_bytes"]
