"""Per-row device figures for the cost models, from the accelerator table
(:mod:`perfzoo.hardware.accelerators`, ``perfzoo/hardware/accelerators.csv``), looked up once per distinct
accelerator name; the job's own figures (``accelerator_memory_gib``, devices per node) win.

Where a group of ranks communicates: inside the scale-up domain (``domain``: the devices one
NVLink / Infinity Fabric / ICI link joins) at the intra-domain bandwidth, else over the network at
the bandwidth of the devices' NICs (``inter_bw``: rails per device x line rate). On an HGX board
the domain is the host's 8 GPUs (fewer when a job says it ran on smaller nodes); on an NVL72 rack
(GB200, GB300) it is 72 GPUs across 18 hosts of 4, whatever the job's host count.

A group of ``size`` ranks ``stride`` apart (Megatron's rank order) that spans several domains has
``c = domain / stride`` members in each (at least 1). Its ring collectives run hierarchically over
every rail (NCCL's multi-ring / tree algorithms): each domain's ``c`` members share the crossing
traffic over their ``c`` NICs, so the group's bandwidth per device is ``min(intra, c * inter)``
(:func:`group_bandwidth`; with one member per domain, the device's own NICs). An all-to-all sends
``(c-1)/(size-1)`` of its bytes inside the domain and the rest over the device's NICs, in parallel
(:func:`alltoall_seconds`; NCCL's PXN keeps cross-rail traffic on NVLink; an MoE dispatch sends a
token over the network once per destination domain).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional

import numpy as np
import pandas as pd

from perfzoo.analytic._frame import column, num
from perfzoo.hardware.accelerators import AcceleratorSpec
from perfzoo.hardware.accelerators import spec as accelerator_spec
from perfzoo.hardware.accelerators import table as accelerator_table
from perfzoo.records.vocabulary import FORMATS, PRECISIONS

HARDWARE: dict[str, AcceleratorSpec] = {s.name: s for _, s in accelerator_table()}
# The memory torch can use, as a fraction of the datasheet capacity: an H100 80GB shows 79.18 GiB
# (torch.cuda.get_device_properties(0).total_memory on the llm-h100 machine; the rest is held by
# the driver). Applied where a row states no measured capacity of its own.
VISIBLE_MEMORY = 79.18 / 80.0


@dataclass
class DeviceFigures:
    """Per-row figures (arrays, or 0-d arrays when one device serves every row)."""

    peak: np.ndarray  # FLOP/s at the row's precision (NaN where the device lacks its format)
    peak_bf16: np.ndarray  # FLOP/s of the 16-bit matrix units (what stays in BF16 runs there)
    memory_gib: np.ndarray  # what the job can allocate: the row's own figure, else the datasheet's visible part
    intra_bw: np.ndarray  # bytes/s per device within the scale-up domain
    inter_bw: np.ndarray  # bytes/s per device over the network
    node_size: np.ndarray  # devices per host
    domain: np.ndarray  # devices per scale-up domain (NVLink), within this job's layout
    known: np.ndarray  # whether the accelerator is in the table
    hbm_bw: np.ndarray = field(default_factory=lambda: np.array(np.nan))  # bytes/s of device memory
    exp_rate: np.ndarray = field(default_factory=lambda: np.array(np.nan))  # exponentials/s (NaN: not priced)
    vector_rate: np.ndarray = field(default_factory=lambda: np.array(np.nan))  # fp32 vector operations/s
    fa2_slowdown: np.ndarray = field(default_factory=lambda: np.array(1.0))  # a FlashAttention-2 kernel's attention time x
    flash_slowdown: np.ndarray = field(default_factory=lambda: np.array(1.0))  # the device's own flash kernel's, x
    eager_bw: np.ndarray = field(default_factory=lambda: np.array(np.nan))  # bytes/s eager PyTorch's elementwise kernels reach
    cpu: np.ndarray = field(default_factory=lambda: np.array(False))  # CPU ranks (no kernel launches to wait on)
    units: np.ndarray = field(default_factory=lambda: np.array(np.nan))  # SMs / CUs a GEMM's tiles fill (NaN: none)


def _specs(df: pd.DataFrame) -> tuple[np.ndarray, tuple]:
    """Each row's code into the distinct accelerator names of the frame, and those names (code -1: none)."""
    col = column(df, "accelerator")
    if col is None:
        return np.array(-1), ()
    codes, uniques = pd.factorize(col, use_na_sentinel=True)
    return codes, tuple(uniques)


@lru_cache(maxsize=256)
def _tables(names: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per accelerator name (and a last row for none): peak FLOP/s per precision, the formats it
    supports, and its other figures (:func:`device_figures`' columns), looked up once per set of names."""
    specs = [accelerator_spec(u) for u in names] + [None]
    peak_t = np.full((len(specs), len(PRECISIONS)), np.nan)
    supported = np.zeros((len(specs), len(FORMATS)), dtype=bool)
    for i, spec in enumerate(specs):
        if spec is None:
            continue
        for j, cls in enumerate(PRECISIONS):
            peak_t[i, j] = spec.flops(cls) or np.nan
        supported[i] = [spec.supports(f) for f in FORMATS]
    attrs = np.array([[np.nan] * 9 + [1.0, 1.0, np.nan, np.nan] if s is None else
                      [s.memory_gib * VISIBLE_MEMORY, s.intra_bw, s.inter_bw, float(s.node_size),
                       float(s.nvlink_domain), float(s.name == "cpu"), 1.0, s.hbm_bw,
                       np.nan if s.exp_rate is None else s.exp_rate, s.fa2_slowdown, s.flash_slowdown,
                       s.hbm_bw if s.eager_bw is None else s.eager_bw,
                       np.nan if s.compute_units is None else float(s.compute_units)]
                      for s in specs], dtype=float)
    for table in (peak_t, supported, attrs):
        table.flags.writeable = False  # shared by every call
    return peak_t, supported, attrs


def device_figures(df: pd.DataFrame, precision: np.ndarray, n_devices: np.ndarray,
                   formats: Optional[np.ndarray] = None) -> DeviceFigures:
    """The figures of each row's accelerator; ``precision``: codes into :data:`PRECISIONS`,
    ``formats`` (optional): codes into :data:`~perfzoo.records.vocabulary.FORMATS`, which the device must
    support for ``peak`` to be known."""
    codes, names = _specs(df)
    peak_t, supported, attrs = _tables(names)
    # no known accelerator in the frame: constants, no per-row work
    columns = (np.array(v) for v in attrs[0]) if not names else attrs[codes].T
    mem, intra, inter, node, domain, cpu, known, hbm, exp_rate, fa2, flash, eager, units = columns
    cpu = cpu == 1.0
    known = known == 1.0
    peak = peak_t[codes, precision]
    if formats is not None:
        peak = np.where(supported[codes, formats], peak, np.nan)
    peak_bf16 = peak_t[codes, np.where(precision == PRECISIONS.index("fp32"), precision, PRECISIONS.index("bf16"))]
    mem_given = num(df, "accelerator_memory_gib")
    mem = np.where(np.isnan(mem_given), mem, mem_given)
    nodes = num(df, "nodes")
    count = num(df, "accelerator_count")
    with np.errstate(divide="ignore", invalid="ignore"):
        per_node = count / nodes
    # CPU ranks: a "node" is one machine (all ranks unless the record says otherwise); GPUs: the
    # table's host size unless the job says it ran on several smaller hosts
    devices = np.where(np.isnan(n_devices), 1.0, n_devices)
    node = np.where(cpu, np.where(np.isnan(per_node), devices, per_node), node)
    multi = ~cpu & ~np.isnan(per_node) & (nodes > 1)
    node = np.where(multi, np.minimum(node, per_node), node)
    # a domain within one host shrinks with it; a rack-scale domain (NVL72) spans hosts
    spans_hosts = domain > attrs[codes, 3] if names else domain > np.array(attrs[0, 3])
    domain = np.where(cpu, node, np.where(spans_hosts, domain, np.minimum(domain, node)))
    vector = peak_t[codes, PRECISIONS.index("fp32")] / 2.0  # an FMA is 2 of the fp32 FLOPs, one operation
    return DeviceFigures(peak, peak_bf16, mem, intra, inter, node, domain, known, hbm, exp_rate, vector, fa2, flash,
                         eager, cpu, units)


def link_bandwidth(figures: DeviceFigures, span: np.ndarray) -> np.ndarray:
    """Bandwidth per device of a group whose members lie within ``span`` consecutive ranks:
    the scale-up link when the span fits in one domain, else the network."""
    return np.where(span <= figures.domain, figures.intra_bw, figures.inter_bw)


def _members_per_domain(figures: DeviceFigures, size: np.ndarray, stride: np.ndarray) -> np.ndarray:
    return np.clip(np.floor(figures.domain / np.maximum(stride, 1.0)), 1.0, np.maximum(size, 1.0))


def group_bandwidth(figures: DeviceFigures, size: np.ndarray, stride: np.ndarray) -> np.ndarray:
    """Bandwidth per device of a ring collective over ``size`` ranks ``stride`` apart (module docstring).

    >>> hw = DeviceFigures(*(np.array(v) for v in (1.0, 1.0, 80.0, 450e9, 50e9, 8.0, 8.0, True)))
    >>> float(group_bandwidth(hw, np.array(8.0), np.array(1.0))), float(group_bandwidth(hw, np.array(16.0), np.array(8.0)))
    (450000000000.0, 50000000000.0)
    >>> float(group_bandwidth(hw, np.array(16.0), np.array(2.0)))  # 4 members per node share 4 NICs
    200000000000.0
    """
    inside = size * stride <= figures.domain
    crossing = np.minimum(figures.intra_bw, _members_per_domain(figures, size, stride) * figures.inter_bw)
    return np.where(inside, figures.intra_bw, crossing)


# NCCL's own cost model of a ring (src/graph/tuning.cc, ``baseLat`` and ``hwLat``, microseconds): per protocol
# (LL, LL128, Simple) a base latency, a latency per ring step over NVLink and over the network, and the share of
# the link's bandwidth the protocol moves (LL: 1/4, its flags halve the payload and the ring pays twice; LL128:
# 120/128 of it; Simple: all). NCCL picks the fastest protocol for each call's size, and so does the model.
RING_PROTOCOLS = {"ll": (3.6e-6, 0.47e-6, 2.7e-6, 0.25), "ll128": (10.0e-6, 1.9e-6, 4.0e-6, 0.92),
                  "simple": (8.4e-6, 3.4e-6, 9.6e-6, 1.0)}
# A ring that crosses the network still launches every step through the proxy: NCCL's ``netOverhead``
# (1 us on x86, 3x for Simple) floors each of its in-domain steps' latency (tuning.cc, ``getNetOverhead``)
NET_OVERHEAD = {"ll": 1.0e-6, "ll128": 1.0e-6, "simple": 3.0e-6}


def ring_seconds(figures: DeviceFigures, sent: np.ndarray, calls: np.ndarray, size: np.ndarray,
                 stride: np.ndarray, passes: float = 2.0, bandwidth: Optional[np.ndarray] = None) -> np.ndarray:
    """Seconds for ``calls`` ring collectives over ``size`` ranks ``stride`` apart in which each device
    sends ``sent`` bytes in all (at ``bandwidth``, default :func:`group_bandwidth`'s), as NCCL's cost
    model prices them: each call ``passes*(size-1)`` steps (an all-reduce 2, an all-gather or a
    reduce-scatter 1), ``passes*(domains-1)`` of them between domains at the network's step latency,
    the others at NVLink's (floored by :data:`NET_OVERHEAD` where the ring crosses the network), at
    the protocol fastest for its size (:data:`RING_PROTOCOLS`). Small messages and long rings pay
    their latency.

    >>> hw = DeviceFigures(*(np.array(v) for v in (1.0, 1.0, 80.0, 450e9, 50e9, 8.0, 8.0, True)))
    >>> t = ring_seconds(hw, np.array([14e3 * 100, 1.75e9]), np.array(100.0), np.array(8.0), np.array(1.0))
    >>> [round(float(x) * 1e6, 1) for x in t]  # 100 calls of 14 kB: LL, 10.2 us of latency each; of 17.5 MB: LL128
    [1030.4, 7887.1]

    An all-gather sending 100 MB per device over 128 ranks (16 boards of 8): LL128, 10 + 112 x 1.9 + 15 x 4
    = 282.8 us of latency beside the 271.7 us its bytes take at 0.92 of 8 NICs x 50 GB/s (Simple: 783.2):

    >>> round(float(ring_seconds(hw, np.array(100e6), np.array(1.0), np.array(128.0), np.array(1.0), 1.0)) * 1e6, 1)
    554.5
    """
    calls = np.maximum(calls, 1.0)
    per_call = sent / calls
    c = _members_per_domain(figures, size, stride)
    steps = passes * (size - 1.0)
    crosses = size * stride > figures.domain
    between = np.where(crosses, passes * (np.maximum(size / c, 1.0) - 1.0), 0.0)
    bandwidth = group_bandwidth(figures, size, stride) if bandwidth is None else bandwidth
    best = np.full(np.broadcast(per_call, bandwidth).shape, np.inf)
    for name, (base, nvlink, network, share) in RING_PROTOCOLS.items():
        inside = np.where(crosses, max(nvlink, NET_OVERHEAD[name]), nvlink)
        latency = base + (steps - between) * inside + between * network
        best = np.minimum(best, latency + per_call / (share * bandwidth))
    return np.where(size > 1, calls * best, 0.0)


def alltoall_seconds(figures: DeviceFigures, sent: np.ndarray, size: np.ndarray, stride: np.ndarray,
                     fanout: np.ndarray = np.array(1.0)) -> np.ndarray:
    """Seconds for an all-to-all in which each device sends ``sent`` bytes to the other ``size - 1``
    ranks of its group (``stride`` apart): the in-domain and the network parts run in parallel.

    ``fanout``: copies of each item among the bytes (an MoE token routed to ``K`` experts). A
    hierarchical dispatch (DeepEP, HybridEP; NCCL's PXN) sends an item over the network once per
    destination domain and fans it out over the scale-up link there: of ``D = size/c`` domains, a
    token whose ``K`` copies land uniformly at random reaches ``D(1 - (1 - 1/D)^K)`` of them on
    average, so the network carries ``D(1 - (1 - 1/D)^K)/K`` of the copies it would carry one by one
    (0.66 for ``K = 8`` over 8 domains).

    >>> hw = DeviceFigures(*(np.array(v) for v in (1.0, 1.0, 80.0, 400e9, 50e9, 8.0, 8.0, True)))
    >>> float(alltoall_seconds(hw, np.array(63e9), np.array(64.0), np.array(1.0)))  # 56 of 63 peers remote
    1.12
    >>> round(float(alltoall_seconds(hw, np.array(63e9), np.array(64.0), np.array(1.0), np.array(8.0))), 3)
    0.735
    """
    c = _members_per_domain(figures, size, stride)
    local = np.where(size > 1, (c - 1.0) / np.maximum(size - 1.0, 1.0), 1.0)
    domains = np.maximum(size / c, 1.0)
    fanout = np.maximum(fanout, 1.0)
    dedup = domains * (1.0 - (1.0 - 1.0 / domains) ** fanout) / fanout
    return np.maximum(sent * local / figures.intra_bw, sent * (1.0 - local) * dedup / figures.inter_bw)
