"""The ``perfzoo`` command: one front for every command.

``perfzoo COMMAND ...`` runs ``python -m perfzoo.COMMAND ...`` (the same parser, the same
options, ``perfzoo COMMAND --help`` its own help): ``plan`` (and ``plan benchmark``),
``predict``, ``bench``, ``collect``, ``search`` (and ``search benchmark``) and ``tune``;
``perfzoo --help`` lists them and ``perfzoo --version`` prints the package's version.

``perfzoo datasets`` lists, shows or exports the datasets (:mod:`perfzoo.datasets_cli`). The front
imports a command's module only when that command runs, so ``perfzoo --help`` starts at once.
A mistake the user can fix prints one line and exits 2, as every command does
(:mod:`perfzoo.console`); set ``PERFZOO_DEBUG=1`` for the traceback instead.

Example
-------
>>> sorted(COMMANDS)
['bench', 'collect', 'datasets', 'plan', 'predict', 'search', 'tune']
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Optional, Sequence

from perfzoo import __version__
from perfzoo.console import EXIT_USAGE

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
    "datasets": ("perfzoo.datasets_cli", "list the datasets, show one, or export one (a flat frame or a benchmark "
                                         "task's rows)"),
}


def build_parser() -> argparse.ArgumentParser:
    """The ``perfzoo`` parser: every command a stub whose own parser (``build_parser()`` of its
    module) reads the rest of the line."""
    parser = argparse.ArgumentParser(
        prog="perfzoo", description="Predict, plan and search distributed-training performance from job records.",
        epilog="Every command but datasets also runs as python -m perfzoo.COMMAND; perfzoo COMMAND --help gives its "
               "options. Set PERFZOO_DEBUG=1 to see a traceback instead of a one-line error.")
    parser.add_argument("--version", action="version", version=f"perfzoo {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command, (module, text) in COMMANDS.items():
        runs_as = f" (python -m {module.removesuffix('.cli')})" if command != "datasets" else ""
        commands.add_parser(command, help=text + runs_as, add_help=False)
    return parser


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


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``perfzoo`` command with ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        return _forward(argv[0], argv[1:])
    build_parser().parse_args(argv)  # --help, --version, or a usage error naming the commands
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
