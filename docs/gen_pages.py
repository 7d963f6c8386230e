"""The documentation site's generated pages, written at build time by mkdocs-gen-files
(``mkdocs build`` runs this file; nothing here is hand-copied):

* ``index.md``: the README, its links made the site's (``docs/X`` -> ``X``, the leaderboard's
  README -> ``results/leaderboard.md``); ``changelog.md``: ``CHANGELOG.md``, as it is;
* ``reference/cli.md``: every command's ``--help``, from the command's own argparse parser
  (``build_parser()`` of the module ``perfzoo COMMAND`` runs, :data:`perfzoo.cli.COMMANDS`);
* ``reference/api/``: one page per public module of ``perfzoo`` and ``harness``, rendered from
  its docstrings by mkdocstrings, with the section's navigation (``SUMMARY.md``);
* ``results/leaderboard.md``, ``transfer.md``, ``hardware.md`` and their figures: what the last full
  ``perfzoo bench`` wrote to ``leaderboard/``, as it is. (``results/plan-benchmark.md``, ``results/plan-loop.md``
  and ``results/memory-benchmark.md`` are files the benchmarks write with ``--out``.)
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[1]
os.environ["COLUMNS"] = "100"  # argparse wraps help to the terminal's width: one width, whatever builds it

from perfzoo import cli  # noqa: E402  (after COLUMNS: argparse reads it when it formats)


def _subparser(parser: argparse.ArgumentParser, *words: str) -> argparse.ArgumentParser:
    for word in words:
        parser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[word]
    return parser


def command_parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """``(command line, its parser)`` for ``perfzoo`` and every command and sub-command."""
    top = cli.build_parser()
    out = [("perfzoo", top)]
    for command in cli.COMMANDS:
        module = cli.command_module(command)
        out.append((f"perfzoo {command}", module.build_parser()))
        benchmark = module.__name__.rpartition(".")[0] + ".benchmark"
        if command in ("plan", "search"):
            out.append((f"perfzoo {command} benchmark", importlib.import_module(benchmark).build_parser()))
    for action in ("show", "export"):
        out.append((f"perfzoo datasets {action}", _subparser(cli.command_module("datasets").build_parser(), action)))
    return out


def cli_page() -> str:
    lines = ["# Command-line reference", "",
             "Generated from each command's own parser when the site is built (`docs/gen_pages.py`): what",
             "`perfzoo COMMAND --help` prints. Every command also runs as `python -m perfzoo.COMMAND`;",
             "exit status 0 done, 1 interrupted or could not finish, 2 a usage or input error.", ""]
    for line, parser in command_parsers():
        lines += [f"## `{line}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    return "\n".join(lines)


def api_pages() -> None:
    nav = mkdocs_gen_files.Nav()
    for package in ("perfzoo", "harness"):
        root = importlib.import_module(package)
        names = [package] + [m.name for m in pkgutil.walk_packages(root.__path__, package + ".")]
        for name in sorted(names):
            parts = name.split(".")
            if any(p.startswith("_") for p in parts):
                continue  # private modules
            path = Path(*parts) / "index.md" if _is_package(name) else Path(*parts[:-1], parts[-1] + ".md")
            nav[tuple(parts)] = path.as_posix()
            with mkdocs_gen_files.open(Path("reference/api") / path, "w") as f:
                f.write(f"# `{name}`\n\n::: {name}\n")
    with mkdocs_gen_files.open("reference/api/SUMMARY.md", "w") as f:
        f.writelines(nav.build_literate_nav())


def _is_package(name: str) -> bool:
    return (ROOT / Path(*name.split(".")) / "__init__.py").is_file()


def results_pages() -> None:
    board = ROOT / "leaderboard"
    for name, page in (("README.md", "leaderboard.md"), ("transfer.md", "transfer.md"), ("hardware.md", "hardware.md")):
        if (board / name).is_file():
            with mkdocs_gen_files.open(f"results/{page}", "w") as f:
                f.write((board / name).read_text())
    for figure in sorted((board / "figures").glob("*.png")):
        with mkdocs_gen_files.open(f"results/figures/{figure.name}", "wb") as f:
            f.write(figure.read_bytes())


def home_page() -> str:
    text = (ROOT / "README.md").read_text()
    return text.replace("](docs/", "](").replace("](leaderboard/README.md)", "](results/leaderboard.md)")


with mkdocs_gen_files.open("index.md", "w") as f:
    f.write(home_page())
with mkdocs_gen_files.open("changelog.md", "w") as f:
    f.write((ROOT / "CHANGELOG.md").read_text())
with mkdocs_gen_files.open("reference/cli.md", "w") as f:
    f.write(cli_page())
api_pages()
results_pages()
