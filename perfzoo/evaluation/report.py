"""The leaderboard report: ``README.md``, its markdown tables and the run's context.

:func:`readme` lays out, per dataset and split, a table of members with every metric as mean
± 2 std over seeds (group splits: over held-out groups), the best value of each column in bold
and the ★ of :data:`~perfzoo.evaluation.ranking.STAR_RULE` marked, the CubicML paper's figures
and the issue's targets beside (:data:`PAPER`, :data:`TARGETS`), and the command, commit,
machine and date that produced it (:func:`run_context`, from the harness's environment capture).
The absolute errors (MAPE, MdAPE, median predicted/measured) and the interval's coverage are n/a
for members whose ``output`` tag is ``score``; ``probability`` members get a ROC AUC line under
the table.

>>> _fmt(0.91234, 0.01, 3)
'0.912 ± 0.020'
"""

from __future__ import annotations

import platform
from datetime import datetime, timezone
from fnmatch import fnmatch
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from harness.environment import cpu_cores, cpu_model, git_commit, library_versions, ram_gib
from perfzoo.datasets.dataset import Dataset
from perfzoo.evaluation import metrics as M
from perfzoo.evaluation.figures import curve_figure, scatter_figure
from perfzoo.evaluation.ranking import (ANCHOR_RULE, BEST_RULE, STAR_RULE, best_per_split, pick_best, split_order,
                                        summarize, task_id)
from perfzoo.evaluation.runner import Results
from perfzoo.evaluation.splits import SOURCE_SPLIT
from perfzoo.evaluation.suite import RULES

# the columns of a split table: (result column, header, digits)
TABLE_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("kendall", "Kendall", 3),
    ("spearman", "Spearman", 3),
    ("pearson", "Pearson", 3),
    ("grouped_kendall", "grouped Kendall", 3),
    ("top1_regret", "top-1 regret", 3),
    ("top5_regret", "top-5 regret", 3),
    ("top10_regret", "top-10 regret", 3),
    ("precision_at_1", "P@1", 2),
    ("precision_at_5", "P@5", 2),
    ("precision_at_10", "P@10", 2),
    ("mape", "MAPE %", 1),
    ("mdape", "MdAPE %", 1),
    ("ratio_median", "pred/meas", 2),
    ("coverage", "80% cover", 2),
    ("interval_width", "hi/lo", 2),
    ("slot_kendall", "slot Kendall", 3),
    ("slot_spread", "slot spread", 2),
    ("slot_regret", "slot regret", 3),
    *((f"{m}_within_{k}", f"{k}-shot {h}", d) for k in M.WITHIN_SHOTS for m, h, d in
      (("mape", "MAPE %", 1), ("coverage", "cover", 2))),
    ("fit_time_s", "fit s", 2),
    ("predict_time_s", "predict s", 3),
)

# what the CubicML paper (arXiv 2409.04585) and issue 5 report, shown beside our tables
PAPER: dict[tuple[str, str], str] = {
    ("*llm*", "random"): "CubicML LLM predictor (GBR, 568 in-house jobs, 423/145 random split): "
                         "Kendall 0.88, Spearman 0.97, Pearson 0.97 (Fig. 3 left).",
    ("*llm*", "temporal"): "CubicML temporal split (older jobs predict newer): Fig. 3 middle, a "
                           "'correlation drop' from random, no numbers given.",
    ("*llm*", "scale"): "CubicML scale split (<= 3072 GPUs predict >= 4096): Fig. 3 right, 'more "
                        "challenges ... still better than random guess', no numbers given.",
    ("vtrain-a100", "random"): "Issue 5 reference on this split: AutoGluon-Tabular 'medium' Kendall "
                               "0.976 (60 s fit); the paper's GBR recipe 0.894. Paper LLM figures: "
                               "Kendall 0.88 / Spearman 0.97 / Pearson 0.97.",
    ("fsdp*", "*"): "CubicML ads predictor (10-MLP rank ensemble, FSDP sharding on 128 H100): "
                    "Kendall 0.70, Pearson 0.86, Spearman 0.86 (validation set, Fig. 2b).",
    ("*", "curve"): "CubicML Fig. 4 right (LLM, random split, 10 perturbations, +-2 std bands): 50 "
                    "examples a decent start; Pearson and Spearman >= 0.9 after 150.",
}
TARGETS: dict[tuple[str, str], str] = {
    ("vtrain-a100", "random"): "Kendall >= 0.98",
    ("vtrain-a100", "scale"): "Kendall >= 0.9",
    ("vtrain-a100", "curve"): "Spearman >= 0.9 by 100 training examples",
    ("published-llm", "temporal"): "Kendall >= 0.85",
    ("published-llm", "scale"): "Kendall >= 0.75",
    ("fsdp-cpu", "*"): "Kendall >= 0.8, Spearman and Pearson >= 0.92",
}


def _lookup(table: dict[tuple[str, str], str], dataset: str, split: str) -> Optional[str]:
    kind = split.split(":")[0]
    exact = table.get((dataset, kind))
    if exact:
        return exact
    for wildcard in (False, True):  # a pattern naming this split kind beats a '*' one
        for (dpat, spat), text in table.items():
            if fnmatch(dataset, dpat) and ((spat == "*") if wildcard else (spat == kind)):
                return text
    return None


# --- the run's context ----------------------------------------------------------------------


def run_context(command: str, wall_time_s: Optional[float] = None) -> dict[str, Any]:
    """The command, commit, machine and date that produced a leaderboard."""
    commit = git_commit()
    shown = "unknown" if commit is None else (
        commit.removesuffix("-dirty")[:7] + (" (with uncommitted changes)" if commit.endswith("-dirty") else ""))
    ram = ram_gib()
    machine = f"{cpu_model()}, {cpu_cores()} cores, {f'{ram:.0f} GiB RAM' if ram else ''}, " \
              f"{platform.system()} {platform.release()}"
    return {
        "command": command,
        "commit": shown,
        "machine": machine.replace(", ,", ","),
        "python": platform.python_version(),
        "versions": {k: v for k, v in library_versions().items() if v is not None},
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "wall_time_s": wall_time_s,
    }


# --- formatting ---------------------------------------------------------------------------


def _fmt(mean: float, std: float, digits: int) -> str:
    if mean is None or not np.isfinite(mean):
        return "–"
    if std is None or not np.isfinite(std) or std == 0:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {2 * std:.{digits}f}"


def split_table(summary: pd.DataFrame, dataset: str, split: str) -> str:
    """A markdown table of every throughput and score member on one split (mean ± 2 std)."""
    s = summary[(summary["dataset"] == dataset) & (summary["split"] == split)
                & (summary["output"] != "probability")].copy()
    if s.empty:
        return ""
    s = s.sort_values("kendall_mean", ascending=False, na_position="last")
    best = pick_best(summary, dataset, split)
    # the shots-within columns only where the split scored them (leaving a published source out)
    cols = [(c, h, d) for c, h, d in TABLE_COLUMNS if f"{c}_mean" in s.columns
            and (c not in M.WITHIN_METRICS or s[f"{c}_mean"].notna().any())]
    bold: dict[str, float] = {}
    for c, _, _ in cols:
        vals = s[f"{c}_mean"].to_numpy(dtype=float)
        vals = vals[np.isfinite(vals)]
        if vals.size and c in M.TARGET_VALUE:  # the closest to its target
            bold[c] = vals[np.argmin(np.abs(vals - M.TARGET_VALUE[c]))]
        elif vals.size:
            bold[c] = vals.max() if M.HIGHER_IS_BETTER.get(c, True) else vals.min()
    lines = ["| predictor | " + " | ".join(h for _, h, _ in cols) + " | runs |",
             "| --- |" + " ---: |" * (len(cols) + 1)]
    for _, row in s.iterrows():
        name = f"**{row['predictor']}** ★" if best is not None and row["predictor"] == best["predictor"] else row["predictor"]
        cells = []
        for c, _, d in cols:
            mean, std = row[f"{c}_mean"], row[f"{c}_std"]
            if c in (*M.ABSOLUTE_METRICS, *M.INTERVAL_METRICS) and row["output"] == "score":
                cells.append("n/a")
                continue
            text = _fmt(mean, std, d)
            if c in bold and np.isfinite(mean) and np.isclose(mean, bold[c], rtol=0, atol=10 ** -(d + 1)):
                text = f"**{text}**"
            cells.append(text)
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {int(row['runs'])} |")
    return "\n".join(lines)


def held_out_lines(frame: pd.DataFrame, dataset: str, member: str, role: str) -> list[str]:
    """Leaving one source out, per held-out source: ``member``'s (``role``: shipped, ...) rank, error and 80%
    coverage as it comes (0 shots), then anchored by 1 and 3 runs of each held-out group
    (:mod:`perfzoo.evaluation.anchored`): the numbers a user with one profiling run can act on."""
    rows = frame[(frame["dataset"] == dataset) & (frame["split"] == SOURCE_SPLIT) & (frame["predictor"] == member)]
    if rows.empty or not any(c in rows.columns for c in M.WITHIN_METRICS):
        return []
    head = ["held-out source", "rows", "Kendall", "MAPE %", "80% cover"]
    head += [f"{k}-shot {h}" for k in M.WITHIN_SHOTS for h in ("MAPE %", "cover")]
    out = [f"The {role} **{member}** per held-out source, as it comes and anchored by K runs of each held-out "
           "group (model shape, GPU, precision, task, framework: `perfzoo/zoo/offsets.py`), the group's other rows "
           "scored (mean of 5 draws; groups of K rows or fewer skipped):", "",
           "| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1)]
    for _, r in rows.sort_values("fold").iterrows():
        cells = [str(r["fold"]), f"{int(r['n_test'])}", _fmt(r["kendall"], 0, 3), _fmt(r["mape"], 0, 1),
                 _fmt(r["coverage"], 0, 2)]
        cells += [_fmt(r.get(f"{m}_within_{k}", np.nan), 0, d) for k in M.WITHIN_SHOTS
                  for m, d in (("mape", 1), ("coverage", 2))]
        out.append("| " + " | ".join(cells) + " |")
    return out + [""]


def curve_table(summary: pd.DataFrame, dataset: str, metric: str = "spearman") -> str:
    s = summary[(summary["dataset"] == dataset) & (summary["kind"] == "curve")]
    if s.empty:
        return ""
    sizes = sorted(int(n) for n in s["curve_n"].dropna().unique())
    lines = [f"| predictor ({metric}) | " + " | ".join(f"n={n}" for n in sizes) + " |",
             "| --- |" + " ---: |" * len(sizes)]
    for pred, grp in s.groupby("predictor", sort=True):
        by_n = {int(r["curve_n"]): r for _, r in grp.iterrows()}
        cells = [_fmt(by_n[n][f"{metric}_mean"], by_n[n][f"{metric}_std"], 3) if n in by_n else "" for n in sizes]
        lines.append(f"| {pred} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --- the README -----------------------------------------------------------------------------


def readme(results: Results, summary: pd.DataFrame, datasets: Sequence[Dataset], context: dict[str, Any],
           best_doc: dict[str, Any], fig_dir: Optional[Path]) -> list[str]:
    """The lines of ``README.md``; figures are drawn into ``fig_dir`` (None: no figures)."""
    L: list[str] = []
    wall = context.get("wall_time_s")
    L += ["# perfzoo leaderboard", "",
          "Written by `python -m perfzoo.bench`; do not edit by hand. Every number is a mean ± 2 standard "
          "deviations over seeds (group splits: over held-out groups); `results.csv` holds every run. Each table "
          "names its benchmark task: `<dataset>/<split>/<hash>` of the data, the split's rows, the seeds and the "
          "metrics (`tasks.json` defines each; `python -m perfzoo.bench --task ID` runs one again).", "",
          f"- command: `{context['command']}`",
          f"- commit: `{context['commit']}`",
          f"- machine: {context['machine']}; Python {context['python']}, "
          + ", ".join(f"{k} {v}" for k, v in context.get("versions", {}).items()),
          f"- date: {context['date']}" + (f"; wall time {wall / 60:.1f} min" if wall else ""),
          f"- tasks: {results.computed} computed, {results.cached} read from the cache; the fits behind "
          f"these numbers took {_cpu_minutes(results.frame):.0f} CPU-minutes (sum of fit and predict times, one "
          "core each)",
          *[f"- {n}" for n in context.get("notes", [])], "",
          "Metrics (one definition each, `perfzoo/evaluation/metrics.py`), on successful jobs of the test side: "
          "Kendall tau-b, Spearman, Pearson between measured and predicted throughput; grouped Kendall = mean tau "
          "within groups of comparable jobs (same model, scale and accelerator: the choices a searcher makes); top-k regret = 1 - best measured "
          "throughput among the predicted top k / best measured (0 is perfect); P@k = share of the predicted top k "
          "in the measured top k; MAPE and MdAPE = mean and median absolute percentage error; pred/meas = median "
          "predicted / measured throughput (1 is unbiased, 2 is off by 2x); 80% cover = share of the test jobs "
          "inside the member's 80% prediction interval (cross-conformal on log-throughput residuals, folds by "
          "published source where the training side has several, each source weighing the same: "
          "`perfzoo/zoo/conformal.py`; reported on the "
          "transfer splits, where it should lie in 0.70-0.90) and hi/lo its median width as a ratio (these four "
          "are n/a for ranking predictors, whose outputs are scores); fit and "
          "predict time in seconds on one core. Failed jobs (OOM, ...) are scored separately by the `failure` "
          "classifier (ROC AUC). **Bold**: the best value of a column; ★: the best predictor of the split.", "",
          f"★ in a split's table: {STAR_RULE}. The predictor perfzoo ships per dataset (`best.json`, "
          f"artifacts in `artifacts/`, loaded by `perfzoo.zoo.load_best(name)`): {BEST_RULE}.", ""]

    # shipped predictors
    L += ["## Shipped predictors (`best.json`)", "",
          "| dataset | predictor | shipping score | shipping Kendall | Kendall per shipping split | MAPE % per "
          "transfer split | median fit s | artifact | better, passed over |",
          "| --- | --- | ---: | ---: | --- | --- | ---: | --- | --- |"]
    for ds in datasets:
        e = best_doc["datasets"].get(ds.name)
        if not e:
            continue
        art = f"`{e['artifact']}` ({e.get('artifact_bytes', 0) / 1024:.0f} KiB)" if e.get("artifact") else e.get("note", "none")
        over = "; ".join(f"{p['predictor']} ({p['ship_score']:.3f}: {p['why']})" for p in e.get("passed_over", [])) or "–"
        per_split = ", ".join(f"{split} {k:.3f}" for split, k in e["ship_splits"].items())
        per_error = ", ".join(f"{split} {m:.1f}" for split, m in e["mape_splits"].items())
        L.append(f"| {ds.name} | **{e['predictor']}** | {e['ship_score']:.3f} | {e['ship_kendall']:.3f} | {per_split} | "
                 f"{per_error} | {e.get('fit_time_s_median', e['fit_time_s']):.2f} | {art} | {over} |")
    L.append("")
    picks = [(ds.name, e["calibrate"]) for ds in datasets if (e := best_doc["datasets"].get(ds.name, {})).get("calibrate")]
    if picks:
        L += [f"`--calibrate` (your runs anchor the predictions, `perfzoo/zoo/anchor.py`) refits, where `--predictor` is "
              f"`best`, {ANCHOR_RULE}: " + "; ".join(
                  f"{name}: **{c['predictor']}** (1-shot MAPE {c['mape_within_1']:.1f}%, cover {c['coverage_within_1']:.2f}; "
                  f"3-shot {c['mape_within_3']:.1f}%, {c['coverage_within_3']:.2f})" for name, c in picks) + ".", ""]

    # headline
    L += ["## Headline: the best predictor (★) per dataset and split", "",
          "| dataset | split | task | best predictor | Kendall | Spearman | Pearson | top-1 regret | MAPE % | MdAPE % | "
          "target (issue 5) |",
          "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for ds in datasets:
        for split, b in best_per_split(summary, ds.name):
            absolute = " | ".join("n/a" if b["output"] == "score" else _fmt(b[f"{c}_mean"], b[f"{c}_std"], 1)
                                  for c in ("mape", "mdape"))
            L.append(f"| {ds.name} | {split} | `{task_id(summary, ds.name, split)}` | {b['predictor']} | "
                     f"{_fmt(b['kendall_mean'], b['kendall_std'], 3)} | "
                     f"{_fmt(b['spearman_mean'], b['spearman_std'], 3)} | {_fmt(b['pearson_mean'], b['pearson_std'], 3)} | "
                     f"{_fmt(b['top1_regret_mean'], b['top1_regret_std'], 3)} | {absolute} | "
                     f"{_lookup(TARGETS, ds.name, split) or ''} |")
        c = _curve_headline(summary, ds.name)
        if c:
            L.append(f"| {ds.name} | curve | `{task_id(summary, ds.name, 'curve')}` | {c} | | | | | | | "
                     f"{TARGETS.get((ds.name, 'curve')) or ''} |")
    L.append("")

    for ds in datasets:
        s_ds = summary[summary["dataset"] == ds.name]
        if s_ds.empty:
            continue
        L += [f"## {ds.name}", ""]
        L.append(_dataset_line(ds))
        entry = best_doc["datasets"].get(ds.name)
        if entry:
            art = f"artifact `{entry['artifact']}` ({entry.get('artifact_bytes', 0) / 1024:.0f} KiB)" if entry.get("artifact") \
                else entry.get("note", "no artifact")
            L += ["", f"Shipped: **{entry['predictor']}** (shipping score {entry['ship_score']:.3f}: Kendall "
                      f"{entry['ship_kendall']:.3f}, MAPE {entry['ship_mape']:.1f}%; {entry['split']} "
                      f"split {entry['kendall']:.3f}, fit {entry['fit_time_s']:.2f} s); {art}."]
        L.append("")
        if fig_dir is not None:
            p = scatter_figure(results, summary, ds.name, fig_dir / f"{ds.name}-scatter.png")
            if p is not None:
                L += [f"![{ds.name} predicted vs measured](figures/{p.name})", ""]
        for split in split_order(s_ds.loc[s_ds["kind"] != "curve", "split"].unique()):
            s_split = s_ds[s_ds["split"] == split]
            runs = int(s_split["runs"].max())
            n_tr, n_te = s_split["n_train"].mean(), s_split["n_test"].mean()
            L += [f"### {split}", "", f"Task `{task_id(summary, ds.name, split)}`. "
                  f"{_split_note(split, results, ds.name)} Train ≈ {n_tr:.0f} ok jobs, "
                  f"test ≈ {n_te:.0f}; up to {runs} runs per predictor.", ""]
            ref = _lookup(PAPER, ds.name, split)
            tgt = _lookup(TARGETS, ds.name, split)
            if ref:
                L += [f"> Paper: {ref}" + (f"  \n> Target: {tgt}." if tgt else ""), ""]
            elif tgt:
                L += [f"> Target: {tgt}.", ""]
            L += [split_table(summary, ds.name, split), ""]
            if entry and split == SOURCE_SPLIT:
                L += held_out_lines(results.frame, ds.name, entry["predictor"], "shipped")
                pick = (entry.get("calibrate") or {}).get("predictor")
                if pick and pick != entry["predictor"]:
                    L += held_out_lines(results.frame, ds.name, pick, "anchoring pick (what `--calibrate` refits and anchors)")
            fail = s_split[s_split["output"] == "probability"]
            if not fail.empty and "roc_auc_mean" in fail.columns:
                r = fail.iloc[0]
                if np.isfinite(r["roc_auc_mean"]):
                    L += [f"Failure classifier (`{r['predictor']}`): ROC AUC {_fmt(r['roc_auc_mean'], r['roc_auc_std'], 3)} "
                          f"on every job of the test side, failed or not ({int(r['runs'])} runs).", ""]
                else:
                    L += [f"Failure classifier (`{r['predictor']}`): ROC AUC n/a (the test side holds only "
                          "successful or only failed jobs).", ""]
        if (s_ds["kind"] == "curve").any():
            L += ["### learning curve", "", f"Task `{task_id(summary, ds.name, 'curve')}`. {RULES['curve']}", ""]
            ref = _lookup(PAPER, ds.name, "curve")
            tgt = TARGETS.get((ds.name, "curve"))
            if ref:
                L += [f"> Paper: {ref}" + (f"  \n> Target: {tgt}." if tgt else ""), ""]
            L += [curve_table(summary, ds.name, "spearman"), "", curve_table(summary, ds.name, "kendall"), ""]
            if fig_dir is not None:
                p = curve_figure(summary, ds.name, fig_dir / f"{ds.name}-curve.png")
                if p is not None:
                    L += [f"![{ds.name} learning curve](figures/{p.name})", ""]

    if results.skipped:
        L += ["## Splits not run", "", "| dataset | split | why |", "| --- | --- | --- |"]
        L += [f"| {s['dataset']} | {s['split']} | {s['reason']} |" for s in results.skipped]
        L.append("")
    if results.errors:
        L += ["## Errors", "", "| dataset | predictor | split | seed | error |", "| --- | --- | --- | --- | --- |"]
        seen = set()
        for e in results.errors:
            k = (e["dataset"], e["predictor"], e["error"])
            if k in seen:
                continue
            seen.add(k)
            L.append(f"| {e['dataset']} | {e['predictor']} | {e['split']} | {e['seed']} | {str(e['error'])[:160]} |")
        L.append("")
    return L


def beside_lines(summary: pd.DataFrame, where: str, reference: pd.DataFrame, yours: Sequence[str]) -> list[str]:
    """A README section: on each task of this run (learning curves aside), the members named in
    ``yours`` beside every member the leaderboard in ``where`` (its ``results.csv`` frame,
    ``reference``) scored on the same task id, best Kendall first."""
    L = ["## Your predictors beside the leaderboard", "",
         f"{', '.join(f'`{y}`' for y in yours) or 'This run'} on each task of this run, beside every member the "
         f"leaderboard in `{where}` scored on the same task id: the same data, rows, seeds and metrics, so the "
         "numbers compare (numbers of two ids do not). Mean ± 2 std over runs.", ""]
    if "task" not in reference.columns:
        return L + [f"`{where}/results.csv` names no task ids (it was written before tasks were versioned): run "
                    "`python -m perfzoo.bench` there again to compare.", ""]
    mine = summary[summary["predictor"].isin(list(yours)) & (summary["kind"] != "curve")
                   & (summary["output"] != "probability")]
    theirs = summarize(reference[~reference["predictor"].isin(list(yours))])
    missing = []
    for task in dict.fromkeys(mine["task"]):
        other = theirs[(theirs["task"] == task) & (theirs["output"] != "probability")] if not theirs.empty else theirs
        if other.empty:
            missing.append(task)
            continue
        rows = pd.concat([mine[mine["task"] == task].assign(where="this run"), other.assign(where=where)])
        rows = rows.sort_values("kendall_mean", ascending=False, na_position="last")
        L += [f"### `{task}`", "", "| predictor | from | Kendall | Spearman | MAPE % | MdAPE % | runs |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
        for _, r in rows.iterrows():
            name = f"**{r['predictor']}**" if r["where"] == "this run" else r["predictor"]
            absolute = " | ".join("n/a" if r["output"] == "score" else _fmt(r[f"{c}_mean"], r[f"{c}_std"], 1)
                                  for c in ("mape", "mdape"))
            L.append(f"| {name} | {r['where']} | {_fmt(r['kendall_mean'], r['kendall_std'], 3)} | "
                     f"{_fmt(r['spearman_mean'], r['spearman_std'], 3)} | {absolute} | {int(r['runs'])} |")
        L.append("")
    if missing:
        L += [f"Not in `{where}`: {', '.join(f'`{t}`' for t in missing)} (its data, rows, seeds or metrics differ "
              "from this run's; `python -m perfzoo.bench --list-tasks` prints the tasks a run covers).", ""]
    return L


def _cpu_minutes(frame: pd.DataFrame) -> float:
    cols = [c for c in ("fit_time_s", "predict_time_s") if c in frame.columns]
    return float(frame[cols].sum().sum()) / 60 if cols else 0.0


def _curve_headline(summary: pd.DataFrame, dataset: str) -> str:
    """'<predictor>: Spearman >= 0.9 from n=...' for the predictor that gets there first."""
    s = summary[(summary["dataset"] == dataset) & (summary["kind"] == "curve")]
    if s.empty:
        return ""
    firsts = []
    for pred, grp in s.groupby("predictor"):
        hit = grp[grp["spearman_mean"] >= 0.9].sort_values("curve_n")
        if not hit.empty:
            firsts.append((int(hit["curve_n"].iloc[0]), pred, float(hit["spearman_mean"].iloc[0])))
    if not firsts:
        top = s.sort_values("spearman_mean").iloc[-1]
        return f"{top['predictor']}: Spearman {top['spearman_mean']:.3f} at n={int(top['curve_n'])} (never >= 0.9)"
    n, pred, val = min(firsts)
    return f"{pred}: Spearman {val:.3f} at n={n} (first n with mean >= 0.9)"


def _dataset_line(ds: Dataset) -> str:
    """One line of facts about a dataset: jobs by status, target, scale split, groups, content hash."""
    n = len(ds)
    status = ds.frame["status"].value_counts().to_dict()
    failed = n - status.get("ok", 0)
    parts = [f"{n} jobs, {status.get('ok', 0)} ok" + (f", {failed} failed ({', '.join(f'{k} {v}' for k, v in status.items() if k != 'ok')})" if failed else "")]
    parts.append(f"target `{ds.target}`")
    parts.append(f"scale split on `{ds.scale_column}` <= {ds.scale_threshold}")
    if ds.comparable_columns:
        parts.append("grouped Kendall within equal " + ", ".join(f"`{c}`" for c in ds.comparable_columns))
    if ds.holdout_columns:
        parts.append("group splits hold out each " + " / ".join(f"`{c}`" for c in ds.holdout_columns))
    parts.append(f"content hash `{ds.content_hash()[:12]}`")
    return "; ".join(parts) + "."


def _split_note(split: str, results: Results, dataset: str) -> str:
    if split.startswith("group:"):
        f = results.frame
        folds = sorted(f.loc[(f["dataset"] == dataset) & (f["split"] == split), "fold"].astype(str).unique())
        return f"Leave one `{split[6:]}` out, in turn: {', '.join(folds)}; averaged over held-out groups."
    return RULES.get(split, "")

