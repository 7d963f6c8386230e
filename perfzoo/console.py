"""What every command shares: one exit-status convention, one-line errors and warnings, the
mapping between a config dataclass and its flags, and configs read from a file.

Every ``python -m perfzoo.<command>`` and the ``perfzoo`` command run their body through
:func:`guarded`. Every error perfzoo raises for a person to act on is a :class:`PerfzooError`,
and its class says the exit status (:func:`exit_status`, the one table), the same for every command:

====  ========================================================================================
0     done (a job that failed is a record, not an error)
1     interrupted (Ctrl-C, SIGTERM: run the same command again to resume), or a run that
      started and could not finish (:class:`RunFailed`, e.g. the loop had nothing to fit on)
2     what was given is wrong (:class:`InputError`: a bad flag or value, an unknown name, a config
      perfzoo cannot price), data that cannot be used as it is (:class:`DataError`: a malformed
      table or record, a dataset without what the step needs), a file that is missing,
      unreadable or cannot be written (``OSError``), a package a step needs that is not
      installed, or a value a library refuses as perfzoo passed it on (:data:`USER_ERRORS`)
====  ========================================================================================

A mistake the user can fix is one line, ``<prog>: error: <what and the fix>``, never a
traceback (``PERFZOO_DEBUG=1`` shows it); a file-system error names the path. Any other exception
is a bug and keeps its traceback. A warning is one line too, ``<prog>: warning:
<message>``, without the source line that raised it.

>>> def body():
...     raise InputError("--top-k must be at least 1")
>>> guarded("python -m perfzoo.search", body)  # doctest: +SKIP
python -m perfzoo.search: error: --top-k must be at least 1
2

Configs read from a file, one reader for every command that takes them (collect's ``--configs``,
predict's ``--configs``, tune's ``--baseline``): a JSON file holding one config (or a list of
them), a JSONL file of configs or of the searcher's ``{"config": {...}}`` lines, or a CSV with one
config per row (blank cells left out). A mistake names the file, the line and the fix.

>>> import tempfile
>>> f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
>>> _ = f.write('{"config": {"tp": 8}}\\n# a comment\\n{"tp": 4}\\n'); f.close()
>>> [(where.split()[-2:], cfg) for where, cfg in read_located(f.name)]
[(['line', '1'], {'tp': 8}), (['line', '3'], {'tp': 4})]
"""

from __future__ import annotations

import argparse
import atexit
import difflib
import errno
import io
import json
import math
import os
import shutil
import sys
import tempfile
import warnings
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TypeVar, Union



EXIT_DONE, EXIT_FAILED, EXIT_USAGE = 0, 1, 2  # the exit statuses of every command (module docstring)
EXIT_INTERRUPTED = EXIT_FAILED


class PerfzooError(Exception):
    """An error for a person to act on: its message is one line naming what is wrong and the fix."""


class InputError(PerfzooError, ValueError):
    """What was given is wrong: a flag, a value, a name, a file's content, a config (exit status 2)."""


class DataError(PerfzooError, ValueError):
    """Data that cannot be used as it is: a malformed table or record, a dataset without what a step
    needs (exit status 2)."""


class RunFailed(PerfzooError):
    """A run that started and cannot finish, e.g. nothing to fit on (exit status 1)."""


# the errors a person acts on, and the exit status of each (the first class an error is wins): perfzoo's own;
# a file the system cannot read or write; a package a step needs; a value a library refuses as perfzoo passed
# it on (pandas reading a user's file, the harness's flags, a scikit-learn estimator's parameters)
USER_ERRORS = ((RunFailed, EXIT_FAILED), (PerfzooError, EXIT_USAGE), (OSError, EXIT_USAGE), (ImportError, EXIT_USAGE),
               (ValueError, EXIT_USAGE), (KeyError, EXIT_USAGE))


def exit_status(exc: BaseException) -> int | None:
    """The exit status of ``exc`` (:data:`USER_ERRORS`), None for an error that is a bug.

    >>> exit_status(InputError("x")), exit_status(RunFailed("x")), exit_status(ZeroDivisionError())
    (2, 1, None)
    """
    return next((status for kind, status in USER_ERRORS if isinstance(exc, kind)), None)


def one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line: a ``KeyError``'s key without its quotes, a file-system
    error as its path and what went wrong.

    >>> one_line(PermissionError(13, "Permission denied", "ro/lb"))
    'ro/lb: permission denied (give a path you can write)'
    """
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        path = f"{exc.filename} -> {exc.filename2}" if exc.filename2 is not None else str(exc.filename)
        fix = " (give a path you can write)" if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS) else ""
        return f"{path}: {exc.strerror[0].lower()}{exc.strerror[1:]}{fix}"
    text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
    return " ".join(str(text).split()) or type(exc).__name__


def show_warning(prog: str) -> Callable[..., None]:
    """A ``warnings.showwarning`` that prints ``<prog>: warning: <message>`` on one line: no file,
    line number or source line."""
    def show(message, category, filename, lineno, file=None, line=None) -> None:
        print(f"{prog}: warning: {' '.join(str(message).split())}", file=file or sys.stderr)
    return show


def parse_value(text: str):
    """A ``KEY=VALUE`` value from the command line: JSON when it parses (numbers, true, null), else the text."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def check_choice(flag: str, value: Any, choices: Iterable[Any]) -> None:
    """A :class:`InputError` unless ``value`` is one of ``choices`` (a config field's check)."""
    choices = tuple(choices)
    if value not in choices:
        raise InputError(f"{flag} {value!r}: choose one of {', '.join(str(c) for c in choices if c is not None)}")


Config = TypeVar("Config")


def field_defaults(config_class: type) -> dict[str, Any]:
    """The defaults of a config dataclass's fields, for ``parser.set_defaults``: every default
    lives once, in the dataclass (a field without a default is a required flag)."""
    return {f.name: f.default if f.default is not MISSING else f.default_factory()
            for f in fields(config_class) if f.default is not MISSING or f.default_factory is not MISSING}


def config_from_args(config_class: type[Config], args: argparse.Namespace) -> Config:
    """The config a parsed command line means: each field from the argument of its name (the
    parser's ``dest``); ``__post_init__`` then checks the values."""
    values = vars(args)
    return config_class(**{f.name: values[f.name] for f in fields(config_class)})


def spelled_call(function: str, config: Any) -> str:
    """``function(config)`` in words, naming the fields that differ from their defaults (the
    provenance of a run started from Python)."""
    defaults = field_defaults(type(config))
    changed = {f.name: getattr(config, f.name) for f in fields(config)
               if f.name not in defaults or getattr(config, f.name) != defaults[f.name]}
    return f"{function}(" + ", ".join(f"{k}={v!r}" for k, v in changed.items()) + ")"


def assignment(item: str, flag: str, key: str = "KEY") -> tuple[str, Any]:
    """``(key, value)`` of a ``KEY=VALUE`` item given to ``flag`` (the value by :func:`parse_value`);
    a :class:`InputError` for an item without ``=``.

    >>> assignment("tp=8", "--set")
    ('tp', 8)
    """
    if "=" not in item:
        raise InputError(f"{flag} {item!r}: expected {key}=VALUE")
    k, v = item.split("=", 1)
    return k.strip(), parse_value(v.strip())


def assignments(items: Sequence[str], flag: str, key: str = "KEY") -> dict[str, Any]:
    """The ``KEY=VALUE`` items given to ``flag`` as one dict (:func:`assignment` each); a
    :class:`InputError` for a key given twice, whichever value was meant.

    >>> assignments(["tp=8", "pp=2"], "--set")
    {'tp': 8, 'pp': 2}
    >>> assignments(["tp=8", "tp=4"], "--set")
    Traceback (most recent call last):
    ...
    perfzoo.console.InputError: --set gives tp twice, tp=8 and tp=4: keep one
    """
    out: dict[str, Any] = {}
    given: dict[str, str] = {}  # key -> the item that gave it, for the message
    for item in items:
        k, v = assignment(item, flag, key)
        if k in out:
            raise InputError(f"{flag} gives {k} twice, {given[k].strip()} and {item.strip()}: keep one")
        out[k], given[k] = v, item
    return out


def check_options(parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
    """``parser.error`` (exit 2) naming the first ``--option`` of ``argv`` that ``parser`` does not
    know and the close ones (``--sett`` -> ``--set``), before argparse reports something else
    (a required option missing); an abbreviation argparse accepts is left to it."""
    known = [o for action in parser._actions for o in action.option_strings]
    for token in argv:
        if token == "--":
            return
        flag = token.split("=", 1)[0]
        if flag.startswith("--") and not any(o.startswith(flag) for o in known):
            close = difflib.get_close_matches(flag, known, n=2, cutoff=0.6)
            parser.error(f"unrecognized option {flag}" + (f" (did you mean {' or '.join(close)}?)" if close else ""))


def check_writable(flag: str, path: Union[str, Path], make_folder: bool = False) -> None:
    """A :class:`InputError` naming ``path`` as given unless a file can be written there (its folder
    exists and takes a new file; an existing file opens for writing): checked before any work, so
    a long run does not end on a path it cannot write. Nothing is left behind. ``make_folder``: the
    command makes a missing folder when it writes, so the nearest one above that exists must take it
    (:func:`check_writable_folder`)."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{flag} {path}: is a folder; give a file path")
    folder = p.absolute().parent
    if make_folder and not folder.is_dir():
        check_writable_folder(flag, folder, shown=path)
        return
    if not folder.is_dir():
        raise InputError(f"{flag} {path}: the folder {folder} does not exist")
    try:
        if p.exists():
            with open(p, "ab"):
                pass
        else:
            _probe(folder)
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot write a file there ({(exc.strerror or str(exc)).lower()}); give a "
                         "path you can write") from None


def _probe(folder: Path) -> None:
    """Make and remove a file in ``folder`` (an OSError where it takes none)."""
    fd, probe = tempfile.mkstemp(dir=folder, prefix=".perfzoo-write-check-")
    os.close(fd)
    os.unlink(probe)


def check_writable_folder(flag: str, path: Union[str, Path], shown: Union[str, Path, None] = None) -> None:
    """A :class:`InputError` naming ``path`` as given (or ``shown``: the file to go in it) unless files
    can be written in it: it is a folder that takes a new file, or the nearest folder above it that
    exists takes one (the command makes the rest). Checked before any work; nothing is left behind.

    >>> check_writable_folder("--out", "/proc/leaderboard")
    Traceback (most recent call last):
    ...
    perfzoo.console.InputError: --out /proc/leaderboard: cannot write there (no such file or directory); give a folder you can write
    """
    p, shown = Path(path).absolute(), path if shown is None else shown
    existing = next(a for a in (p, *p.parents) if a.exists())
    if not existing.is_dir():
        raise InputError(f"{flag} {shown}: {existing} is a file, not a folder; give a folder")
    try:
        _probe(existing)
    except OSError as exc:
        raise InputError(f"{flag} {shown}: cannot write there ({(exc.strerror or str(exc)).lower()}); give a folder "
                         "you can write") from None


def check_figure(flag: str, path: Union[str, Path]) -> None:
    """:func:`check_writable`, and an :class:`InputError` unless matplotlib writes ``path``'s suffix
    (``.png``, ``.pdf``, ``.svg`` ...): a figure's path is checked before the work it draws.

    >>> check_figure("--plot", "plan.txt")
    Traceback (most recent call last):
    ...
    perfzoo.console.InputError: --plot plan.txt: matplotlib writes no .txt figure; give a path ending .png (or .pdf, .svg, .jpg)
    """
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in pyplot().Figure().canvas.get_supported_filetypes():
        raise InputError(f"{flag} {path}: matplotlib writes no {'.' + suffix if suffix else 'figure without a suffix'}"
                         f"{' figure' if suffix else ''}; give a path ending .png (or .pdf, .svg, .jpg)")
    check_writable(flag, path, make_folder=True)  # the figure's folder is made with it


def guarded(prog: str, body: Callable[[], int]) -> int:
    """Run ``body()`` (it returns the exit status) with one-line warnings, and turn a user error
    into one line on stderr and its exit status (the module docstring's table)."""
    with warnings.catch_warnings():
        warnings.showwarning = show_warning(prog)
        try:
            return body()
        except BrokenPipeError:  # `... | head`: the reader left, which is fine
            sys.stdout = open(os.devnull, "w")
            return EXIT_DONE
        except KeyboardInterrupt:
            print(f"{prog}: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        except Exception as exc:  # one line where a person can act on it; a bug keeps its traceback
            status = exit_status(exc)
            if status is None or os.environ.get("PERFZOO_DEBUG"):
                raise
            print(f"{prog}: error: {one_line(exc)}", file=sys.stderr)
            return status


def pyplot():
    """matplotlib's ``pyplot`` on the Agg backend (figures go to files), its font cache and config in
    a temporary folder (removed at exit) unless ``MPLCONFIGDIR`` names one: a plot writes nothing
    under ``~/.cache`` or ``~/.config``. The one place perfzoo imports matplotlib."""
    if "MPLCONFIGDIR" not in os.environ:
        folder = tempfile.mkdtemp(prefix="perfzoo-matplotlib-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        os.environ["MPLCONFIGDIR"] = folder
    import matplotlib  # slow to import, and only the commands that draw need it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# --- configs read from a file ---------------------------------------------------------------

def read_text(path: str | Path, what: str) -> str:
    """The text of the file at ``path`` (UTF-8); one that is not text is a :class:`InputError`
    naming it (``what``: the flag or role it was given as) and the first byte that is not.

    >>> import tempfile
    >>> f = tempfile.NamedTemporaryFile("wb", suffix=".csv", delete=False); _ = f.write(b"tp\\n\\xff\\n"); f.close()
    >>> read_text(f.name, "--configs")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    perfzoo.console.InputError: --configs /...csv: not UTF-8 text (byte 3 is 0xff); save it as UTF-8
    """
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {path}: not UTF-8 text (byte {exc.start} is 0x{raw[exc.start]:02x}); save it as "
                         "UTF-8") from None


def read_located(path: str, flag: str = "--configs") -> list[tuple[str, dict]]:
    """``[(where, config)]`` from ``path`` (see the module docstring); ``where`` names the file and
    its line (``FILE line 3``, ``FILE row 2`` of a CSV). A :class:`InputError` names what is wrong."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{flag} {path}: no such file")
    if p.suffix.lower() == ".csv":
        text = read_text(p, flag)
        if not text.strip():  # pandas would say "No columns to parse from file", naming no file
            raise InputError(f"{flag} {path}: the file is empty; give a CSV with a header row of keys and one row "
                             "per config")
        import pandas as pd  # only a CSV of configs needs it (the front's start-up stays light)

        rows = pd.read_csv(io.StringIO(text)).to_dict("records")
        out = [(f"{path} row {i}", {k: v for k, v in row.items() if not (isinstance(v, float) and math.isnan(v))})
               for i, row in enumerate(rows, 1)]
    else:
        out = _json_configs(p, path, flag)
    if not out:
        raise InputError(f"{flag} {path}: the file holds no configs")
    return out


def read_configs(path: str, flag: str = "--configs") -> list[dict]:
    """The configs in ``path`` (:func:`read_located` without the places)."""
    return [cfg for _, cfg in read_located(path, flag)]


def _json_configs(p: Path, path: str, flag: str) -> list[tuple[str, dict]]:
    text = read_text(p, flag)
    try:  # one JSON document: a config (pretty-printed or not), or a list of them
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, list):
        return [(f"{path} item {i}", _config(obj, f"{path} item {i}")) for i, obj in enumerate(whole, 1)]
    if isinstance(whole, dict):
        return [(f"{path} line 1", _config(whole, f"{path} line 1"))]
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        where = f"{path} line {i}"
        try:
            obj = json.loads(s)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        out.append((where, _config(obj, where)))
    return out


def _config(obj: Any, where: str) -> dict:
    if isinstance(obj, dict) and isinstance(obj.get("config"), dict):
        obj = obj["config"]
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected a JSON object of knobs or {{\"config\": {{...}}}}")
    return obj
