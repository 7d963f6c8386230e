"""Per-row device figures for the cost models, from the accelerator table
(:mod:`perfzoo.accelerators`, ``perfzoo/data/accelerators.csv``), looked up once per distinct
accelerator name; the job's own figures (``accelerator_memory_gib``, devices per node) win.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfzoo.accelerators import AcceleratorSpec
from perfzoo.accelerators import spec as accelerator_spec
from perfzoo.accelerators import table as accelerator_table
from perfzoo.analytic._frame import column, num
from perfzoo.vocabulary import PRECISIONS

HARDWARE: dict[str, AcceleratorSpec] = {s.name: s for _, s in accelerator_table()}


@dataclass
class DeviceFigures:
    """Per-row figures (arrays, or 0-d arrays when one device serves every row)."""

    peak: np.ndarray  # FLOP/s at the row's precision class
    memory_gib: np.ndarray
    intra_bw: np.ndarray  # bytes/s per device inside a node
    inter_bw: np.ndarray  # bytes/s per device between nodes
    node_size: np.ndarray  # devices per node
    known: np.ndarray  # whether the accelerator is in the table


def device_figures(df: pd.DataFrame, precision: np.ndarray, n_devices: np.ndarray) -> DeviceFigures:
    """The figures of each row's accelerator; ``precision``: codes into :data:`PRECISIONS`."""
    col = column(df, "accelerator")
    if col is None:
        codes, uniques = np.array(-1), []
    else:
        codes, uniques = pd.factorize(col, use_na_sentinel=True)
    specs = [accelerator_spec(u) for u in uniques] + [None]  # code -1 -> None
    peak_t = np.full((len(specs), len(PRECISIONS)), np.nan)
    for i, spec in enumerate(specs):
        if spec is None:
            continue
        for j, cls in enumerate(PRECISIONS):
            peak_t[i, j] = spec.flops(cls) or np.nan

    attrs = np.array([[np.nan] * 6 if s is None else
                      [s.memory_gib, s.intra_bw, s.inter_bw, float(s.node_size), float(s.name == "cpu"), 1.0]
                      for s in specs], dtype=float)
    if len(specs) == 1:  # no known accelerator in the frame: constants, no per-row work
        mem, intra, inter, node, cpu, known = (np.array(v) for v in attrs[0])
    else:
        mem, intra, inter, node, cpu, known = attrs[codes].T
    cpu = cpu == 1.0
    known = known == 1.0
    peak = peak_t[codes, precision]
    mem_given = num(df, "accelerator_memory_gib")
    mem = np.where(np.isnan(mem_given), mem, mem_given)
    nodes = num(df, "nodes")
    count = num(df, "accelerator_count")
    with np.errstate(divide="ignore", invalid="ignore"):
        per_node = count / nodes
    # CPU ranks: a "node" is one machine (all ranks unless the record says otherwise);
    # GPUs: the table's node size unless the job says it ran on several smaller nodes
    devices = np.where(np.isnan(n_devices), 1.0, n_devices)
    node = np.where(cpu, np.where(np.isnan(per_node), devices, per_node), node)
    multi = ~cpu & ~np.isnan(per_node) & (nodes > 1)
    node = np.where(multi, np.minimum(node, per_node), node)
    return DeviceFigures(peak, mem, intra, inter, node, known)


def link_bandwidth(figures: DeviceFigures, span: np.ndarray) -> np.ndarray:
    """Bandwidth per device of a group whose members lie within ``span`` consecutive ranks:
    the intra-node link when the span fits in one node, else the network."""
    return np.where(span <= figures.node_size, figures.intra_bw, figures.inter_bw)
