"""``perfzoo datasets``: list every dataset, show one, or export one.

``perfzoo datasets`` lists every dataset (rows, ok/oom/timeout/failed counts, time range, scale
range, source); ``perfzoo datasets show NAME_OR_PATH`` describes one; ``--json`` prints either as
JSON. ``perfzoo datasets export NAME_OR_PATH --format parquet|csv|hf OUT`` writes one's flat frame
(:func:`perfzoo.records.store.export_frame`; ``hf``: a folder ``datasets.load_from_disk`` reads);
with ``--split TASK_ID`` (an id ``perfzoo bench --list-tasks`` prints) the folder ``OUT`` holds that
benchmark task's training and test rows, its card and definition (:mod:`perfzoo.evaluation.export`).
A mistake the user can fix (unknown dataset, missing or malformed file) prints one line and exits 2,
as every command does (:mod:`perfzoo.console`).

>>> main(["--json"])  # doctest: +SKIP
[{"name": "vtrain-a100", "rows": 1440, ...}, ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Optional, Sequence

from perfzoo.console import EXIT_DONE, exit_status, guarded, one_line
from perfzoo.datasets import list_datasets, load_dataset
from perfzoo.evaluation.export import CARD_FILE, TASK_FILE, write_task
from perfzoo.evaluation.presets import find_task
from perfzoo.records import STATUSES
from perfzoo.records.store import EXPORT_FORMATS, export_frame


def build_parser() -> argparse.ArgumentParser:
    """The ``perfzoo datasets`` parser, with its ``show`` and ``export`` actions."""
    datasets = argparse.ArgumentParser(prog="perfzoo datasets", description="List every dataset perfzoo knows, "
                                       "show one, or export one.")
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
    return datasets


def _dataset_options(parser: argparse.ArgumentParser, suppress: bool, with_json: bool = True) -> None:
    # the `show` and `export` sub-parsers repeat the options with SUPPRESS defaults so that values
    # given before the action are not reset by its defaults
    if with_json:
        parser.add_argument("--json", action="store_true",
                            default=argparse.SUPPRESS if suppress else False, help="print JSON")
    parser.add_argument("--external-dir", metavar="DIR", default=argparse.SUPPRESS if suppress else None,
                        help="the external-data directory (default: $PERFZOO_EXTERNAL_DATA, "
                             "else ../shared/external beside the checkout)")


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
        except Exception as exc:  # a dataset that cannot be read is a row saying why; a bug is raised
            if exit_status(exc) is None:
                raise
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
    """Run ``perfzoo datasets`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    return guarded("perfzoo datasets", lambda: ACTIONS[args.action](args))


if __name__ == "__main__":
    sys.exit(main())
