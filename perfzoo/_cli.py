"""What every command shares: one exit-status convention, one-line errors and warnings, and
the mapping between a config dataclass and its flags.

Every ``python -m perfzoo.<command>`` and the ``perfzoo`` command run their body through
:func:`guarded`. Exit statuses, the same for every command:

====  ========================================================================================
0     done (a job that failed is a record, not an error)
1     interrupted (Ctrl-C, SIGTERM: run the same command again to resume), or a run that
      started and could not finish (:class:`RunFailed`, e.g. the loop had nothing to fit on)
2     a usage or input error: a bad flag or value, an unknown name, a file that is missing,
      unreadable, malformed or cannot be written (:class:`UsageError` and every error below)
====  ========================================================================================

A mistake the user can fix is one line, ``<prog>: error: <what and the fix>``, never a
traceback (``PERFZOO_DEBUG=1`` shows it); a file-system error names the path. A warning is one
line too, ``<prog>: warning: <message>``, without the source line that raised it.

>>> def body():
...     raise UsageError("--top-k must be at least 1")
>>> guarded("python -m perfzoo.search", body)  # doctest: +SKIP
python -m perfzoo.search: error: --top-k must be at least 1
2
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import warnings
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TypeVar


EXIT_DONE, EXIT_FAILED, EXIT_USAGE = 0, 1, 2  # the exit statuses of every command (module docstring)
EXIT_INTERRUPTED = EXIT_FAILED
USER_ERRORS = (ValueError, KeyError, OSError, ImportError)  # RecordError, SpaceError, DataError: ValueErrors


class UsageError(Exception):
    """A mistake on the command line or in an input file (exit status 2, one line)."""


class RunFailed(Exception):
    """A run that started and cannot finish, e.g. nothing to fit on (exit status 1, one line)."""


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
    """A :class:`UsageError` unless ``value`` is one of ``choices`` (a config field's check)."""
    choices = tuple(choices)
    if value not in choices:
        raise UsageError(f"{flag} {value!r}: choose one of {', '.join(str(c) for c in choices if c is not None)}")


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
    a :class:`UsageError` for an item without ``=``.

    >>> assignment("tp=8", "--set")
    ('tp', 8)
    """
    if "=" not in item:
        raise UsageError(f"{flag} {item!r}: expected {key}=VALUE")
    k, v = item.split("=", 1)
    return k.strip(), parse_value(v.strip())


def assignments(items: Sequence[str], flag: str, key: str = "KEY") -> dict[str, Any]:
    """The ``KEY=VALUE`` items given to ``flag`` as one dict (:func:`assignment` each); a
    :class:`UsageError` for a key given twice, whichever value was meant.

    >>> assignments(["tp=8", "pp=2"], "--set")
    {'tp': 8, 'pp': 2}
    >>> assignments(["tp=8", "tp=4"], "--set")
    Traceback (most recent call last):
    ...
    perfzoo._cli.UsageError: --set gives tp twice, tp=8 and tp=4: keep one
    """
    out: dict[str, Any] = {}
    given: dict[str, str] = {}  # key -> the item that gave it, for the message
    for item in items:
        k, v = assignment(item, flag, key)
        if k in out:
            raise UsageError(f"{flag} gives {k} twice, {given[k].strip()} and {item.strip()}: keep one")
        out[k], given[k] = v, item
    return out


def check_writable(path: str, flag: str) -> None:
    """Refuse, before any work, an output file ``path`` (given as ``flag``) that cannot be
    written: a folder, or a place where a file cannot be created (the message names ``path`` as
    given). Creates and removes ``path``'s ``.tmp`` sibling, what an atomic write goes through.

    >>> check_writable("/proc/perfzoo.jsonl", "--out")
    Traceback (most recent call last):
    ...
    perfzoo._cli.UsageError: --out /proc/perfzoo.jsonl: cannot write there (no such file or directory)
    """
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{flag} {path}: a folder; give a file name")
    probe = p.with_name(p.name + ".tmp")
    existed = probe.exists()
    try:
        with open(probe, "a"):
            pass
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot write there ({(exc.strerror or str(exc)).lower()})") from None
    if not existed:
        probe.unlink()


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
        except USER_ERRORS + (UsageError, RunFailed) as exc:
            if os.environ.get("PERFZOO_DEBUG"):
                raise
            print(f"{prog}: error: {one_line(exc)}", file=sys.stderr)
            return EXIT_FAILED if isinstance(exc, RunFailed) else EXIT_USAGE
