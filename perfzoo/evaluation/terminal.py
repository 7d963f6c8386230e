"""What ``python -m perfzoo.bench`` prints on the terminal: the benchmark tasks a run covers
(:func:`print_tasks`, ``--list-tasks``), the best member of each dataset and split when a run ends
(:func:`print_headline`), and the cross-dataset rows (:func:`print_cross`, ``--train/--test``,
as a table or JSON lines). What it writes into the leaderboard folder is
:mod:`perfzoo.evaluation.leaderboard`'s.

>>> _num(0.12345), _num(float("nan"), width=3)
('   0.123', '  –')
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, Sequence

from perfzoo.datasets.dataset import Dataset
from perfzoo.evaluation.cross import CROSS_METRICS, CrossConfig
from perfzoo.evaluation.ranking import best_per_split, summarize
from perfzoo.evaluation.runner import Results
from perfzoo.evaluation.slots import MIN_LAYOUTS
from perfzoo.evaluation.suite import BenchmarkTask

JSON_FIELDS = ("predictor", "train", "test", "shots", "draws", "n_train", "n_test", "groups", "groups_skipped",
               *CROSS_METRICS, "kendall_std", "mape_std", "mape_unanchored", "error")


def print_tasks(defined: Sequence[tuple[Dataset, BenchmarkTask]], as_json: bool = False) -> None:
    """One line per task: its id, partitions, seeds and the labelled rows of its first partition
    (``as_json``: its definition as a JSON object per line)."""
    if as_json:
        for _, bt in defined:
            print(json.dumps(bt.definition()))
        return
    width = max([len(bt.id) for _, bt in defined] + [4])
    print(f"{'task':{width}}  {'partitions':>10}  {'seeds':7}  {'train/test':>11}  data")
    for ds, bt in defined:
        first = bt.partitions()[0]
        ok = ds.is_labelled
        seeds = (f"{bt.seeds[0]}-{bt.seeds[-1]}" if bt.seeds == tuple(range(bt.seeds[0], bt.seeds[-1] + 1))
                 else ",".join(map(str, bt.seeds))) if bt.seeds else "-"
        print(f"{bt.id:{width}}  {len(bt.partitions()):>10}  {seeds:7}  "
              f"{f'{int(ok[first.train].sum())}/{int(ok[first.test].sum())}':>11}  {bt.content_hash}")



def print_headline(results: Results, out: Path, wall: float) -> None:
    """After a run: the best member of each dataset and split by Kendall (the ★ rule,
    :func:`~perfzoo.evaluation.ranking.best_per_split`), the failed tasks, the fits computed and
    cached, the wall time and what was written into ``out``."""
    if results.frame.empty:  # only the transfer matrix ran
        print(f"wall time {wall:.0f} s; wrote {out}/transfer.md, transfer.csv")
        return
    summary = summarize(results.frame)
    print(f"\n{'dataset':22} {'split':26} {'best predictor':20} {'Kendall':>8} {'Spearman':>8} {'Pearson':>8} "
          f"{'MAPE %':>8} {'MdAPE %':>8}")
    for name in dict.fromkeys(results.frame["dataset"]):  # the datasets in the order they ran
        for split, b in best_per_split(summary, name):
            print(f"{name:22} {split:26} {b['predictor']:20} {b['kendall_mean']:8.3f} "
                  f"{b['spearman_mean']:8.3f} {b['pearson_mean']:8.3f} {_num(b['mape_mean'], 1)} {_num(b['mdape_mean'], 1)}")
    if results.errors:
        print(f"\n{len(results.errors)} task(s) failed; see the Errors section of {out / 'README.md'}", file=sys.stderr)
    print(f"\n{results.computed} fits computed, {results.cached} from the cache; wall time {wall:.0f} s; "
          f"wrote {out}/README.md, results.csv, best.json, figures/")



def print_cross(rows: list[dict[str, Any]], config: CrossConfig) -> None:
    """The rows of :func:`cross` as JSON lines (``config.json``) or a table."""
    if config.json:
        for r in rows:
            print(json.dumps({k: _clean(r.get(k)) for k in JSON_FIELDS}, allow_nan=False))
        return
    if not rows:
        return
    r0 = rows[0]
    print(f"train: {r0['train']}  ->  test: {r0['test']}  (± : standard deviation over the draws of the shots)")
    print(f"{'shots':>5} {'predictor':24} {'n_train':>7} {'n_test':>6} {'draws':>5} {'Kendall':>8} {'±':>6} "
          f"{'grouped':>8} {'MAPE %':>7} {'±':>6} {'MdAPE %':>7} {'pred/meas':>9} {'80% cover':>9} {'hi/lo':>6} "
          f"{'slots':>5} {'slot τ':>7} {'spread':>6} {'regret':>6}")
    for r in rows:
        if r["error"] and not r["draws"]:
            print(f"{r['shots']:>5} {r['predictor']:24} error: {r['error']}")
            continue
        print(f"{r['shots']:>5} {r['predictor']:24} {r['n_train']:>7} {r['n_test']:>6} {r['draws']:>5} "
              f"{_num(r['kendall'])} {_num(r['kendall_std'], 3, 6)} {_num(r['grouped_kendall'])} "
              f"{_num(r['mape'], 1, 7)} {_num(r['mape_std'], 1, 6)} {_num(r['mdape'], 1, 7)} "
              f"{_num(r['ratio_median'], 2, 9)} {_num(r['coverage'], 2, 9)} {_num(r['interval_width'], 2, 6)} "
              f"{_num(r['slots'], 0, 5)} {_num(r['slot_kendall'], 3, 7)} {_num(r['slot_spread'], 2, 6)} "
              f"{_num(r['slot_regret'], 3, 6)}")
    print(f"slots: one model on one cluster at one sequence, batch, task and framework, >= {MIN_LAYOUTS} layouts "
          "measured apart (perfzoo.evaluation.slots); slot τ: mean Kendall inside them; spread: predicted over "
          "measured max/min, median; regret: 1 - measured of the predicted best / the best, median")
    if config.shots_within:
        for r in rows:
            if r["shots"]:
                print(f"shots within: {r['shots']} per group anchor {r['predictor']} in {_num(r['groups'], 0, 1)} groups "
                      f"of {r['test']}; {_num(r['groups_skipped'], 0, 1)} groups of {r['shots']} rows or fewer skipped; "
                      f"n_test = rows scored per draw (shots ranked nothing: Kendall is not scored); unanchored, "
                      f"the same rows' MAPE is {_num(r.get('mape_unanchored', float('nan')), 1, 1)}%")


def _clean(v: Any) -> Any:
    """``v`` as JSON writes it: numpy scalars as Python ones, NaN and infinities as None."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if hasattr(v, "item"):
        v = v.item()
        return None if isinstance(v, float) and not math.isfinite(v) else v
    return v


def _num(v: Any, digits: int = 3, width: int = 8) -> str:
    """``v`` in a column ``width`` wide with ``digits`` decimals; a dash where it is no finite number."""
    return f"{v:{width}.{digits}f}" if isinstance(v, (int, float)) and math.isfinite(v) else f"{'–':>{width}}"


__all__ = ["JSON_FIELDS", "print_cross", "print_headline", "print_tasks"]
