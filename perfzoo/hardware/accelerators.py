"""The accelerator table: peak FLOP/s per precision, the low-precision formats the matrix units
run, memory, and the links (scale-up domain and network) of the devices public training tables
use, read from ``perfzoo/hardware/accelerators.csv`` (one row per device, each with its public source).

Names are normalised: ``H100-SXM-80GB``, ``DGX-H100`` and ``NVIDIA H100 80GB HBM3`` are one
accelerator (each row's ``match`` pattern is tried, most specific first, on the upper-cased text
without spaces, dashes and underscores). An accelerator no row matches gives ``None`` and a
warning that names it, once per name: never a silent constant.

>>> spec("NVIDIA H100 80GB HBM3").name, spec("DGX-H100").peak_flops["bf16"]
('H100-80GB', 989000000000000.0)
>>> spec("TPU v5p").name, spec("MI300X").memory_gib
('TPU-v5p', 192.0)
>>> spec("GB200").nvlink_domain, spec("H100").peak("nvfp4"), spec("B200").peak("nvfp4")
(72, None, 9000000000000000.0)
>>> spec("MI300X").family, spec("MI300X").vendor
('AMD CDNA 3', 'AMD')
"""

from __future__ import annotations

import csv
import re
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Optional
from perfzoo.console import DataError

TABLE = Path(__file__).resolve().parent / "accelerators.csv"
PRECISIONS = ("fp4", "fp8", "bf16", "fp32")
# a precision format (perfzoo.records.vocabulary.FORMATS) -> the peak class it runs at
FORMAT_CLASS = {"fp32": "fp32", "bf16": "bf16", "fp16": "bf16", "fp8": "fp8", "mxfp8": "fp8", "nvfp4": "fp4",
                "mxfp4": "fp4"}


class UnknownAcceleratorWarning(UserWarning):
    """An accelerator name that no row of the accelerator table matches."""


@dataclass(frozen=True)
class AcceleratorSpec:
    """Datasheet figures of one device (dense, no sparsity).

    ``peak_flops`` maps a precision class (``fp32``, ``bf16``, ``fp8``, ``fp4``) to FLOP/s;
    ``formats`` are the low-precision formats the matrix units run (``fp8``, ``mxfp8``,
    ``nvfp4``, ``mxfp4``). Bandwidths are bytes/s in one direction per device: ``intra_bw``
    within the scale-up domain (NVLink, Infinity Fabric, ICI), ``inter_bw`` over the network
    (all of a device's NICs). ``node_size`` is the devices of one host, ``nvlink_domain`` the
    devices one scale-up link joins (8 on an HGX board; 72 on an NVL72 rack, across 18 hosts).
    ``hbm_bw`` is the memory bandwidth (bytes/s); ``eager_bw`` what eager PyTorch's elementwise
    kernels reach where it was measured (None: not measured, they are priced at ``hbm_bw``; an H100
    2.1 of its 3.35 TB/s, an H200 2.6 of 4.8: one kernel per op, few bytes in flight per thread, so
    a faster HBM helps them little). ``exp_rate`` the exponentials the special-function
    units compute per second (what a softmax costs beside its matmuls; None: not known).
    ``fa2_slowdown``: how many times longer an attention core takes in a FlashAttention-2 kernel
    (Ampere's ``mma.sync``; PyTorch SDPA's flash backend, the flash-attn 2 package) than the roofline
    prices it (Hopper: 2.14; A100: 1.27); ``flash_slowdown`` the same for the device's own flash
    kernel, what Transformer Engine and every other framework run (1 on Hopper, FlashAttention-3 or
    cuDNN's; on an A100 FlashAttention-2 is that kernel: 1.27). ``compute_units``: the SMs (NVIDIA)
    or compute units (AMD) a GEMM's tiles are spread over (None: no such units; no wave quantization).
    ``family``: the vendor and architecture (``NVIDIA Hopper``); ``vendor`` its first word.
    """

    name: str
    peak_flops: Mapping[str, float]
    memory_gib: float
    hbm_bw: float
    intra_bw: float
    inter_bw: float
    node_size: int = 8
    nvlink_domain: int = 8
    formats: frozenset = frozenset()
    exp_rate: Optional[float] = None
    fa2_slowdown: float = 1.0
    flash_slowdown: float = 1.0
    eager_bw: Optional[float] = None
    compute_units: Optional[int] = None
    family: str = ""
    source: str = ""

    @property
    def vendor(self) -> str:
        """The family's first word: ``NVIDIA``, ``AMD``, ``Google``, ``Intel``, ``CPU``."""
        return self.family.split()[0] if self.family else ""

    def flops(self, precision: str) -> Optional[float]:
        """Peak FLOP/s for a precision class; ``bf16`` falls back to ``fp32`` (a CPU runs bf16 on its
        fp32 units), ``fp8`` and ``fp4`` do not fall back (None: the device cannot run them)."""
        if precision in ("fp8", "fp4"):
            return self.peak_flops.get(precision)
        for p in PRECISIONS[PRECISIONS.index(precision):]:
            if p in self.peak_flops:
                return self.peak_flops[p]
        return None

    def supports(self, fmt: str) -> bool:
        """Whether the device runs a precision format (:data:`perfzoo.records.vocabulary.FORMATS`)."""
        return FORMAT_CLASS[fmt] in ("fp32", "bf16") or fmt in self.formats

    def peak(self, fmt: str) -> Optional[float]:
        """Peak FLOP/s of the matrix units in a precision format; None where the device lacks it."""
        return self.flops(FORMAT_CLASS[fmt]) if self.supports(fmt) else None


def _number(text: str, scale: float = 1.0) -> Optional[float]:
    return float(text) * scale if text.strip() else None


@lru_cache(maxsize=1)
def table() -> tuple[tuple[re.Pattern, AcceleratorSpec], ...]:
    """Every row of the accelerator table, in match order."""
    lines = [line for line in TABLE.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    rows = []
    for row in csv.DictReader(lines):
        if None in row:  # a source text with an unquoted comma: its tail would be lost
            raise DataError(f"{TABLE.name}: row {row['name']!r} has {len(row) - 1 + len(row[None])} fields, "
                             f"the header {len(row) - 1}; quote its source text")
        peaks = {p: _number(row[f"{p}_tflops"], 1e12) for p in PRECISIONS}
        rows.append((re.compile(row["match"]), AcceleratorSpec(
            name=row["name"], peak_flops={p: v for p, v in peaks.items() if v is not None},
            memory_gib=_number(row["memory_gib"]) or float("nan"), hbm_bw=_number(row["hbm_tb_s"], 1e12),
            intra_bw=_number(row["intra_gb_s"], 1e9), inter_bw=_number(row["inter_gb_s"], 1e9),
            node_size=int(row["devices_per_node"]), nvlink_domain=int(row["nvlink_domain"]),
            formats=frozenset(f for f in row["formats"].split("|") if f), exp_rate=_number(row["exp_tera_s"], 1e12),
            fa2_slowdown=_number(row["fa2_slowdown"]) or 1.0,
            flash_slowdown=_number(row["flash_slowdown"]) or 1.0, eager_bw=_number(row["eager_tb_s"], 1e12),
            compute_units=int(row["compute_units"]) if row["compute_units"].strip() else None, family=row["family"],
            source=row["source"])))
    return tuple(rows)


def normalise(name: str) -> str:
    """The text the ``match`` patterns see: upper case, no spaces, dashes or underscores."""
    return re.sub(r"[\s\-_]", "", name.upper().replace("NVIDIA", ""))


_warned: set[str] = set()


def spec(name: Any) -> Optional[AcceleratorSpec]:
    """The table row for an accelerator text; ``None`` (with a warning, once per name) when unknown."""
    if name is None or (isinstance(name, float) and name != name) or not str(name).strip():
        return None
    key = normalise(str(name))
    for pattern, found in table():
        if pattern.search(key):
            return found
    if key not in _warned:
        _warned.add(key)
        warnings.warn(f"unknown accelerator {str(name)!r}: no row of {TABLE.name} matches it, so its "
                      "peak FLOP/s and bandwidths are unknown (analytic estimates are NaN); add a row",
                      UnknownAcceleratorWarning, stacklevel=2)
    return None


def names() -> list[str]:
    """The canonical names of the table's accelerators."""
    return [s.name for _, s in table()]
