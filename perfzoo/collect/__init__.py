"""Collect measurements: run profiling jobs and append one job record each to a store.

``python -m perfzoo.collect`` (:mod:`.cli`) runs a sweep; its Python API is named here too:
``run(CollectConfig(...))``. One module per concept:

==============  ===================================================================================
:mod:`.cli`     the command: its flags, ``main(argv)`` and ``run(config)``
:mod:`.sweep`   one collect run as a library: ``CollectConfig``, configs checked against the space,
                the jobs already in the store skipped, the rest launched (in-process, torchrun,
                Slurm, your command), every record appended as its job ends
:mod:`.tally`   the run's summary: counts per status, why jobs failed, the throughput range, the
                spread over repeats, and how configs measured again compare with their records
==============  ===================================================================================
"""

from perfzoo.collect.cli import (JOB_DEFAULTS, CollectConfig, JobDefaults, build_parser, config_from_argv,
                                 default_space, main, options_from_argv, run)

__all__ = ["JOB_DEFAULTS", "CollectConfig", "JobDefaults", "build_parser", "config_from_argv", "default_space",
           "main", "options_from_argv", "run"]
