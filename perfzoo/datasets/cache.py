"""Loaded tables kept on disk: a CSV read once is read back in milliseconds.

Reading the published tables parses every row with the lenient vocabulary (about a second for
``published-llm``), and ``plan`` reads them on every run for its baselines. :func:`cached` keeps the
:class:`~perfzoo.datasets.dataset.Dataset` a loader made, keyed by what it was made from: each file's
path, size and modification time (and those of the CSVs beside it, which a loader may read too),
the arguments, and a fingerprint of the code that read them (every
source file and table of the installed ``perfzoo`` package, and the Python, numpy and pandas
versions). Change a file or the code and the key changes; nothing is ever read back stale. The
folder is ``$PERFZOO_CACHE/datasets``, else ``.perfzoo-cache/datasets`` in the checkout (gitignored);
where it cannot be written, tables are read every time. Record stores are not cached: they grow
while they are read.

>>> key(["a.csv"], {"name": "x"}) == key(["a.csv"], {"name": "y"}), key(["a.csv"], {}) == key(["b.csv"], {})
(False, False)
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import platform
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

PACKAGE = Path(__file__).resolve().parents[1]  # perfzoo/
ENV_CACHE = "PERFZOO_CACHE"


def folder() -> Path:
    """Where loaded tables are kept: ``$PERFZOO_CACHE/datasets``, else the checkout's ``.perfzoo-cache/datasets``."""
    root = os.environ.get(ENV_CACHE)
    return (Path(root).expanduser() if root else PACKAGE.parent / ".perfzoo-cache") / "datasets"


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of every ``.py`` and ``.csv`` file of the package and the versions that read them."""
    digest = hashlib.sha256(f"{platform.python_version()} {np.__version__} {pd.__version__}".encode())
    for path in sorted(p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".csv")):
        digest.update(path.relative_to(PACKAGE).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def key(paths: Sequence[Any], given: dict) -> str:
    """The cache key of the files ``paths`` loaded with arguments ``given``: with them, every CSV
    beside them (a loader reads its neighbours too: the published tables' ``model_architectures.csv``)."""
    digest = hashlib.sha256(code_fingerprint().encode())
    loaded = [Path(p).resolve() for p in paths]
    beside = sorted({f.resolve() for p in loaded if p.parent.is_dir() for f in p.parent.glob("*.csv")} - set(loaded))
    for role, files in (("read", loaded), ("beside", beside)):
        for path in files:
            stat = path.stat() if path.exists() else None
            digest.update(f"{role} {path} {stat and stat.st_size} {stat and stat.st_mtime_ns}".encode())
    digest.update(repr(sorted(given.items())).encode())
    return digest.hexdigest()[:32]


def cached(paths: Sequence[Path], given: dict, load: Callable[[], Any]) -> Any:
    """``load()``, or what it returned the last time for these files, arguments and code."""
    path = folder() / f"{key(paths, given)}.pickle"
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
        pass  # not kept yet, or kept by other code: read afresh
    made = load()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as f:
            try:
                pickle.dump(made, f, protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException:
                os.unlink(f.name)
                raise
        os.replace(f.name, path)  # whole or not at all, whoever else writes it at the same time
    except OSError:
        pass  # an unwritable folder or a full disk: the table is read every time
    return made


__all__ = ["ENV_CACHE", "cached", "code_fingerprint", "folder", "key"]
