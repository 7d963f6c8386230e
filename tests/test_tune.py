"""The closed loop: it runs end to end, resumes after a kill without relaunching finished jobs
(the real resume logic, a cheap stand-in launcher), and draws the frontier figure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from perfzoo import tune
from perfzoo.loop import ClosedLoop, LaunchInterrupted, config_id, frontier_figure
from perfzoo.records import JobRecord, job_id_for
from perfzoo.records.store import RecordStore
from perfzoo.search import Reinforce
from perfzoo.spaces import get
from perfzoo.workloads.fsdp_ads import hand_tuned_ladder

HW = {"accelerator": "cpu", "accelerator_count": 2}


class FakeLauncher:
    """Appends a synthetic record per config (queries/s from a known function; tight memory
    budgets with big batches run out of memory); ``die_after`` jobs, it raises like a kill."""

    def __init__(self, store: RecordStore, die_after: int | None = None):
        self.store = store
        self.die_after = die_after
        self.launched: Counter = Counter()
        self.calls = 0
        self.clock = datetime(2026, 1, 1, tzinfo=timezone.utc)

    @staticmethod
    def qps(cfg: dict) -> float:
        fast = sum(cfg[f"shard_{j:02d}"] == "NO_SHARD" for j in range(11))
        grad = sum(cfg[f"shard_{j:02d}"] == "SHARD_GRAD_OP" for j in range(11))
        return cfg["local_batch"] * (10.0 + fast + 0.5 * grad)

    @staticmethod
    def fails(cfg: dict) -> bool:
        b = cfg["memory_budget_gib"]
        return b is not None and b < 0.38 and cfg["local_batch"] >= 128

    def __call__(self, configs: list, sweep_id: str, repeat: int = 1) -> None:
        jobs = [(cfg, rep) for cfg in configs for rep in range(repeat)]
        for cfg, rep in jobs:
            if job_id_for("fsdp", cfg, HW, rep) in self.store:
                continue
            if self.die_after is not None and self.calls >= self.die_after:
                raise LaunchInterrupted("killed")
            self.calls += 1
            self.launched[config_id(cfg)] += 1
            self.clock += timedelta(seconds=10)
            oom = self.fails(cfg)
            self.store.append(JobRecord(
                job_id=job_id_for("fsdp", cfg, HW, rep), sweep_id=sweep_id, source="measured", provenance="test",
                started_at=self.clock, ended_at=self.clock + timedelta(seconds=5),
                status="oom" if oom else "ok", failure={"kind": "oom"} if oom else None, workload="fsdp",
                config=cfg, hardware=HW,
                metrics={} if oom else {"throughput": self.qps(cfg), "throughput_unit": "queries/s"}))


def _loop(store, launcher, **kw):
    opts = dict(n_random=30, rounds=2, top_k=6, seed=0, searcher=Reinforce(n_samples=300), log=None)
    opts.update(kw)
    return ClosedLoop(get("fsdp-ads"), store, launcher=launcher, **opts)


def test_loop_runs_and_improves_on_its_random_phase(tmp_path):
    store = RecordStore(tmp_path / "store")
    launcher = FakeLauncher(store)
    summary = _loop(store, launcher, control=12, hand_tuned=True, confirm=2, race=1).run()
    phases = {p["phase"]: p for p in summary.phases}
    assert [p["phase"] for p in summary.phases] == ["random", "round1", "round2", "control", "baseline", "race"]
    assert phases["random"]["done"] == 30 and phases["round1"]["done"] == 6 == phases["round2"]["done"]
    assert phases["control"]["done"] == 12
    assert summary.jobs("loop") == 42 and summary.jobs("random") == 42
    # no config ran twice, except the three champions re-measured twice more (confirm=2)
    assert sorted(launcher.launched.values())[-3:] == [3, 3, 3] and sorted(launcher.launched.values())[-4] == 1
    assert set(summary.confirmed) == {"loop", "random", "hand-tuned"}
    assert all(c["n"] == 2 for c in summary.confirmed.values())  # race runs; the selecting run is not one
    assert "loop vs hand-tuned" in summary.table() and "raced" in summary.table()
    # the searched rounds find faster configs than the random phase did
    assert summary.best("loop") > phases["random"]["best"]
    # hand-tuned: all FULL_SHARD, unlimited budget, the largest batch (it fits: one job)
    assert summary.arms["hand-tuned"]["best"] == FakeLauncher.qps(hand_tuned_ladder(get("fsdp-ads"))[0])
    assert summary.arms["hand-tuned"]["config"]["local_batch"] == 256
    # the champion is the loop's raced finalist; its speedups are over the other arms' race medians
    assert summary.champion["config"] == summary.confirmed["loop"]["config"]
    assert summary.champion["value"] == summary.confirmed["loop"]["median"]
    assert summary.speedups() == pytest.approx({arm: summary.confirmed["loop"]["median"] / c["median"]
                                                for arm, c in summary.confirmed.items() if arm != "loop"})
    loop = _loop(store, launcher, control=12, hand_tuned=True)
    png = loop.frontier_figure(tmp_path / "frontier.png")
    assert png.stat().st_size > 10_000
    assert frontier_figure(loop.state(), loop.loop_phases(), tmp_path / "f2.png", "title").stat().st_size > 10_000


def first_run(cfg: dict) -> float:
    """A config's first measurement on a noisy machine, at its worst: the slower the config, the
    faster it looks (later repeats are exact)."""
    return 10_000.0 - FakeLauncher.qps(cfg)


class LuckyFirstRun(FakeLauncher):
    """Every config's first run is :func:`first_run` (the slowest look fastest); repeat ``r`` measures
    ``qps + spread * r``."""

    def __init__(self, store: RecordStore, spread: float = 1.0):
        super().__init__(store)
        self.spread = spread

    def __call__(self, configs, sweep_id, repeat=1):
        for rep in range(repeat):
            for cfg in configs:
                if job_id_for("fsdp", cfg, HW, rep) in self.store:
                    continue
                self.clock += timedelta(seconds=10)
                self.launched[config_id(cfg)] += 1
                self.store.append(JobRecord(
                    job_id=job_id_for("fsdp", cfg, HW, rep), sweep_id=sweep_id, source="measured",
                    provenance="test", started_at=self.clock, ended_at=self.clock + timedelta(seconds=5),
                    status="ok", workload="fsdp", config=cfg, hardware=HW,
                    metrics={"throughput": first_run(cfg) if rep == 0 else self.qps(cfg) + self.spread * rep,
                             "throughput_unit": "queries/s"}))


def test_racing_names_the_champion_by_its_median_not_its_luckiest_run(tmp_path):
    store = RecordStore(tmp_path / "store")
    launcher = LuckyFirstRun(store, spread=0.0)
    loop = _loop(store, launcher, n_random=40, rounds=0, confirm=2, race=4)
    summary = loop.run()
    raced = loop.candidates()["random"]
    assert len(raced) == 4 and all(launcher.launched[config_id(c)] == 3 for c in raced)
    champion = summary.confirmed["random"]
    truth = {config_id(c): FakeLauncher.qps(c) for c in raced}
    assert champion["median"] == max(truth.values()) == truth[config_id(champion["config"])]
    assert len(champion["raced"]) == 4 and sorted(champion["raced"]) == sorted(truth.values())
    # here the luckiest first measurement belongs to a slower config: without the race it would have won
    lucky = loop.champions()["random"]
    assert FakeLauncher.qps(lucky) < champion["median"]


def test_the_race_halves_each_arm_and_takes_medians_of_race_runs_only(tmp_path):
    store = RecordStore(tmp_path / "store")
    launcher = LuckyFirstRun(store)
    loop = _loop(store, launcher, n_random=40, rounds=0, hand_tuned=True, confirm=4, race=4)
    summary = loop.run()
    assert [p["phase"] for p in summary.phases] == ["random", "baseline", "race"]
    raced = loop.candidates()["random"]
    truth = {config_id(c): FakeLauncher.qps(c) for c in raced}
    runs = {cid: launcher.launched[cid] for cid in truth}
    # stage 1: every candidate 2 race runs; stage 2: the better half of the arm 4 in all
    assert sorted(runs.values()) == [3, 3, 5, 5]
    finalists = {cid for cid, n in runs.items() if n == 5}
    assert sorted(truth[c] for c in finalists) == sorted(truth.values())[2:]
    champion = summary.confirmed["random"]
    # its median is of its 4 race runs (qps + 1 .. qps + 4), not of the lucky first run
    assert champion["n"] == 4 and champion["median"] == max(truth.values()) + 2.5
    assert summary.confirmed["hand-tuned"]["n"] == 4  # a baseline runs every stage
    # a second run of the loop launches nothing more
    again = LuckyFirstRun(store)
    _loop(store, again, n_random=40, rounds=0, hand_tuned=True, confirm=4, race=4).run()
    assert not again.launched


def test_the_expert_heuristic_is_an_arm_of_its_own(tmp_path):
    store = RecordStore(tmp_path / "store")

    class V2(FakeLauncher):
        @staticmethod
        def fails(cfg):
            return False

    summary = ClosedLoop(get("fsdp-ads-v3"), store, launcher=V2(store), n_random=8, rounds=0, hand_tuned=True,
                         expert=True, confirm=1, race=1, searcher=Reinforce(n_samples=100), log=None).run()
    assert [p["phase"] for p in summary.phases] == ["random", "baseline", "expert", "race"]
    assert set(summary.confirmed) == {"loop", "random", "hand-tuned", "expert"}  # no rounds: loop = random
    expert = summary.confirmed["expert"]["config"]
    assert expert["local_batch"] == 128 and "NO_SHARD" in expert.values()
    assert "expert" in summary.table() and summary.confirmed["expert"]["n"] == 1


def test_a_figure_writes_nothing_under_home(tmp_path):
    """matplotlib's font cache and config went to ~/.cache and ~/.config: a figure (perfzoo.console.pyplot)
    keeps them in a temporary folder, removed at exit, unless MPLCONFIGDIR names one."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")}
    code = ("import os, sys; from pathlib import Path; from perfzoo.loop import frontier_figure; "
            "frontier_figure([], ['random'], Path(sys.argv[1]), 'empty'); print(os.environ['MPLCONFIGDIR'])")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", code, str(tmp_path / "f.png")],
                          env={**env, "HOME": str(home)}, capture_output=True, text=True, check=True)
    assert (tmp_path / "f.png").stat().st_size > 0
    assert list(home.rglob("*")) == []  # no ~/.cache/matplotlib, no ~/.config/matplotlib
    assert not Path(done.stdout.strip()).exists()  # the temporary folder went at exit


def test_loop_resumes_after_a_kill_without_relaunching_finished_jobs(tmp_path):
    store = RecordStore(tmp_path / "store")
    first = FakeLauncher(store, die_after=33)  # killed 3 jobs into round 1
    with pytest.raises(KeyboardInterrupt):
        _loop(store, first).run()
    assert len(store) == 33
    loop = _loop(store, None)
    state = {p.name: p for p in loop.state()}
    assert state["random"].done == 30 and state["round1"].planned == 6 and state["round1"].done == 3
    plan_before = loop.plan_path("round1").read_text()

    second = FakeLauncher(store)
    summary = _loop(store, second).run()
    # the resumed run launched only what had not finished: 3 of round 1, then round 2
    assert second.calls == 3 + 6
    assert not set(first.launched) & set(second.launched)
    assert loop.plan_path("round1").read_text() == plan_before  # the plan was reused, not re-searched
    counts = Counter(config_id(r.config) for r in store.records())
    assert len(store) == 30 + 2 * 6 and max(counts.values()) == 1
    assert [p["done"] for p in summary.phases] == [30, 6, 6]

    # a third run has nothing left to do
    third = FakeLauncher(store)
    _loop(store, third).run()
    assert third.calls == 0


def test_rounds_propose_only_unmeasured_configs_and_use_the_failure_model(tmp_path):
    store = RecordStore(tmp_path / "store")
    _loop(store, FakeLauncher(store)).run()
    loop = _loop(store, None)
    random_ids = {config_id(p["config"]) for p in loop.read_plan("random")}
    for phase in ("round1", "round2"):
        plan = loop.read_plan(phase)
        assert len(plan) == 6
        assert not {config_id(p["config"]) for p in plan} & random_ids
        assert all(p["p_success"] < 1 for p in plan)  # the failure classifier was fitted (random OOMs)
        assert all(p["method"] == "reinforce" for p in plan)
    recs = [r for r in store.records() if r.sweep_id.endswith("round2")]
    assert sum(r.status != "ok" for r in recs) <= 2  # P(success) steers away from OOMs


def test_tune_status_command(tmp_path, capsys):
    from perfzoo.tune import main

    store = RecordStore(tmp_path / "store")
    _loop(store, FakeLauncher(store), tag="tune-fsdp-ads-s0").run()
    assert main(["--space", "fsdp-ads", "--store", str(tmp_path / "store"), "--n-random", "30", "--rounds", "2",
                 "--top-k", "6", "--status"]) == 0
    out = capsys.readouterr().out
    assert "round2" in out and "loop (random + rounds, 42 jobs)" in out
    assert main(["--space", "nope", "--store", str(tmp_path / "x")]) == 2


def test_hand_tuned_ladder_is_full_shard_largest_batch_first():
    ladder = hand_tuned_ladder(get("fsdp-ads"))
    assert [c["local_batch"] for c in ladder] == [256, 128, 64, 32, 16]
    for c in ladder:
        assert all(c[f"shard_{i:02d}"] == "FULL_SHARD" for i in range(11)) and c["memory_budget_gib"] is None
    with pytest.raises(ValueError, match="no hand-tuned baseline"):
        hand_tuned_ladder(get("llm-small"))


def test_run_from_python_returns_the_loop_summary(tmp_path):
    from perfzoo.tune import TuneConfig, run

    store = RecordStore(tmp_path / "store")
    _loop(store, FakeLauncher(store), tag="tune-fsdp-ads-s0").run()
    result = run(TuneConfig(store=str(tmp_path / "store"), space="fsdp-ads", n_random=30, rounds=2, top_k=6,
                            status=True))
    assert [p["done"] for p in result.summary.phases] == [30, 6, 6] and result.summary.jobs("loop") == 42
    assert result.plot is None and not result.interrupted


@pytest.mark.parametrize("fields, message", [
    ({"rounds": -1}, "--rounds must be at least 0, got -1"),
    ({"predictor": "nosuch"}, "--predictor 'nosuch' is not 'best' or a zoo member"),
    ({"train_on": "everything"}, "--train-on 'everything': choose one of loop, store"),
    ({"lr": -1.0}, "--lr must be positive"),
    ({"plot": "frontier.txt"}, "--plot frontier.txt: matplotlib writes no .txt figure"),
    ({"plot": "/proc/frontier.png"}, "--plot /proc/frontier.png: cannot write"),
])
def test_a_bad_config_field_is_named(fields, message, tmp_path):
    from perfzoo.console import InputError
    from perfzoo.tune import TuneConfig

    with pytest.raises(InputError, match=message):
        TuneConfig(store=str(tmp_path / "t"), **fields)
    assert not (tmp_path / "t").exists()


# --- your own job: a TOML space, your baseline, the champion and its speedups -------------------

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fsdp2" / "space.toml"


class FakeCommandJob(FakeLauncher):
    """The example space's jobs, measured by a known function: a wider, shallower net with a bigger
    batch is faster; a batch x width above 32,768 runs out of memory."""

    @staticmethod
    def qps(cfg: dict) -> float:
        return cfg["batch"] * (1.0 + cfg["width"] / 1024) / cfg["depth"] * (1.2 if cfg["reshard"] else 1.0)

    @staticmethod
    def fails(cfg: dict) -> bool:
        return cfg["batch"] * cfg["width"] > 32_768

    def __call__(self, configs: list, sweep_id: str, repeat: int = 1) -> None:
        for rep in range(repeat):
            for cfg in configs:
                job_id = job_id_for("command", cfg, HW, rep)
                if job_id in self.store:
                    continue
                self.launched[config_id(cfg)] += 1
                self.clock += timedelta(seconds=10)
                oom = self.fails(cfg)
                self.store.append(JobRecord(
                    job_id=job_id, sweep_id=sweep_id, source="measured", provenance="test", started_at=self.clock,
                    ended_at=self.clock + timedelta(seconds=5), status="oom" if oom else "ok",
                    failure={"kind": "oom"} if oom else None, workload="command", config=cfg, hardware=HW,
                    metrics={} if oom else {"throughput": self.qps(cfg), "throughput_unit": "samples/s"}))


@pytest.fixture
def fake_jobs(monkeypatch):
    """``python -m perfzoo.tune`` with the example space's jobs run by :class:`FakeCommandJob`."""
    launchers = []

    def launcher(space, path, **options):
        launchers.append(FakeCommandJob(RecordStore(path)))
        return launchers[-1]

    monkeypatch.setattr(tune, "CollectLauncher", launcher)
    return launchers


def _tune(store, *extra) -> list:
    return ["--space", str(EXAMPLE), "--store", str(store), "--n-random", "8", "--rounds", "1", "--top-k", "3",
            "--predictor", "ridge", "--n-samples", "100", "--restarts", "1", "--no-progress", *extra]


def test_tune_races_your_baseline_and_prints_the_champion_and_its_speedups(tmp_path, fake_jobs, capsys):
    mine = tmp_path / "mine.json"  # the config run today, pretty-printed as a person writes it
    mine.write_text(json.dumps({"batch": 32, "width": 256, "depth": 6, "reshard": False}, indent=2))
    assert tune.main(_tune(tmp_path / "store", "--baseline", str(mine), "--control", "3", "--confirm", "2",
                           "--race", "2")) == 0
    out = capsys.readouterr().out
    summary = json.loads(next((tmp_path / "store" / "tune").glob("*-summary.json")).read_text())
    user = summary["confirmed"]["user"]
    assert user["config"] == {"batch": 32, "width": 256, "depth": 6, "reshard": False, "nproc": 2, "global_batch": 64}
    assert user["median"] == FakeCommandJob.qps(user["config"]) and user["n"] == 2  # raced: 2 runs after its first
    assert fake_jobs[0].launched[config_id(user["config"])] == 3
    champion = summary["champion"]
    assert champion["config"] == summary["confirmed"]["loop"]["config"]
    speedup = champion["value"] / user["median"]
    assert summary["speedups"]["user"] == pytest.approx(speedup) and speedup > 1
    assert set(summary["speedups"]) == {"random", "user"}
    assert f"champion: {champion['value']:,.1f} samples/s (median of its 2 race runs)" in out
    assert f"  config: {json.dumps(champion['config'], sort_keys=True)}" in out
    assert f"  speedup over user: {speedup:.3f}x ({100 * (speedup - 1):+.1f}%)" in out


def test_a_baseline_ladder_runs_until_a_config_runs_ok(tmp_path, fake_jobs, capsys):
    ladder = tmp_path / "ladder.jsonl"
    configs = [{"batch": 128, "width": 512, "depth": 2, "reshard": True},  # 65,536 > 32,768: out of memory
               {"batch": 64, "width": 512, "depth": 2, "reshard": True}]
    ladder.write_text("".join(json.dumps({"config": c}) + "\n" for c in configs))
    assert tune.main(_tune(tmp_path / "store", "--baseline", str(ladder))) == 0
    out = capsys.readouterr().out
    summary = json.loads(next((tmp_path / "store" / "tune").glob("*-summary.json")).read_text())
    assert summary["arms"]["user"]["jobs"] == 2 and summary["arms"]["user"]["config"]["batch"] == 64
    assert summary["champion"]["how"].startswith("best single run")
    assert f"user baseline: {FakeCommandJob.qps(summary['arms']['user']['config']):,.1f}" in out
    assert "  speedup over user: " in out and "speedup over random" not in out  # no control: no equal-jobs arm


def test_a_baseline_the_loop_already_measured_reports_that_measurement(tmp_path, fake_jobs, capsys):
    """Your baseline equal to a config the loop had measured is not run again, and its value is that
    measurement (it printed "user baseline: - (n/a)")."""
    assert tune.main(_tune(tmp_path / "store")) == 0
    capsys.readouterr()
    measured = next(r for r in RecordStore(tmp_path / "store").records() if r.status == "ok")
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps({k: measured.config[k] for k in ("batch", "width", "depth", "reshard")}))
    assert tune.main(_tune(tmp_path / "store", "--baseline", str(mine))) == 0
    out = capsys.readouterr().out
    assert fake_jobs[1].launched[config_id(measured.config)] == 0  # not run again
    assert f"user baseline: {measured.metrics.throughput:,.1f}  (loop vs user: " in out and "n/a" not in out
    summary = json.loads(next((tmp_path / "store" / "tune").glob("*-summary.json")).read_text())
    assert summary["arms"]["user"]["best"] == measured.metrics.throughput and "user" in summary["speedups"]


def test_a_store_of_another_space_is_one_line_naming_it(tmp_path, fake_jobs, capsys):
    """A store of another space's jobs said "all 2 jobs are in the store", then "only 0 successful jobs":
    one line names the space its records are of, before anything is launched."""
    other = tmp_path / "other.toml"
    other.write_text(EXAMPLE.read_text().replace('name = "fsdp2-cpu-example"', 'name = "other-space"'))
    store = RecordStore(tmp_path / "store")
    store.append(JobRecord(
        job_id="j0", sweep_id="tune-fsdp2-cpu-example-s0-random", source="measured", provenance="test",
        started_at=datetime(2026, 1, 1, tzinfo=timezone.utc), status="ok", workload="command",
        config={"batch": 32, "width": 256, "depth": 2, "reshard": True, "nproc": 2, "global_batch": 64}, hardware=HW,
        metrics={"throughput": 100.0, "throughput_unit": "samples/s"}, annotations={"space": "fsdp2-cpu-example"}))
    args = _tune(tmp_path / "store")
    args[args.index("--space") + 1] = str(other)
    assert tune.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"perfzoo.tune: error: --store {tmp_path / 'store'} holds records of command/fsdp2-cpu-example, "
                   "not of command/other-space: one store, one space (splits and predictors need that); give another "
                   "--store")
    assert not fake_jobs  # refused before a launcher was made


def test_a_baseline_outside_the_space_is_one_line_naming_its_line(tmp_path, fake_jobs, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"batch": 32, "width": 256, "depth": 2, "reshard": true}\n'
                   '{"batch": 48, "width": 256, "depth": 2, "reshard": true}\n')
    assert tune.main(_tune(tmp_path / "store", "--baseline", str(bad))) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"perfzoo.tune: error: --baseline {bad} line 2: space 'fsdp2-cpu-example': knob 'batch'")
    assert "\n" not in err and not fake_jobs  # nothing launched
    assert tune.main(_tune(tmp_path / "store", "--baseline", str(tmp_path / "nope.json"))) == 2
    assert capsys.readouterr().err.strip() == f"perfzoo.tune: error: --baseline {tmp_path / 'nope.json'}: no such file"


def test_a_resumed_loop_keeps_its_baseline(tmp_path, fake_jobs, capsys):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({"batch": 32, "width": 256, "depth": 2, "reshard": True}))
    second.write_text(json.dumps({"batch": 16, "width": 256, "depth": 2, "reshard": True}))
    assert tune.main(_tune(tmp_path / "store", "--baseline", str(first))) == 0
    capsys.readouterr()
    assert tune.main(_tune(tmp_path / "store", "--baseline", str(second))) == 2
    assert "holds other baseline configs than the ones given" in capsys.readouterr().err


def test_status_of_a_store_that_does_not_exist_creates_nothing(tmp_path, capsys):
    assert tune.main(["--space", "fsdp-ads", "--store", str(tmp_path / "none"), "--status"]) == 2
    assert "no record store there yet" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


def test_hand_tuned_on_a_space_without_one_points_at_baseline(tmp_path, capsys):
    assert tune.main(["--space", str(EXAMPLE), "--store", str(tmp_path / "s"), "--hand-tuned"]) == 2
    assert "give your own with --baseline FILE" in capsys.readouterr().err


def test_the_summary_says_what_the_rounds_found_beyond_the_random_jobs():
    from perfzoo.loop.report import LoopSummary

    def summary(round_bests):
        phases = [{"phase": "random", "sweep_id": "r", "planned": 12, "done": 12, "ok": 12, "best": 100.0},
                  *({"phase": f"round{i}", "sweep_id": f"s{i}", "planned": 4, "done": 4, "ok": 4, "best": b}
                    for i, b in enumerate(round_bests, 1))]
        arms = {"loop": {"jobs": 12 + 4 * len(round_bests), "best": max([100.0, *round_bests]), "config": {}},
                "random": {"jobs": 12, "best": 100.0, "config": {}}}
        return LoopSummary(tag="t", space="s", unit="samples/s", phases=phases, arms=arms)

    assert ("search rounds (8 jobs): best 120.0, +20.0% beyond the 12 random jobs' best 100.0"
            in summary([90.0, 120.0]).table())
    assert ("search rounds (8 jobs): best 95.0, nothing faster than the 12 random jobs' best 100.0: the champion is "
            "a random job" in summary([95.0, 80.0]).table())
    assert summary([]).beyond_random() is None
