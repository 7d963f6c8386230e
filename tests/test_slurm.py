"""The Slurm launcher, against a real single-machine Slurm (``tests/local_slurm.py``).

The first tests need no Slurm: how Slurm states become record statuses, option checks, the
submission ledger and the command line. The ``slurm``-marked ones start munged, MariaDB,
slurmdbd, slurmctld and slurmd on this machine (Debian's packages, as root) and submit real
jobs through ``python -m perfzoo.collect --launcher slurm``. Without those packages they
are skipped, unless ``PERFZOO_REQUIRE_SLURM=1`` (as in ``.ci/run``), where they fail.
"""

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import fields
from pathlib import Path

import pandas as pd
import pytest

from harness.jobs import JobSpec
from harness.sbatch import SlurmOptions
from harness.slurm import SLURM_STATES, SlurmLauncher, SubmissionLedger, outcome_of
from perfzoo import spaces, workloads
from perfzoo.collect.cli import main
from perfzoo.records.store import RecordStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_slurm import PACKAGES, URGENT, LocalSlurm, missing_binaries  # noqa: E402

FSDP_MODULE = workloads.get("fsdp").harness

REPO = Path(__file__).resolve().parent.parent


def fsdp_config(batch=16):
    raw = {f"shard_{i:02d}": ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD")[i % 3] for i in range(11)}
    raw.update(local_batch=batch, memory_budget_gib=None)
    return spaces.get("fsdp-ads").validate(raw)


def write_configs(path, configs):
    path.write_text("".join(json.dumps(c) + "\n" for c in configs))
    return str(path)


# Slurm states -> records (no Slurm needed) -----------------------------------------------------

def _job_dir(tmp_path, rank_status=None, agent_code=0):
    """A job directory as the agents and ranks leave it; ``rank_status`` None: no rank reports."""
    spec = JobSpec(workload="fsdp", module=FSDP_MODULE, config={"local_batch": 16}, job_id="j1", nproc=2)
    d = tmp_path / "job"
    (d / "results").mkdir(parents=True)
    (d / "job.json").write_text(spec.to_json())
    (d / "agent0.json").write_text(json.dumps({"agent": 0, "host": "n1", "exit_code": agent_code, "timed_out": False,
                                               "started_at": "2026-11-21T10:00:00+00:00",
                                               "ended_at": "2026-11-21T10:00:05+00:00", "wall_s": 5.0}))
    (d / "log-agent0.txt").write_text("torchrun said something\n")
    for r in range(2 if rank_status else 0):
        rep = {"rank": r, "status": rank_status, "step_times": [0.1, 0.1], "items_per_step": 16}
        if rank_status == "oom":
            rep["error"] = {"kind": "oom", "message": "CUDA out of memory"}
        (d / "results" / f"rank{r}.json").write_text(json.dumps(rep))
    return spec, d


@pytest.mark.parametrize("state, ranks, status, kind", [
    ("COMPLETED", "ok", "ok", None),
    ("OUT_OF_MEMORY", None, "oom", "oom"),
    ("TIMEOUT", None, "timeout", "timeout"),
    ("NODE_FAIL", None, "failed", "node_fail"),
    ("PREEMPTED", None, "failed", "preempted"),
    ("CANCELLED by 0", None, "failed", "cancelled"),
    ("FAILED", None, "failed", "crash"),
    ("FAILED", "oom", "oom", "oom"),  # the ranks' own out-of-memory report wins over a plain FAILED
])
def test_slurm_states_become_record_statuses(tmp_path, state, ranks, status, kind):
    spec, d = _job_dir(tmp_path, ranks, agent_code=0 if state == "COMPLETED" else 1)
    out = outcome_of(spec, d, "42_3", {"state": state, "nodelist": "n1", "steps": "42_3.0=" + state})
    assert out.status == status
    assert out.annotations["slurm_job_id"] == "42_3" and out.annotations["slurm_state"] == state
    if kind is None:
        assert out.failure is None
    else:
        assert out.failure["kind"] == kind
        if SLURM_STATES.get(state.split()[0]):
            assert f"Slurm job 42_3 ended {state}" in out.failure["message"]


def test_a_job_killed_before_its_agents_reported_takes_its_times_from_sacct(tmp_path):
    from datetime import datetime, timezone

    spec = JobSpec(workload="fsdp", module=FSDP_MODULE, config={"local_batch": 16}, job_id="j1", nproc=2)
    (tmp_path / "results").mkdir()
    start, end = datetime(2026, 11, 21, 10, 0, tzinfo=timezone.utc), datetime(2026, 11, 21, 10, 1, tzinfo=timezone.utc)
    out = outcome_of(spec, tmp_path, "7", {"state": "TIMEOUT", "steps": "7.batch=CANCELLED", "start": start, "end": end})
    assert out.status == "timeout" and out.started_at == start and out.wall_time_s == 60.0
    assert out.annotations["slurm_steps"] == "7.batch=CANCELLED"


def test_options_check_and_sbatch_parameters():
    opts = SlurmOptions(partition="gpu", nodes=2, gpus_per_node=4, mem_gb=1.5, extra={"reservation": "r1"})
    opts.check(8, "cuda")
    with pytest.raises(ValueError, match="--gpus-per-node is 4"):
        opts.check(4, "cuda")
    with pytest.raises(ValueError, match="does not split over 2 node"):
        SlurmOptions(nodes=2).check(3, "cpu")
    spec = JobSpec(workload="fsdp", module=FSDP_MODULE, config={}, job_id="j", nproc=8, device="cuda", timeout_s=150)
    params = opts.executor_parameters(spec, "perfzoo-x")
    assert params["time"] == 5 and params["mem"] == "1536MB" and params["gpus_per_node"] == 4
    assert params["partition"] == "gpu" and params["nodes"] == 2 and "cpus_per_task" not in params
    assert params["additional_parameters"]["reservation"] == "r1"
    assert params["additional_parameters"]["signal"].startswith("URG@")  # never submitit's USR2 requeue
    cpu = SlurmOptions(tasks_per_node=2).executor_parameters(JobSpec("fsdp", {}, "j", FSDP_MODULE, nproc=4), "n")
    assert cpu["cpus_per_task"] == 2 and cpu["ntasks_per_node"] == 2


def test_collect_and_bench_take_the_slurm_flags_declared_once():
    from perfzoo import bench
    from perfzoo.collect import build_parser

    def slurm_flags(parser):
        return {a.option_strings[0] for a in parser._actions if a.dest == "slurm"}

    every = {f.metadata["flag"] for f in fields(SlurmOptions)}
    assert slurm_flags(build_parser()) == every
    assert slurm_flags(bench.build_parser()) == every - {"--nodes", "--tasks-per-node", "--gpus-per-node"}


@pytest.mark.parametrize("options, launcher, per_node, message", [
    (SlurmOptions(qos="high"), "local", True, "--qos is a Slurm option; add --launcher slurm"),
    (SlurmOptions(folder="f"), "local", True, "--slurm-folder is a Slurm option; add --launcher slurm"),
    (SlurmOptions(array_parallelism=0), "slurm", True, "--array-parallelism must be at least 1"),
    (SlurmOptions(mem_gb=-1.0), "slurm", True, "--mem-gb must be positive"),
    (SlurmOptions(gpus_per_node=8), "slurm", False, "--gpus-per-node is for jobs laid out over nodes"),
])
def test_options_a_command_requests_are_checked_against_its_launcher(options, launcher, per_node, message):
    with pytest.raises(ValueError, match=message):
        options.requested(launcher, per_node=per_node)


def test_options_requested_without_slurm_are_none_and_with_it_themselves():
    assert SlurmOptions().requested("local") is None
    opts = SlurmOptions(partition="gpu", nodes=2)
    assert opts.requested("slurm") is opts


def test_ledger_merges_events_and_skips_a_torn_line(tmp_path):
    ledger = SubmissionLedger(tmp_path / "slurm-jobs.jsonl")
    ledger.append("submitting", batch="b1", name="perfzoo-b1", folder="f", jobs={"j1": "d1"})
    ledger.append("submitted", batch="b1", slurm={"j1": "7"})
    with open(ledger.path, "a") as f:
        f.write('{"event": "submitting", "batch": "b2", "na')  # killed mid-line
    batches = ledger.batches()
    assert set(batches) == {"b1"} and batches["b1"]["submitted"]["slurm"] == {"j1": "7"}


@pytest.mark.parametrize("argv, message", [
    (["--partition", "gpu"], "--partition is a Slurm option; add --launcher slurm"),
    (["--launcher", "slurm", "--warm"], "--warm and --mode inprocess are local launch modes"),
    (["--launcher", "slurm", "--nodes", "0"], "--nodes must be at least 1"),
    (["--launcher", "slurm", "--slurm-arg", "reservation"], "expected KEY=VALUE"),
    (["--launcher", "slurm", "--tasks-per-node", "3"], "does not split over 1 node(s) x 3 task(s)"),
])
def test_slurm_usage_errors(tmp_path, capsys, argv, message):
    code = main(["--workload", "fsdp", "--n", "1", "--out", str(tmp_path / "s"), *argv])
    assert code == 2
    assert message in capsys.readouterr().err


def test_dry_run_shows_the_sbatch_request(tmp_path, capsys):
    code = main(["--workload", "fsdp", "--n", "2", "--nproc", "2", "--out", str(tmp_path / "s"), "--dry-run",
                 "--launcher", "slurm", "--partition", "cpu", "--time", "3", "--tasks-per-node", "2"])
    assert code == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 2
    assert rows[0]["sbatch"]["partition"] == "cpu" and rows[0]["sbatch"]["time"] == 3
    assert rows[0]["sbatch"]["cpus_per_task"] == 1 and rows[0]["sbatch"]["ntasks_per_node"] == 2
    assert not (tmp_path / "s" / "slurm-jobs.jsonl").exists()  # nothing submitted


# a real Slurm -------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """A running single-machine Slurm; ``SLURM_CONF`` points at it for the whole session."""
    missing = missing_binaries()
    if missing or os.geteuid() != 0:
        why = (f"missing {', '.join(missing)}" if missing else "not root") + \
              f": the Slurm tests need Debian's {PACKAGES}, run as root (see .ci/run)"
        if os.environ.get("PERFZOO_REQUIRE_SLURM") == "1":
            pytest.fail(why)
        pytest.skip(why)
    cluster = LocalSlurm(tmp_path_factory.mktemp("slurm")).start()
    old = os.environ.get("SLURM_CONF")
    os.environ.update(cluster.env())
    try:
        yield cluster
    finally:
        cluster.stop()
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old


def _sh(*argv) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def _collect_slurm(tmp_path, store, configs, *extra):
    args = ["--space", "fsdp-ads", "--configs", write_configs(tmp_path / "c.jsonl", configs), "--out", str(store),
            "--steps", "3", "--warmup", "1", "--no-progress", "--launcher", "slurm", "--poll", "0.5", *extra]
    return main(args)


def _wait_for(pred, timeout_s, what):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if pred():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


@pytest.mark.slow
@pytest.mark.slurm
def test_two_task_fsdp_job_through_slurm_is_ok(slurm, tmp_path):
    store = tmp_path / "store"
    t0 = time.monotonic()
    assert _collect_slurm(tmp_path, store, [fsdp_config()], "--tasks-per-node", "2") == 0
    elapsed = time.monotonic() - t0
    [rec] = RecordStore(store).records()
    assert rec.status == "ok", rec.failure
    assert rec.annotations["launcher"] == "slurm" and rec.annotations["slurm_state"] == "COMPLETED"
    assert rec.annotations["slurm_nodelist"] == slurm.node
    assert rec.metrics.throughput > 0 and rec.metrics.step_time_n == 3
    assert rec.hardware.accelerator == "cpu" and rec.hardware.accelerator_count == 2
    slurm_id = rec.annotations["slurm_job_id"]
    # two Slurm tasks, each a torchrun agent with one rank, met at one rendezvous
    [job_dir] = (store / "slurm" / "jobs").glob(f"*/{rec.job_id}")
    agents = [json.loads((job_dir / f"agent{k}.json").read_text()) for k in (0, 1)]
    assert [a["exit_code"] for a in agents] == [0, 0]
    steps = _sh("sacct", "-n", "-P", "-j", slurm_id, "-o", "JobID,NTasks,State").split()
    assert f"{slurm_id}.0|2|COMPLETED" in steps
    print(f"submission to record: {elapsed:.1f} s")


@pytest.mark.slow
@pytest.mark.slurm
def test_a_command_job_runs_as_two_slurm_tasks_that_meet_at_one_rendezvous(slurm, tmp_path):
    """The command workload on Slurm: each task runs the user's torchrun with its node rank."""
    store = tmp_path / "store"
    template = ("torchrun --nnodes {nnodes} --node-rank {node_rank} --nproc-per-node {nproc_per_node} "
                "--master-addr {master_addr} --master-port {master_port} {space_dir}/train.py --batch {batch} "
                "--width {width} --depth {depth} --reshard {reshard} --steps {total_steps}")
    config = {"batch": 16, "width": 256, "depth": 2, "reshard": True}
    assert main(["--space", str(REPO / "examples" / "fsdp2" / "space.toml"), "--command", template,
                 "--configs", write_configs(tmp_path / "c.jsonl", [config]), "--out", str(store), "--steps", "3",
                 "--warmup", "1", "--no-progress", "--launcher", "slurm", "--poll", "0.5",
                 "--tasks-per-node", "2"]) == 0
    [rec] = RecordStore(store).records()
    assert rec.status == "ok", rec.failure
    assert rec.workload == "command" and rec.annotations["slurm_state"] == "COMPLETED"
    assert rec.metrics.step_time_n == 3 and rec.metrics.throughput_unit == "samples/s"
    [job_dir] = (store / "slurm" / "jobs").glob(f"*/{rec.job_id}")
    agents = [json.loads((job_dir / f"agent{k}.json").read_text()) for k in (0, 1)]
    assert [a["exit_code"] for a in agents] == [0, 0]  # both tasks ran the user's torchrun, node ranks 0 and 1


@pytest.mark.slow
@pytest.mark.slurm
def test_job_over_its_time_limit_is_a_timeout(slurm, tmp_path, monkeypatch):
    monkeypatch.setenv("PERFZOO_TEST_HANG", "1")  # sbatch passes the environment to the job
    store = tmp_path / "store"
    assert _collect_slurm(tmp_path, store, [fsdp_config()], "--time", "1", "--timeout", "600") == 0
    [rec] = RecordStore(store).records()
    assert rec.status == "timeout"
    assert rec.annotations["slurm_state"] == "TIMEOUT"
    assert rec.failure.kind == "timeout"
    assert rec.metrics.wall_time_s >= 55  # sacct's start and end: the job ran for its 1-minute limit
    assert f"Slurm job {rec.annotations['slurm_job_id']} ended TIMEOUT" in rec.failure.message


@pytest.mark.slow
@pytest.mark.slurm
def test_job_over_its_memory_limit_is_an_oom(slurm, tmp_path):
    store = tmp_path / "store"
    assert _collect_slurm(tmp_path, store, [fsdp_config()], "--mem-gb", "0.4") == 0
    [rec] = RecordStore(store).records()
    assert rec.status == "oom"
    assert rec.annotations["slurm_state"] == "OUT_OF_MEMORY"
    assert rec.failure.kind == "oom" and rec.failure.memory["limit_gib"] == 0.4
    assert ".0=OUT_OF_MEMORY" in rec.annotations["slurm_steps"]


def _hanging_job_running(tmp_path):
    """Submit a job that hangs, through the launcher, from a thread; return its Slurm id, once it
    runs, and a function that waits for its outcome."""
    import threading

    spec = JobSpec(workload="fsdp", module=FSDP_MODULE, config=fsdp_config(), job_id=f"hang-{time.time_ns()}", nproc=2,
                   steps=2, warmup=1, timeout_s=600, debug={"hang": True})
    ledger = tmp_path / "slurm-jobs.jsonl"
    stream = SlurmLauncher(SlurmOptions(poll_s=0.5), folder=tmp_path / "slurm", ledger=ledger).run_many([spec])
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("out", next(stream)), daemon=True)
    thread.start()
    _wait_for(lambda: ledger.exists() and '"submitted"' in ledger.read_text(), 30, "the submission")
    [batch] = SubmissionLedger(ledger).batches().values()
    [slurm_id] = batch["submitted"]["slurm"].values()
    _wait_for(lambda: _sh("squeue", "-h", "-j", slurm_id, "-o", "%T").strip() == "RUNNING", 60, "RUNNING")

    def outcome(timeout_s=120):
        thread.join(timeout_s)
        assert "out" in box, "no outcome"
        return box["out"]
    return slurm_id, outcome


@pytest.mark.slow
@pytest.mark.slurm
def test_cancelled_preempted_and_failed_nodes_become_failed_records(slurm, tmp_path):
    slurm_id, outcome = _hanging_job_running(tmp_path / "a")
    _sh("scancel", slurm_id)
    out = outcome()
    assert (out.status, out.failure["kind"]) == ("failed", "cancelled")
    assert out.annotations["slurm_state"].startswith("CANCELLED")

    # preempted by a job of the higher-tier partition that needs every core
    _, outcome = _hanging_job_running(tmp_path / "b")
    _sh("sbatch", "-p", URGENT, "-c", str(os.cpu_count()), "-o", "/dev/null", "--wrap", "sleep 1")
    out = outcome()
    assert (out.status, out.failure["kind"]) == ("failed", "preempted")
    assert out.annotations["slurm_state"] == "PREEMPTED"

    # the node goes down under the job
    _wait_for(lambda: "idle" in _sh("sinfo", "-h", "-N", "-o", "%T"), 60, "an idle node")
    _, outcome = _hanging_job_running(tmp_path / "c")
    _sh("scontrol", "update", f"nodename={slurm.node}", "state=down", "reason=perfzoo-test")
    try:
        out = outcome()
    finally:  # ReturnToService=2 brings the node back by itself; resume it if it did not
        subprocess.run(["scontrol", "update", f"nodename={slurm.node}", "state=resume"], capture_output=True)
        _wait_for(lambda: "idle" in _sh("sinfo", "-h", "-N", "-o", "%T"), 60, "the node back")
    assert (out.status, out.failure["kind"]) == ("failed", "node_fail")
    assert out.annotations["slurm_state"] == "NODE_FAIL"


@pytest.mark.slow
@pytest.mark.slurm
def test_collect_killed_while_jobs_are_queued_resumes_without_duplicates(slurm, tmp_path):
    store = tmp_path / "store"
    configs = [fsdp_config(b) for b in (16, 32, 64)]
    args = [sys.executable, "-m", "perfzoo.collect", "--space", "fsdp-ads", "--out", str(store),
            "--configs", write_configs(tmp_path / "c.jsonl", configs), "--steps", "3", "--warmup", "1",
            "--no-progress", "--launcher", "slurm", "--poll", "0.5", "--array-parallelism", "1"]
    first = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ledger = store / "slurm-jobs.jsonl"
    _wait_for(lambda: ledger.exists() and '"submitted"' in ledger.read_text(), 60, "the submission")
    first.send_signal(signal.SIGKILL)  # no clean-up at all
    first.wait()
    [batch] = SubmissionLedger(ledger).batches().values()
    mapping = batch["submitted"]["slurm"]
    array = next(iter(mapping.values())).split("_")[0]
    queued = _sh("squeue", "-h", "-r", "-j", array, "-o", "%i %T").splitlines()
    assert any("PENDING" in q for q in queued), queued  # one at a time: the others wait in the queue

    again = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    records = RecordStore(store).records()
    assert len(records) == 3 and len({r.job_id for r in records}) == 3
    assert {r.job_id: r.annotations["slurm_job_id"] for r in records} == mapping  # the first submission's jobs
    assert all(r.status == "ok" for r in records), [r.failure for r in records]
    assert len(SubmissionLedger(ledger).batches()) == 1  # nothing submitted again
    named = _sh("sacct", "-X", "-n", "-P", "-S", "2000-01-01", "--name", batch["submitting"]["name"], "-o", "JobID")
    assert sorted(named.split()) == sorted(mapping.values())

    third = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert third.returncode == 0 and "0 jobs to run" in third.stderr and "3 already in" in third.stderr
    assert len(SubmissionLedger(ledger).batches()) == 1


@pytest.mark.slow
@pytest.mark.slurm
def test_a_submission_whose_ledger_line_was_lost_is_found_by_name(slurm, tmp_path):
    spec = JobSpec(workload="fsdp", module=FSDP_MODULE, config=fsdp_config(), job_id="lost-line", nproc=2, steps=2, warmup=1)
    opts = SlurmOptions(poll_s=0.5)
    ledger = tmp_path / "slurm-jobs.jsonl"
    first = SlurmLauncher(opts, folder=tmp_path / "slurm", ledger=ledger)
    [(_, _, slurm_id, _)] = first._submit([spec])
    # as if killed right after sbatch answered: the "submitted" line never reached the disk
    ledger.write_text(ledger.read_text().splitlines()[0] + "\n")
    out = list(SlurmLauncher(opts, folder=tmp_path / "slurm", ledger=ledger).run_many([spec]))
    assert [o.annotations["slurm_job_id"] for o in out] == [slurm_id]
    assert out[0].status == "ok"
    [batch] = SubmissionLedger(ledger).batches().values()
    assert batch["submitted"]["recovered"] is True


@pytest.mark.slow
@pytest.mark.slurm
def test_bench_fits_as_slurm_jobs_write_the_local_leaderboard_and_fill_the_cache(slurm, tmp_path):
    """``python -m perfzoo.bench --launcher slurm``: the same scores as on this machine, each job
    writing its fits into the cache, so a rerun submits nothing."""
    from perfzoo import bench

    args = ["--datasets", "llm-cpu", "--predictors", "ridge,knn", "--splits", "random", "--seeds", "2",
            "--no-figures", "--no-artifacts", "--quiet"]
    assert bench.main([*args, "--out", str(tmp_path / "local"), "--cache-dir", str(tmp_path / "local-cache"),
                       "--jobs", "1"]) == 0
    cache = tmp_path / "cache"
    slurm_args = [*args, "--out", str(tmp_path / "slurm"), "--cache-dir", str(cache), "--launcher", "slurm",
                  "--jobs", "2", "--poll", "0.5"]
    assert bench.main(slurm_args) == 0
    key = ["dataset", "predictor", "split", "fold", "seed"]
    local, remote = (pd.read_csv(tmp_path / d / "results.csv").sort_values(key).reset_index(drop=True)
                     for d in ("local", "slurm"))
    assert len(local) == 4 and local["error"].isna().all()
    scores = [c for c in local.columns if c not in ("fit_time_s", "predict_time_s")]  # times differ, nothing else
    pd.testing.assert_frame_equal(local[scores], remote[scores])
    # two jobs of one array ran the four fits, and they wrote the cache themselves
    results = sorted(p.name for p in (cache / "slurm").glob("*_result.pkl"))
    assert len(results) == 2 and len(list(cache.glob("??/*.json"))) == 4
    array = results[0].split("_")[0]
    states = lambda: _sh("sacct", "-n", "-P", "-X", "-j", array, "-o", "JobID,JobName,State").split()  # noqa: E731
    # a job's result comes back a moment before Slurm marks it ended
    _wait_for(lambda: all(s.endswith("|COMPLETED") for s in states()), 60, "the array's jobs to end")
    assert len(states()) == 2 and all("|perfzoo-" in s for s in states())
    again = bench.run(bench.BenchConfig(datasets=["llm-cpu"], predictors=["ridge", "knn"], splits=["random"], seeds=2,
                                        no_figures=True, no_artifacts=True, quiet=True, out=str(tmp_path / "again"),
                                        cache_dir=str(cache), launcher="slurm", jobs=2,
                                        slurm=SlurmOptions(poll_s=0.5)))
    assert again.computed == 0 and again.cached == 4
    assert len(list((cache / "slurm").glob("*_result.pkl"))) == 2  # nothing submitted again
