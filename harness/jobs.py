"""Jobs and their outcomes: what a launcher is given, what it hands back, and the record.

The launcher and the ranks talk through files, never through logs: the launcher writes
``job.json`` (a :class:`JobSpec`) into a fresh job directory; every rank writes
``results/rank<r>.json`` (see :func:`harness.worker.run_job`) when it finishes, fails or
runs out of memory. :func:`merge` turns the rank reports plus what the launcher saw (exit
code, timeout, log tail) into a :class:`JobOutcome`; :func:`to_record` makes the
:class:`perfzoo.records.JobRecord`.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

from harness import memory as _memory
from harness.environment import peak_bf16_flops
from harness.protocol import QUIET_CORES, default_quiet_wait
from harness.timing import max_over_ranks, summarize_steps, summarize_throughputs

MESSAGE_TAIL = 4000  # characters of error text kept in a record


@dataclass
class JobSpec:
    """One job to run: a complete config of a workload, on ``nproc`` ranks of ``device``."""

    workload: str
    config: dict
    job_id: str
    module: str = ""  # the module whose build(config, ctx) builds it (perfzoo.workloads' spec.harness)
    nproc: int = 1
    device: str = "cpu"
    steps: int = 8
    warmup: int = 2
    timeout_s: float = 120.0
    repeat: int = 0
    require_quiet: bool = False  # harness.protocol: fail instead of timing on a busy machine
    quiet_wait_s: float = field(default_factory=default_quiet_wait)  # how long to wait for quiet before timing anyway
    debug: dict = field(default_factory=dict)  # test-only: {"hang": True} / {"crash": "msg"}
    command: Optional[str] = None  # the command workload's template (harness.command), else None
    metrics: dict = field(default_factory=dict)  # the command workload's harness.command.MetricSource

    @property
    def rlimit_budget(self) -> bool:
        """True when a CPU job's ranks run under an ``RLIMIT_DATA`` budget (``memory_budget_gib`` or
        ``memory_headroom_gib``), which sets their malloc (:data:`harness.memory.RLIMIT_MALLOC_ENV`)."""
        return self.device == "cpu" and any(self.config.get(k) is not None
                                            for k in ("memory_budget_gib", "memory_headroom_gib"))

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_dict(cls, d: dict) -> "JobSpec":
        return cls(**d)


@dataclass
class JobOutcome:
    """What happened to a job, as the launcher saw it (before it becomes a record)."""

    spec: JobSpec
    status: str  # ok | oom | timeout | failed
    started_at: datetime
    ended_at: datetime
    wall_time_s: float
    ranks: list = field(default_factory=list)  # the rank reports (dicts), by rank
    failure: Optional[dict] = None
    exit_code: Optional[int] = None
    launcher: str = ""
    annotations: dict = field(default_factory=dict)
    hardware: dict = field(default_factory=dict)  # where the ranks ran, if not this machine (Slurm)


def write_json_atomic(path: Path, obj: Any) -> None:
    tmp = Path(str(path) + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(obj, allow_nan=False, default=str))
    os.replace(tmp, path)


def read_rank_reports(results_dir: Path) -> list[dict]:
    reports = []
    for p in sorted(Path(results_dir).glob("rank*.json")):
        try:
            reports.append(json.loads(p.read_text()))
        except (OSError, json.JSONDecodeError):
            continue
    return sorted(reports, key=lambda r: r.get("rank", 0))


def tail(text: str, n: int = MESSAGE_TAIL) -> str:
    """The last ``n`` characters of ``text``."""
    return text[-n:]


def merge(spec: JobSpec, reports: list[dict], *, exit_code: Optional[int], timed_out: bool,
          log_tail: str, started_at: datetime, ended_at: datetime, wall_time_s: float,
          launcher: str) -> JobOutcome:
    """Decide a job's status from the rank reports and what the launcher saw.

    Order of precedence: a rank that ran out of memory (``oom``) -> the wall-clock timeout
    (``timeout``) -> every rank reported ``ok`` (``ok``) -> a rank's own failure report ->
    a death without a report (``oom`` if the log says so under a memory budget, else ``failed``).
    """
    out = JobOutcome(spec=spec, status="failed", started_at=started_at, ended_at=ended_at,
                     wall_time_s=wall_time_s, ranks=reports, exit_code=exit_code, launcher=launcher)
    ooms = [r for r in reports if r.get("status") == "oom"]
    fails = [r for r in reports if r.get("status") == "failed"]
    last_memory = {}
    if reports:
        last_memory = reports[0].get("memory") or {}
    if ooms:
        r = ooms[0]
        out.status = "oom"
        out.failure = {"kind": "oom", "rank": r.get("rank"), "exit_code": exit_code,
                       "message": tail(r.get("error", {}).get("message", "")), "memory": r.get("memory", {})}
    elif timed_out:
        out.status = "timeout"
        out.failure = {"kind": "timeout", "rank": None, "exit_code": exit_code,
                       "message": f"killed after the wall-clock limit of {spec.timeout_s:g} s; log tail:\n"
                                  + tail(log_tail, MESSAGE_TAIL - 100),
                       "memory": last_memory}
    elif reports and len(reports) == spec.nproc and all(r.get("status") == "ok" for r in reports):
        out.status = "ok"
        if exit_code not in (0, None):
            out.annotations["teardown_exit_code"] = exit_code
    elif fails:
        r = fails[0]
        err = r.get("error", {})
        out.failure = {"kind": err.get("kind", "crash"), "rank": r.get("rank"), "exit_code": exit_code,
                       "message": tail(err.get("message", "")), "memory": r.get("memory", {})}
    else:
        budget = spec.config.get("memory_budget_gib")
        killed_by = -exit_code if exit_code is not None and exit_code < 0 else None
        if budget is not None and (_memory.text_mentions_oom(log_tail) or killed_by == 9):
            out.status = "oom"
            kind = "oom"
        else:
            kind = "crash"
        out.failure = {"kind": kind, "rank": None, "exit_code": exit_code,
                       "message": tail(log_tail or f"exited with code {exit_code} and no rank report"),
                       "memory": {"limit_gib": budget}}
    return out


def metrics_of(outcome: JobOutcome, throughput_unit: str, accelerator: Optional[str]) -> dict:
    """The metrics of a job record, computed in one place from the rank reports."""
    reports = outcome.ranks
    m: dict[str, Any] = {"wall_time_s": round(outcome.wall_time_s, 4)}
    peaks = [r.get("peak_memory_gib") for r in reports if r.get("peak_memory_gib") is not None]
    if peaks:
        m["peak_memory_gib"] = max(peaks)
    if outcome.status != "ok":
        return m
    n = outcome.spec.nproc
    if "throughputs" in reports[0]:  # a command job that reported throughput, not step times
        m.update(summarize_throughputs(reports[0]["throughputs"], n_devices=n))
    else:
        per_rank = [r["step_times"] for r in reports]
        items = sum(float(r["items_per_step"]) for r in reports)
        m.update(summarize_steps(per_rank, items_per_step=items, n_devices=n))
    m["throughput_unit"] = reports[0].get("throughput_unit") or throughput_unit
    m.update(reports[0].get("reported") or {})  # figures a command job computed itself (mfu, TFLOP/s)
    flops_rank = reports[0].get("flops_per_step")
    if flops_rank and m.get("throughput_per_device"):
        items_rank = float(reports[0]["items_per_step"])
        achieved = flops_rank / items_rank * m["throughput_per_device"]  # FLOP/s per device
        m["tflops_per_device"] = achieved / 1e12
        # the rank's full device name tells e.g. H100 SXM from PCIe; the short name is the fallback
        peak = reports[0].get("peak_flops") or (
            peak_bf16_flops(accelerator) if accelerator and accelerator != "cpu" else None)
        if peak:
            m["mfu"] = achieved / peak
    return m


def to_record(outcome: JobOutcome, *, hardware: dict, software: dict, provenance: str,
              sweep_id: Optional[str], throughput_unit: str, space: Optional[str] = None):
    """The :class:`perfzoo.records.JobRecord` of an outcome (``space``: the search space's name)."""
    from perfzoo.records import JobRecord  # the ranks import this module; only the parent builds records (pydantic)

    metrics = metrics_of(outcome, throughput_unit, hardware.get("accelerator"))
    ann: dict[str, Any] = {"space": space, "launcher": outcome.launcher, "repeat": outcome.spec.repeat,
                           "steps": outcome.spec.steps, "warmup": outcome.spec.warmup,
                           "timeout_s": outcome.spec.timeout_s}
    ann.update(outcome.annotations)
    if outcome.ranks:
        r0 = outcome.ranks[0]
        for k, v in (r0.get("timings") or {}).items():
            ann[f"rank0_{k}"] = round(v, 4) if isinstance(v, float) else v
        for k, v in (r0.get("info") or {}).items():
            if isinstance(v, (bool, int, float, str)) or v is None:
                ann[k] = v
        if r0.get("loadavg_1m") is not None:
            ann["loadavg_1m"] = round(float(r0["loadavg_1m"]), 2)
        for k in ("external_load_cores", "quiet_wait_s"):
            if r0.get(k) is not None:
                ann[k] = r0[k]
        ann.update({k: v for k, v in (r0.get("protocol") or {}).items() if v is not None})
        growth = [r["memory"]["peak_rss_gib"] - r["footprint_rss_gib"] for r in outcome.ranks
                  if r.get("footprint_rss_gib") is not None and (r.get("memory") or {}).get("peak_rss_gib") is not None]
        if growth and outcome.spec.device == "cpu":
            ann["memory_growth_gib"] = round(max(growth), 4)  # peak RSS over the footprint, max over ranks
        for k in ("footprint_gib", "headroom_gib"):
            if (r0.get("budget") or {}).get(k) is not None:
                ann[f"memory_{k}"] = max(r.get("budget", {}).get(k) or 0 for r in outcome.ranks)
        tensor_peaks = [r["tensor_peak_mib"] for r in outcome.ranks if r.get("tensor_peak_mib") is not None]
        if tensor_peaks:
            ann["tensor_peak_mib"] = max(tensor_peaks)  # live tensors over build and warm-up (harness.live_tensors)
        if outcome.status == "ok" and all(r.get("step_times") for r in outcome.ranks):
            # every measured step's time (max over ranks), space-separated (annotations hold
            # scalars), so any statistic can be recomputed later
            ann["step_times_s"] = " ".join(f"{t:.6f}" for t in max_over_ranks([r["step_times"] for r in outcome.ranks]))
            ann["items_per_step"] = sum(float(r["items_per_step"]) for r in outcome.ranks)
        data_peaks = [r["peak_data_gib"] for r in outcome.ranks if r.get("peak_data_gib") is not None]
        if data_peaks:
            ann["peak_data_gib"] = max(data_peaks)  # VmData sampled between steps, max over ranks
        if r0.get("budget", {}).get("mechanism"):
            ann["memory_budget_mechanism"] = r0["budget"]["mechanism"]
    if (ann.get("external_load_cores") or 0) > QUIET_CORES:
        metrics["noisy"] = True  # measured on a busy machine (harness.protocol)
    if outcome.status == "ok" and metrics.get("step_time_n") and metrics.get("step_time_mean_s"):
        measured = metrics["step_time_mean_s"] * metrics["step_time_n"]
        ann["overhead_s"] = round(outcome.wall_time_s - measured, 4)
    failure = None
    if outcome.failure:
        f = dict(outcome.failure)
        f["memory"] = {k: v for k, v in (f.get("memory") or {}).items()
                       if v is None or isinstance(v, (int, float)) and not isinstance(v, bool)}
        failure = f
    if outcome.ranks and outcome.ranks[0].get("env") is not None:
        software = dict(software, env=outcome.ranks[0]["env"])  # what the rank itself ran with
    return JobRecord(job_id=outcome.spec.job_id, sweep_id=sweep_id, source="measured",
                     provenance=provenance, started_at=outcome.started_at, ended_at=outcome.ended_at,
                     status=outcome.status, failure=failure, workload=outcome.spec.workload,
                     config=outcome.spec.config, hardware=hardware, software=software,
                     metrics=metrics, annotations=ann)
