"""Harness figures for the issue's closing note: launch overhead, run-to-run noise, sharding effect.

    python scripts/harness_overhead.py overhead  [--work DIR]   # per-job overhead of the launch modes
    python scripts/harness_overhead.py repeats   [--work DIR]   # CV of p90 QPS, 5 repeats x 3 configs
    python scripts/harness_overhead.py sharding  [--work DIR]   # uniform strategies x 5 batch sizes
    python scripts/harness_overhead.py report    [--work DIR] [--datasets datasets]

Every experiment is a real ``python -m perfzoo.collect`` run into a record store under
``--work`` (resumable like any sweep); ``report`` reads the stores (and the bundled
datasets) and prints the numbers as markdown. Overhead = job wall time (launch to exit as
the launcher sees it) minus the measured steps.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from perfzoo import spaces

REPO = Path(__file__).resolve().parent.parent
SHARD = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD")


def _fsdp(batch: int, strategies, budget=None) -> dict:
    raw = {f"shard_{i:02d}": strategies[i % len(strategies)] for i in range(11)}
    raw.update(local_batch=batch, memory_budget_gib=budget)
    return spaces.get("fsdp-ads").validate(raw)


def _llm(**over) -> dict:
    raw = dict(n_layers=2, hidden_dim=128, n_heads=4, n_kv_heads=2, ffn_dim=512, vocab_size=2048,
               seq_len=128, micro_batch_size=2, precision="fp32", activation_checkpointing="none",
               compile=False, fsdp="full_shard", n_gpus=1)
    raw.update(over)
    return spaces.get("llm-small").validate(raw)


REPEAT_CONFIGS = [_fsdp(64, ("FULL_SHARD",)), _fsdp(64, ("NO_SHARD",)),
                  _fsdp(128, ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD"))]
OVERHEAD_CONFIGS = [_llm(seq_len=s, micro_batch_size=m) for s in (64, 128) for m in (1, 2)] + \
                   [_llm(n_layers=4, seq_len=s, micro_batch_size=m) for s in (64, 128) for m in (1, 2)]


def _write(path: Path, configs) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(c) + "\n" for c in configs))
    return str(path)


def _collect(*args: str) -> None:
    cmd = [sys.executable, "-m", "perfzoo.collect", *args]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=REPO, check=False)


FSDP_OVERHEAD_CONFIGS = [_fsdp(b, (s,)) for b in (32, 128) for s in ("FULL_SHARD", "NO_SHARD")]


def run_overhead(work: Path) -> None:
    """The same 8 one-rank LLM jobs in all three launch modes, and 4 two-rank FSDP jobs in both
    torchrun modes (exec'd ranks vs ranks forked from a warm worker)."""
    cfg = _write(work / "overhead-configs.jsonl", OVERHEAD_CONFIGS)
    for mode, extra in (("inprocess", ["--mode", "inprocess"]), ("torchrun", ["--mode", "torchrun"]),
                        ("warm", ["--mode", "torchrun", "--warm"])):
        _collect("--workload", "llm", "--configs", cfg, *extra, "--steps", "6", "--warmup", "2",
                 "--sweep-id", f"overhead-{mode}", "--out", str(work / f"overhead-{mode}"))
    cfg = _write(work / "overhead-fsdp-configs.jsonl", FSDP_OVERHEAD_CONFIGS)
    for mode, extra in (("torchrun", []), ("warm", ["--warm"])):
        _collect("--workload", "fsdp", "--configs", cfg, *extra, "--steps", "6", "--warmup", "2",
                 "--sweep-id", f"overhead-fsdp-{mode}", "--out", str(work / f"overhead-fsdp-{mode}"))


def run_repeats(work: Path) -> None:
    cfg = _write(work / "repeat-configs.jsonl", REPEAT_CONFIGS)
    _collect("--workload", "fsdp", "--configs", cfg, "--repeat", "5", "--steps", "6", "--warmup", "2", "--warm",
             "--timeout", "180", "--sweep-id", "repeats", "--out", str(work / "repeats"))


def run_sharding(work: Path) -> None:
    configs = [_fsdp(b, (s,)) for b in (16, 32, 64, 128, 256) for s in SHARD]
    cfg = _write(work / "sharding-configs.jsonl", configs)
    _collect("--workload", "fsdp", "--configs", cfg, "--steps", "6", "--warmup", "2", "--timeout", "180", "--warm",
             "--sweep-id", "sharding-uniform", "--out", str(work / "sharding"))


def _frame(path: Path):
    from perfzoo.records.store import RecordStore

    if not (path / "records.jsonl").exists():
        return None
    return RecordStore(path, create=False).to_frame()


def report(work: Path, datasets: Path) -> None:
    import pandas as pd

    out = []
    # overhead ---------------------------------------------------------------------------
    rows = []
    names = {"overhead-inprocess": "llm, 1 rank: in-process batch", "overhead-torchrun": "llm, 1 rank: torchrun",
             "overhead-warm": "llm, 1 rank: torchrun --warm", "overhead-fsdp-torchrun": "fsdp, 2 ranks: torchrun",
             "overhead-fsdp-warm": "fsdp, 2 ranks: torchrun --warm"}
    for name, label in names.items():
        f = _frame(work / name)
        if f is None:
            continue
        ok = f[f.status == "ok"]
        measured = ok["metrics.step_time_mean_s"] * ok["metrics.step_time_n"]
        rows.append((label, len(ok), (ok["metrics.wall_time_s"] - measured).mean(),
                     ok["metrics.wall_time_s"].mean(), measured.mean(),
                     ok.get("annotations.batch_worker_start_s", pd.Series(dtype=float)).dropna().mean()))
    for ds, label in (("fsdp-cpu", "torchrun, 2 ranks (fsdp-cpu, ok jobs)"),
                      ("llm-cpu", "dataset llm-cpu (ok jobs)")):
        f = _frame(datasets / ds)
        if f is None:
            continue
        ok = f[f.status == "ok"]
        for launcher, g in ok.groupby("annotations.launcher"):
            measured = g["metrics.step_time_mean_s"] * g["metrics.step_time_n"]
            rows.append((f"{launcher}: {ds}", len(g), (g["metrics.wall_time_s"] - measured).mean(),
                         g["metrics.wall_time_s"].mean(), measured.mean(), float("nan")))
    if rows:
        out.append("### Per-job overhead (wall time minus measured steps)\n")
        out.append("| jobs | n | overhead s | wall s | measured s | worker start s |")
        out.append("|---|---|---|---|---|---|")
        for r in rows:
            out.append(f"| {r[0]} | {r[1]} | {r[2]:.2f} | {r[3]:.2f} | {r[4]:.2f} | "
                       f"{'' if pd.isna(r[5]) else f'{r[5]:.2f}'} |")
        out.append("")
    # repeats ----------------------------------------------------------------------------
    f = _frame(work / "repeats")
    if f is not None:
        out.append("### Run-to-run noise: p90 QPS over 5 repeats\n")
        out.append("| config | ok | mean p90 QPS | CV |")
        out.append("|---|---|---|---|")
        keys = [c for c in f.columns if c.startswith("config.")]
        for _, g in f.groupby(keys, dropna=False):
            ok = g[g.status == "ok"]["metrics.throughput"]
            row = g.iloc[0]
            name = (f"batch {row['config.local_batch']}, "
                    + "/".join(sorted({row[f'config.shard_{i:02d}'] for i in range(11)})))
            cv = ok.std(ddof=1) / ok.mean() if len(ok) > 1 else float("nan")
            out.append(f"| {name} | {len(ok)}/{len(g)} | {ok.mean():,.0f} | {cv:.3f} |")
        out.append("")
    # sharding ---------------------------------------------------------------------------
    f = _frame(work / "sharding")
    if f is not None:
        out.append("### Uniform sharding strategy x batch (unlimited budget), p90 QPS\n")
        ok = f[f.status == "ok"].copy()
        ok["strategy"] = ok["config.shard_00"]
        t = ok.pivot_table(index="config.local_batch", columns="strategy", values="metrics.throughput")
        cols = [c for c in SHARD if c in t.columns]
        out.append("| local batch | " + " | ".join(cols) + " | best / worst |")
        out.append("|---|" + "---|" * (len(cols) + 1))
        for b, row in t.iterrows():
            vals = [row[c] for c in cols]
            ratio = max(vals) / min(vals) if vals and min(vals) > 0 else float("nan")
            out.append(f"| {b} | " + " | ".join(f"{v:,.0f}" for v in vals) + f" | {ratio:.2f}x |")
        out.append("")
    f = _frame(datasets / "fsdp-cpu")
    if f is not None:
        ok = f[f.status == "ok"]
        out.append("### Per-layer sharding in the random sweep: best vs worst p90 QPS at the same batch\n")
        out.append("| local batch | ok jobs | worst | median | best | best / worst |")
        out.append("|---|---|---|---|---|---|")
        for b, g in ok.groupby("config.local_batch"):
            q = g["metrics.throughput"]
            out.append(f"| {b} | {len(g)} | {q.min():,.0f} | {q.median():,.0f} | {q.max():,.0f} | "
                       f"{q.max() / q.min():.2f}x |")
        out.append("")
    print("\n".join(out) if out else "no results yet")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["overhead", "repeats", "sharding", "all", "report"])
    p.add_argument("--work", default=str(REPO / ".perfzoo-cache" / "harness-experiments"))
    p.add_argument("--datasets", default=str(REPO / "datasets"))
    a = p.parse_args()
    work = Path(a.work)
    if a.what in ("overhead", "all"):
        run_overhead(work)
    if a.what in ("repeats", "all"):
        run_repeats(work)
    if a.what in ("sharding", "all"):
        run_sharding(work)
    report(work, Path(a.datasets))


if __name__ == "__main__":
    main()
