"""``python -m perfzoo.collect``: run profiling jobs and append one job record each to a store.

Examples
--------
Random configs from a built-in space, 2 ranks each, into a store directory::

    python -m perfzoo.collect --workload fsdp --space fsdp-ads --n 100 --seed 0 --out runs/fsdp

Explicit configs (one JSON object per line, or ``{"config": {...}}`` lines from the searcher)::

    python -m perfzoo.collect --workload llm --configs proposals.jsonl --out runs/llm

Killed and started again with the same arguments, it skips every job already in the store
(job ids hash the config, the hardware and the repeat index) and loses nothing: each
record is fsynced as soon as its job ends.

Configs measured before (in the ``--out`` store, or in ``--compare STORE``) are compared with
their records at the end: the summary's ``vs earlier records`` line gives the throughput ratio,
and whether it is a drift or the machines differ (another CPU capability, e.g. AVX2 against
AVX-512 BF16, or a record that does not say: :mod:`perfzoo.hardware.capability`)::

    python -m perfzoo.collect --configs datasets/llm-cpu/repeat-configs.jsonl --compare datasets/llm-cpu --out runs/again

Python API
----------
:func:`perfzoo.collect.run` takes a :class:`~perfzoo.collect.config.CollectConfig` (one field per
flag, the same defaults: :mod:`perfzoo.collect.config`) and returns the exit status; running the
jobs is :mod:`perfzoo.collect.sweep`. Listing two jobs without running them::

    from perfzoo.collect import CollectConfig, run
    run(CollectConfig(out="runs/llm", space="llm-small", n=2, dry_run=True))
"""

from __future__ import annotations

import shlex
import sys
from typing import Optional, Sequence

from perfzoo.collect.config import build_parser, config_from_argv
from perfzoo.collect.sweep import run
from perfzoo.console import guarded


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit status (0 done, 1 interrupted, 2 usage or input error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return guarded("perfzoo.collect", lambda: run(config_from_argv(argv),
                                                  "python -m perfzoo.collect " + shlex.join(argv)))


__all__ = ["build_parser", "main"]  # build_parser: the flags --help and the docs read from each command
