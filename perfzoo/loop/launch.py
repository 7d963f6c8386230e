"""How the closed loop launches jobs: the launcher protocol and the harness launcher.

A *launcher* is ``launcher(configs, sweep_id) -> None``: it appends one record per config to
the loop's store (the ``confirm`` phase also passes ``repeat=n``: repeat indices ``0 .. n-1``).
The default, :class:`CollectLauncher`, runs them through :func:`perfzoo.collect.run` (the
harness: torchrun per job, per-job timeouts, OOM detection); tests inject a cheap stand-in.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Optional

from perfzoo import collect

PLAN_DIR = "tune"  # the plans' folder inside the store
Launcher = Callable[[list, str], None]


class LaunchInterrupted(KeyboardInterrupt):
    """The launcher stopped before every job ran (Ctrl-C, SIGTERM): run the loop again to resume."""


class CollectLauncher:
    """Runs configs through the harness: :func:`perfzoo.collect.run`, called as a function.

    ``space`` is what collect's ``space`` takes (a name, or a space file's path); ``options``
    are more :class:`~perfzoo.collect.CollectConfig` fields (``timeout``, ``steps``, ``warm``,
    ``command``, ...; collect's defaults otherwise); ``progress``: collect's bar.
    """

    def __init__(self, space: str, store: Path, *, options: Optional[dict] = None, progress: bool = True):
        self.space = space
        self.store = store
        self.options = dict(options or {})
        self.progress = progress

    def __call__(self, configs: list, sweep_id: str, repeat: int = 1) -> None:
        """Run ``configs`` (repeat indices ``0 .. repeat - 1``; those in the store are skipped)."""
        if not configs:
            return
        plan_dir = self.store / PLAN_DIR
        plan_dir.mkdir(parents=True, exist_ok=True)
        path = plan_dir / f"{sweep_id}-launch.jsonl"
        write_lines(path, [{"config": c} for c in configs])
        config = collect.CollectConfig(out=str(self.store), space=self.space, configs=str(path), sweep_id=sweep_id,
                                       repeat=repeat, no_progress=not self.progress, **self.options)
        if collect.run(config, provenance=f"python -m perfzoo.tune (sweep {sweep_id})") == 1:
            raise LaunchInterrupted(f"collect was interrupted during {sweep_id}")


def write_lines(path: Path, rows: list[dict]) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
    os.replace(tmp, path)


__all__ = ["PLAN_DIR", "CollectLauncher", "LaunchInterrupted", "Launcher", "write_lines"]
