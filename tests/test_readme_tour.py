"""The five-minute tour of your own job (docs/guide/your-job.md, which the README links) runs as
written, at its own sizes: its commands are read from that page; the jobs of step 1 (and the loop's in step 4) are made by the fake launcher of
tests/test_tune.py, so nothing is measured."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from perfzoo import bench, collect, spaces, tune
from perfzoo.records.store import RecordStore
from perfzoo.search import cli as search_cli

from test_tune import FakeCommandJob

ROOT = Path(__file__).resolve().parents[1]


TOUR = ROOT / "docs" / "guide" / "your-job.md"


def tour() -> list[list[str]]:
    """The tour's commands, each as its words after ``perfzoo`` (``perfzoo collect ...``)."""
    text = TOUR.read_text()
    block = text[text.index("A five-minute tour"):text.index("**The space file**")]
    return [shlex.split(line.strip())[1:] for line in block.splitlines() if line.strip().startswith("perfzoo ")]


def test_the_readme_leads_to_the_tour():
    readme = (ROOT / "README.md").read_text()
    assert "docs/guide/your-job.md" in readme


def test_the_tour_runs_at_its_own_sizes(tmp_path, monkeypatch, capsys):
    steps = tour()
    assert [s[0] for s in steps] == ["collect", "bench", "search", "tune"]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    # 1. the jobs collect would run: its own --n distinct configs of the space, one record each
    config = collect.config_from_argv(steps[0][1:])
    store = RecordStore(config.out)
    FakeCommandJob(store)(spaces.get(config.space).sample(config.n, seed=config.seed), "tour")
    assert len(store) == config.n
    # 2. the bench on them
    assert bench.main(steps[1][1:]) == 0
    assert re.search(r"\nmine\s+random\s+\w+", capsys.readouterr().out)
    # 3. the search
    assert search_cli.main(steps[2][1:]) == 0
    assert len([line for line in capsys.readouterr().out.splitlines() if re.match(r"\s*\d+\s", line)]) >= 5
    # 4. the loop, its jobs run by the fake launcher
    monkeypatch.setattr(tune, "CollectLauncher", lambda space, path, **options: FakeCommandJob(RecordStore(path)))
    assert tune.main(steps[3][1:]) == 0
    assert "champion:" in capsys.readouterr().out
