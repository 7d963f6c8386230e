"""Which statistic of a job survives the repeat spread, and does measuring longer help? Reads a
store of repeated configs (their records keep every step's time, ``annotations.step_times_s``)
and prints, per config, the CV over repeats of several throughput statistics, and how far the
median step time of a job's first half of steps is from its second half's:

- ``p90@10`` / ``p50@10``: from the first 10 measured steps (collect's default count);
- ``p90`` / ``p50`` / ``mean``: from every measured step;
- ``halves``: the largest |first-half median / second-half median - 1| over the repeats.

    python -m perfzoo.collect --space fsdp-ads-v3 --warm --configs datasets/fsdp-cpu/repeat-configs.jsonl \\
        --repeat 5 --steps 40 --out /tmp/study
    python docs/studies/noise-1125/repeat_study.py /tmp/study
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

import numpy as np

from harness.timing import summarize_steps
from perfzoo.records.store import RecordStore


def statistics(record) -> dict:
    """The throughput statistics of one ok record (items per second)."""
    steps = np.array(record.annotations["step_times_s"].split(), dtype=float)
    items = record.annotations["items_per_step"]
    first, every = (summarize_steps([s], items) for s in (steps[:10], steps))
    half = len(steps) // 2
    return {"p90@10": first["throughput_p90"], "p50@10": first["throughput_p50"],
            "p90": every["throughput_p90"], "p50": every["throughput_p50"],
            "mean": items / every["step_time_mean_s"],
            "halves": abs(np.median(steps[:half]) / np.median(steps[half:]) - 1)}


def main(path: str) -> None:
    groups = defaultdict(list)
    for r in RecordStore(path, create=False).records():
        if r.status == "ok" and r.annotations.get("step_times_s"):
            groups[json.dumps(r.config, sort_keys=True, default=str)].append(statistics(r))
    names = ["p90@10", "p50@10", "p90", "p50", "mean", "halves"]
    print("runs  " + "  ".join(f"{n:>8}" for n in names) + "   (CV over repeats, %; halves: max, %)")
    cvs = defaultdict(list)
    for runs in groups.values():
        row = []
        for n in names:
            v = np.array([s[n] for s in runs])
            cvs[n].append(100 * v.max() if n == "halves" else 100 * v.std(ddof=1) / v.mean())
            row.append(cvs[n][-1])
        print(f"{len(runs):>4}  " + "  ".join(f"{c:8.1f}" for c in row))
    print("mean  " + "  ".join(f"{np.mean(cvs[n]):8.1f}" for n in names))


if __name__ == "__main__":
    main(sys.argv[1])
