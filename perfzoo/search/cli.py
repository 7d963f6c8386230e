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

``python -m perfzoo.search benchmark``: which searcher needs the fewest jobs
(:mod:`perfzoo.search.benchmark`).

The command translates its flags onto a :class:`~perfzoo.search.command.SearchConfig`, calls
:func:`~perfzoo.search.command.run` (the Python API, with an example there) and prints the result.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Optional, Sequence

from perfzoo.console import config_from_args, field_defaults, guarded
from perfzoo.search import SEARCHERS, Reinforce, SearchResult, benchmark
from perfzoo.search.command import SearchConfig, run


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m perfzoo.search",
        description="Search a space with a predictor and write the top-k configurations not yet measured "
                    "(a proposals file python -m perfzoo.collect --configs runs).")
    p.add_argument("--space", required=True, help="search space (e.g. fsdp-ads, llm-small)")
    p.add_argument("--dataset", help="dataset to fit the predictor on / whose best predictor to use, and whose "
                                     "measured configs are excluded")
    p.add_argument("--predictor",
                   help="'best' (the leaderboard's best for --dataset), a zoo member name (fitted on --dataset), "
                        f"or the folder of a saved predictor (default {SearchConfig.predictor})")
    p.add_argument("--failure",
                   help="'auto' (fit the failure classifier on --dataset when it has failures), 'none', or the "
                        "folder of a saved failure predictor")
    p.add_argument("--searcher", choices=list(SEARCHERS))
    p.add_argument("--top-k", type=int, help=f"configurations to propose (default {SearchConfig.top_k})")
    p.add_argument("--out", metavar="FILE.jsonl", help="write the proposals here ({\"config\": ...} lines)")
    p.add_argument("--n-samples", type=int,
                   help=f"sampled configs (REINFORCE: per restart, default {Reinforce.n_samples})")
    p.add_argument("--restarts", type=int, help=f"REINFORCE restarts pooled (default {Reinforce.restarts})")
    p.add_argument("--batch-size", type=int, help=f"REINFORCE batch (default {Reinforce.batch_size})")
    p.add_argument("--lr", type=float, help=f"REINFORCE Adam learning rate (default {Reinforce.lr})")
    p.add_argument("--n-jobs", type=int,
                   help="exhaustive: chunks scored at once, one thread each (default: the cores this process may use)")
    p.add_argument("--seed", type=int)
    p.add_argument("--include-measured", action="store_true",
                   help="do not exclude the configs --dataset has already measured")
    p.add_argument("--set", dest="fixed", nargs="+", action="extend", metavar="COLUMN=VALUE",
                   help="a fixed predictor input outside the space, e.g. hardware.accelerator=cpu "
                        "(default: the dataset's most common value)")
    p.add_argument("--calibrate", metavar="RUNS",
                   help="your measured runs (a runs CSV, a published-table CSV or a record store) anchor the "
                        "predictor: their offset moves the predictions of their model and cluster")
    p.add_argument("--show", type=int, default=10, help="rows of the printed table (default 10)")
    p.add_argument("--json", action="store_true", help="print the proposals as JSON lines instead of a table")
    p.add_argument("--progress", action="store_true", help="show a progress bar")
    p.set_defaults(**field_defaults(SearchConfig))  # every default lives once, in SearchConfig
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit status (0 done, 1 interrupted, 2 usage or input error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["benchmark"]:
        return benchmark.main(argv[1:])
    args = build_parser().parse_args(argv)

    def body() -> int:
        result = run(config_from_args(SearchConfig, args))
        if args.json:
            for line in result.records():
                print(json.dumps(line))
            return 0
        unit = result.stats["unit"]
        print(format_table(result, args.show, unit))
        if result.stats["best_measured"] is not None:
            print(f"\nbest measured in {result.stats['dataset']}: {result.stats['best_measured']:,.1f} {unit}".rstrip())
        if result.stats.get("caveat"):
            print(f"caveat: {result.stats['caveat']}")
        return 0

    return guarded("perfzoo.search", body)


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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
