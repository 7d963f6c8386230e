"""The ``perfzoo`` command: one front for every command.

``perfzoo COMMAND ...`` runs ``python -m perfzoo.COMMAND ...`` (the same parser, the same
options, ``perfzoo COMMAND --help`` its own help): ``plan`` (and ``plan benchmark``),
``predict``, ``bench``, ``collect``, ``search`` (and ``search benchmark``) and ``tune``;
``perfzoo --help`` lists them and ``perfzoo --version`` prints the package's version.

``perfzoo datasets`` lists every dataset (rows, ok/oom/timeout/failed counts, time range,
scale range, source); ``perfzoo datasets show NAME_OR_PATH`` describes one; ``--json`` prints
either as JSON. ``perfzoo datasets export NAME_OR_PATH --format parquet|csv|hf OUT`` writes one's
flat frame (:func:`perfzoo.records.store.export_frame`; ``hf``: a folder ``datasets.load_from_disk`` reads);
with ``--split TASK_ID`` (an id ``perfzoo bench --list-tasks`` prints) the folder ``OUT``
holds that benchmark task's training and test rows, its card and definition
(:mod:`perfzoo.evaluation.export`).
A mistake the user can fix (unknown dataset, missing or malformed file) prints one line,
``perfzoo: error: ...``, and exits 2, as every command does (:mod:`perfzoo.console`); set
``PERFZOO_DEBUG=1`` for the traceback instead.

Example
-------
>>> sorted(COMMANDS)
['bench', 'collect', 'plan', 'predict', 'search', 'tune']
>>> main(["datasets", "--json"])  # doctest: +SKIP
[{"name": "vtrain-a100", "rows": 1440, ...}, ...]
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any, Optional, Sequence

from perfzoo import __version__
from perfzoo.evaluation.presets import find_task
from perfzoo.console import EXIT_DONE, EXIT_USAGE, USER_ERRORS, guarded, one_line
from perfzoo.datasets import list_datasets, load_dataset
from perfzoo.evaluation.export import CARD_FILE, TASK_FILE, write_task
from perfzoo.records import STATUSES
from perfzoo.records.store import EXPORT_FORMATS, export_frame

# command -> (the module whose main() and build_parser() it runs, what it does)
COMMANDS = {
    "plan": ("perfzoo.plan.cli", "the fastest layouts of a model on a cluster, with memory; "
                                 "'plan benchmark': does plan pick the fastest?"),
    "predict": ("perfzoo.predict", "predict the throughput and memory of configurations, with the analytic breakdown"),
    "bench": ("perfzoo.bench", "fit and score the predictor zoo, write the leaderboard; --train/--test: "
                               "your cluster, unseen"),
    "collect": ("perfzoo.collect.cli", "run a sweep of profiling jobs (local or Slurm) and record them"),
    "search": ("perfzoo.search.cli", "search configurations with a predictor (REINFORCE and baselines); "
                                     "'search benchmark': which searcher needs the fewest jobs?"),
    "tune": ("perfzoo.tune", "the closed loop on real jobs: random jobs, fit, search, launch the top k, repeat"),
}


def build_parser() -> argparse.ArgumentParser:
    """The ``perfzoo`` parser: ``datasets`` here, every other command a stub whose own parser
    (``build_parser()`` of its module) reads the rest of the line."""
    parser = argparse.ArgumentParser(
        prog="perfzoo", description="Predict, plan and search distributed-training performance from job records.",
        epilog="Every command also runs as python -m perfzoo.COMMAND; perfzoo COMMAND --help gives its options. "
               "Set PERFZOO_DEBUG=1 to see a traceback instead of a one-line error.")
    parser.add_argument("--version", action="version", version=f"perfzoo {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command, (module, text) in COMMANDS.items():
        commands.add_parser(command, help=f"{text} (python -m {module.removesuffix('.cli')})", add_help=False)
    datasets = commands.add_parser("datasets", help="list the datasets, show one, or export one",
                                   description="List every dataset perfzoo knows, or show one.")
    _dataset_options(datasets, suppress=False)
    actions = datasets.add_subparsers(dest="action", metavar="show|export")
    show = actions.add_parser("show", help="describe one dataset")
    show.add_argument("dataset", metavar="NAME_OR_PATH", help="a dataset name or the path of a CSV / record store")
    _dataset_options(show, suppress=True)
    export = actions.add_parser("export", help="write one dataset's flat frame, or a benchmark task's rows",
                                description="Write a dataset's flat frame (one row per record: config.*, hardware.*, "
                                            "metrics.*, ... columns) as Parquet, CSV or a Hugging Face dataset folder "
                                            "(datasets.load_from_disk reads it); with --split TASK_ID, a folder of "
                                            "that benchmark task's train and test rows (train.parquet and "
                                            "test.parquet, train.csv and test.csv, or a Hugging Face DatasetDict), "
                                            "README.md (its card: definition, licence, provenance) and task.json. "
                                            "Nothing is overwritten.")
    export.add_argument("dataset", metavar="NAME_OR_PATH", help="a dataset name or the path of a CSV / record store")
    export.add_argument("out", metavar="OUT", help="the file (parquet, csv) or folder (hf) to write; must not exist")
    export.add_argument("--format", required=True, choices=EXPORT_FORMATS, help="parquet, csv or hf")
    export.add_argument("--split", metavar="TASK_ID",
                        help="write this benchmark task's train and test rows (an id perfzoo bench "
                             "--list-tasks prints) into the folder OUT")
    _dataset_options(export, suppress=True, with_json=False)
    return parser


def _dataset_options(parser: argparse.ArgumentParser, suppress: bool, with_json: bool = True) -> None:
    # the `show` and `export` sub-parsers repeat the options with SUPPRESS defaults so that values
    # given before the action are not reset by its defaults
    if with_json:
        parser.add_argument("--json", action="store_true",
                            default=argparse.SUPPRESS if suppress else False, help="print JSON")
    parser.add_argument("--external-dir", metavar="DIR", default=argparse.SUPPRESS if suppress else None,
                        help="the external-data directory (default: $PERFZOO_EXTERNAL_DATA, "
                             "else ../shared/external beside the checkout)")


def command_module(command: str):
    """The module that runs ``perfzoo COMMAND`` (its ``main(argv)`` and ``build_parser()``), or
    None where it cannot be imported (a command not installed)."""
    name = COMMANDS[command][0]
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise ValueError(f"perfzoo {command} cannot start: {exc}; install perfzoo with its "
                             "dependencies (pip install -e .)") from None
        return None


def _forward(command: str, argv: list[str]) -> int:
    entry = getattr(command_module(command), "main", None)
    if entry is None:
        print(f"perfzoo {command}: not available yet", file=sys.stderr)
        return EXIT_USAGE
    return entry(argv) or 0


def _number(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and abs(value) < 1000:
        return f"{value:.4g}"
    return f"{value:,.0f}" if isinstance(value, float) else str(value)


def _day(iso: Optional[str]) -> str:
    return iso[:10] if iso else "-"


def _source(summary: dict[str, Any]) -> str:
    return "; ".join(summary["origins"]) or ", ".join(summary["sources"])


def _table(rows: list[dict[str, Any]]) -> str:
    header = ("name", "rows", *STATUSES, "time range", "scale range", "source")
    lines = []
    for s in rows:
        if "error" in s:
            lines.append((s["name"], "-", "-", "-", "-", "-", "-", "-", f"unavailable: {s['error']}"))
            continue
        scale = f"{s['scale_column'].split('.')[-1]} {_number(s['scale_min'])}..{_number(s['scale_max'])}"
        lines.append((s["name"], str(s["rows"]), str(s["ok"]), str(s["oom"]), str(s["timeout"]),
                      str(s["failed"]), f"{_day(s['time_min'])}..{_day(s['time_max'])}", scale, _source(s)))
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header) - 1)]
    numeric = {1, 2, 3, 4, 5}
    out = []
    for row in [header, *lines]:
        cells = [row[i].rjust(w) if i in numeric else row[i].ljust(w) for i, w in enumerate(widths)]
        out.append("  ".join(cells + [row[-1]]))
    return "\n".join(out)


def _list(args: argparse.Namespace) -> int:
    rows = []
    for name in list_datasets(args.external_dir):
        try:
            rows.append(load_dataset(name, args.external_dir).summary())
        except USER_ERRORS as exc:
            rows.append({"name": name, "rows": None, "error": one_line(exc).split(". ")[0]})
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(_table(rows))
        if any("error" in r for r in rows):
            print("\n(`perfzoo datasets show NAME` says why a dataset is unavailable)", file=sys.stderr)
    return 0


def _show(args: argparse.Namespace) -> int:
    ds = load_dataset(args.dataset, args.external_dir)
    s = ds.summary()
    if args.json:
        print(json.dumps({**s, "content_hash": ds.content_hash(), "card": ds.card}, indent=1))
        return 0
    groups = ", ".join(f"{c} ({ds.frame[c].nunique(dropna=False)} values)" for c in ds.group_columns) or "-"
    split = ("-" if s["scale_threshold"] is None else
             f"train <= {_number(s['scale_threshold'])} ({s['scale_train_rows']} rows), "
             f"test > {_number(s['scale_threshold'])} ({s['scale_test_rows']} rows)")
    fields = [
        ("rows", f"{s['rows']} (ok {s['ok']} of which {s['unlabelled']} unlabelled, oom {s['oom']}, "
                 f"timeout {s['timeout']}, failed {s['failed']}); "
                 f"{s['configurations']} distinct configurations ({ds.duplicate_key})"),
        ("target", f"{s['target']} ({s['target_unit']}, higher is better): "
                   f"{_number(s['target_min'])} .. {_number(s['target_max'])} over ok rows"),
        ("time", f"{s['time_column']}: {_day(s['time_min'])} .. {_day(s['time_max'])}"),
        ("scale", f"{s['scale_column']}: {_number(s['scale_min'])} .. {_number(s['scale_max'])}; "
                  f"scale split {split}"),
        ("machines", "; ".join(f"{kind}: {n} rows" for kind, n in s["machines"].items()) or "-"),
        ("groups", groups),
        ("features", f"{len(ds.feature_columns)}: {', '.join(ds.feature_columns)}"),
        ("source", f"{', '.join(s['sources'])}: {_source(s)}"),
        ("provenance", s["provenance"] or "-"),
        ("columns", f"{ds.frame.shape[1]}: {', '.join(ds.frame.columns)}"),
        ("hash", ds.content_hash()),
    ]
    print(ds.name)
    for key, value in fields:
        print(f"  {key:<11} {value}")
    for report in ds.load_reports:
        print(f"  {'load':<11} " + str(report).replace("\n", "\n" + " " * 12))
    if ds.card.strip():
        print("\n" + ds.card.strip())
    return 0


def _export(args: argparse.Namespace) -> int:
    ds = load_dataset(args.dataset, args.external_dir)
    if args.split:
        task = find_task(ds, args.split)
        path, n_train, n_test = write_task(ds, task, args.out, args.format, args.external_dir)
        print(f"{task.id}: {n_train} training and {n_test} test rows ({len(task.partitions())} partitions) written "
              f"to {path} ({args.format}), with {CARD_FILE} and {TASK_FILE}")
        return EXIT_DONE
    path = export_frame(ds.frame, args.out, args.format)
    print(f"{ds.name}: {len(ds.frame)} rows x {ds.frame.shape[1]} columns written to {path} ({args.format})")
    return EXIT_DONE


ACTIONS = {None: _list, "show": _show, "export": _export}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``perfzoo`` command with ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        return _forward(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    return guarded("perfzoo", lambda: ACTIONS[args.action](args))


if __name__ == "__main__":
    sys.exit(main())
