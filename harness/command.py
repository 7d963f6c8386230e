"""The command workload: any launch command, one config at a time, as a profiling job.

A space file (:mod:`perfzoo.spaces.file`) or ``python -m perfzoo.collect --command`` gives a
template such as::

    torchrun --standalone --nproc-per-node {nproc} train.py --batch {batch} --steps {total_steps}

Each ``{name}`` is a knob of the config or one of the harness's own values
(:data:`HARNESS_VALUES`; collect also replaces ``{space_dir}``, the space file's folder);
``${VAR}`` stays for the shell. The command runs in collect's working directory. The rendered command runs under
``bash -c`` with the same timeout, process-tree kill, per-process memory limit (a
``memory_budget_gib`` knob), environment capture and record schema as the built-in workloads.

How the job reports (:class:`MetricSource`):

- ``file`` (default): JSON lines appended to the path in ``$PERFZOO_METRICS_FILE``, one object
  per measured step, with ``throughput`` (items/s of the whole job), or ``step_time_s``
  together with ``tokens_per_step`` / ``samples_per_step`` / ``items_per_step``; optionally
  ``step``, ``peak_memory_gib``, ``mfu``, ``tflops_per_device``, ``loss``. One object with
  ``"summary": true`` is taken as the job's result as is.
- ``torchtitan``: torchtitan's step lines in the job's output (``step: 10  loss: ...
  memory: 31.2GiB(39%)  tps: 7,389  tflops: 428.1  mfu: 43.3%``; ``tps`` is per device).
- ``regex``: a regular expression with named groups (``throughput`` or ``step_time_s``, and
  optionally the others above), matched against every output line.

Steps numbered at or below the warm-up (the first ``warmup`` rows when unnumbered) are left
out; throughput is then the p90 over steps, as for every job (:mod:`harness.timing`).

Outcomes: a job past its time limit is ``timeout``; a job that reported every step (or its
summary) and then exited non-zero is ``ok``, with the exit code and the output's end in
``annotations.teardown_exit_code`` / ``teardown_output`` (as for a built-in job whose ranks all
reported before a failed teardown); else a non-zero exit is ``oom`` when the output
says so (CUDA out of memory, ``MemoryError``, ``std::bad_alloc``, ...) or a process was killed
by SIGKILL (the kernel's or a cgroup's OOM killer), else ``failed`` with the output's tail; an
exit 0 with no metrics is ``failed`` (``no_metrics``), with a message that says where the
harness looked.

>>> render("run.py --batch {batch} --ac {ac} --n {nproc}", {"batch": 8, "ac": True}, {"nproc": 2})
'run.py --batch 8 --ac true --n 2'
>>> parse_torchtitan("[rank0]: step: 10  loss:  7.1  memory: 31.20GiB(39.46%)  tps: 7,389  tflops: 428.12  mfu: 43.29%")
[{'step': 10, 'loss': 7.1, 'peak_memory_gib': 31.2, 'throughput_per_device': 7389.0, 'tflops_per_device': 428.12, 'mfu': 0.4329}]
"""

from __future__ import annotations

import json
import math
import os
import re
import resource
import shutil
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from harness import memory
from harness.environment import cpu_cores
from harness.jobs import JobOutcome, JobSpec, tail
from harness.launchers import InFlight, Launcher, free_port, job_tmpdir, run_process, worker_env

THROUGHPUT_UNIT = "items/s"
METRICS_ENV = "PERFZOO_METRICS_FILE"
METRICS_FILE = "metrics.jsonl"
HARNESS_VALUES = {
    "nproc": "ranks of the whole job",
    "nnodes": "nodes (1 on one machine)",
    "node_rank": "this node's index (0 on one machine)",
    "nproc_per_node": "ranks on this node",
    "master_addr": "the rendezvous host",
    "master_port": "a free port for the rendezvous",
    "out_dir": "a fresh directory for the job's own files",
    "metrics_file": f"where to write metrics (also ${METRICS_ENV})",
    "steps": "measured steps the harness wants",
    "warmup": "warm-up steps the harness leaves out",
    "total_steps": "warmup + steps: how many steps to run",
}
PARSERS = ("file", "torchtitan", "regex")
ROW_FIELDS = ("throughput", "throughput_per_device", "step_time_s", "tokens_per_step", "samples_per_step",
              "items_per_step", "step", "peak_memory_gib", "mfu", "tflops_per_device", "loss", "summary")
_PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SIGKILL = re.compile(r"signal 9 \(SIGKILL\)|exitcode\s*:\s*-9\b|\bKilled\b")


# --- the template -----------------------------------------------------------------------------

def placeholders(template: str) -> list[str]:
    """The ``{name}`` s of a template, in order of first use."""
    return list(dict.fromkeys(_PLACEHOLDER.findall(template)))


def check_template(template: str, knobs: list[str]) -> None:
    """A ``ValueError`` naming a placeholder that is neither a knob nor a harness value."""
    if not template.strip():
        raise ValueError("the command template is empty")
    for name in placeholders(template):
        if name not in knobs and name not in HARNESS_VALUES:
            raise ValueError(f"the command names {{{name}}}, which is neither a knob of the space ({', '.join(knobs)}) "
                             f"nor a harness value ({', '.join(HARNESS_VALUES)})")


def _word(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if abs(value) < 1e15 else repr(value)
    return str(value)


def render(template: str, config: dict, values: dict) -> str:
    """The command for one config: each ``{name}`` replaced by its value, shell-quoted."""
    import shlex

    merged = {**values, **config}
    return _PLACEHOLDER.sub(lambda m: shlex.quote(_word(merged[m.group(1)])), template)


# --- the metrics ------------------------------------------------------------------------------

@dataclass(frozen=True)
class MetricSource:
    """Where a command job's metrics come from (see the module docstring)."""

    parser: str = "file"
    regex: Optional[str] = None
    unit: str = THROUGHPUT_UNIT

    def __post_init__(self):
        if self.parser not in PARSERS:
            raise ValueError(f"unknown metric parser {self.parser!r}; parsers are {', '.join(PARSERS)}")
        if (self.parser == "regex") != (self.regex is not None):
            raise ValueError("give a regular expression exactly with the regex parser (--metric-regex)")
        if self.regex is not None:
            try:
                groups = set(re.compile(self.regex).groupindex)
            except re.error as exc:
                raise ValueError(f"--metric-regex {self.regex!r} is not a regular expression: {exc}") from None
            if not groups & {"throughput", "throughput_per_device", "step_time_s"}:
                raise ValueError(f"--metric-regex {self.regex!r} needs a named group (?P<throughput>...) or "
                                 "(?P<step_time_s>...) with (?P<items_per_step>...)")
            unknown = groups - set(ROW_FIELDS)
            if unknown:
                raise ValueError(f"--metric-regex group '{sorted(unknown)[0]}' is not one of {', '.join(ROW_FIELDS)}")

    def describe(self) -> str:
        return {"file": f"${METRICS_ENV} (JSON lines)", "torchtitan": "torchtitan step lines in the output",
                "regex": f"output lines matching {self.regex!r}"}[self.parser]


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def parse_torchtitan(text: str) -> list[dict]:
    """Rows from torchtitan's training step lines (validation lines are left out)."""
    rows = []
    for line in _ANSI.sub("", text).splitlines():
        m = re.search(r"(?<!validate )\bstep:\s*(\d+)\s", line)
        if not m or "tps:" not in line:
            continue
        row: dict = {"step": int(m.group(1))}
        for key, pattern in (("loss", r"loss:\s*([-\d.,eE+]+)"), ("peak_memory_gib", r"memory:\s*([\d.,]+)GiB"),
                             ("throughput_per_device", r"tps:\s*([\d.,]+)"), ("tflops_per_device", r"tflops:\s*([\d.,]+)"),
                             ("mfu", r"mfu:\s*([\d.,]+)%")):
            f = re.search(pattern, line)
            if f:
                row[key] = _number(f.group(1))
        if "mfu" in row:
            row["mfu"] = round(row["mfu"] / 100.0, 6)
        rows.append(row)
    return rows


def parse_regex(text: str, regex: str) -> list[dict]:
    """Rows from every output line matching ``regex`` (its named groups are the fields)."""
    pattern = re.compile(regex)
    rows = []
    for line in _ANSI.sub("", text).splitlines():
        m = pattern.search(line)
        if m:
            rows.append({k: _number(v) for k, v in m.groupdict().items() if v is not None})
    return rows


def read_metrics_file(path: Path) -> tuple[list[dict], list[str]]:
    """Rows of a metrics file and a note for every line that was not one (kept out, not fatal)."""
    if not path.is_file():
        return [], []
    rows, notes = [], []
    for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            notes.append(f"line {i}: not JSON")
            continue
        if not isinstance(obj, dict):
            notes.append(f"line {i}: not a JSON object")
            continue
        rows.append({k: v for k, v in obj.items() if k in ROW_FIELDS})
    return rows, notes


class NoMetrics(Exception):
    """The job reported nothing the harness can measure; the message says what and where."""


def _row_value(row: dict, nproc: int) -> tuple[Optional[float], Optional[float], Optional[float]]:
    """``(throughput, step_time_s, items_per_step)`` of one row; the job's throughput, not a device's."""
    items = next((row[k] for k in ("tokens_per_step", "samples_per_step", "items_per_step") if row.get(k)), None)
    step = row.get("step_time_s")
    tput = row.get("throughput")
    if tput is None and row.get("throughput_per_device") is not None:
        tput = float(row["throughput_per_device"]) * nproc
    if tput is None and step and items:
        tput = float(items) / float(step)
    return tput, step, items


def report_of(rows: list[dict], source: MetricSource, spec: JobSpec, notes: list[str]) -> dict:
    """The one report of a finished command job (what :func:`harness.jobs.metrics_of` reads)."""
    where = source.describe()
    summary = [r for r in rows if r.get("summary")]
    if summary:
        measured = summary[-1:]
    elif any("step" in r for r in rows):
        measured = [r for r in rows if r.get("step") is not None and r["step"] > spec.warmup]
    else:
        measured = rows[spec.warmup:]
    if not rows:
        raise NoMetrics(f"the command exited 0 but reported no metrics in {where}" +
                        (f" ({'; '.join(notes[:3])})" if notes else ""))
    if not measured:
        raise NoMetrics(f"the command reported {len(rows)} step(s) in {where}, all within the warm-up of "
                        f"{spec.warmup}: run at least {{total_steps}} = {spec.warmup + spec.steps} steps")
    values = [_row_value(r, spec.nproc) for r in measured]
    bad = [i for i, (t, _, _) in enumerate(values) if t is None or not math.isfinite(t) or t <= 0]
    if bad:
        raise NoMetrics(f"a row of {where} has no usable throughput: {json.dumps(measured[bad[0]])[:200]} "
                        "(give throughput, or step_time_s with tokens_per_step / samples_per_step)")
    report: dict = {"rank": 0, "status": "ok", "throughput_unit": source.unit,
                    "reported": {}, "notes": notes}
    if all(s and i for _, s, i in values) and len({i for _, _, i in values}) == 1:
        report["step_times"] = [float(s) for _, s, _ in values]
        report["items_per_step"] = float(values[0][2])
    else:
        report["throughputs"] = [float(t) for t, _, _ in values]
    for key in ("mfu", "tflops_per_device"):
        got = [float(r[key]) for r in measured if r.get(key) is not None]
        if got:
            report["reported"][key] = sorted(got)[len(got) // 2]  # the median step's
    peaks = [float(r["peak_memory_gib"]) for r in rows if r.get("peak_memory_gib") is not None]
    if peaks:
        report["peak_memory_gib"] = max(peaks)
    losses = [r["loss"] for r in measured if isinstance(r.get("loss"), (int, float))]
    if losses:
        report["info"] = {"final_loss": float(losses[-1])}
    return report


def _reached_the_last_step(rows: list[dict], spec: JobSpec) -> bool:
    """Whether the job reported its summary or its last step (``{total_steps}``, numbered or counted)."""
    if any(r.get("summary") for r in rows):
        return True
    steps = [r["step"] for r in rows if isinstance(r.get("step"), (int, float))]
    return bool(rows) and (max(steps) if steps else len(rows)) >= spec.warmup + spec.steps


def outcome_of(spec: JobSpec, job_dir: Path, output: str, *, exit_code: Optional[int], timed_out: bool,
               started_at: datetime, ended_at: datetime, wall_time_s: float, launcher: str) -> JobOutcome:
    """Decide a command job's status from its exit, its output and its metrics."""
    source = MetricSource(**spec.metrics)
    out = JobOutcome(spec=spec, status="failed", started_at=started_at, ended_at=ended_at,
                     wall_time_s=wall_time_s, exit_code=exit_code, launcher=launcher,
                     annotations={"command_template": spec.command,
                                  "metric_source": source.describe()})
    limit = {"limit_gib": spec.config.get("memory_budget_gib")}
    if timed_out:
        out.status = "timeout"
        out.failure = {"kind": "timeout", "rank": None, "exit_code": exit_code, "memory": limit,
                       "message": f"killed after the wall-clock limit of {spec.timeout_s:g} s; output tail:\n"
                                  + tail(output, 3900)}
        return out
    if source.parser == "file":
        rows, notes = read_metrics_file(job_dir / METRICS_FILE)
    else:
        rows, notes = (parse_torchtitan(output) if source.parser == "torchtitan" else parse_regex(output, source.regex)), []
    crashed = exit_code not in (0, None)
    report, missing = None, None
    # a job that exited non-zero after reporting its last step (a racy teardown, a failed save)
    # keeps its measurement, as a built-in job whose ranks all reported does; the exit is kept
    if not crashed or _reached_the_last_step(rows, spec):
        try:
            report = report_of(rows, source, spec, notes)
        except NoMetrics as exc:
            missing = exc
    if report is None and crashed:
        killed = exit_code in (-9, 137) or bool(_SIGKILL.search(output))
        if memory.text_mentions_oom(output) or killed:
            out.status = "oom"
            why = "" if memory.text_mentions_oom(output) else "a process was killed by SIGKILL (an OOM killer)\n"
            out.failure = {"kind": "oom", "rank": None, "exit_code": exit_code, "memory": limit,
                           "message": tail(why + output)}
        else:
            out.failure = {"kind": "crash", "rank": None, "exit_code": exit_code, "memory": limit,
                           "message": tail(output or f"exited with code {exit_code} and printed nothing")}
        return out
    if report is None:
        out.failure = {"kind": "no_metrics", "rank": None, "exit_code": exit_code, "memory": limit,
                       "message": tail(f"{missing}\noutput tail:\n{output}")}
        return out
    out.status = "ok"
    out.ranks = [report]
    if crashed:
        out.annotations.update(teardown_exit_code=exit_code, teardown_output=tail(output, 1000))
    if notes:
        out.annotations["metrics_lines_skipped"] = "; ".join(notes)[:500]
    return out


# --- launching --------------------------------------------------------------------------------

def harness_values(spec: JobSpec, job_dir: Path, *, nnodes: int = 1, node_rank: int = 0,
                   master_addr: str = "127.0.0.1", master_port: Optional[int] = None) -> dict:
    """The harness's values for the template (:data:`HARNESS_VALUES`)."""
    return {"nproc": spec.nproc, "nnodes": nnodes, "node_rank": node_rank,
            "nproc_per_node": spec.nproc // nnodes, "master_addr": master_addr,
            "master_port": master_port or free_port(), "out_dir": str(job_dir / "out"),
            "metrics_file": str(job_dir / METRICS_FILE), "steps": spec.steps, "warmup": spec.warmup,
            "total_steps": spec.steps + spec.warmup}


def command_env(spec: JobSpec, job_dir: Path) -> dict:
    """The job's environment: the ranks' usual one (one thread per core per rank on CPU) plus
    ``$PERFZOO_METRICS_FILE`` and the job's id, steps and warm-up; ``TMPDIR`` in the job's folder
    (:func:`~harness.launchers.job_tmpdir`), so the ``torchelastic_*`` folder a torchrun in the
    command leaves goes with the job."""
    extra = {METRICS_ENV: str(job_dir / METRICS_FILE), "PERFZOO_JOB_ID": spec.job_id,
             "PERFZOO_STEPS": str(spec.steps), "PERFZOO_WARMUP": str(spec.warmup), **job_tmpdir(job_dir)}
    if spec.device == "cpu" and "OMP_NUM_THREADS" not in os.environ:
        extra["OMP_NUM_THREADS"] = str(max(1, cpu_cores() // max(spec.nproc, 1)))
    return worker_env(spec, extra)


def memory_limit(budget_gib: Optional[float]):
    """A ``preexec_fn`` that caps every process of the job at ``budget_gib`` of data (``RLIMIT_DATA``)."""
    if budget_gib is None:
        return None
    limit = int(float(budget_gib) * memory.GIB)

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

    return apply


def run_command(spec: JobSpec, job_dir: Path, values: dict, log_path: Path,
                in_flight: Optional[InFlight] = None) -> tuple[Optional[int], bool, str]:
    """Run the rendered command of ``spec`` in ``job_dir`` (in a session of its own, marked in
    ``in_flight`` while it runs); ``(exit_code, timed_out, command)``."""
    (job_dir / "out").mkdir(exist_ok=True)
    command = render(spec.command, spec.config, values)
    code, timed_out = run_process([shutil.which("bash") or "/bin/sh", "-c", command], command_env(spec, job_dir),
                                  log_path, spec.timeout_s, preexec=memory_limit(spec.config.get("memory_budget_gib")),
                                  in_flight=in_flight, job_dir=job_dir)
    return code, timed_out, command


class CommandLauncher(Launcher):
    """Runs command jobs on this machine, one after another (see the module docstring)."""

    name = "command"

    def run(self, spec: JobSpec) -> JobOutcome:
        d = self._job_dir(spec)
        log_path = d / "log.txt"
        started = datetime.now(timezone.utc)
        t0 = time.perf_counter()
        try:
            exit_code, timed_out, command = run_command(spec, d, harness_values(spec, d), log_path, self.in_flight)
        except BaseException:
            self._cleanup(d)
            raise
        wall = time.perf_counter() - t0
        outcome = outcome_of(spec, d, log_path.read_text(errors="replace"), exit_code=exit_code,
                             timed_out=timed_out, started_at=started, ended_at=datetime.now(timezone.utc),
                             wall_time_s=wall, launcher=self.name)
        outcome.annotations["command"] = command[:2000]
        self._cleanup(d)
        return outcome

