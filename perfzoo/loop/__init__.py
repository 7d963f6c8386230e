"""The closed CubicML loop on real jobs: random jobs -> fit -> search -> launch the top k -> refit.

========================  ===========================================================================
:mod:`~.closed`           :class:`ClosedLoop`: the phases, their plans and the resumable state
:mod:`~.launch`           how jobs are launched (:class:`CollectLauncher`: the harness, through collect)
:mod:`~.race`             each arm's champion by the median of its re-measured best candidates
:mod:`~.report`           :class:`LoopSummary` and the frontier figure (:func:`frontier_figure`)
========================  ===========================================================================

The baselines the loop is compared with are the workload's own (its spec's ``baselines``,
:mod:`perfzoo.workloads`; the FSDP default and the expert heuristic of ``fsdp`` are in
:mod:`perfzoo.workloads.fsdp_ads.baselines`). The command line is ``python -m perfzoo.tune``
(:mod:`perfzoo.tune`).
"""

from perfzoo.loop.closed import ClosedLoop, Phase, training_frame
from perfzoo.loop.launch import CollectLauncher, LaunchInterrupted
from perfzoo.loop.race import config_id
from perfzoo.loop.report import LoopSummary, frontier_figure

__all__ = ["ClosedLoop", "CollectLauncher", "LaunchInterrupted", "LoopSummary", "Phase", "config_id",
           "frontier_figure", "training_frame"]
