"""``python -m perfzoo.plan benchmark --loop K``: how many runs the measure-and-replan loop needs.

Replayed on every group of three or more measured layouts of one setting (the plan benchmark's
groups, :func:`perfzoo.plan.benchmark.groups_of`, in its tables; with ``--data FILE ...`` in any table
the loaders read): the layouts ranked zero-shot by the member fitted without the group's situation
(:class:`perfzoo.plan.benchmark.Pool`, one fit per situation), then rounds of "propose one layout,
reveal what it measured, anchor, re-rank" (:class:`~perfzoo.plan.belief.Belief`), the proposals
restricted to the group's measured layouts. Per group and proposer: the regret of the best measured
after k runs (after 0: the zero-shot pick, run blind), the runs until it is within 2% and 5% of the
group's best, and where the stopping rule (:func:`perfzoo.plan.propose.stop_rule`) stopped. Beside
the proposers (``ei``, ``thompson``): k layouts at random (the exact share over every draw; runs to
2% the median of :data:`SEEDS` orders), the zero-shot top k, and the CubicML loop, REINFORCE
(:class:`perfzoo.search.Reinforce`, over the knobs the group varies) proposing the best by the
re-anchored prediction each round.

>>> within(np.array([[1.0, 0.9], [0.97, 0.99]]), 0.02).tolist()
[True, False]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo import pricing, zoo
from perfzoo.analytic import least_recompute
from perfzoo.console import InputError, check_writable, guarded
from perfzoo.datasets import load_dataset
from perfzoo.plan.belief import Z80, Belief
from perfzoo.plan.benchmark import GROUP_DATASETS, Pool, _name, groups_of, write_page
from perfzoo.plan.layouts import PlanError, as_run
from perfzoo.plan.propose import STOP_MARGIN, choose, stop_rule
from perfzoo.plan.report import layout_text
from perfzoo.plan.scoring import Scorer
from perfzoo.plan import shrinkage
from perfzoo.plan.shrinkage import RESIDUAL_SD
from perfzoo.search import Formula, Reinforce, propose
from perfzoo.spaces import Categorical, Space

SEEDS = 21  # random orders per group
LARGE = 5  # a group of this many layouts or more: 2-3 layouts are measured whole in 3 runs
KNOBS = ("config.tp", "config.pp", "config.vp", "config.cp", "config.ep", "config.micro_batch_size",
         "config.activation_checkpointing", "config.fsdp", "config.precision", "config.global_batch_size")


def within(best_ratio: np.ndarray, tol: float) -> np.ndarray:
    """Whether the first of each row (the best measured over the group's best) is within ``tol``."""
    return np.asarray(best_ratio)[:, 0] >= 1 - tol


def _runs_to(curve: np.ndarray, best: float, tol: float) -> float:
    """The first k whose best measured so far is within ``tol`` of ``best`` (inf: never)."""
    hit = np.flatnonzero(curve >= (1 - tol) * best)
    return float(hit[0]) if hit.size else math.inf


def replay(pred: np.ndarray, measured: np.ndarray, X: pd.DataFrame, K: int, proposer: str,
           variance: float = RESIDUAL_SD["dense"] ** 2, margin: float = STOP_MARGIN) -> dict:
    """One group's loop: ``curve[k]`` the best measured after k runs (k 0: the zero-shot pick's),
    ``stop`` the run after which the rule stopped (inf: not within ``K``) and the best measured then."""
    mean, runs, vals = np.log(pred), [], []
    launch = np.arange(len(pred))
    curve = [float(measured[int(np.argmax(pred))])]
    stopped, at_stop = math.inf, math.nan
    for k in range(1, min(K, len(pred)) + 2):
        belief = Belief.of(mean, X, runs, vals, variance)  # what the k - 1 runs so far leave
        if runs and math.isinf(stopped) and stop_rule(belief, margin, Z80)[0]:
            stopped, at_stop = float(k - 1), max(vals)
        if k > min(K, len(pred)):
            break
        nxt = (reinforce_pick(belief, X, k) if proposer == "reinforce" else
               np.argsort(-pred, kind="stable")[k - 1:k] if proposer == "topk" else choose(belief, 1, launch, proposer))
        runs.append(int(nxt[0]))
        vals.append(float(measured[nxt[0]]))
        curve.append(max(vals))
    curve += [curve[-1]] * (K + 1 - len(curve))
    return {"curve": np.array(curve), "stop": stopped, "at_stop": at_stop, "runs": runs}


def reinforce_pick(belief: Belief, X: pd.DataFrame, seed: int) -> np.ndarray:
    """The CubicML searcher's pick: REINFORCE over the knobs the group varies, rewarded by the
    re-anchored prediction, among the group's unmeasured layouts (others score nothing)."""
    cols = [c for c in KNOBS if c in X and X[c].astype(str).nunique() > 1] or [KNOBS[0]]
    text = X.reindex(columns=cols).map(str)
    names = [c.split(".", 1)[1] for c in cols]
    reward = {tuple(r): (math.nan if done else math.exp(m))
              for r, m, done in zip(text.to_numpy(), belief.mean, belief.measured)}
    space = Space("loop-group", "command", [Categorical(n, choices=tuple(sorted(text[c].unique()))) for n, c in zip(names, cols)])
    model = Formula(lambda F: np.array([reward.get(tuple(r), math.nan) for r in F[[f"config.{n}" for n in names]]
                                        .map(str).to_numpy()]))
    found = propose(Reinforce(n_samples=240, seed=seed), space, model, top_k=1)
    pick = tuple(str(found.configs[0][n]) for n in names) if len(found) else None
    rows = np.flatnonzero([tuple(r) == pick for r in text.to_numpy()]) if pick else np.zeros(0, dtype=int)
    fallback = np.flatnonzero(~belief.measured)[np.argmax(belief.mean[~belief.measured])]
    return rows[:1] if rows.size and not belief.measured[rows[0]] else np.array([fallback])


def random_curve(measured: np.ndarray, K: int, tol: float) -> tuple[np.ndarray, float]:
    """Over every draw of k layouts at random: the share within ``tol`` of the best after k (exact),
    and the median over :data:`SEEDS` orders of the runs until within it."""
    n, good = len(measured), int((measured >= (1 - tol) * measured.max()).sum())
    share = [1 - math.comb(n - good, k) / math.comb(n, k) if k <= n else 1.0 for k in range(1, K + 1)]
    rng = np.random.default_rng(0)
    runs = [_runs_to(np.maximum.accumulate(measured[rng.permutation(n)]), measured.max(), tol) + 1 for _ in range(SEEDS)]
    return np.array(share), float(np.median(runs))


def groups(config_data: Sequence[str], external_dir: Optional[str]) -> list[tuple[str, pd.DataFrame]]:
    """``(source, rows)`` of every dataset the loop is replayed on: the plan benchmark's, or ``--data``'s."""
    out = []
    if config_data:
        for path in config_data:
            out.append((str(path), groups_of(load_dataset(path, external_dir=external_dir))))
        return out
    for entry in GROUP_DATASETS:
        name = _name(entry)
        if name is not None:
            out.append((name, groups_of(load_dataset(name, external_dir=external_dir))))
    return out


PROPOSERS = ("ei", "thompson", "reinforce")


def trace(group: str, rows: pd.DataFrame, pred: np.ndarray, r: dict) -> list[str]:
    """The default proposer's loop on one group, a line a run: what it proposed, what that measured."""
    m = rows["measured"].to_numpy(dtype=float)
    shown = {"tp", "pp", "vp", "cp", "ep", "dp", "micro_batch_size", "grad_accum", "activation_checkpointing", "fsdp",
             "precision"}
    other = [c for c in rows.columns if str(c).startswith("config.") and c.split(".", 1)[1] not in shown
             and rows[c].map(str).nunique() > 1 and c not in ("config.precision_raw",)]  # what else the group varies

    def text(i: int) -> str:
        row = rows.iloc[i]
        return " ".join([layout_text({k.split(".", 1)[1]: v for k, v in row.items() if str(k).startswith("config.")}),
                         *(f"{c.split('.', 1)[1]}={row[c]}" for c in other)])
    pick = int(np.argmax(pred))
    lines = [f"{group}: {len(m)} measured layouts, the best {m.max():,.0f} tok/s/GPU ({text(int(np.argmax(m)))})",
             f"  zero-shot pick: {text(pick)}: predicted {pred[pick]:,.0f}, measured {m[pick]:,.0f} "
             f"({m[pick] / m.max() - 1:+.1%} from the best)"]
    for k, i in enumerate(r["runs"], 1):
        lines.append(f"  run {k}: {text(i)}: predicted {pred[i]:,.0f}, measured {m[i]:,.0f}; best so far "
                     f"{r['curve'][k] / m.max() - 1:+.1%} from the group's best"
                     + ("; the stopping rule says stop" if r["stop"] == k else ""))
    return lines


def replay_group(rows: pd.DataFrame, pred: np.ndarray, K: int, variance: Optional[float] = None,
                 traced: bool = False, group: str = "") -> tuple[dict, list[str]]:
    """One group's row of the table (``rows``: its measured layouts, ``measured`` and config columns;
    ``pred``: their predictions): the zero-shot top k, random, and each proposer's replay, with the
    prior variance ``variance`` (None: the residual of the group's kind of model, as plan uses); and,
    with ``traced``, the default proposer's loop on ``group`` line by line."""
    m = rows["measured"].to_numpy(dtype=float)
    rec = {"layouts": len(m), "kind": shrinkage.kind_of_rows(rows)}
    prior = RESIDUAL_SD[rec["kind"]] ** 2 if variance is None else variance
    topk = np.maximum.accumulate(m[np.argsort(-pred, kind="stable")])
    rec["topk"] = np.concatenate([[topk[0]], topk[:K], [topk[-1]] * max(0, K - len(m))])[:K + 1] / m.max()
    for tol, name in ((0.02, "2"), (0.05, "5")):
        share, median = random_curve(m, K, tol)
        rec[f"random_share_{name}"], rec[f"random_runs_{name}"] = share, median
        rec[f"topk_runs_{name}"] = _runs_to(np.concatenate([[math.nan], topk]), m.max(), tol)
    lines: list[str] = []
    for proposer in PROPOSERS:
        r = replay(pred, m, rows, K, proposer, prior)
        rec[proposer] = r["curve"] / m.max()
        for tol, name in ((0.02, "2"), (0.05, "5")):
            rec[f"{proposer}_runs_{name}"] = _runs_to(np.concatenate([[math.nan], r["curve"][1:]]), m.max(), tol)
        rec[f"{proposer}_stop"], rec[f"{proposer}_stop_ratio"] = r["stop"], r["at_stop"] / m.max()
        if traced and proposer == PROPOSERS[0]:
            lines += trace(group, rows, pred, r)
    return rec, lines


def run(K: int = 5, data: Sequence[str] = (), predictor: str = "best", external_dir: Optional[str] = None,
        variance: Optional[float] = None, log=None, traced: bool = False) -> dict:
    """Every group replayed (module docstring): ``{"member", "table" (one row per group), "seconds"}``;
    with ``traced``, ``"traces"``: each group's loop line by line (:func:`trace`). ``variance``: the
    offsets' prior variance (None: the residual of the group's kind of model, as plan uses,
    :data:`perfzoo.plan.shrinkage.RESIDUAL_SD`)."""
    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    member = pricing.shipped_member(pricing.PUBLISHED)[0] if predictor == "best" else predictor
    if member not in zoo.names():
        raise PlanError(f"--predictor {member!r}: not a zoo member ({', '.join(zoo.names())})")
    t0 = time.perf_counter()
    pool = Pool.load(external_dir)
    fits: dict[str, Scorer] = {}
    rows_out, traces = [], []
    for source, frame in groups(data, external_dir):
        for group, g in frame.groupby("group", sort=False):
            g = g[g["measured"].notna()]
            if g["measured"].nunique() < 3:
                continue
            sit = g["situation"].iloc[0]
            if sit not in fits:
                fits[sit] = Scorer(pool.fit(member, sit), per_device=True)
            rows = as_run(g)
            least = least_recompute(rows, fits[sit].rule)
            rows = rows.assign(**{"config.activation_checkpointing": least["activation_checkpointing"].to_numpy()})
            pred = fits[sit].predict(rows)[0]
            ok = np.isfinite(pred) & (pred > 0)
            if ok.sum() < 3:
                continue
            rec, lines = replay_group(rows[ok].reset_index(drop=True), pred[ok], K, variance, traced, group)
            traces += lines
            rows_out.append({"source": source, "group": group, **rec})
        log(f"loop benchmark: {source}: {sum(r['source'] == source for r in rows_out)} groups "
            f"({time.perf_counter() - t0:.0f} s)")
    return {"member": member, "table": pd.DataFrame(rows_out), "K": K, "traces": traces,
            "seconds": time.perf_counter() - t0}


def summary(table: pd.DataFrame, K: int, proposer: str = "ei") -> dict:
    """The figures ``--json`` writes for one set of groups (module docstring)."""
    def after(curves, tol=0.02) -> dict:
        arr = np.vstack(curves.to_numpy())
        return {str(k): float(np.mean(arr[:, k] >= 1 - tol)) for k in range(K + 1)}

    out = {"groups": int(len(table)), "layouts": int(table["layouts"].sum()) if len(table) else 0}
    if not len(table):
        return out
    out["within_2pct_after"] = after(table[proposer])
    out["within_5pct_after"] = after(table[proposer], 0.05)
    for other in ("thompson", "reinforce", "ei"):
        if other != proposer:
            out[f"{other}_within_2pct_after"] = after(table[other])
    out["topk_within_2pct_after"] = after(table["topk"])
    shares = np.vstack(table["random_share_2"].to_numpy())
    # after 0 runs: one layout at random, run blind (as after 1)
    out["random_within_2pct_after"] = {str(k): float(np.mean(shares[:, max(k, 1) - 1])) for k in range(K + 1)}
    for name in ("2", "5"):
        out[f"median_runs_to_{name}pct"] = float(np.median(table[f"{proposer}_runs_{name}"]))
        out[f"random_median_runs_to_{name}pct"] = float(np.median(table[f"random_runs_{name}"]))
        out[f"topk_median_runs_to_{name}pct"] = float(np.median(table[f"topk_runs_{name}"]))
        for other in ("thompson", "reinforce", "ei"):
            if other != proposer:
                out[f"{other}_median_runs_to_{name}pct"] = float(np.median(table[f"{other}_runs_{name}"]))
    stop, ratio = table[f"{proposer}_stop"], table[f"{proposer}_stop_ratio"]
    out["stopped"] = float(np.mean(np.isfinite(stop)))
    out["stopped_more_than_5pct_below_best"] = float(np.mean(np.isfinite(stop) & (ratio < 0.95)))
    out["stopped_late"] = float(np.mean(np.isfinite(stop) & (stop > table[f"{proposer}_runs_2"])))
    return {k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in out.items()}


def report(result: dict, proposer: str = "ei") -> dict:
    """``--json``'s object: overall, ``large`` (groups of :data:`LARGE` or more layouts), per kind of
    model (:data:`perfzoo.plan.shrinkage.KINDS`), per source."""
    t, K = result["table"], result["K"]
    out = {"member": result["member"], "K": K, "proposer": proposer, **summary(t, K, proposer),
           "large": summary(t[t["layouts"] >= LARGE], K, proposer),
           "kinds": {k: summary(t[t["kind"] == k], K, proposer) for k in shrinkage.KINDS}, "sources": {}}
    for source, g in t.groupby("source", sort=False):
        out["sources"][source] = {**summary(g, K, proposer), "large": summary(g[g["layouts"] >= LARGE], K, proposer)}
    return out


def markdown(rep: dict) -> str:
    """The page: per source (all groups, then those of :data:`LARGE` or more layouts), the share within
    2% of the group's best after 0-K runs for each proposer beside random and the zero-shot top k, the
    median runs to 2% and 5%, and the stopping rule's record."""
    K, p = rep["K"], rep["proposer"]
    names = [(p, "within_2pct_after", "median_runs_to"), *[(o, f"{o}_within_2pct_after", f"{o}_median_runs_to")
                                                            for o in PROPOSERS if o != p],
             ("top k zero-shot", "topk_within_2pct_after", "topk_median_runs_to"),
             ("random", "random_within_2pct_after", "random_median_runs_to")]
    runs = lambda v: "-" if v is None else f"{v:g}"  # noqa: E731
    lines = [f"Loop benchmark: {rep['member']} fitted without each group's situation, {rep['groups']} groups of 3 or "
             f"more measured layouts ({rep['large']['groups']} of {LARGE} or more); each round proposes one layout "
             f"among the group's measured ones, reveals its measurement and re-anchors; the default proposer is "
             f"`{p}`. Within 2%: the best layout measured after k runs is within 2% of the group's best (after 0: "
             "plan's zero-shot pick, run blind). Runs to 2% and 5%: the median over groups (- : more than "
             f"{K} in half of them).", ""]
    head = ["| source | groups | proposer | " + " | ".join(f"within 2% after {k}" for k in range(K + 1))
            + " | runs to 2% | runs to 5% |", "| --- | ---: | --- | " + " | ".join("---:" for _ in range(K + 3)) + " |"]
    lines += head
    sets = [("all", rep), (f"all, {LARGE}+ layouts", rep["large"]), *((f"{k} models", rep["kinds"][k]) for k in rep["kinds"])]
    for source, s in rep["sources"].items():
        sets += [(source, s), (f"{source}, {LARGE}+", s["large"])]
    for label, s in sets:
        if not s.get("groups"):
            continue
        for name, key, med in names:
            lines.append(f"| {label} | {s['groups']} | {name} | " + " | ".join(f"{s[key][str(k)]:.0%}" for k in range(K + 1))
                         + f" | {runs(s[f'{med}_2pct'])} | {runs(s[f'{med}_5pct'])} |")
    lines += ["", f"Stopping rule (`{p}`, stop once no unmeasured layout's 80% upper bound exceeds the best measured by "
                  f"more than {STOP_MARGIN:.0%}): the share of groups where it stopped within {K} runs, stopped with "
                  "the best measured more than 5% below the group's best (too early), and stopped after the run that "
                  "first came within 2% (late).", "", "| source | groups | stopped | too early (> 5% below) | late |",
              "| --- | ---: | ---: | ---: | ---: |"]
    for label, s in sets:
        if s.get("groups"):
            lines.append(f"| {label} | {s['groups']} | {s['stopped']:.0%} | {s['stopped_more_than_5pct_below_best']:.0%} | "
                         f"{s['stopped_late']:.0%} |")
    return "\n".join(lines)


def build_parser():
    p = argparse.ArgumentParser(prog="python -m perfzoo.plan benchmark --loop K", description=__doc__.split("\n\n")[0])
    p.add_argument("--loop", type=int, required=True, metavar="K", help="rounds of propose, measure, re-anchor")
    p.add_argument("--data", nargs="+", default=[], metavar="FILE",
                   help="replay on these tables (any file the loaders read: your own sweep) instead of the shared ones")
    p.add_argument("--predictor", default="best", help="the member (default: the leaderboard's best for published-llm)")
    p.add_argument("--external-dir", metavar="DIR", help="the external-data directory")
    p.add_argument("--trace", action="store_true", help="print each group's loop, a line a run (default proposer)")
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON here")
    p.add_argument("--out", metavar="FILE.md", help="also write the report here (docs/results/plan-loop.md)")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)

    def body() -> int:
        if args.loop < 1:
            raise InputError(f"--loop {args.loop}: give how many runs to replay, 1 or more")
        for flag, path in (("--json", args.json), ("--out", args.out)):
            if path:
                check_writable(flag, path)
        result = run(args.loop, args.data, args.predictor, args.external_dir, traced=args.trace)
        rep = report(result)
        text = markdown(rep)
        if result["traces"]:
            print("\n".join(result["traces"]) + "\n")
        print(text)
        print(f"\n({result['seconds']:.0f} s)")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({**rep, "seconds": result["seconds"]}, f, indent=1)
        if args.out:
            write_page(args.out, "Plan loop benchmark", argv, result["seconds"], text)
        return 0

    return guarded("perfzoo.plan benchmark --loop", body)


__all__ = ["LARGE", "build_parser", "main", "markdown", "trace", "PROPOSERS", "SEEDS", "groups", "replay", "replay_group", "report", "run", "summary", "within"]
