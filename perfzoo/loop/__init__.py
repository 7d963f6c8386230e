"""The closed CubicML loop on real jobs: random jobs -> fit -> search -> launch the top k -> refit.

========================  ===========================================================================
:mod:`~.closed`           :class:`ClosedLoop`: the phases, their plans and the resumable state
:mod:`~.launch`           how jobs are launched (:class:`CollectLauncher`: the harness, through collect)
:mod:`~.race`             each arm's champion by the median of its re-measured best candidates
:mod:`~.report`           :class:`Phase`, :class:`LoopSummary` (the champion, its speedups) and the
                          frontier figure (:func:`frontier_figure`)
========================  ===========================================================================

The baselines the loop is compared with are the workload's own (its spec's ``baselines``,
:mod:`perfzoo.workloads`; the FSDP default and the expert heuristic of ``fsdp`` are in
:mod:`perfzoo.workloads.fsdp_ads.baselines`) and, for any space, the user's own configs
(``ClosedLoop(..., baseline=configs)``, tune's ``--baseline FILE``). The command line is ``python -m perfzoo.tune``
(:mod:`perfzoo.tune`).
"""

from perfzoo.loop.closed import ClosedLoop, training_frame
from perfzoo.loop.launch import CollectLauncher, LaunchInterrupted, Launcher
from perfzoo.loop.race import config_id
from perfzoo.loop.report import LoopSummary, Phase, frontier_figure

__all__ = ["ClosedLoop", "CollectLauncher", "LaunchInterrupted", "Launcher", "LoopSummary", "Phase", "config_id",
           "frontier_figure", "training_frame"]
