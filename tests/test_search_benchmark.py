"""The surrogate benchmark: its metrics on a surrogate whose answer is known, and a tiny real run."""

import json

import numpy as np
import pytest

from perfzoo.search.benchmark import Surrogate, main, run
from perfzoo.spaces.codec import SpaceCodec
from perfzoo.spaces import Categorical, Space


@pytest.fixture()
def toy():
    """A 6 x 6 x 4 space whose throughput grows with every knob; the largest ``a`` fails."""
    space = Space("toy-bench", "command", [Categorical("a", choices=tuple(range(6))), Categorical("b", choices=tuple(range(6))),
                                           Categorical("c", choices=tuple(range(4)))], constants={"world_size": 1})
    codec = SpaceCodec(space)
    idx = codec.decode(np.arange(codec.size))
    qps = 100.0 + 10 * idx[:, 0] + 5 * idx[:, 1] + idx[:, 2]
    return Surrogate("toy", codec, qps.astype(float), idx[:, 0] == 5, 0.0)


def test_the_surrogate_knows_its_optimum_and_the_share_within_it(toy):
    assert toy.optimum == 100 + 40 + 25 + 3  # a = 4 (5 fails), b = 5, c = 3
    assert toy.share_within(0.0) == pytest.approx(1 / 144)
    assert np.isnan(toy.measure(np.array([toy.codec.size - 1]))[0])  # a = 5 fails


def test_a_run_reports_regret_jobs_to_threshold_failures_and_duplicates(toy):
    keys = toy.codec.keys(toy.codec.sample(10, seed=np.random.default_rng(0), unique=True))
    res = run("random", toy, keys, n_random=10, rounds=2, top_k=5, seed=0, tpe_samples=10)
    regret = np.array(res["regret"])
    assert len(regret) == 20 and np.all(np.diff(regret) <= 0) and res["final_regret"] == regret[-1]
    first = res["jobs_to_5pct"]
    assert first is None or (regret[first - 1] <= 0.05 and (first == 1 or regret[first - 2] > 0.05))
    assert res["duplicate_rate"] == 0.0 and 0.0 <= res["failed_rate"] <= 1.0
    searched = run("reinforce", toy, keys, n_random=10, rounds=2, top_k=5, seed=0, tpe_samples=10)
    assert len(searched["regret"]) == 20 and searched["regret"][9] == regret[9]  # the same random phase
    assert searched["final_regret"] < 0.1  # an additive world: the refitted predictor gets close


@pytest.mark.slow
def test_the_command_writes_the_report(tmp_path, capsys):
    assert main(["--families", "lightgbm", "--methods", "random,exhaustive", "--seeds", "1", "--members", "1",
                 "--n-random", "30", "--rounds", "1", "--top-k", "5", "--out", str(tmp_path)]) == 0
    report = (tmp_path / "surrogate.md").read_text()
    assert "## lightgbm surrogate" in report and "| exhaustive |" in report and "jobs to 2% / random" in report
    saved = json.loads((tmp_path / "surrogate.json").read_text())
    assert {r["method"] for r in saved["results"]} == {"random", "exhaustive"}
    assert main(["--families", "nosuch"]) == 2
