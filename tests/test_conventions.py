"""What every command shares (perfzoo/console.py): one exit-status convention (0 done, 1 interrupted or a
failed run, 2 a usage or input error), one-line errors that name the path of a file-system error,
and one-line warnings without the source line that raised them."""

from __future__ import annotations

import errno
import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from perfzoo.console import (EXIT_DONE, EXIT_FAILED, EXIT_USAGE, DataError, InputError, PerfzooError, RunFailed,
                             exit_status, guarded)

ROOT = Path(__file__).resolve().parents[1]


def _main(command: str):
    return importlib.import_module({"perfzoo": "perfzoo.cli", "search": "perfzoo.search.cli", "collect": "perfzoo.collect.cli"}.get(
        command, f"perfzoo.{command}")).main


@pytest.mark.parametrize("command, argv", [
    ("perfzoo", ["datasets", "show", "{missing}.csv"]),
    ("perfzoo", ["datasets", "export", "{missing}.csv", "{tmp}/out.csv", "--format", "csv"]),
    ("collect", ["--workload", "llm", "--configs", "{missing}.jsonl", "--out", "{tmp}/s"]),
    ("bench", ["--datasets", "{missing}.csv", "-q"]),
    ("search", ["--space", "fsdp-ads-v3", "--dataset", "{missing}.csv"]),
    ("predict", ["--configs", "{missing}.jsonl"]),
    ("tune", ["--store", "{tmp}/t", "--baseline", "{missing}.json"]),
])
def test_a_missing_input_file_is_the_same_mistake_everywhere(command, argv, tmp_path, capsys):
    missing = tmp_path / "absent"
    args = [a.replace("{missing}", str(missing)).replace("{tmp}", str(tmp_path)) for a in argv]
    assert _main(command)(args) == EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ": error: " in err[0] and str(missing) in err[0], err


def test_an_output_folder_that_cannot_be_written_is_named(tmp_path, capsys):
    (tmp_path / "afile").write_text("")
    out = tmp_path / "afile" / "lb"
    assert _main("bench")(["--datasets", "llm-h100", "--predictors", "ridge", "--splits", "random", "--seeds", "1",
                           "--no-cache", "--no-figures", "--no-artifacts", "-q", "--out", str(out)]) == EXIT_USAGE
    assert capsys.readouterr().err.strip().splitlines() == [  # one line, before any fit
        f"perfzoo bench: error: --out {out}: {out.parent} is a file, not a folder; give a folder"]


@pytest.mark.parametrize("exc, status, line", [
    (OSError(errno.EROFS, "Read-only file system", "ro/lb"), EXIT_USAGE,
     "prog: error: ro/lb: read-only file system (give a path you can write)"),
    (PermissionError(errno.EACCES, "Permission denied", "/x"), EXIT_USAGE,
     "prog: error: /x: permission denied (give a path you can write)"),
    (FileNotFoundError(errno.ENOENT, "No such file or directory", "a.csv"), EXIT_USAGE,
     "prog: error: a.csv: no such file or directory"),
    (InputError("--top-k must be at least 1"), EXIT_USAGE, "prog: error: --top-k must be at least 1"),
    (DataError("runs.csv line 3: no throughput"), EXIT_USAGE, "prog: error: runs.csv line 3: no throughput"),
    (KeyError("unknown dataset 'x'"), EXIT_USAGE, "prog: error: unknown dataset 'x'"),
    (RunFailed("only 0 successful jobs to fit a predictor on"), EXIT_FAILED,
     "prog: error: only 0 successful jobs to fit a predictor on"),
    (KeyboardInterrupt(), EXIT_FAILED, "prog: interrupted"),
])
def test_each_kind_of_error_has_its_status_and_one_line(exc, status, line, capsys):
    def body():
        raise exc

    assert guarded("prog", body) == status
    assert capsys.readouterr().err == line + "\n"


def test_a_bug_keeps_its_traceback_and_every_project_error_is_a_perfzoo_error():
    from perfzoo.datasets import UnknownDatasetError
    from perfzoo.frameworks import ExportError
    from perfzoo.llmconfig import ConfigError
    from perfzoo.records import RecordError
    from perfzoo.spaces import SpaceError
    from perfzoo.zoo.plugin import ContractError

    def body():
        return 1 // 0

    with pytest.raises(ZeroDivisionError):
        guarded("prog", body)
    for kind in (UnknownDatasetError, ExportError, ConfigError, RecordError, SpaceError, ContractError):
        assert issubclass(kind, PerfzooError) and exit_status(kind("x")) == EXIT_USAGE, kind


def test_a_warning_is_one_line_without_its_source_line(capsys):
    def body():
        warnings.warn("unknown accelerator 'X9'\n  add a row", UserWarning)
        return EXIT_DONE

    assert guarded("prog", body) == EXIT_DONE
    assert capsys.readouterr().err == "prog: warning: unknown accelerator 'X9' add a row\n"
    assert warnings.showwarning.__module__ == "warnings"  # put back after the command


def test_warnings_of_a_real_command_are_one_line(tmp_path):
    """A torn store line (``perfzoo.records.store:0: TornLineWarning``) in a fresh process is one line; an
    unknown accelerator (once ``hardware.py:41: UnknownAcceleratorWarning`` and its source line) is
    now refused by predict's front door, in one line."""
    records = (ROOT / "datasets" / "llm-h100" / "records.jsonl").read_text().splitlines()
    (tmp_path / "torn").mkdir()
    (tmp_path / "torn" / "records.jsonl").write_text("\n".join(records[:3]) + "\n" + records[3][:200])
    shown = subprocess.run([sys.executable, "-m", "perfzoo.cli", "datasets", "show", str(tmp_path / "torn")],
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0
    assert shown.stderr.splitlines() == [f"perfzoo datasets: warning: {tmp_path / 'torn' / 'records.jsonl'}: line 4 (byte "
                                         f"{len(chr(10).join(records[:3])) + 1}) is a torn partial record left by an "
                                         "interrupted writer; skipped"]
    # an unknown accelerator is refused before anything is priced: one line, no warning, no source line
    predicted = subprocess.run([sys.executable, "-m", "perfzoo.predict", "--dataset", "llm-h100", "--predictor", "ridge",
                                "--set", "n_layers=8", "hidden_dim=1024", "n_gpus=1", "accelerator=Frobnicator-9000"],
                               capture_output=True, text=True, timeout=120)
    assert predicted.returncode == 2
    assert len(predicted.stderr.splitlines()) == 1 and "Frobnicator-9000" in predicted.stderr, predicted.stderr
    assert "Warning:" not in predicted.stderr and ".py:" not in predicted.stderr
