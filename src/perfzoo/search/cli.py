"""``python -m perfzoo.search``: propose the configurations a predictor ranks highest.

Examples
--------
REINFORCE with the leaderboard's best predictor for ``fsdp-cpu`` (falls back to fitting
``lightgbm`` on the dataset when there is no leaderboard yet), P(success) from a ``failure``
classifier fitted on the same dataset, configs already measured excluded::

    python -m perfzoo.search --space fsdp-ads --dataset fsdp-cpu --predictor best --top-k 50 \\
        --out proposals.jsonl
    python -m perfzoo.collect --configs proposals.jsonl --out runs/fsdp   # run them

Score every configuration instead (``--searcher exhaustive``), or compare with ``random`` /
``tpe``; ``--predictor`` also takes a zoo member name (fitted on ``--dataset``) or the path
of a saved predictor.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from perfzoo import zoo
from perfzoo._cli import UsageError, guarded, parse_value
from perfzoo.datasets import Dataset, load_dataset
from perfzoo.search import NO_KEYS, SEARCHERS, Objective, Reinforce, SearchResult, Searcher
from perfzoo.search.objective import check_inputs
from perfzoo.spaces import SpaceError, get
from perfzoo.spaces.codec import SpaceCodec

# the flags that set a searcher's settings (each applies to the searchers that have the setting)
SETTING_FLAGS = ("n_samples", "restarts", "batch_size", "lr")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m perfzoo.search",
        description="Search a space with a predictor and write the top-k configurations not yet measured "
                    "(a proposals file python -m perfzoo.collect --configs runs).")
    p.add_argument("--space", required=True, help="search space (e.g. fsdp-ads, llm-small)")
    p.add_argument("--dataset", help="dataset to fit the predictor on / whose best predictor to use, and whose "
                                     "measured configs are excluded")
    p.add_argument("--predictor", default="best",
                   help="'best' (the leaderboard's best for --dataset), a zoo member name (fitted on --dataset), "
                        "or the folder of a saved predictor (default best)")
    p.add_argument("--failure", default="auto",
                   help="'auto' (fit the failure classifier on --dataset when it has failures), 'none', or the "
                        "folder of a saved failure predictor")
    p.add_argument("--searcher", default="reinforce", choices=list(SEARCHERS))
    p.add_argument("--top-k", type=int, default=50, help="configurations to propose (default 50)")
    p.add_argument("--out", metavar="FILE.jsonl", help="write the proposals here ({\"config\": ...} lines)")
    p.add_argument("--n-samples", type=int,
                   help=f"sampled configs (REINFORCE: per restart, default {Reinforce.n_samples})")
    p.add_argument("--restarts", type=int, help=f"REINFORCE restarts pooled (default {Reinforce.restarts})")
    p.add_argument("--batch-size", type=int, help=f"REINFORCE batch (default {Reinforce.batch_size})")
    p.add_argument("--lr", type=float, help=f"REINFORCE Adam learning rate (default {Reinforce.lr})")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--include-measured", action="store_true",
                   help="do not exclude the configs --dataset has already measured")
    p.add_argument("--set", action="append", default=[], metavar="COLUMN=VALUE",
                   help="a fixed predictor input outside the space, e.g. hardware.accelerator=cpu "
                        "(default: the dataset's most common value)")
    p.add_argument("--show", type=int, default=10, help="rows of the printed table (default 10)")
    p.add_argument("--json", action="store_true", help="print the proposals as JSON lines instead of a table")
    p.add_argument("--progress", action="store_true", help="show a progress bar")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit status (0 ok, 1 a problem with the data, 2 usage error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    return guarded("perfzoo.search", lambda: _run(args))


def make_searcher(name: str, seed: int, flags: dict[str, Optional[float]], progress: bool = False) -> Searcher:
    """The searcher ``--searcher`` names, with the settings its flags gave (``flags``: the values of
    :data:`SETTING_FLAGS` a command has, None where not given) and ``progress`` where it shows one;
    a flag its searcher has no setting for is a :class:`UsageError`. ``python -m perfzoo.tune``
    builds its searcher here too.

    >>> make_searcher("exhaustive", 0, {"n_samples": 100})
    Traceback (most recent call last):
    ...
    perfzoo._cli.UsageError: --n-samples does not apply to --searcher exhaustive
    """
    cls = SEARCHERS[name]
    settings: dict = {flag: value for flag, value in flags.items() if value is not None}
    for flag, value in settings.items():
        if flag not in cls.settings():
            raise UsageError(f"--{flag.replace('_', '-')} does not apply to --searcher {name}")
        if value <= 0:
            raise UsageError(f"--{flag.replace('_', '-')} must be {'positive' if flag == 'lr' else 'at least 1'}, "
                             f"got {value}")
    if progress and "progress" in cls.settings():
        settings["progress"] = True
    return cls(seed=seed, **settings)


def measured_configs(dataset: Dataset) -> list[dict]:
    """The configs ``dataset`` holds (its ``config.*`` columns; NaN read as None)."""
    cols = [c for c in dataset.frame.columns if str(c).startswith("config.")]
    frame = dataset.frame[cols].rename(columns={c: c[len("config."):] for c in cols})
    return [{k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}
            for row in frame.to_dict("records")]


def resolve_predictor(name: str, dataset: Optional[Dataset], log=print) -> Any:
    """A fitted predictor from ``best`` / a zoo name / a saved folder (see the CLI help)."""
    path = Path(name)
    if path.is_dir():
        return zoo.load(path)
    if name == "best":
        if dataset is None:
            raise UsageError("--predictor best needs --dataset (the dataset whose best predictor to use)")
        try:
            model = zoo.load_best(dataset)
            log(f"predictor: the leaderboard's best for {dataset.name} ({getattr(model, 'name', type(model).__name__)})")
            return model
        except Exception as exc:
            log(f"predictor: no best predictor for {dataset.name} ({' '.join(str(exc).split())}); "
                f"fitting lightgbm on it instead")
            name = "lightgbm"
    if name not in zoo.names():
        raise UsageError(f"--predictor {name!r} is not 'best', a zoo member ({', '.join(zoo.names())}) "
                         "or a saved predictor folder")
    if dataset is None:
        raise UsageError(f"--predictor {name} needs --dataset to fit on")
    ok = dataset.ok()
    t = time.perf_counter()
    model = zoo.make(name).fit(ok.X, ok.y, dataset=dataset.name)
    log(f"predictor: {name} fitted on {len(ok)} ok jobs of {dataset.name} in {time.perf_counter() - t:.1f} s")
    return model


def resolve_failure(spec: str, dataset: Optional[Dataset], log=print) -> Any:
    if spec == "none":
        return None
    if spec != "auto":
        return zoo.load(spec)
    if dataset is None:
        return None
    failed = dataset.failed
    if not failed.any():
        log(f"failure: {dataset.name} has no failed jobs; reward = predicted throughput")
        return None
    model = zoo.make("failure").fit(dataset.frame[list(dataset.feature_columns)], failed)
    log(f"failure: classifier fitted on {len(failed)} jobs of {dataset.name} ({int(failed.sum())} failed)")
    return model


def fixed_columns(dataset: Optional[Dataset], space_columns: Sequence[str], overrides: Sequence[str]) -> dict:
    """Predictor inputs outside the space: the dataset's most common value, then ``--set``."""
    fixed: dict = {}
    if dataset is not None:
        for c in dataset.feature_columns:
            if c not in space_columns:
                col = dataset.frame[c].dropna()
                if len(col):
                    fixed[c] = col.mode().iloc[0]
                    v = fixed[c]
                    fixed[c] = v.item() if isinstance(v, np.generic) else v
    for item in overrides:
        if "=" not in item:
            raise UsageError(f"--set {item!r}: expected COLUMN=VALUE")
        k, v = item.split("=", 1)
        fixed[k.strip()] = parse_value(v.strip())
    return fixed


def _abbrev(v: Any) -> str:
    if isinstance(v, str) and "_" in v and v.upper() == v:
        return "".join(part[0] for part in v.split("_"))
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def format_table(result: SearchResult, show: int = 10, unit: str = "") -> str:
    """The top proposals as a table: rank, predicted, std, P(ok), and the knobs that vary."""
    frame = result.to_frame().head(show)
    if frame.empty:
        return "(no proposals)"
    knobs = [c for c in frame.columns if c not in ("rank", "predicted", "std", "p_success", "reward")]
    space_dims = [d.name for d in result.space.dimensions]
    knobs = [k for k in knobs if k in space_dims]
    # runs of knobs named <prefix>_<number> with the same values print as one column of initials
    groups: list[tuple[str, list[str]]] = []
    for k in knobs:
        base = k.rsplit("_", 1)[0] if "_" in k and k.rsplit("_", 1)[1].isdigit() else None
        if base and groups and groups[-1][0] == base + "*":
            groups[-1][1].append(k)
        elif base:
            groups.append((base + "*", [k]))
        else:
            groups.append((k, [k]))
    header = ["rank", f"predicted {unit}".strip(), "std", "P(ok)"]
    for g, ks in groups:
        header.append(f"{g[:-1]}_{ks[0].rsplit('_', 1)[1]}..{ks[-1].rsplit('_', 1)[1]}" if g.endswith("*") and len(ks) > 1
                      else ks[0])
    rows = [header]
    for _, r in frame.iterrows():
        row = [str(int(r["rank"])), f"{r['predicted']:,.1f}", "-" if r["std"] is None or r["std"] != r["std"]
               else f"{r['std']:,.1f}", f"{r['p_success']:.2f}"]
        for g, ks in groups:
            row.append(" ".join(_abbrev(r[k]) for k in ks) if len(ks) > 1 else _abbrev(r[ks[0]]))
        rows.append(row)
    widths = [max(len(x[i]) for x in rows) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) if i < 4 else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
             for row in rows]
    return "\n".join(lines)


TIE_POOL = 5  # proposals searched per proposal asked for, to break ties at the cut


def break_ties(result: SearchResult, k: int, dataset: Optional[Dataset], objective: Objective, log) -> SearchResult:
    """The top ``k`` of ``result``; where the predictor ties, a ridge fit (a smooth model of another
    family) on ``dataset`` orders the tied configs, and the log says so."""
    distinct = result.tied(k)
    if distinct == min(k, len(result)):
        return result.break_ties(np.zeros(len(result)), k)
    if dataset is None:
        log(f"ties: the top {k} proposals have only {distinct} distinct scores (within 0.1%) and no --dataset to "
            "break them; their order is arbitrary")
        return result.break_ties(np.zeros(len(result)), k)
    ok = dataset.labelled().ok()
    cols = [c for c in (objective.columns or ok.feature_columns) if c in ok.X.columns]
    second = zoo.make("ridge").fit(ok.X[cols], ok.y)
    scores = second.predict(objective.codec.frame(objective.codec.decode(result.keys), columns=cols,
                                                  fixed=objective.fixed))
    log(f"ties: the top {k} proposals had only {distinct} distinct scores (within 0.1%); ties broken by a ridge "
        f"fit on {dataset.name} over the best {len(result)}")
    return result.break_ties(scores, k)


def _run(args) -> int:
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    if args.top_k < 1:
        raise UsageError("--top-k must be at least 1")
    try:
        space = get(args.space)
    except SpaceError as exc:
        raise UsageError(str(exc)) from None
    searcher = make_searcher(args.searcher, args.seed, {flag: getattr(args, flag) for flag in SETTING_FLAGS},
                             args.progress)
    if args.out:
        folder = Path(args.out).resolve().parent
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            raise UsageError(f"--out {args.out}: cannot write there ({folder} is not a writable folder)")
    dataset = load_dataset(args.dataset) if args.dataset else None
    if dataset is not None and "workload" in dataset.frame:
        workloads = sorted(set(dataset.frame["workload"].dropna()))
        if workloads and space.workload not in workloads:
            raise UsageError(f"--dataset {dataset.name} holds jobs of the {', '.join(workloads)} workload, --space "
                             f"{space.name} configs of the {space.workload} workload: a predictor fitted on one "
                             "cannot rank the other; give a dataset measured in this space")
    codec = SpaceCodec(space)
    predictor = resolve_predictor(args.predictor, dataset, log)
    failure = resolve_failure(args.failure, dataset, log)
    fixed = fixed_columns(dataset, codec.knob_columns(), args.set)
    exclude = NO_KEYS if dataset is None or args.include_measured else codec.keys_of(measured_configs(dataset))
    objective = Objective(codec, predictor, failure, fixed=fixed, seed=args.seed)
    unread = check_inputs(codec, objective.columns)
    if unread:
        log(f"note: the predictor does not read {', '.join(c[7:] for c in unread)}: those knobs cannot move its "
            "predictions")
    t = time.perf_counter()
    pool = args.top_k * TIE_POOL  # more than k, so that ties at the cut can be broken
    result = searcher.propose(objective, pool, exclude)
    secs = time.perf_counter() - t
    result = break_ties(result, args.top_k, dataset, objective, log)
    unit = dataset.target_unit if dataset is not None else ""
    if result.stats.get("path") == "chunked":
        log(f"exhaustive: scored chunk by chunk, not on the tree-grid fast path, because "
            f"{result.stats.get('path_reason')}")
    n_excl = result.stats.get("excluded_known", 0)
    log(f"{args.searcher}: {len(result)} proposals for {space.name} ({space.size():,} grid points) in {secs:.1f} s; "
        f"{n_excl} measured configs excluded")
    if args.out:
        path = result.write_jsonl(args.out)
        log(f"wrote {path} (run them: python -m perfzoo.collect --space {space.ref} --configs {path} --out DIR)")
    if args.json:
        for line in result.records():
            print(json.dumps(line))
    else:
        print(format_table(result, args.show, unit))
        if dataset is not None and len(dataset.ok()):
            print(f"\nbest measured in {dataset.name}: {np.nanmax(dataset.ok().y):,.1f} {unit}".rstrip())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
