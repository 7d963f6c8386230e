"""``command``: a user's own job, a launch command from a ``.toml`` space file (no Python).

Its spaces are the user's files (:mod:`perfzoo.spaces.file`), its harness
:mod:`harness.command` (the command from a template, its metrics from
``$PERFZOO_METRICS_FILE``, torchtitan's log lines or a regex); it has no cost model, so its
rows get no analytic estimates, and no baselines.
"""

from __future__ import annotations

from harness.command import THROUGHPUT_UNIT
from perfzoo.workloads._base import WorkloadSpec

SPEC = WorkloadSpec(name="command", harness="harness.command", throughput_unit=THROUGHPUT_UNIT)

__all__ = ["SPEC"]
