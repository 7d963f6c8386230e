"""The closed CubicML loop on real jobs: random jobs -> fit -> search -> launch the top k -> refit.

========================  ===========================================================================
:mod:`~.closed`           :class:`ClosedLoop`: the phases, their plans and the resumable state
:mod:`~.launch`           how jobs are launched (:class:`CollectLauncher`: the harness, through collect)
:mod:`~.baselines`        the FSDP default and the expert heuristic (:func:`hand_tuned_ladder`,
                          :func:`expert_ladder`)
:mod:`~.race`             each arm's champion by the median of its re-measured best candidates
:mod:`~.report`           :class:`LoopSummary` and the frontier figure (:func:`frontier_figure`)
========================  ===========================================================================

The command line is ``python -m perfzoo.tune`` (:mod:`perfzoo.tune`).
"""

from perfzoo.loop.baselines import expert_ladder, hand_tuned_ladder, tower_layer_params
from perfzoo.loop.closed import ClosedLoop, Phase, training_frame
from perfzoo.loop.launch import CollectLauncher, LaunchInterrupted
from perfzoo.loop.race import config_id
from perfzoo.loop.report import LoopSummary, frontier_figure

__all__ = ["ClosedLoop", "CollectLauncher", "LaunchInterrupted", "LoopSummary", "Phase", "config_id",
           "expert_ladder", "frontier_figure", "hand_tuned_ladder", "tower_layer_params", "training_frame"]
