"""Searcher speed figures: ``python scripts/search_benchmark.py --speed`` writes
``docs/studies/search/speed.md``.

One REINFORCE round (2,000 samples x 3 restarts) and an exhaustive scoring of every config of
``fsdp-ads-v3``, with LightGBM (and the failure classifier) fitted on ``fsdp-cpu`` two ways: as
``python -m perfzoo.search`` fits them, and on the space's knobs alone (the exact tree-by-tree
path). The surrogate benchmark of the searchers is a package command:
``python -m perfzoo.search benchmark`` (:mod:`perfzoo.search.benchmark`).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfzoo import zoo  # noqa: E402
from perfzoo.datasets import load_dataset  # noqa: E402
from perfzoo.search import Exhaustive, Reinforce, propose  # noqa: E402
from perfzoo.spaces import get  # noqa: E402
from perfzoo.spaces.codec import SpaceCodec  # noqa: E402

OUT = ROOT / "docs" / "studies" / "search"


def log(msg: str) -> None:
    print(f"[{datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def context(command: str) -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = "?"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"`{command}` at commit {commit or '?'} on {platform.node()} ({os.cpu_count()} CPUs, "
            f"load average {load:.1f} at the end), {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}")


# --- speed --------------------------------------------------------------------------------------

def speed(args, command: str) -> str:
    """REINFORCE and exhaustive wall times on ``fsdp-ads-v3``, with models fitted two ways: as
    ``python -m perfzoo.search`` fits them (every feature column of the dataset, so the zoo adds
    its analytic features, each of which depends on many knobs) and on the space's knobs alone."""
    from perfzoo.search.command import fixed_columns, measured_configs

    ds = load_dataset("fsdp-cpu")
    space = get("fsdp-ads-v3")
    codec = SpaceCodec(space)
    measured = measured_configs(ds)
    ok = ds.labelled().ok()
    failed = ds.failed
    knob_cols = [f"config.{n}" for n in codec.names]
    variants = [("as the search command fits them", list(ds.feature_columns)), ("on the knobs alone", knob_cols)]
    rows = []
    for how, cols in variants:
        model = zoo.make("lightgbm").fit(ok.X[cols], ok.y)
        failure = zoo.make("failure").fit(ds.frame[cols], failed) if failed.any() else None
        fixed = fixed_columns(ds, codec.knob_columns(), [])
        for label, fail in ((f"lightgbm, {how}", None), (f"lightgbm + failure, {how}", failure)):
            if how.startswith("as"):
                times = []
                for rep in range(args.speed_repeats):
                    t = time.perf_counter()
                    r = propose(Reinforce(seed=rep), space, model, 50, failure=fail, exclude=measured, fixed=fixed)
                    times.append(time.perf_counter() - t)
                rows.append(("REINFORCE round (3 restarts x 2,000 samples, top 50)", label,
                             f"{np.median(times):.2f} s (median of {len(times)}; {r.stats['distinct']:,} distinct "
                             "configs)", ""))
            t = time.perf_counter()
            e = propose(Exhaustive(), space, model, 50, failure=fail, exclude=measured, fixed=fixed)
            rows.append((f"exhaustive fsdp-ads-v3 ({e.stats['valid']:,} configs)", label,
                         f"{time.perf_counter() - t:.2f} s", e.stats["path"] + (
                             f": {e.stats['path_reason']}" if e.stats.get("path_reason") else "")))
            log(f"{rows[-1]}")
    lines = ["# Searcher speed", "",
             f"Models fitted on `fsdp-cpu` ({len(ds)} records, {len(ok)} ok): `lightgbm` (zoo defaults: 400 trees, "
             "31 leaves) and the `failure` classifier, in two ways: as `python -m perfzoo.search` fits them (every "
             "feature column of the dataset, so the zoo adds its analytic features) and on the space's knobs alone.",
             "", "| what | models | wall time | exhaustive path |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    lines += ["", "The tree-grid fast path scores the grid tree by tree when every feature depends on one knob; "
              "the analytic features (memory, communication) depend on every sharding knob at once, so with them "
              "exhaustive scores the grid chunk by chunk and says so (`stats['path_reason']`, and a log line in "
              "`python -m perfzoo.search`).", "",
              f"Produced by {context(command)}."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--speed", action="store_true", help="measure the speed figures")
    p.add_argument("--speed-repeats", type=int, default=3)
    p.add_argument("--out", default=str(OUT))
    args = p.parse_args(argv)
    command = "python scripts/search_benchmark.py " + " ".join(argv if argv is not None else sys.argv[1:])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.speed:
        text = speed(args, command)
        (out / "speed.md").write_text(text)
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
