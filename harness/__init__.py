"""What runs on the accelerators: the rank-side worker, the workloads, launchers, environment capture.

A job names the module that builds its workload (``JobSpec.module``, a dotted path from the
workload's spec in :mod:`perfzoo.workloads`), so the harness keeps no table of workloads.

=================  ===============================================================================
``worker``         the torchrun entry and the batch modes: one job on one rank, its report
``workloads/``     ``fsdp_ads`` and ``llm``: ``build(config, ctx) -> Built``; ``fsdp_shapes`` and
                   ``llm_shapes``: their sizes as torch-free arithmetic; ``load(module)``
``command``        your own job: a launch command from a template, its metrics from
                   ``$PERFZOO_METRICS_FILE``, torchtitan's step lines or a regex, its outcome from
                   its exit status and output (``CommandLauncher``)
``launchers``      ``LocalTorchrunLauncher`` (one ``torchrun --standalone`` per job),
                   ``WarmTorchrunLauncher`` (ranks forked from a warm worker, CPU),
                   ``InProcessBatchLauncher`` (many world-size-1 jobs per worker)
``slurm``          ``SlurmLauncher``: job arrays through submitit, Slurm states as record statuses,
                   the ``slurm-jobs.jsonl`` ledger that makes a restarted collect wait, not resubmit
``sbatch``         ``SlurmOptions``: what a job asks Slurm for, and the flags that set it (collect's,
                   bench's), declared once
``jobs``           job specs and outcomes: rank reports -> outcome -> job record
``protocol``       the measurement protocol: threads and cores per rank, the quiet-machine guard,
                   memory limits over a rank's own footprint
``memory``         per-rank memory limits (``RLIMIT_DATA``, the CUDA memory fraction), OOM detection
``live_tensors``   a budget on the bytes of live tensors, the same on every machine
``timing``         step statistics (every measured step's time is kept in the record)
``environment``    hardware, software and library-version capture: the one provenance capture
=================  ===============================================================================
"""
