"""The shipped predictors: per dataset, the member :data:`~perfzoo.evaluation.ranking.BEST_RULE`
picks, fitted on every labelled job and wrapped with its prediction interval where its outputs are
throughput (:func:`perfzoo.zoo.calibrate.fit_with_interval`: a :class:`~perfzoo.zoo.interval.Interval`),
saved under ``artifacts/`` and listed in ``best.json``.

:func:`write_best` writes ``best.json``; :func:`perfzoo.zoo.load_best` reads it back. An
artifact is refitted only when what it depends on changed (:func:`artifact_key`: the dataset's
content hash, the member's name, parameters and code), so a rerun does not churn the
repository; a partial rerun keeps the entries of the datasets it did not cover.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from perfzoo.datasets.dataset import Dataset
from perfzoo.evaluation import metrics as M
from perfzoo.evaluation.ranking import (ANCHOR_RULE, ARTIFACT_BUDGET_BYTES, BEST_RULE, COVERAGE_FLOOR, FIT_BUDGET_S,
                                        anchor_pick, best_per_split, covers_too_little, shipping_order, task_id)
from perfzoo.evaluation.runner import set_threads
from perfzoo.evaluation.tasks import PredictorSpec, stable_hash
from perfzoo.zoo.base import outdated
from perfzoo.zoo.calibrate import fit_with_interval

BEST_FILE = "best.json"
ARTIFACTS_DIR = "artifacts"


def fit_artifact(dataset: Dataset, spec: PredictorSpec, out_dir: Path) -> dict[str, Any]:
    """Fit ``spec`` and its interval on every labelled job of ``dataset`` (one thread) and save it
    under ``out_dir`` as ``<dataset>--<member>/`` (an import path's ``:`` as ``_``), replacing the
    dataset's previous artifact."""
    labelled = dataset.is_labelled
    est = spec.build(seed=0)
    set_threads(est, 1)
    with threadpool_limits(limits=1):
        model = fit_with_interval(est, dataset)
    fit_s = model.fit_time_s_  # the member's own fit (an Interval's too: without its cross-fits)
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob(f"{dataset.name}--*"):
        _remove(old)
    saved = model.save(out_dir / f"{dataset.name}--{re.sub(r'[^A-Za-z0-9._-]', '_', spec.name)}")
    size = sum(f.stat().st_size for f in saved.rglob("*") if f.is_file())
    return {"path": saved, "fit_time_s": fit_s, "bytes": int(size), "n_train": int(labelled.sum())}


def artifact_key(dataset: Dataset, spec: PredictorSpec) -> str:
    """What an artifact depends on: the dataset's content and the member's name, parameters, code."""
    return stable_hash({"data": dataset.content_hash(), "predictor": spec.cache_identity()})[:16]


def _fit_or_reuse(ds: Dataset, spec: PredictorSpec, out: Path, previous: dict[str, Any]) -> dict[str, Any]:
    """The artifact of ``spec`` on ``ds``: the one saved last time when nothing it depends on
    changed (no churn in the repository on a rerun), else a fresh fit."""
    key = artifact_key(ds, spec)
    old = previous.get(ds.name) or {}
    path = out / old["artifact"] if old.get("artifact") else None
    if old.get("artifact_key") == key and path is not None and path.exists():
        return {"path": path, "fit_time_s": old.get("artifact_fit_time_s", float("nan")),
                "bytes": int(old.get("artifact_bytes", 0)), "n_train": int(old.get("artifact_n_train", 0)), "key": key}
    art = fit_artifact(ds, spec, out / ARTIFACTS_DIR)
    art["key"] = key
    return art


def _passed(row: pd.Series, why: str) -> dict[str, Any]:
    """A best.json ``passed_over`` entry: a member not shipped, and why."""
    return {"predictor": row["predictor"], "ship_score": round(float(row["ship_score"]), 4),
            "ship_kendall": round(float(row["ship_kendall"]), 4), "ship_mape": round(float(row["ship_mape"]), 2),
            "why": why}


def _ship(ds: Dataset, summary: pd.DataFrame, by_spec: dict[str, PredictorSpec], out: Path, artifacts: bool,
          previous: dict[str, Any]) -> Optional[dict[str, Any]]:
    """The best.json entry of one dataset by :data:`BEST_RULE`, its artifact fitted and saved."""
    cands = shipping_order(summary, ds.name)
    if cands.empty:
        return None
    passed_over: list[dict[str, Any]] = []
    chosen, art = None, None
    for _, row in cands.iterrows():
        spec = by_spec.get(row["predictor"])
        if row["fit_time_s_median"] > FIT_BUDGET_S:
            passed_over.append(_passed(row, f"median fit {row['fit_time_s_median']:.1f} s > {FIT_BUDGET_S:g} s"))
            continue
        if not artifacts or spec is None:
            chosen = row
            break
        try:
            art = _fit_or_reuse(ds, spec, out, previous)
        except Exception as exc:  # report, try the next one
            passed_over.append(_passed(row, f"artifact not saved: {type(exc).__name__}: {exc}"))
            continue
        if art["bytes"] > ARTIFACT_BUDGET_BYTES:
            passed_over.append(_passed(row, f"artifact {art['bytes'] / 2**20:.1f} MiB > "
                                            f"{ARTIFACT_BUDGET_BYTES / 2**20:g} MiB"))
            _remove(Path(art["path"]))
            art = None
            continue
        chosen = row
        break
    note = None
    if chosen is None:  # nothing fits the budgets: ship the most accurate, and say so
        chosen = cands.iloc[0]
        note = "no member fits the fit-time and size budgets; the most accurate is shipped"
        spec = by_spec.get(chosen["predictor"])
        if artifacts and spec is not None:
            try:
                art = _fit_or_reuse(ds, spec, out, previous)
            except Exception as exc:
                note += f"; artifact not saved: {type(exc).__name__}: {exc}"
    if not covers_too_little(chosen.to_frame().T).iloc[0]:  # who scored higher but covers a source too little
        for _, row in cands[covers_too_little(cands) & (cands["ship_score"] > chosen["ship_score"])].iterrows():
            passed_over.append(_passed(row, f"its 80% interval covers {row['source_coverage_min']:.2f} of a held-out "
                                            f"source's rows, under {COVERAGE_FLOOR:.2f}"))
    spec = by_spec.get(chosen["predictor"])
    entry: dict[str, Any] = {
        "predictor": chosen["predictor"], "split": chosen["split"],
        "kendall": round(float(chosen["kendall_mean"]), 4), "spearman": round(float(chosen["spearman_mean"]), 4),
        "pearson": round(float(chosen["pearson_mean"]), 4), "fit_time_s": round(float(chosen["fit_time_s_mean"]), 3),
        "fit_time_s_median": round(float(chosen["fit_time_s_median"]), 3),
        "runs": int(chosen["runs"]), "content_hash": ds.content_hash(),
        "name": spec.name if spec is not None else chosen["predictor"],
        "params": {k: v for k, v in spec.params} if spec is not None else {},
        "artifact": None, "passed_over": passed_over,
        "ship_score": round(float(chosen["ship_score"]), 4),
        "ship_kendall": round(float(chosen["ship_kendall"]), 4),
        "ship_mape": round(float(chosen["ship_mape"]), 2),
        "ship_splits": {c.split("@", 1)[1]: round(float(chosen[c]), 4) for c in chosen.index if c.startswith("kendall@")},
        "mape_splits": {c.split("@", 1)[1]: round(float(chosen[c]), 2) for c in chosen.index if c.startswith("mape@")},
    }
    entry["tasks"] = {split: task_id(summary, ds.name, split) for split in dict.fromkeys(
        [*entry["ship_splits"], *entry["mape_splits"]])}
    if note:
        entry["note"] = note
    if art is not None:
        entry.update(artifact=str(Path(art["path"]).relative_to(out)), artifact_bytes=art["bytes"],
                     artifact_n_train=art["n_train"], artifact_fit_time_s=round(art["fit_time_s"], 3),
                     artifact_key=art["key"])
    anchor = anchor_pick(summary, ds.name)
    if anchor is not None:  # what --calibrate refits and anchors (zoo.best.anchor_member)
        aspec = by_spec.get(anchor["predictor"])
        entry["calibrate"] = {"predictor": anchor["predictor"], "name": aspec.name if aspec else anchor["predictor"],
                              "params": {k: v for k, v in aspec.params} if aspec else {}, "split": anchor["split"],
                              **{f"{m}_within_{k}": round(float(anchor.get(f"{m}_within_{k}_mean", np.nan)), 3)
                                 for k in M.WITHIN_SHOTS for m in ("mape", "coverage")}}
    entry["best_by_split"] = {split: {"predictor": b["predictor"], "kendall": round(float(b["kendall_mean"]), 4),
                                      "spearman": round(float(b["spearman_mean"]), 4),
                                      "pearson": round(float(b["pearson_mean"]), 4)}
                              for split, b in best_per_split(summary, ds.name)}
    return entry


def refit_shipped(datasets: Sequence[Dataset], out: Path, context: dict[str, Any]) -> list[str]:
    """Each shipped predictor of ``datasets`` whose data changed since it was fitted (``content_hash``),
    or that was saved in an older layout (:func:`perfzoo.zoo.base.outdated`), fitted again on the data
    as it is now: the same member and parameters, its scores left as the benchmark gave them (a loader
    that reads more of a table changes the data, not which member ships); its entry says so
    (``refitted``: when, at which commit, the data it was scored on). ``out/best.json`` is rewritten;
    returns the names refitted.
    """
    path = out / BEST_FILE
    doc = json.loads(path.read_text())
    done = []
    for ds in datasets:
        entry = doc["datasets"].get(ds.name)
        if entry is None or not entry.get("artifact") or (entry.get("content_hash") == ds.content_hash()
                                                           and outdated(out / entry["artifact"]) is None):
            continue
        spec = PredictorSpec.of(entry["name"], params=entry.get("params") or {})
        art = fit_artifact(ds, spec, out / ARTIFACTS_DIR)
        entry["refitted"] = {"date": context.get("date"), "commit": context.get("commit"),
                             "scored_on": entry.get("refitted", {}).get("scored_on", entry["content_hash"])}
        entry.update(content_hash=ds.content_hash(), artifact=str(Path(art["path"]).relative_to(out)),
                     artifact_bytes=art["bytes"], artifact_n_train=art["n_train"],
                     artifact_fit_time_s=round(art["fit_time_s"], 3), artifact_key=artifact_key(ds, spec))
        done.append(ds.name)
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return done


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def write_best(summary: pd.DataFrame, datasets: Sequence[Dataset], predictors: Sequence[PredictorSpec],
               out: Path, context: dict[str, Any], *, artifacts: bool = True) -> dict[str, Any]:
    """Pick, fit and save each dataset's shipped predictor; write and return ``out/best.json``.

    ``context`` (:func:`~perfzoo.evaluation.report.run_context`) gives the date and commit;
    ``artifacts=False`` picks without fitting or saving anything (the fit-time budget still applies).
    """
    by_spec = {p.display: p for p in predictors}
    best_doc: dict[str, Any] = {"rule": BEST_RULE, "calibrate_rule": ANCHOR_RULE, "generated": context.get("date"),
                                "commit": context.get("commit"), "datasets": {}}
    previous: dict[str, Any] = {}
    if (out / BEST_FILE).exists():
        try:
            previous = json.loads((out / BEST_FILE).read_text()).get("datasets", {})
        except ValueError:
            previous = {}
    for ds in datasets:
        entry = _ship(ds, summary, by_spec, out, artifacts, previous)
        if entry is not None:
            best_doc["datasets"][ds.name] = entry
    if artifacts:
        # a partial rerun (--datasets A) keeps the shipped predictors of the datasets it did
        # not cover, so load_best keeps working for them
        for name, entry in previous.items():
            if name not in best_doc["datasets"] and entry.get("artifact") and (out / entry["artifact"]).exists():
                best_doc["datasets"][name] = entry
    (out / BEST_FILE).write_text(json.dumps(best_doc, indent=2, default=str) + "\n")
    return best_doc
