"""Plan a training run: the fastest layout of a model on a cluster, before anyone pays for it.

``python -m perfzoo.plan --model llama3-70b --gpus 64 --accelerator H100-SXM-80GB --seq-len 8192
--global-batch 256 --precision fp8`` lists every valid layout (tensor, pipeline, virtual, context,
expert and data parallel degrees, micro batch and gradient accumulation, activation
checkpointing, sharding, precision), drops those the memory model says do not fit, ranks the
rest with the leaderboard's predictor and prints the top ones, with what each is expected to run at
net of the winner's curse, beside the published runs of the same job. One module per concept:

=======================  ==========================================================================
:mod:`.layouts`          the layout space of a model on a :class:`Cluster` (its constraints)
:mod:`.scoring`          :class:`Scorer`: the memory rule and the predictor; ``--calibrate`` runs
:mod:`.recipes`          the published runs of the same job (the baselines) and the slot refitted without
:mod:`.planner`          :func:`plan` -> :class:`Plan` (exhaustive or REINFORCE), baselines priced alike
:mod:`.shrinkage`        gains net of the winner's curse: expected throughput, a gain's 80% interval
:mod:`.claims`           whether a gain over a recipe is a claim (backed by a published run's structure)
:mod:`.gains`            the priced terms a pick that leaves an MoE recipe gains by
:mod:`.propose`          ``--propose K``: the layouts worth measuring next, when to stop
:mod:`.belief`           what a plan believes after each run: a GP over its layouts' log throughput
:mod:`.report`           the printed table, JSON lines, the plot, configs for ``collect``
:mod:`.export`           ``--export``: the top layouts as a framework's launch scripts; ``--baseline-from``
:mod:`.command`          ``PlanConfig`` and ``run(config)``; :mod:`.cli` the command line
:mod:`.benchmark`        the validation benchmark (``python -m perfzoo.plan benchmark``)
:mod:`.loop_benchmark`   the loop replayed on measured sweeps (``benchmark --loop K``)
=======================  ==========================================================================

>>> from perfzoo.plan import Cluster, plan                                   # doctest: +SKIP
>>> p = plan("llama3-8b", Cluster(gpus=8, accelerator="H100-SXM-80GB"), seq_len=8192,
...          global_batch=64, precisions=("bf16", "fp8"))                     # doctest: +SKIP
>>> p.top(5)                                                                  # doctest: +SKIP
"""

from perfzoo.plan.layouts import Cluster, PlanError, layout_space
from perfzoo.plan.planner import Plan, default_scorer, plan, resolve_model
from perfzoo.plan.scoring import Scorer

__all__ = ["Cluster", "Plan", "PlanError", "Scorer", "default_scorer",
           "layout_space", "plan", "resolve_model"]
