"""The ``perfzoo`` command.

``perfzoo datasets`` lists every dataset (rows, ok/oom/timeout/failed counts, time range,
scale range, source); ``perfzoo datasets show NAME_OR_PATH`` describes one; ``--json`` prints
either as JSON. ``perfzoo collect|bench|search|tune ...`` run ``python -m perfzoo.<command>``.
A mistake the user can fix (unknown dataset, missing or malformed file) prints one line,
``perfzoo: error: ...``, and exits 1; set ``PERFZOO_DEBUG=1`` for the traceback instead.

Example
-------
>>> main(["datasets", "--json"])  # doctest: +SKIP
[{"name": "vtrain-a100", "rows": 1440, ...}, ...]
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any, Optional, Sequence

from perfzoo._cli import USER_ERRORS, guarded, one_line
from perfzoo.datasets import list_datasets, load_dataset
from perfzoo.records import STATUSES

FORWARDED = {
    "collect": "run a sweep of profiling jobs and record them",
    "bench": "fit and score the predictor zoo, write the leaderboard",
    "search": "search configurations with a predictor (REINFORCE and baselines)",
    "tune": "the closed loop: random jobs, fit, search, launch the top k, repeat",
    "predict": "predict the throughput of configurations, with the analytic breakdown",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perfzoo", description="Predict and search distributed-training performance from job records.",
        epilog="Set PERFZOO_DEBUG=1 to see a traceback instead of a one-line error.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    datasets = commands.add_parser("datasets", help="list the datasets, or show one",
                                   description="List every dataset perfzoo knows, or show one.")
    _dataset_options(datasets, suppress=False)
    actions = datasets.add_subparsers(dest="action", metavar="show")
    show = actions.add_parser("show", help="describe one dataset")
    show.add_argument("dataset", metavar="NAME_OR_PATH", help="a dataset name or the path of a CSV / record store")
    _dataset_options(show, suppress=True)
    for command, text in FORWARDED.items():
        commands.add_parser(command, help=f"{text} (python -m perfzoo.{command})", add_help=False)
    return parser


def _dataset_options(parser: argparse.ArgumentParser, suppress: bool) -> None:
    # the `show` sub-parser repeats the options with SUPPRESS defaults so that values given
    # before `show` are not reset by its defaults
    parser.add_argument("--json", action="store_true",
                        default=argparse.SUPPRESS if suppress else False, help="print JSON")
    parser.add_argument("--external-dir", metavar="DIR", default=argparse.SUPPRESS if suppress else None,
                        help="the external-data directory (default: $PERFZOO_EXTERNAL_DATA, "
                             "else ../shared/external beside the checkout)")


def _forward(command: str, argv: list[str]) -> int:
    try:
        module = importlib.import_module(f"perfzoo.{command}")
    except ModuleNotFoundError as exc:
        if exc.name != f"perfzoo.{command}":
            raise ValueError(f"perfzoo {command} cannot start: {exc}; install perfzoo with its "
                             "dependencies (pip install -e .)") from None
        module = None
    entry = getattr(module, "main", None)
    if entry is None:
        print(f"perfzoo {command}: not available yet", file=sys.stderr)
        return 2
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
    groups = ", ".join(f"{c} ({ds.frame[c].nunique()} values)" for c in ds.group_columns) or "-"
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


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``perfzoo`` command with ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in FORWARDED:
        return _forward(argv[0], argv[1:])
    args = _parser().parse_args(argv)
    return guarded("perfzoo", lambda: _show(args) if args.action == "show" else _list(args))


if __name__ == "__main__":
    sys.exit(main())
