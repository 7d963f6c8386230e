"""Collect measurements: run profiling jobs and append one job record each to a store.

The library, named here: ``run(CollectConfig(...))`` runs a sweep from Python (the closed loop's
launcher calls it too), and :func:`options_from_argv` reads collect's flags for another command
(``python -m perfzoo.tune --collect-arg``). The command, ``python -m perfzoo.collect``, is
:mod:`.cli` (importing this package does not import it). One module per concept:

==============  ===================================================================================
:mod:`.config`  what one run is: ``CollectConfig``, the protocol's job defaults, the default space,
                the flags that set it
:mod:`.jobs`    the configs checked against the space (or your command's template), a job's
                identity, the sweep id
:mod:`.sweep`   one collect run as a library, phase by phase: request checked, store opened, jobs
                planned (those already in the store skipped), launched (in-process, torchrun,
                Slurm, your command), every record appended as its job ends, the summary
:mod:`.tally`   the run's summary: counts per status, why jobs failed, the throughput range, the
                spread over repeats, and how configs measured again compare with their records
:mod:`.cli`     the command: ``main(argv)``
==============  ===================================================================================
"""

from perfzoo.collect.config import (JOB_DEFAULTS, CollectConfig, JobDefaults, build_parser, config_from_argv,
                                    default_space, options_from_argv)
from perfzoo.collect.sweep import run

__all__ = ["JOB_DEFAULTS", "CollectConfig", "JobDefaults", "build_parser", "config_from_argv", "default_space",
           "options_from_argv", "run"]
