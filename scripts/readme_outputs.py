"""Re-run the example commands of the README (and any docs page) and check or refresh the output
shown under each.

An example is a fenced ``console`` block whose first line is ``$ perfzoo ...`` (continued with
``\\``), the output below it, and a marker line just above the fence saying which lines of the
output are shown::

    <!-- output: keep=0:12,-3: width=118 -->
    ```console
    $ perfzoo plan --model llama3-70b --gpus 256 ...
    ...
    ```

``keep`` holds Python slices of the output's lines (``0:12`` the first twelve, ``-3:`` the last
three); a gap between kept slices is shown as a line ``...``. ``width`` cuts longer lines to that
many characters, ending in ``...``. ``slow`` marks an example that launches real jobs (minutes):
it runs only with ``--slow``. Each command runs as ``python -m perfzoo.cli ...`` in a fresh
temporary folder that holds a link to ``examples/``, with this checkout first on ``PYTHONPATH``.

    python scripts/readme_outputs.py                  # check: exit 1 if any shown output moved
    python scripts/readme_outputs.py --write          # refresh the README's outputs in place
    python scripts/readme_outputs.py --write --slow docs/guide/plan.md
    python scripts/readme_outputs.py --full           # each whole output, lines numbered (for keep=)

After a change that moves predictions (a refit, a physics change), ``--write`` and review the diff.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^<!-- output:(?P<options>[^>]*)-->\s*$")
OPTION = re.compile(r"(\w+)(?:=(\S+))?")


@dataclass
class Example:
    """One example: the marker's line index, the fence's first and last line, its command and options."""
    marker: int
    start: int  # the ```console line
    end: int  # the closing ``` line
    command: str
    command_lines: int
    options: dict[str, str]

    @property
    def slow(self) -> bool:
        return "slow" in self.options


def examples(lines: list[str]) -> list[Example]:
    """Every marked example of a markdown file's lines."""
    found = []
    for i, line in enumerate(lines):
        match = MARKER.match(line)
        if not match:
            continue
        if i + 1 >= len(lines) or lines[i + 1].strip() != "```console":
            raise ValueError(f"line {i + 1}: an output marker must stand just above a ```console fence")
        end = next((j for j in range(i + 2, len(lines)) if lines[j].strip() == "```"), None)
        if end is None or not lines[i + 2].startswith("$ "):
            raise ValueError(f"line {i + 2}: the fence must open with '$ command' and be closed")
        words, j = [], i + 2
        while True:
            text = lines[j][2:] if j == i + 2 else lines[j]
            words.append(text.rstrip().removesuffix("\\").strip())
            if not lines[j].rstrip().endswith("\\"):
                break
            j += 1
        options = {k: v or "" for k, v in OPTION.findall(match["options"])}
        found.append(Example(i, i + 1, end, " ".join(words), j - (i + 2) + 1, options))
    return found


def shown(output: list[str], keep: str = "", width: int = 0) -> list[str]:
    """The lines of ``output`` an example shows: the ``keep`` slices (a gap between them a line
    ``...``), each cut to ``width`` characters.

    >>> shown([f"line {i}" for i in range(10)], keep="0:2,-1:")
    ['line 0', 'line 1', '...', 'line 9']
    >>> shown(["a very long line"], width=9)
    ['a very...']
    """
    picked: list[int] = []
    for part in filter(None, keep.split(",")):
        start, _, stop = part.partition(":")
        picked += range(len(output))[slice(int(start) if start else None, int(stop) if stop else None)]
    picked = sorted(set(picked)) if keep else list(range(len(output)))
    lines, last = [], -1
    for index in picked:
        if index != last + 1:
            lines.append("...")
        lines.append(output[index])
        last = index
    if keep and picked and picked[-1] != len(output) - 1:
        lines.append("...")
    return [line if not width or len(line) <= width else line[:width - 3].rstrip() + "..." for line in lines]


def run(command: str) -> tuple[list[str], float]:
    """``command`` (``perfzoo ...``) run as ``python -m perfzoo.cli ...``: its output lines
    (stdout and stderr together, as a terminal shows them) and the seconds it took."""
    words = shlex.split(command)
    if words[0] != "perfzoo":
        raise ValueError(f"{command!r}: an example runs a perfzoo command")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
           "COLUMNS": "100", "PYTHONUNBUFFERED": "1"}  # unbuffered: the lines in the order a terminal shows them
    with tempfile.TemporaryDirectory(prefix="perfzoo-readme-") as folder:
        (Path(folder) / "examples").symlink_to(ROOT / "examples")
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "perfzoo.cli", *words[1:]], cwd=folder, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        seconds = time.monotonic() - began
    if done.returncode != 0:
        raise RuntimeError(f"{command}: exit status {done.returncode}\n{done.stdout[-2000:]}")
    return done.stdout.rstrip("\n").splitlines(), seconds


def refresh(path: Path, write: bool, slow: bool, full: bool = False) -> int:
    """Check (or, with ``write``, rewrite) every example of ``path``; the number that moved."""
    lines = path.read_text().splitlines()
    moved = 0
    for example in reversed(examples(lines)):  # from the end, so earlier line numbers hold
        if example.slow and not slow:
            print(f"{path.name}: skipped (slow, --slow runs it): $ {example.command}")
            continue
        output, seconds = run(example.command)
        if full:
            print("\n".join(f"{i:4d} {line}" for i, line in enumerate(output)))
        fresh = shown(output, example.options.get("keep", ""), int(example.options.get("width", 0) or 0))
        body_start = example.start + 1 + example.command_lines
        old = lines[body_start:example.end]
        same = old == fresh
        print(f"{path.name}: {'unchanged' if same else 'MOVED'} ({seconds:.1f} s): $ {example.command}")
        if not same:
            moved += 1
            sys.stdout.writelines(line + "\n" for line in difflib.unified_diff(old, fresh, "shown", "now", lineterm=""))
            if write:
                lines[body_start:example.end] = fresh
    if write and moved:
        path.write_text("\n".join(lines) + "\n")
    return moved


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, default=[ROOT / "README.md"],
                        help="markdown files with marked examples (default: README.md)")
    parser.add_argument("--write", action="store_true", help="replace each shown output that moved")
    parser.add_argument("--slow", action="store_true", help="also run the examples marked slow (real jobs)")
    parser.add_argument("--full", action="store_true", help="print each command's whole output, lines numbered "
                                                            "(to choose keep=)")
    args = parser.parse_args(argv)
    moved = sum(refresh(path, args.write, args.slow, args.full) for path in args.files)
    print(f"{moved} example(s) moved" + (" and rewritten" if args.write and moved else ""))
    return 1 if moved and not args.write else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
