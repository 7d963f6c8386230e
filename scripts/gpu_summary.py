"""Print what a GPU record store holds: one line per job (status, tokens/s, MFU, memory), the
CUDA-event step time against the wall clock of the measured steps, and the repeat CV.

    python scripts/gpu_summary.py STORE [STORE ...] [--brief]
"""

import sys
from collections import defaultdict

import numpy as np

from perfzoo.records.store import RecordStore


def _mfu(value) -> str:
    """MFU to three places, or '-' where the job reported none (a command workload without it)."""
    return "-" if value is None else f"{value:.3f}"


def main(argv: list[str]) -> int:
    brief = "--brief" in argv
    for path in [a for a in argv if not a.startswith("--")]:
        records = RecordStore(path, create=False).records()
        counts = defaultdict(int)
        for r in records:
            counts[r.status] += 1
        print(f"\n{path}: {len(records)} jobs {dict(counts)}")
        by_config = defaultdict(list)
        for r in records:
            c, m, a = r.config, r.metrics, r.annotations
            if r.status == "ok":
                by_config[str(sorted(c.items()))].append(m.throughput)
            if brief:
                continue
            events = (m.step_time_mean_s or 0) * (m.step_time_n or 0)
            wall = a.get("rank0_measure_s")
            shape = (f"L{c.get('n_layers')} d{c.get('hidden_dim')} s{c.get('seq_len')} b{c.get('micro_batch_size')} "
                     f"{c.get('precision')} ac={c.get('activation_checkpointing')} compile={c.get('compile')}"
                     if r.workload == "llm" else " ".join(f"{k}={v}" for k, v in sorted(c.items())))
            if r.status == "ok":
                print(f"  ok      {shape}: {m.throughput:10,.0f} /s  MFU {_mfu(m.mfu)}  "
                      f"peak {m.peak_memory_gib or 0:5.1f} GiB  step p50 {m.step_time_p50_s or 0:.4f} s  "
                      f"events/wall {events / wall if wall else float('nan'):.3f}  job {m.wall_time_s:.1f} s")
            else:
                msg = (r.failure.message if r.failure else "").strip().splitlines()
                print(f"  {r.status:<7} {shape}: {msg[-1][:150] if msg else ''}  job {m.wall_time_s or 0:.1f} s")
        cvs = [np.std(v, ddof=1) / np.mean(v) for v in by_config.values() if len(v) > 1]
        if cvs:
            print(f"  repeat CV over {len(cvs)} configs: median {np.median(cvs):.4f}, max {max(cvs):.4f}")
        ok = [r for r in records if r.status == "ok"]
        if ok:
            wall = [r.metrics.wall_time_s for r in records if r.metrics.wall_time_s]
            best = max((r.metrics.mfu for r in ok if r.metrics.mfu is not None), default=None)
            print(f"  MFU max {_mfu(best)}; job wall time median "
                  f"{np.median(wall):.1f} s, total {sum(wall) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
