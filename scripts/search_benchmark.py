"""Searcher speed figures: ``python scripts/search_benchmark.py --speed`` writes
``docs/studies/search/speed.md``. ``--headline`` measures only the targets' rows (exhaustive
``fsdp-ads-v3`` with the shipped predictor, plan over 1e6 layouts, plan at 16,384 GPUs for a 405B
and a 671B MoE model) into ``speed-headline.md``; ``--baseline DIR`` times every row in another
checkout too (``git worktree add DIR <commit>``), in turn with this one, and adds the ratio of
their medians::

    python scripts/search_benchmark.py --speed --headline --baseline ../perfzoo-before

Per searcher and per predictor, as ``python -m perfzoo.search`` fits them on ``fsdp-cpu`` (every
feature column, so the analytic features too): exhaustive scoring of every config of
``fsdp-ads-v3`` and one REINFORCE round (2,000 samples x 3 restarts) with ``shipped`` (what
``python -m perfzoo.search --dataset fsdp-cpu`` scores with: the leaderboard's pick and the failure
classifier fitted on the dataset), ``ridge``,
``lightgbm``, ``roofline`` (the shipped ``fsdp-cpu`` predictor at the 2026-11-25 leaderboard), ``hybrid_roofline``, and
``ridge`` and ``roofline`` with the ``failure`` classifier; and ``python -m perfzoo.plan`` over three layout spaces (``llama3-70b`` on
1,024 H100s; the largest of the catalog we found, ``mixtral-8x22b`` on 3,072 H100s, tensor
parallelism across nodes allowed, bf16 and fp8; a made-up MoE model of its shape, 48 layers and 96
experts, on 4,608 H100s), every layout scored by the shipped ``published-llm``
predictor and by a ``hybrid_roofline``; and ``python -m perfzoo.plan`` as a user runs it at
16,384 H100s (``plan-run``: :func:`perfzoo.plan.command.run` after the imports: the predictor
loaded, the published tables read for the baselines, the plan, its notes).
Each row: configs scored, seconds (median of ``--repeats``), configs per second, the ratio to the
machine's floor, and the process's peak resident memory. The floor is plain numpy that reads
every config's code array once (the codec's index rows, chunk by chunk, one weighted sum each,
the best kept): no searcher does less. Each row runs in its own process, so its peak memory is
its own. The surrogate benchmark of the searchers is a package command:
``python -m perfzoo.search benchmark`` (:mod:`perfzoo.search.benchmark`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CHECKOUT = Path(os.environ.get("SEARCH_BENCHMARK_CHECKOUT", ROOT))  # whose perfzoo a row times (--baseline)
sys.path.insert(0, str(CHECKOUT))

from perfzoo import zoo  # noqa: E402
from perfzoo.datasets import load_dataset  # noqa: E402
from perfzoo.llmconfig import catalog
from perfzoo.plan.layouts import Cluster  # noqa: E402
from perfzoo.plan.layouts import layout_space  # noqa: E402
from perfzoo.plan.planner import default_scorer, plan, resolve_model  # noqa: E402
from perfzoo.plan.scoring import Scorer  # noqa: E402
from perfzoo.search import Exhaustive, Reinforce, propose  # noqa: E402
from perfzoo.search.command import fixed_columns, measured_configs, resolve_failure  # noqa: E402
from perfzoo.spaces import get  # noqa: E402
from perfzoo.spaces.codec import SpaceCodec  # noqa: E402

OUT = ROOT / "docs" / "studies" / "search"
DATASET, SPACE = "fsdp-cpu", "fsdp-ads-v3"
PREDICTORS = ("shipped", "ridge", "lightgbm", "roofline", "hybrid_roofline", "ridge+failure", "roofline+failure")
SEARCHERS = ("exhaustive", "reinforce")
TOP_K = 250  # what `python -m perfzoo.search --top-k 50` asks its searcher for (5 per proposal, for ties)
# plan's layout spaces: llama3-70b on 1,024 H100s (12,180 valid layouts), the largest of the catalog we found
# (241,920 grid points, 91,680 valid layouts), and a made-up MoE model of mixtral-8x22b's shape with 48 layers
# and 96 experts on 4,608 H100s: 3,628,800 grid points, 1,000,416 valid layouts
PLANS = {
    "llama3-70b x1024": dict(model="llama3-70b", gpus=1024, accelerator="H100-SXM-80GB", seq_len=8192,
                             global_batch=2048, precisions=("bf16",), tp_beyond_node=False),
    "mixtral-8x22b x3072": dict(model="mixtral-8x22b", gpus=3072, accelerator="H100-SXM-80GB", seq_len=8192,
                                global_batch=6144, precisions=("bf16", "fp8"), tp_beyond_node=True),
    "1e6 layouts": dict(model={**{k: v for k, v in catalog.get("mixtral-8x22b").items() if k != "n_params"},
                               "n_layers": 48, "n_experts": 96, "model_name": "mixtral-shape-48L-96E"},
                        gpus=4608, accelerator="H100-SXM-80GB", seq_len=8192, global_batch=9216,
                        precisions=("bf16", "fp8"), tp_beyond_node=True),
}
PLAN_SCORERS = ("shipped", "hybrid_roofline")
# `python -m perfzoo.plan` at the paper's largest scale (plan-run rows): Llama 3.1 405B and DeepSeek-V3 (671B MoE)
PLAN_RUNS = {
    "llama3-405b x16384": dict(model="llama3-405b", gpus=16384, accelerator="H100-SXM-80GB", seq_len=8192,
                               global_batch=2048, precision="bf16"),
    "deepseek-v3 x16384": dict(model="deepseek-v3", gpus=16384, accelerator="H100-SXM-80GB", seq_len=8192,
                               global_batch=2048, precision="bf16"),
    "deepseek-v3 x2048": dict(model="deepseek-v3", gpus=2048, accelerator="H100-SXM-80GB", seq_len=4096,
                              global_batch=8192, precision="bf16"),
}
# the targets (issue 54): seconds on this 2-core machine, and the floor multiple for exhaustive search
TARGETS = {"exhaustive": 3.0, "plan": 5.0, "plan-run": 10.0}
FLOOR_MULTIPLE = 5.0
FLOOR_CHUNK = 2 ** 16


def log(msg: str) -> None:
    print(f"[{datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def commit(checkout: Path) -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True,
                              text=True).stdout.strip() or "?"
    except OSError:
        return "?"


def context(command: str) -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"`{command}` at commit {commit(ROOT)} on {platform.node()} ({os.cpu_count()} CPUs, "
            f"load average {load:.1f} at the end), {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}")


def peak_rss_gib() -> float:
    """This process's peak resident memory (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


# --- one row, in its own process ----------------------------------------------------------------

def floor(codec: SpaceCodec, top_k: int = TOP_K) -> int:
    """The floor: every grid point's code array read once (chunk by chunk), one weighted sum
    each, invalid ones dropped, the best ``top_k`` kept. Returns the configs it scored."""
    weights = np.arange(1, len(codec.names) + 1, dtype=float)
    best = np.zeros(0)
    scored = 0
    for start in range(0, codec.size, FLOOR_CHUNK):
        idx = codec.all_indices(start, start + FLOOR_CHUNK)
        score = (idx @ weights)[codec.valid(idx)]
        scored += len(score)
        best = np.concatenate([best, score])
        if len(best) > top_k:
            best = best[np.argpartition(-best, top_k - 1)[:top_k]]
    return scored


def fsdp_models(name: str):
    ds = load_dataset(DATASET)
    if name == "shipped":  # as `python -m perfzoo.search --dataset fsdp-cpu` scores
        return ds, zoo.load_best(ds), resolve_failure("auto", ds, log=lambda _: None)
    ok = ds.ok()
    member, _, with_failure = name.partition("+")
    model = zoo.make(member).fit(ok.X, ok.y, dataset=ds.name)
    failure = zoo.make("failure").fit(ds.frame[list(ds.feature_columns)], ds.failed) if with_failure else None
    return ds, model, failure


def plan_scorer(name: str) -> Scorer:
    if name == "shipped":
        return default_scorer()
    ds = load_dataset("published-llm")
    ok = ds.labelled().ok()
    return Scorer(zoo.make(name).fit(ok.X, ok.y, dataset=ds.name), per_device=ds.target.endswith("_per_device"))


def run_row(row: dict) -> dict:
    """Time one row ``repeats`` times; the configs it scored, the times and the peak memory."""
    warnings.filterwarnings("ignore")
    kind, name, repeats = row["kind"], row.get("predictor"), int(row["repeats"])
    out: dict = {"times": []}
    if kind == "plan-run":
        from perfzoo.plan.command import PlanConfig, run

        config = PlanConfig(**PLAN_RUNS[row["space"]])

        def job():
            p = run(config, log=lambda _: None).plan
            out["predictor"] = f"{p.scorer.name} (shipped)"
            return {"scored": p.counts["memory_checked"], "path": p.method,
                    "note": f"{p.counts['feasible']:,} fit in memory, {p.counts['grid']:,} grid points"}
    elif kind == "plan":
        setup = PLANS[row["space"]]
        cluster = Cluster(gpus=setup["gpus"], accelerator=setup["accelerator"])
        if name == "floor":
            codec = SpaceCodec(layout_space(resolve_model(setup["model"]), cluster, setup["seq_len"],
                                            setup["global_batch"], setup["precisions"], setup["tp_beyond_node"]))
            job = lambda: {"scored": floor(codec)}  # noqa: E731
        else:
            scorer = plan_scorer(name)
            out["predictor"] = f"{scorer.name} (shipped)" if name == "shipped" else scorer.name

            def job():
                p = plan(setup["model"], cluster, seq_len=setup["seq_len"], global_batch=setup["global_batch"],
                         precisions=setup["precisions"], tp_beyond_node=setup["tp_beyond_node"], scorer=scorer,
                         exhaustive_limit=10 ** 7)
                return {"scored": p.counts["memory_checked"], "path": p.method,
                        "note": f"{p.counts['feasible']:,} fit in memory, {p.counts['grid']:,} grid points"}
    else:
        space = get(SPACE)
        codec = SpaceCodec(space)
        if name == "floor":
            job = lambda: {"scored": floor(codec)}  # noqa: E731
        else:
            ds, model, failure = fsdp_models(name)
            if name == "shipped":
                out["predictor"] = f"{model.name}{'+failure' if failure is not None else ''} (shipped)"
            fixed = fixed_columns(ds, codec.knob_columns(), [])
            measured = measured_configs(ds)
            searcher = Exhaustive(n_jobs=row["n_jobs"]) if kind == "exhaustive" else Reinforce()

            def job():
                r = propose(searcher, space, model, TOP_K, failure=failure, exclude=measured, fixed=fixed)
                scored = r.stats["valid"] if kind == "exhaustive" else r.stats["distinct"]
                return {"scored": scored, "path": r.stats.get("path", ""), "reason": r.stats.get("path_reason") or ""}
    for _ in range(repeats):
        t = time.perf_counter()
        out.update(job())
        out["times"].append(time.perf_counter() - t)
    out["peak_gib"] = peak_rss_gib()
    return out


# --- the table ----------------------------------------------------------------------------------

def rows(args) -> list[dict]:
    out = [{"kind": "exhaustive", "space": SPACE, "predictor": "floor"}]
    if args.headline:
        out += [{"kind": "exhaustive", "space": SPACE, "predictor": "shipped", "n_jobs": n} for n in (1, 2)]
        out += [{"kind": "plan", "space": "1e6 layouts", "predictor": name} for name in ("floor", "shipped")]
    else:
        for searcher in args.searchers.split(","):
            for name in args.predictors.split(","):
                for n_jobs in ([1, 2] if searcher == "exhaustive" else [1]):
                    out.append({"kind": searcher, "space": SPACE, "predictor": name, "n_jobs": n_jobs})
        if args.plan:
            for space in PLANS:
                out.append({"kind": "plan", "space": space, "predictor": "floor"})
                out += [{"kind": "plan", "space": space, "predictor": name} for name in PLAN_SCORERS]
    if args.plan or args.headline:
        out += [{"kind": "plan-run", "space": space, "predictor": "shipped"} for space in PLAN_RUNS]
    for r in out:
        r.setdefault("n_jobs", 1 if r["kind"] in SEARCHERS else "default")  # plan: its own threads
        r["repeats"] = args.repeats
    return out


def measure(row: dict, checkout: Path = ROOT) -> dict:
    """One row in a child process (its peak memory its own), timing ``checkout``'s perfzoo."""
    env = {**os.environ, "SEARCH_BENCHMARK_CHECKOUT": str(checkout)}
    proc = subprocess.run([sys.executable, __file__, "--row", json.dumps(row)], capture_output=True, text=True,
                          env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"row {row} failed in {checkout}:\n{proc.stderr[-2000:]}")
    return {**row, **json.loads(proc.stdout.strip().splitlines()[-1])}


def measure_against(row: dict, baseline: Path) -> dict:
    """``row`` timed in this checkout and in ``baseline``, one repeat each in turn (the machine's
    load falls on both alike): this checkout's result, with ``baseline_times``."""
    ours, theirs = [], []
    for _ in range(row["repeats"]):
        ours.append(measure({**row, "repeats": 1}))
        theirs.append(measure({**row, "repeats": 1}, baseline))
    res = {**ours[-1], "times": [t for r in ours for t in r["times"]],
           "baseline_times": [t for r in theirs for t in r["times"]],
           "peak_gib": max(r["peak_gib"] for r in ours), "baseline_peak_gib": max(r["peak_gib"] for r in theirs)}
    res["baseline_scored"] = theirs[-1]["scored"]
    return res


def describe_plans() -> str:
    return "; ".join(f"`{s['model'] if isinstance(s['model'], str) else s['model']['model_name']}` on {s['gpus']:,} {s['accelerator']} ({', '.join(s['precisions'])}"
                     f"{', tensor parallelism across nodes allowed' if s['tp_beyond_node'] else ''})"
                     for s in PLANS.values())


def targets(results: list[dict], floors: dict[str, float], baseline: bool) -> list[str]:
    """The issue's targets, one line each: the row, its median seconds, the target, met or not."""
    lines = ["| target | row | seconds | x floor | peak memory | met |" + (" baseline s | x baseline |" if baseline
                                                                          else ""),
             "|---|---|---|---|---|---|" + ("---|---|" if baseline else "")]
    for r in results:
        if r["predictor"] == "floor" or (r["kind"], r["space"]) not in (("exhaustive", SPACE), ("plan", "1e6 layouts"),
                                                                         *(("plan-run", k) for k in PLAN_RUNS)):
            continue
        if r["kind"] == "exhaustive" and not r["predictor"].endswith("(shipped)"):
            continue
        limit = TARGETS[r["kind"]]
        floor = floors.get(r["space"])
        times_floor = r["seconds"] / floor if floor else None
        met = r["seconds"] <= limit and (r["kind"] != "exhaustive" or times_floor <= FLOOR_MULTIPLE)
        goal = f"<= {limit:g} s" + (f", <= {FLOOR_MULTIPLE:g}x floor" if r["kind"] == "exhaustive" else "")
        line = (f"| {goal} | {r['kind']} {r['space']}, {r['predictor']}, n_jobs {r['n_jobs']} | {r['seconds']:.2f} | "
                f"{'' if times_floor is None else f'{times_floor:.1f}'} | {r['peak_gib']:.2f} GiB | "
                f"{'yes' if met else 'no'} |")
        if baseline:
            line += f" {r['baseline_seconds']:.2f} | {r['seconds'] / r['baseline_seconds']:.2f} |"
        lines.append(line)
    return lines


def speed(args, command: str) -> str:
    results = []
    floors: dict[str, float] = {}
    baseline = Path(args.baseline).resolve() if args.baseline else None
    for row in rows(args):
        res = measure_against(row, baseline) if baseline else measure(row)
        res["seconds"] = float(np.median(res["times"]))
        if baseline:
            res["baseline_seconds"] = float(np.median(res["baseline_times"]))
        if res["predictor"] == "floor":
            floors[res["space"]] = res["seconds"]
        results.append(res)
        log(f"{res['kind']:<10} {res['space']:<20} {res['predictor']:<18} n_jobs={res['n_jobs']} "
            f"{res['seconds']:8.2f} s {res['scored']:>10,} configs  peak {res['peak_gib']:.2f} GiB  {res.get('path', '')}"
            + (f"  baseline {res['baseline_seconds']:.2f} s" if baseline else ""))
    where = f" and in the baseline checkout `{baseline}` (commit {commit(baseline)}), one repeat each in turn" \
        if baseline else ""
    lines = ["# Searcher speed", "",
             f"Every row runs in its own process{where}: {args.repeats} repeats, the median time. Predictors fitted as "
             f"`python -m perfzoo.search --dataset {DATASET}` fits them (every feature column of the dataset, so the "
             f"analytic features too); `shipped`: what that command scores with, the member `leaderboard/best.json` "
             f"names for `{DATASET}` and the failure classifier fitted on it; `+failure` adds the failure "
             f"classifier (reward = prediction x P(success)). Exhaustive and REINFORCE over `{SPACE}` (top {TOP_K}, "
             "the measured configs excluded); `n_jobs`: the exhaustive searcher's threads (plan: `default`, one thread per "
             "core). Plan: "
             f"{describe_plans()}, every valid layout checked against the memory model and scored (`shipped`: the "
             "leaderboard's `published-llm` predictor; `hybrid_roofline` fitted on `published-llm`); plan-run: "
             "`python -m perfzoo.plan` after its imports, "
             + "; ".join(f"`--model {c['model']} --gpus {c['gpus']} --seq-len {c['seq_len']} --global-batch "
                         f"{c['global_batch']}`" for c in PLAN_RUNS.values())
             + " on H100-SXM-80GB in bf16. The floor reads every config's code array once, one weighted sum each "
             "(plain numpy); `x floor`: seconds over the floor's on the same space. Peak memory: the row's "
             "process's resident peak (imports and fits included).", "",
             "## Targets", "", *targets(results, floors, baseline is not None), "",
             "## Every row", "",
             "| searcher | space | predictor | n_jobs | configs scored | seconds | configs/s | x floor | peak memory "
             "| path |" + (" x baseline |" if baseline else ""),
             "|---|---|---|---|---|---|---|---|---|---|" + ("---|" if baseline else "")]
    for r in results:
        base = floors.get(r["space"])
        ratio = f"{r['seconds'] / base:.1f}" if base and r["kind"] != "reinforce" else ""
        path = r.get("path", "") + (f": {r['reason']}" if r.get("reason") else "") + (
            f" ({r['note']})" if r.get("note") else "")
        lines.append(f"| {r['kind']} | {r['space']} | {r['predictor']} | {r['n_jobs']} | {r['scored']:,} | "
                     f"{r['seconds']:.2f} | {r['scored'] / r['seconds']:,.0f} | {ratio} | "
                     f"{r['peak_gib']:.2f} GiB | {path} |"
                     + (f" {r['seconds'] / r['baseline_seconds']:.2f} |" if baseline else ""))
    lines += ["", "REINFORCE scores a few thousand distinct configs, so its `x floor` is left out: its time is the "
              "searcher's own (sampling, the policy's Adam steps) plus 67 small predictions per round.", "",
              f"Produced by {context(command)}."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--speed", action="store_true", help="measure the speed figures")
    p.add_argument("--repeats", type=int, default=3, help="timed repeats per row (the median is reported)")
    p.add_argument("--predictors", default=",".join(PREDICTORS), help="comma-separated (default: %(default)s)")
    p.add_argument("--searchers", default=",".join(SEARCHERS), help="comma-separated (default: %(default)s)")
    p.add_argument("--no-plan", dest="plan", action="store_false", help="leave out the plan rows")
    p.add_argument("--headline", action="store_true",
                   help="only the targets' rows: exhaustive with the shipped predictor, plan over 1e6 layouts, "
                        "plan at 16,384 GPUs")
    p.add_argument("--baseline", metavar="DIR",
                   help="also time every row in this checkout (another commit), in turn with this one")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--row", help=argparse.SUPPRESS)  # one row, in a child process
    args = p.parse_args(argv)
    if args.row:
        print(json.dumps(run_row(json.loads(args.row))))
        return 0
    command = "python scripts/search_benchmark.py " + " ".join(argv if argv is not None else sys.argv[1:])
    if args.speed:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        text = speed(args, command)
        (out / ("speed-headline.md" if args.headline else "speed.md")).write_text(text)
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
