"""Time from submission to record for small jobs through the Slurm launcher.

Runs ``--n`` one-job collects, one after another, against the Slurm cluster that
``SLURM_CONF`` (or the login node's own configuration) names, and prints where the time
went: queue (submit -> the agent starts torchrun), run (torchrun start -> exit), record (exit
-> the collect has fsynced the record and returned). Extra arguments go to the collect.

Example, against the test cluster on this machine::

    python tests/local_slurm.py start /tmp/perfzoo-slurm
    SLURM_CONF=/tmp/perfzoo-slurm/slurm.conf python scripts/slurm_latency.py --n 5 -- --tasks-per-node 2
    python tests/local_slurm.py stop /tmp/perfzoo-slurm
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from perfzoo import spaces
from perfzoo.collect.cli import main as collect
from perfzoo.records.store import RecordStore


def small_fsdp_config(batch: int) -> dict:
    raw = {f"shard_{i:02d}": "FULL_SHARD" for i in range(11)}
    raw.update(local_batch=batch, memory_budget_gib=None)
    return spaces.get("fsdp-ads").validate(raw)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=5, help="jobs to time (default 5)")
    p.add_argument("rest", nargs="*", help="after --: further collect arguments")
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.n):
            cfg = Path(tmp) / f"c{k}.jsonl"
            cfg.write_text(json.dumps(small_fsdp_config((16, 32, 64, 128, 256)[k % 5])) + "\n")
            store = Path(tmp) / f"s{k}"
            code = collect(["--workload", "fsdp", "--configs", str(cfg), "--out", str(store), "--steps", "3",
                            "--warmup", "1", "--no-progress", "--launcher", "slurm", "--poll", "0.5",
                            "--sweep-id", f"latency-{k}", *args.rest])
            done = datetime.now(timezone.utc)
            [rec] = RecordStore(store).records()
            submitted = datetime.fromisoformat(rec.annotations["slurm_submitted_at"])
            rows.append({"status": rec.status, "queue": (rec.started_at - submitted).total_seconds(),
                         "run": (rec.ended_at - rec.started_at).total_seconds(),
                         "record": (done - rec.ended_at).total_seconds(), "total": (done - submitted).total_seconds(),
                         "exit": code})
            time.sleep(0.5)
    print(f"{'job':>4} {'status':>7} {'queue s':>8} {'run s':>7} {'record s':>9} {'total s':>8}")
    for i, r in enumerate(rows):
        print(f"{i:>4} {r['status']:>7} {r['queue']:>8.2f} {r['run']:>7.2f} {r['record']:>9.2f} {r['total']:>8.2f}")
    med = {k: statistics.median(r[k] for r in rows) for k in ("queue", "run", "record", "total")}
    print(f"{'med':>4} {'':>7} {med['queue']:>8.2f} {med['run']:>7.2f} {med['record']:>9.2f} {med['total']:>8.2f}")


if __name__ == "__main__":
    main()
