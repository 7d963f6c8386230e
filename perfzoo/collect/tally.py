"""The summary of one collect run: counts per status, why the jobs that did not finish failed,
the throughput range, the spread over repeats, how the configs measured again compare with their
earlier records (and whether the machines do: :mod:`perfzoo.hardware.capability`), the launchers' overhead
and the rate of completed jobs (:class:`Tally`, fed one record at a time by
:func:`perfzoo.collect.sweep.store_records`, printed by ``python -m perfzoo.collect`` at the end).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from typing import Iterable

from perfzoo.hardware.capability import describe, difference, kind
from perfzoo.records import STATUSES, JobRecord, canonical_json

# exit statuses a shell gives a command it could not start (bash's convention)
SHELL_EXITS = {127: "command not found", 126: "command not executable"}


def failure_reason(record: JobRecord) -> str:
    """Why a job did not finish ``ok``, in a few words: its failure kind (``oom``, ``timeout``,
    ``no_metrics``, ``crash``, ...), a crash told apart by its exit status.

    >>> failure_reason(JobRecord(job_id="j", source="measured", provenance="doc", status="failed",
    ...     started_at="2026-11-21T10:00:00Z", workload="command", config={},
    ...     hardware={"accelerator": "cpu", "accelerator_count": 1},
    ...     failure={"kind": "crash", "exit_code": 127, "message": "bash: trainx: command not found"}))
    'command not found (exit 127)'
    """
    failure = record.failure
    kind = failure.kind if failure is not None else record.status
    code = failure.exit_code if failure is not None else None
    if kind != "crash" or code is None:
        return kind
    if code in SHELL_EXITS:
        return f"{SHELL_EXITS[code]} (exit {code})"
    return f"crash (killed by signal {-code})" if code < 0 else f"crash (exit {code})"


# a raised exception's line ("RuntimeError: ...", "[rank1]: torch.OutOfMemoryError: ..."), not the
# launcher's own ChildFailedError that only says a rank failed
_RAISED = re.compile(r"\b(?!ChildFailedError)[A-Z]\w*(Error|Exception)\b:")


def telling_line(text: str) -> str:
    """The line of a failed job's output that says why: the first raised exception (under torchrun,
    the rank that failed first prints first), else the last line with a word in it (a launcher's
    ``=====`` banner says nothing); 120 characters at most.

    >>> telling_line("[rank1]: RuntimeError: Connection closed by peer\\nChildFailedError: \\n=====")
    '[rank1]: RuntimeError: Connection closed by peer'
    >>> telling_line("bash: trainx: command not found\\n")
    'bash: trainx: command not found'
    """
    lines = [line.strip() for line in (text or "").splitlines() if re.search(r"\w", line)]
    raised = [line for line in lines if _RAISED.search(line)]
    return (raised[0] if raised else lines[-1] if lines else "")[:120]


def _ok_throughput(record: JobRecord) -> bool:
    return record.status == "ok" and record.metrics.throughput is not None


class Tally:
    """Counts and figures for the progress bar and the summary table; ``earlier``: records already
    stored (of this store) that this run's jobs are compared with, config by config."""

    def __init__(self, earlier: Iterable[JobRecord] = ()):
        self.status = Counter()
        self.overhead = Counter()
        self.overhead_n = Counter()
        self.unit = ""
        self.raced = 0  # jobs whose record another collect of the same sweep stored first
        self.runs: dict[str, list] = defaultdict(list)  # per config: (status, throughput) of each run
        self.reasons = Counter()  # why the jobs that did not finish ok failed (failure_reason)
        self.example: dict[str, str] = {}  # per reason: the telling line of the first such job's message
        self.teardown = 0  # ok jobs that exited non-zero after their last step (annotations.teardown_exit_code)
        self.teardown_example = ""
        self.earlier: dict[str, list[JobRecord]] = defaultdict(list)  # per config: its earlier ok records
        for rec in earlier:
            if _ok_throughput(rec):
                self.earlier[canonical_json(rec.config)].append(rec)
        self.again: list[JobRecord] = []  # this run's ok records of configs with earlier records

    def add(self, rec: JobRecord) -> None:
        self.status[rec.status] += 1
        if rec.status != "ok":
            reason = failure_reason(rec)
            self.reasons[reason] += 1
            self.example.setdefault(reason, telling_line(rec.failure.message if rec.failure else ""))
        elif rec.annotations.get("teardown_exit_code") is not None:
            self.teardown += 1
            self.teardown_example = self.teardown_example or telling_line(rec.annotations.get("teardown_output", ""))
        m = rec.metrics
        self.runs[canonical_json(rec.config)].append((rec.status, m.throughput))
        if _ok_throughput(rec) and canonical_json(rec.config) in self.earlier:
            self.again.append(rec)
        if rec.status == "ok" and m.throughput is not None:
            self.unit = m.throughput_unit or self.unit
            launcher = rec.annotations.get("launcher", "?")
            if rec.annotations.get("overhead_s") is not None:
                self.overhead[launcher] += rec.annotations["overhead_s"]
                self.overhead_n[launcher] += 1

    def postfix(self) -> str:
        return " ".join(f"{k}={self.status[k]}" for k in STATUSES)

    def repeat_rows(self) -> list[tuple[str, str]]:
        """The spread over repeats of the configs this sweep ran more than once: the CV of their
        throughput (configs ok on every run) and how many had one status on every run.

        >>> t = Tally()
        >>> for status, qps in [("ok", 90.0), ("ok", 110.0), ("oom", None), ("oom", None)]:
        ...     t.status[status] += 1; t.runs["a" if qps else "b"].append((status, qps))
        >>> t.repeat_rows()
        [('repeat CV (1 configs ok every run)', 'median 14.1%  max 14.1%'), ('one status on every run', '2 of 2 configs')]
        """
        repeated = [runs for runs in self.runs.values() if len(runs) > 1]
        if not repeated:
            return []
        always_ok = [[v for _, v in runs] for runs in repeated
                     if all(st == "ok" and v is not None for st, v in runs)]
        cvs = [statistics.stdev(v) / statistics.mean(v) for v in always_ok]
        rows = []
        if cvs:
            rows.append((f"repeat CV ({len(cvs)} configs ok every run)",
                         f"median {100 * statistics.median(cvs):.1f}%  max {100 * max(cvs):.1f}%"))
        same = sum(len({st for st, _ in runs}) == 1 for runs in repeated)
        rows.append(("one status on every run", f"{same} of {len(repeated)} configs"))
        return rows

    def remeasured_rows(self) -> list[tuple[str, str]]:
        """This run's throughput over the earlier records' (median per config), for each pair of
        machine kinds: a drift where the machines compare, else what differs (another CPU
        capability, unknown facts) instead of a drift.

        >>> def rec(tput, **hw):
        ...     return JobRecord(job_id="j", source="measured", provenance="doc", status="ok",
        ...                      started_at="2026-11-28T10:00:00Z", workload="llm", config={"seq_len": 128},
        ...                      hardware={"accelerator": "cpu", "accelerator_count": 1, **hw},
        ...                      metrics={"throughput": tput})
        >>> t = Tally(earlier=[rec(5000.0, cpu_capability="AVX-512 BF16")])
        >>> t.add(rec(400.0, cpu_capability="AVX2"))
        >>> print(t.remeasured_rows()[0][1])
        0.08x (1 configs, 0.08-0.08): not a drift: measured on AVX2 (bf16 matmul emulated), the earlier records on AVX-512 BF16 (native bf16): not comparable
        """
        pairs: dict[tuple[str, str], list] = defaultdict(list)  # (this machine, earlier machine) -> [(ratio, now, then)]
        for rec in self.again:
            by_machine = defaultdict(list)
            for old in self.earlier[canonical_json(rec.config)]:
                by_machine[kind(old.hardware.model_dump())].append(old)
            for then, olds in by_machine.items():
                ratio = rec.metrics.throughput / statistics.median(o.metrics.throughput for o in olds)
                pairs[kind(rec.hardware.model_dump()), then].append((ratio, rec, olds[0]))
        rows = []
        for found in pairs.values():
            ratios = sorted(r for r, _, _ in found)
            _, now, then = found[0]
            why = difference(now.hardware.model_dump(), then.hardware.model_dump(), "the earlier records")
            verdict = (f"a drift on one kind of machine, {describe(now.hardware.model_dump())}" if why is None
                       else f"not a drift: {why}")
            configs = len({canonical_json(rec.config) for _, rec, _ in found})
            rows.append(("vs earlier records of these configs",
                         f"{statistics.median(ratios):.2f}x ({configs} configs, {ratios[0]:.2f}-{ratios[-1]:.2f}): {verdict}"))
        return rows

    def table(self, elapsed_s: float, skipped: int, out: str) -> str:
        n = sum(self.status.values())
        rows = [("jobs stored", f"{n}"), ("skipped (already in store)", f"{skipped}")]
        if self.raced:
            rows.append(("run, but stored first by another collect", f"{self.raced}"))
        rows += [(f"  {k}", f"{self.status[k]}") for k in STATUSES]
        if self.teardown:
            example = f"  e.g. {self.teardown_example!r}" if self.teardown_example else ""
            rows.append(("ok, exited non-zero after its last step", f"{self.teardown}{example}"))
        for i, (reason, count) in enumerate(self.reasons.most_common()):
            example = f"  e.g. {self.example[reason]!r}" if self.example[reason] else ""
            rows.append(("failure reasons" if i == 0 else "", f"{count} {reason}{example}"))
        t = sorted(v for runs in self.runs.values() for st, v in runs if st == "ok" and v is not None)
        if t:
            rows.append((f"p90 throughput ({self.unit})",
                         f"min {t[0]:,.1f}  median {statistics.median(t):,.1f}  max {t[-1]:,.1f}"))
        rows += self.repeat_rows()
        rows += self.remeasured_rows()
        for launcher in sorted(self.overhead_n):
            rows.append((f"overhead per ok job ({launcher})",
                         f"{self.overhead[launcher] / self.overhead_n[launcher]:.2f} s (wall - measured steps)"))
        ok = self.status["ok"]  # a rate of completed jobs: one that failed at once says nothing of speed
        rows.append(("elapsed", f"{elapsed_s:,.1f} s" + (f"  ({3600 * ok / elapsed_s:,.0f} completed jobs/hour)"
                                                         if elapsed_s > 0 and ok else "")))
        rows.append(("store", out))
        width = max(len(r[0]) for r in rows)
        return "\n".join(f"{a:<{width}}  {b}" for a, b in rows)
