"""The summary of one collect run: counts per status, the throughput range, the spread over
repeats, the launchers' overhead (:class:`Tally`, fed one record at a time by
:func:`perfzoo.sweep.run_sweep`, printed by ``python -m perfzoo.collect`` at the end).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict

from perfzoo.records import STATUSES, canonical_json


class Tally:
    """Counts and figures for the progress bar and the summary table."""

    def __init__(self):
        self.status = Counter()
        self.overhead = Counter()
        self.overhead_n = Counter()
        self.unit = ""
        self.raced = 0  # jobs whose record another collect of the same sweep stored first
        self.runs: dict[str, list] = defaultdict(list)  # per config: (status, throughput) of each run

    def add(self, rec) -> None:
        self.status[rec.status] += 1
        m = rec.metrics
        self.runs[canonical_json(rec.config)].append((rec.status, m.throughput))
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

    def table(self, elapsed_s: float, skipped: int, out: str) -> str:
        n = sum(self.status.values())
        rows = [("jobs stored", f"{n}"), ("skipped (already in store)", f"{skipped}")]
        if self.raced:
            rows.append(("run, but stored first by another collect", f"{self.raced}"))
        rows += [(f"  {k}", f"{self.status[k]}") for k in STATUSES]
        t = sorted(v for runs in self.runs.values() for st, v in runs if st == "ok" and v is not None)
        if t:
            rows.append((f"p90 throughput ({self.unit})",
                         f"min {t[0]:,.1f}  median {statistics.median(t):,.1f}  max {t[-1]:,.1f}"))
        rows += self.repeat_rows()
        for launcher in sorted(self.overhead_n):
            rows.append((f"overhead per ok job ({launcher})",
                         f"{self.overhead[launcher] / self.overhead_n[launcher]:.2f} s (wall - measured steps)"))
        rows.append(("elapsed", f"{elapsed_s:,.1f} s" + (f"  ({3600 * n / elapsed_s:,.0f} jobs/hour)"
                                                         if elapsed_s > 0 and n else "")))
        rows.append(("store", out))
        width = max(len(r[0]) for r in rows)
        return "\n".join(f"{a:<{width}}  {b}" for a, b in rows)
