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

import json
import os
import sys
from typing import Callable

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
