"""What every command shares: one-line errors and the exit statuses they map to.

Every ``python -m perfzoo.<command>`` and the ``perfzoo`` command run their body through
:func:`guarded`: a mistake the user can fix is one line, ``<prog>: error: <what and the fix>``,
never a traceback (``PERFZOO_DEBUG=1`` shows it). Exit statuses: 2 for a usage error (a bad
argument or input file, :class:`UsageError`, and :class:`~perfzoo.spaces.SpaceError` / a
record that does not validate), ``data_status`` for any other user error (a missing or
unreadable file, a full disk, data that cannot support the request).

>>> def body():
...     raise UsageError("--top-k must be at least 1")
>>> guarded("python -m perfzoo.search", body)  # doctest: +SKIP
python -m perfzoo.search: error: --top-k must be at least 1
2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import MISSING, fields
from typing import Any, Callable, Iterable, TypeVar

from perfzoo.records import RecordError
from perfzoo.spaces import SpaceError

USER_ERRORS = (ValueError, KeyError, OSError, ImportError)  # RecordError, SpaceError, DataError: ValueErrors


class UsageError(Exception):
    """A mistake on the command line or in an input file (exit status 2, one line)."""


def one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line (a ``KeyError``'s key without its quotes)."""
    text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
    return " ".join(str(text).split()) or type(exc).__name__


USAGE_ERRORS = (UsageError, SpaceError, RecordError)  # exit 2: bad arguments, spaces, records


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


def guarded(prog: str, body: Callable[[], int], data_status: int = 1) -> int:
    """Run ``body()`` and turn a user error into one line on stderr and an exit status."""
    try:
        return body()
    except BrokenPipeError:  # `... | head`: the reader left, which is fine
        sys.stdout = open(os.devnull, "w")
        return 0
    except USER_ERRORS + (UsageError,) as exc:
        if os.environ.get("PERFZOO_DEBUG"):
            raise
        print(f"{prog}: error: {one_line(exc)}", file=sys.stderr)
        return 2 if isinstance(exc, USAGE_ERRORS) else data_status
