"""Write the dataset cards (README.md) of the bundled measured datasets from their records.

    python scripts/dataset_cards.py [fsdp-cpu] [llm-cpu]

The numbers in a card (dates, status counts, throughput range, noise, jobs per hour) are
computed from ``datasets/<name>/records.jsonl`` every time, so a card never disagrees with
its data; the prose around them is below.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from perfzoo.datasets import load_dataset
from perfzoo.records import STATUSES
from perfzoo.records.store import RecordStore

REPO = Path(__file__).resolve().parent.parent

INTRO = {
    "fsdp-cpu": """\
The CubicML paper's ads-model sharding search, scaled down to a 2-core CPU machine and
measured for real: every record is one training job of perfzoo's `fsdp` workload (a
recommendation-style model: 8 embedding tables -> 11 interaction/MLP layers of width 128
with residuals -> CTR and CVR heads) on **2 gloo ranks, one CPU thread each**, each job its
own torchrun-standalone process group (`--warm`: the torchrun launch API, `elastic_launch`
with a fresh c10d rendezvous and fresh rank processes per job, the ranks forked from a
worker that imported torch once), with FSDP2 (`fully_shard`) applied per layer: `FULL_SHARD` = `reshard_after_forward=True`, `SHARD_GRAD_OP` = `False`,
`NO_SHARD` = replicated over a (2, 1) device mesh. Configs are random draws from the
`fsdp-ads` space (3^11 strategies x 5 local batch sizes x 9 memory budgets, 7,971,615
configs). The memory budget is a real per-rank limit (`RLIMIT_DATA` set in each rank
before the model is built); a rank that hits it fails inside torch's allocator and the job
is recorded as `oom` with the rank and its memory figures.""",
    "llm-cpu": """\
Real training jobs of perfzoo's `llm` workload (a Llama-style decoder: RMSNorm, rotary
embeddings, SwiGLU, grouped-query attention through `scaled_dot_product_attention`) with
FSDP2, activation checkpointing, bf16 mixed precision and `torch.compile` as knobs, on 1 or
2 CPU ranks (one thread each). Configs come from the `llm-small` space;
`scripts/make_llm_configs.py` keeps 300 uncompiled and 12 compiled configs of a seeded draw
(compiling costs 20-80 s per job on this machine). World-size-1 jobs ran in the harness's
in-process batch mode (one worker process runs many jobs; a fresh worker after any
failure), world-size-2 jobs as one torchrun-standalone process group each (`--warm`: ranks
forked from a worker that imported torch once).""",
}

COLUMNS = {
    "fsdp-cpu": "`config.shard_00` .. `config.shard_10` (per-layer strategy), `config.local_batch`, "
                "`config.memory_budget_gib` (GiB of private data per rank, `null` = unlimited); "
                "constants `n_layers`, `width`, `n_tables`, `rows_per_table`, `emb_dim`, `world_size`, "
                "`fsdp_api`, `precision` are stored too.",
    "llm-cpu": "the LLM vocabulary of `perfzoo/workloads/llm/__init__.py`: `n_layers`, `hidden_dim`, `n_heads`, "
               "`n_kv_heads`, `ffn_dim`, `vocab_size`, `seq_len`, `micro_batch_size`, "
               "`global_batch_size`, `grad_accum`, `n_gpus` (= ranks), `dp`, `tp`/`pp`/`cp` (1), "
               "`fsdp`, `precision`, `activation_checkpointing`, `compile`, `n_params`.",
}


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def card(name: str) -> str:
    d = REPO / "datasets" / name
    f = RecordStore(d, create=False).to_frame()
    meta = json.loads((d / "dataset.json").read_text())
    ok = f[f.status == "ok"]
    unit = meta["target_unit"]
    start, end = f.started_at.min(), f.ended_at.max()
    hours = (end - start).total_seconds() / 3600
    lines = [f"# {name}", "", INTRO[name], ""]
    lines += ["## How it was made", "", "```bash"]
    lines += sorted(set(f.provenance))
    lines += ["```", "",
              "(`scripts/collect_datasets.sh` runs exactly these; it is resumable: run it again "
              "and finished job ids are skipped.)", ""]
    hw = f.iloc[0]
    commits = sorted(set(f["software.git_commit"].dropna()))
    lines += ["## Machine and software", "",
              f"- CPU: {'; '.join(f'{kind} ({n} jobs)' for kind, n in load_dataset(name).machines().items())}, "
              f"{hw['hardware.cpu_cores']} cores, {hw['hardware.ram_gib']} GiB RAM, "
              "a VM **shared with other engineers' test and benchmark runs** (see noise below)",
              f"- python {hw['software.python']}, torch {hw['software.torch']}, gloo backend, "
              f"perfzoo {hw['software.perfzoo']}, git commit(s) {', '.join(commits) or 'unknown'}",
              f"- collected {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC "
              f"({hours:.2f} h, {len(f) / hours:,.0f} jobs/hour)" if hours > 0 else "", ""]
    counts = f.status.value_counts()
    lines += ["## Contents", "", f"{len(f)} job records (one per job, failures included):", "",
              "| status | jobs |", "|---|---|"]
    for s in STATUSES:
        lines.append(f"| {s} | {int(counts.get(s, 0))} |")
    lines.append("")
    if len(ok):
        q = ok["metrics.throughput"]
        lines += [f"Target `metrics.throughput` = p90 of per-step {unit} (global; step time = max over "
                  f"ranks, warm-up excluded, {int(ok['metrics.step_time_n'].median())} measured steps): "
                  f"min {_fmt(q.min())}, median {_fmt(q.median())}, max {_fmt(q.max())} {unit} "
                  f"({q.max() / q.min():.1f}x range).", ""]
    if name == "fsdp-cpu":
        t = pd.crosstab(f["config.memory_budget_gib"].fillna(-1.0), f.status)
        lines += ["Status by memory budget (GiB per rank; -1 = unlimited):", "",
                  "| budget | " + " | ".join(t.columns) + " |", "|---" * (len(t.columns) + 1) + "|"]
        for b, row in t.iterrows():
            lines.append(f"| {'unlimited' if b < 0 else b} | " + " | ".join(str(int(v)) for v in row) + " |")
        lines.append("")
        if len(ok):
            lines += ["p90 QPS by local batch (the spread within a row is the effect of the per-layer "
                      "sharding choice, plus noise):", "", "| local batch | ok | min | median | max | max/min |",
                      "|---|---|---|---|---|---|"]
            for b, g in ok.groupby("config.local_batch"):
                q = g["metrics.throughput"]
                lines.append(f"| {b} | {len(g)} | {_fmt(q.min())} | {_fmt(q.median())} | {_fmt(q.max())} | "
                             f"{q.max() / q.min():.2f}x |")
            lines.append("")
    else:
        t = pd.crosstab([f["config.n_gpus"], f["config.compile"]], f.status)
        lines += ["Status by ranks and compile:", "", "| n_gpus, compile | " + " | ".join(t.columns) + " |",
                  "|---" * (len(t.columns) + 1) + "|"]
        for idx, row in t.iterrows():
            lines.append(f"| {idx[0]}, {idx[1]} | " + " | ".join(str(int(v)) for v in row) + " |")
        lines.append("")
    if len(ok):
        noisy = ok["metrics.noisy"].mean()
        load = ok.get("annotations.loadavg_1m")
        load_txt = (f" The 1-minute load average as timing began (`annotations.loadavg_1m`) ranged "
                    f"{load.min():.1f}-{load.max():.1f} (median {load.median():.1f}) on 2 cores."
                    if load is not None and load.notna().any() else "")
        lines += ["## Noise: read this before fitting", "",
                  f"The machine was shared and busy while this was measured. {noisy:.0%} of the ok jobs are "
                  f"flagged `metrics.noisy` (IQR / median of step time > 0.1); the median IQR/median is "
                  f"{ok['metrics.noise_iqr_over_median'].median():.2f}.{load_txt} Expect a few tens of percent "
                  "of run-to-run variation in p90 throughput: no predictor can be more exact than that here.",
                  ""]
    extra = REPO / ".perfzoo-cache" / "harness-experiments"
    if name == "fsdp-cpu" and (extra / "repeats" / "records.jsonl").exists():
        r = RecordStore(extra / "repeats", create=False).to_frame()
        rows = []
        keys = [c for c in r.columns if c.startswith("config.")]
        for _, g in r.groupby(keys, dropna=False):
            q = g[g.status == "ok"]["metrics.throughput"]
            strategies = "/".join(sorted({g.iloc[0][f"config.shard_{i:02d}"] for i in range(11)}))
            if len(q) > 1:
                rows.append(f"| batch {g.iloc[0]['config.local_batch']}, {strategies} | {len(q)} | "
                            f"{q.mean():,.0f} | {q.std(ddof=1) / q.mean():.3f} |")
        lines += ["Run-to-run noise measured on the same machine right after this collection "
                  "(`python scripts/harness_overhead.py repeats`, same harness settings, 5 repeats):", "",
                  "| config | ok runs | mean p90 QPS | CV of p90 QPS |", "|---|---|---|---|", *rows, ""]
    if name == "fsdp-cpu" and (extra / "sharding" / "records.jsonl").exists():
        r = RecordStore(extra / "sharding", create=False).to_frame()
        ok2 = r[r.status == "ok"].copy()
        ok2["strategy"] = ok2["config.shard_00"]
        t = ok2.pivot_table(index="config.local_batch", columns="strategy", values="metrics.throughput")
        cols = [c for c in ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD") if c in t.columns]
        lines += ["The same strategy on all 11 layers, unlimited budget (`python scripts/harness_overhead.py "
                  "sharding`), p90 QPS:", "", "| local batch | " + " | ".join(cols) + " | best / worst |",
                  "|---" * (len(cols) + 2) + "|"]
        for b, row in t.iterrows():
            vals = [row[c] for c in cols]
            lines.append(f"| {b} | " + " | ".join(f"{v:,.0f}" for v in vals) + f" | {max(vals) / min(vals):.2f}x |")
        lines.append("")
    lines += ["## Columns", "", "Every record has the perfzoo job-record schema v1 (`perfzoo/records/schema.py`). "
              "Config keys: " + COLUMNS[name], "",
              "Other useful fields: `metrics.step_time_{mean,p50,p90,p99}_s`, `metrics.throughput_{mean,p50,p90}`, "
              "`metrics.peak_memory_gib` (peak RSS of the busiest rank), `metrics.wall_time_s` (launch to "
              "exit), `annotations.overhead_s` (wall time minus measured steps), "
              "`annotations.rank0_{import,init,build,warmup,measure}_s`, `annotations.peak_data_gib` "
              "(private data, what the budget limits, sampled between steps), `failure.*` for failed jobs "
              "(kind, rank, message tail, memory figures).", "",
              "## Use", "", "```python", "from perfzoo.datasets import load_dataset",
              f"ds = load_dataset({name!r})   # ds.X, ds.y (= {meta['target']}), ds.frame", "```", ""]
    if meta.get("notes"):  # what the numbers above cannot tell: known artifacts, caveats
        lines += ["## Notes", "", *meta["notes"], ""]
    return "\n".join(x for x in lines if x is not None)


def main(names) -> None:
    for name in names or ["fsdp-cpu", "llm-cpu"]:
        d = REPO / "datasets" / name
        if not (d / "records.jsonl").exists():
            print(f"{name}: no records yet, card not written")
            continue
        (d / "README.md").write_text(card(name))
        print(f"wrote {d / 'README.md'}")


if __name__ == "__main__":
    main(sys.argv[1:])
