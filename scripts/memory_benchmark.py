"""How close the analytic memory model comes to measured peaks, whether it tells OOMs apart, and
how far the analytic ideal throughput is from what published systems measured.

    python scripts/memory_benchmark.py                 # every section
    python scripts/memory_benchmark.py --section memory
    python scripts/memory_benchmark.py --section accuracy
    python scripts/memory_benchmark.py --out docs/results/memory-benchmark.md   # also the docs' page

Sections:

* ``memory``: on ``datasets/llm-h100`` and ``datasets/llm-h200`` (one H100, one H200, measured ``torch.cuda.max_memory_allocated``),
  predicted ``peak_allocated_bytes`` against the measured peak of the ok jobs: MAPE, median APE and
  predicted/measured p10/median/p90, overall and split by activation checkpointing, precision and
  compile; then feasibility (``memory_fraction <= 1``: peak + overheads within the device's memory)
  against the jobs' status: OOM precision and recall, OOM jobs called feasible, ok jobs called
  infeasible (and beyond the stated margin). The one calibrated term, the fragmentation multiple
  (:data:`perfzoo.analytic.memory.FRAGMENTATION`), is refitted on half the jobs and scored on the
  other half (both ways), and leave-one-precision-out, and the interval of multiples that separate
  all jobs is printed.
* ``published``: per shared source, the published layouts (ok rows stating tp and pp) the model
  calls infeasible on their own hardware (listed), with the checkpointing the row states or, where
  it states none, the mode that needs least memory (the table does not say which ran); and published peak memory where
  a row gives one (torchtitan: torch's peak reserved memory) against the predicted peak allocated.
* ``rule``: the fits rule plan and predict apply (:class:`perfzoo.analytic.memory.MemoryRule`): the
  peak error it is derived from (measured / predicted peak allocated of the ok jobs of
  ``llm-h100`` and ``llm-h200`` at its stated risk), then its verdicts on jobs that ran and jobs
  that ran out of memory: ``published-llm``'s ok rows called infeasible (a row that states no
  checkpointing with the least recompute that fits), perfzoo's own OOMs called feasible and ok
  jobs called infeasible, beside the flat 10% margin it replaced.
* ``accuracy``: per shared source, measured / analytic-ideal tokens/s (median, p10, p90), dense vs
  MoE, per accelerator and precision.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import subprocess
import sys
import warnings
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from perfzoo import analytic
from perfzoo.analytic import memory as M
from perfzoo.analytic.memory import PEAK_ERROR, PEAK_RISK, MemoryRule, peak_error
from perfzoo.analytic._frame import GIB
from perfzoo.datasets import load_dataset, published_tables

MARGIN = 0.05  # an ok job predicted at most this far over the device's memory counts as "fits within the margin"


def _ape(pred: pd.Series, meas: pd.Series) -> pd.Series:
    return (pred / meas - 1.0).abs()


def _spread(ratio: pd.Series) -> str:
    return (f"n={len(ratio):3d}  pred/meas p10 {ratio.quantile(.1):.3f} median {ratio.median():.3f} "
            f"p90 {ratio.quantile(.9):.3f}  MAPE {100 * (ratio - 1).abs().mean():5.1f}%  "
            f"median APE {100 * (ratio - 1).abs().median():5.1f}%")


MEASURED = ("llm-h100", "llm-h200")  # perfzoo's own GPU jobs: the allocator's peak of each ok job


def measured_jobs(name: str) -> pd.DataFrame:
    """A measured GPU dataset's jobs with their predicted memory terms (bytes) and what separates OOMs."""
    frame = load_dataset(name).frame
    est = analytic.estimate(frame)
    cap = frame["hardware.accelerator_memory_gib"].astype(float) * GIB
    largest = analytic.LLMCost(frame).memory.largest_allocation()
    return pd.DataFrame({
        "status": frame["status"], "precision": frame["config.precision"],
        "ac": frame["config.activation_checkpointing"], "compile": frame["config.compile"],
        "measured": frame["metrics.peak_memory_gib"].astype(float) * GIB,
        "predicted": est["peak_allocated_bytes"], "overhead": est["overhead_bytes"],
        "memory_fraction": est["memory_fraction"], "capacity": cap, "largest": np.asarray(largest, dtype=float),
    })


def separating_interval(jobs: pd.DataFrame) -> tuple[float, float]:
    """The fragmentation multiples k for which every OOM job is infeasible and every ok job fits:
    ``peak + context + k * largest`` over / within the capacity."""
    room = (jobs["capacity"] - M.CONTEXT_BYTES - jobs["predicted"]) / jobs["largest"]
    oom = jobs["status"] == "oom"
    lo = float(room[oom].max()) if oom.any() else 0.0  # k must exceed this
    hi = float(room[~oom].min())  # and stay at or below this
    return lo, hi


def fit_fragmentation(jobs: pd.DataFrame) -> float:
    """The multiple a calibration on ``jobs`` picks: the smallest (>= 0) that calls every OOM job of
    ``jobs`` infeasible (no OOM may be called feasible; ok jobs near the boundary may fall within the margin)."""
    return max(separating_interval(jobs)[0], 0.0) + 1e-6


def classify(jobs: pd.DataFrame, k: float) -> dict[str, float]:
    total = jobs["predicted"] + M.CONTEXT_BYTES + k * jobs["largest"]
    fraction = total / jobs["capacity"]
    infeasible, oom = fraction > 1.0, jobs["status"] == "oom"
    tp = int((infeasible & oom).sum())
    return {"oom": int(oom.sum()), "ok": int((~oom).sum()), "called_infeasible": int(infeasible.sum()),
            "precision": tp / max(int(infeasible.sum()), 1), "recall": tp / max(int(oom.sum()), 1),
            "oom_called_feasible": int((oom & ~infeasible).sum()), "ok_called_infeasible": int((~oom & infeasible).sum()),
            "ok_beyond_margin": int((~oom & (fraction > 1.0 + MARGIN)).sum())}


def memory_of(name: str, jobs: pd.DataFrame) -> dict:
    """Predicted vs measured peak on one dataset, and the feasibility calls on its jobs (printed);
    returns the summary row of the markdown table."""
    ok = jobs[jobs["status"] == "ok"]
    ratio = ok["predicted"] / ok["measured"]
    print(f"== memory: {name}, predicted peak allocated vs measured (ok jobs) ==")
    print(f"all              {_spread(ratio)}")
    for key in ("ac", "precision", "compile"):
        for value, g in ratio.groupby(ok[key]):
            print(f"{key}={str(value):13s}{_spread(g)}")
    for (ac, cp, pr), g in ratio.groupby([ok["ac"], ok["compile"], ok["precision"]]):
        print(f"  ac={ac:9s} compile={str(cp):5s} {pr:4s} {_spread(g)}")
    k = M.FRAGMENTATION
    result = classify(jobs, k)
    print(f"\n== {name}: feasibility (memory_fraction <= 1; fragmentation {k} x the largest allocation) ==")
    print(f"OOM jobs {result['oom']}, ok jobs {result['ok']}; called infeasible {result['called_infeasible']}: "
          f"OOM precision {result['precision']:.2f}, recall {result['recall']:.2f}; OOM jobs called feasible "
          f"{result['oom_called_feasible']}; ok jobs called infeasible {result['ok_called_infeasible']} "
          f"({result['ok_beyond_margin']} beyond the {MARGIN:.0%} margin)")
    lo, hi = separating_interval(jobs)
    print(f"fragmentation multiples that separate all {len(jobs)} jobs: ({lo:.2f}, {hi:.2f}]\n")
    return {"dataset": name, "ok jobs": len(ok), "MAPE": f"{100 * (ratio - 1).abs().mean():.1f}%",
            "median APE": f"{100 * (ratio - 1).abs().median():.1f}%",
            "pred/meas p10, median, p90": f"{ratio.quantile(.1):.2f}, {ratio.median():.2f}, {ratio.quantile(.9):.2f}",
            "OOM jobs": result["oom"], "OOMs called feasible": result["oom_called_feasible"],
            "ok jobs called infeasible": result["ok_called_infeasible"]}


def memory_section() -> list[dict]:
    rows = [memory_of(name, measured_jobs(name)) for name in MEASURED]
    jobs = measured_jobs("llm-h100")
    print("== the calibrated multiple on held-out llm-h100 jobs ==")
    rng = np.random.default_rng(0)
    order = rng.permutation(len(jobs))
    halves = (jobs.iloc[order[: len(jobs) // 2]], jobs.iloc[order[len(jobs) // 2:]])
    for name, fit, score in (("half A -> B", halves[0], halves[1]), ("half B -> A", halves[1], halves[0])):
        kk = fit_fragmentation(fit)
        r = classify(score, kk)
        print(f"{name}: fitted {kk:.2f}; held out: OOM {r['oom']}, called feasible {r['oom_called_feasible']}, "
              f"ok called infeasible {r['ok_called_infeasible']} ({r['ok_beyond_margin']} beyond the margin)")
    for precision in sorted(jobs["precision"].unique()):
        held = jobs["precision"] == precision
        kk = fit_fragmentation(jobs[~held])
        r = classify(jobs[held], kk)
        print(f"leave {precision} out: fitted {kk:.2f}; held out: OOM {r['oom']}, called feasible "
              f"{r['oom_called_feasible']}, ok called infeasible {r['ok_called_infeasible']}")
    return rows


def published_section() -> None:
    print("\n== published layouts called infeasible on their own hardware (ok rows) ==")
    for name, path in published_tables().items():
        frame = load_dataset(str(path)).frame
        ok = frame[frame["status"] == "ok"]
        stated = ok[["config.tp", "config.pp"]].notna().all(axis=1)  # a layout, not perfzoo's guess of one
        least = analytic.least_recompute(ok, MemoryRule(margin=0.0))
        ok = ok.assign(**{"config.activation_checkpointing": least["activation_checkpointing"]})
        fraction = analytic.estimate(ok)["memory_fraction"]
        known = fraction.notna() & stated
        bad = ok[known & ~least["fits"]]
        est = analytic.estimate(bad)
        state = (est["param_bytes"] + est["grad_bytes"] + est["optimizer_bytes"]) / GIB
        least = analytic.estimate(bad.assign(**{"config.activation_checkpointing": "full"}))["peak_allocated_bytes"] / GIB
        print(f"{name}: {int(known.sum())} layouts priced ({int((~stated).sum())} rows state no tp/pp: not "
              f"checked), {len(bad)} called infeasible")
        for i, row in bad.iterrows():
            device = est.loc[i, "memory_bytes"] / est.loc[i, "memory_fraction"] / GIB
            if least[i] > device:
                why = (f"; the model state alone ({state[i]:.0f} GiB) with full recompute's activations needs "
                       f"{least[i]:.0f} GiB of {device:.0f}: the layout as published cannot be all that ran")
            else:
                why = (f"; activations {est.loc[i, 'activation_bytes'] / GIB:.0f} GiB, with full recompute "
                       f"{least[i]:.0f} GiB of {device:.0f}: its checkpointing with its micro batch, as "
                       "published, cannot be all that ran")
            print(f"  {row['config.model_name']} on {row['config.n_gpus']:.0f} {row['hardware.accelerator']} "
                  f"tp{row['config.tp']} pp{row['config.pp']} cp{row['config.cp']} ep{row['config.ep']} "
                  f"mb{row['config.micro_batch_size']} {row['config.precision']} ac={row['config.activation_checkpointing']}"
                  f" fsdp={row['config.fsdp']}: {fraction[i]:.2f} x memory{why}")
        oom = frame[frame["status"] == "oom"]
        if len(oom):
            f_oom = analytic.estimate(oom)["memory_fraction"]
            print(f"  published OOM rows: {len(oom)}, called infeasible {int((f_oom > 1).sum())}")
        given = pd.to_numeric(frame["metrics.peak_memory_gib"], errors="coerce")
        rows = frame[given.notna()]
        if len(rows):
            pred = analytic.estimate(rows)["peak_allocated_bytes"] / GIB
            r = pred / given[given.notna()]
            known_ac = rows["config.activation_checkpointing"].notna()
            default_ac = rows["annotations.perfzoo_derived"].fillna("").str.contains(
                r"activation_checkpointing=\S+ \(\S+'s default", regex=True)
            for label, part in (("checkpointing stated", r[known_ac & ~default_ac].dropna()),
                                ("checkpointing the framework's default", r[known_ac & default_ac].dropna()),
                                ("checkpointing not stated (none assumed)", r[~known_ac].dropna())):
                if len(part):
                    print(f"  published peak memory (GiB, torch's peak reserved) vs predicted peak allocated, "
                          f"{label}: {_spread(part)}")


def rule_section() -> None:
    print("\n== the fits rule: derived from measured peaks, checked on what ran ==")
    own = pd.concat([load_dataset(name).frame for name in ("llm-h100", "llm-h200")], ignore_index=True)
    ok = own[own["status"] == "ok"]
    measured = pd.to_numeric(ok["metrics.peak_memory_gib"], errors="coerce") * GIB
    predicted = analytic.estimate(ok)["peak_allocated_bytes"]
    error = peak_error(measured, predicted)
    print(f"measured / predicted peak allocated, {int(measured.notna().sum())} ok jobs (llm-h100, llm-h200): "
          f"{1 - PEAK_RISK:.0%} quantile {error:.3f} (PEAK_ERROR {PEAK_ERROR:g})")
    published = load_dataset("published-llm").frame
    for label, rule in (("derived rule", MemoryRule()), ("flat 10% margin", MemoryRule(margin=0.10))):
        verdict = analytic.least_recompute(published, rule)
        ran = (published["status"] == "ok").to_numpy() & np.isfinite(verdict["memory_bytes"].to_numpy())
        called = int((ran & ~verdict["fits"].to_numpy()).sum())
        mine = analytic.least_recompute(own, rule)["fits"].to_numpy()
        oom, done = (own["status"] == "oom").to_numpy(), (own["status"] == "ok").to_numpy()
        print(f"{label}: published-llm ran and called infeasible {called} of {int(ran.sum())} ({called / ran.sum():.1%}); "
              f"perfzoo's own OOMs called feasible {int((oom & mine).sum())} of {int(oom.sum())}, ok jobs called "
              f"infeasible {int((done & ~mine).sum())} of {int(done.sum())} ({(done & ~mine).sum() / done.sum():.1%})")


def accuracy_section() -> None:
    print("\n== measured / analytic-ideal tokens/s per source (ok rows with a target) ==")
    parts = []
    for name, path in published_tables().items():
        frame = load_dataset(str(path)).frame
        ok = frame[(frame["status"] == "ok") & frame["metrics.throughput_per_device"].notna()]
        est = analytic.estimate(ok)
        parts.append(pd.DataFrame({
            "source": name, "moe": np.where(ok["config.n_experts"].fillna(1) > 1, "MoE", "dense"),
            "accelerator": ok["hardware.accelerator"], "precision": ok["config.precision"].fillna("?"),
            "ratio": ok["metrics.throughput_per_device"] / est["throughput_per_device"]}))
    table = pd.concat(parts)

    def stats(g: pd.Series) -> pd.Series:
        g = g.dropna()
        return pd.Series({"rows": len(g), "p10": g.quantile(.1), "median": g.median(), "p90": g.quantile(.9)})

    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(table.groupby("source")["ratio"].apply(stats).unstack().round(3).to_string())
        print(table.groupby(["source", "moe"])["ratio"].apply(stats).unstack().round(3).to_string())
        print(table.groupby(["source", "moe", "accelerator", "precision"])["ratio"].apply(stats).unstack()
              .round(3).to_string())


SECTIONS = {"memory": memory_section, "published": published_section, "rule": rule_section,
            "accuracy": accuracy_section}


class _Tee(io.StringIO):
    """Standard output that is also kept (the markdown report holds what was printed)."""
    def write(self, text: str) -> int:
        sys.__stdout__.write(text)
        return super().write(text)


def markdown(argv: list[str], summary: list[dict], printed: dict[str, str]) -> str:
    """The report as a markdown page: how it was made, the memory table, each section as printed."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).parent).stdout.strip() or "unknown"
    lines = ["# Memory benchmark", "",
             "Written by `python scripts/memory_benchmark.py`; do not edit by hand. The analytic memory model "
             "(`perfzoo.analytic.memory`) against the peaks perfzoo's own GPU jobs measured "
             "(`torch.cuda.max_memory_allocated`), its feasibility calls against their OOMs, and the published "
             "layouts it calls infeasible on their own hardware.", "",
             f"- command: `python scripts/memory_benchmark.py {' '.join(argv)}`",
             f"- commit: `{commit}`", f"- date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC", ""]
    if summary:
        header = list(summary[0])
        lines += ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
        lines += ["| " + " | ".join(str(row[k]) for k in header) + " |" for row in summary] + [""]
    for name, text in printed.items():
        lines += [f"## {name}", "", "```text", text.strip("\n"), "```", ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--section", choices=sorted(SECTIONS), action="append",
                        help="a section to print (repeatable; default: all)")
    parser.add_argument("--out", metavar="FILE.md", help="also write the report as markdown (e.g. "
                                                         "docs/results/memory-benchmark.md, a page of the docs)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # unknown accelerators of the published tables: NaN, listed as unpriced
    summary, printed = [], {}
    for name in args.section or list(SECTIONS):
        with contextlib.redirect_stdout(_Tee()) as out:
            summary += SECTIONS[name]() or []
        printed[name] = out.getvalue()
    if args.out:
        Path(args.out).write_text(markdown(argv, summary, printed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
