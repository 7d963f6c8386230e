"""Your own job: space files, the command workload's outcomes with real processes, the example loop."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.command import MetricSource, parse_regex, parse_torchtitan, render
from perfzoo.collect import cli as collect
from perfzoo.records import JobRecord
from perfzoo.records.store import RecordStore
from perfzoo.spaces import FileSpace, SpaceError, SpaceFileError, get
from perfzoo.spaces.file import Expression

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "fsdp2" / "space.toml"

SPACE = """\
name = "toy"
world_size_key = "nproc"
throughput_unit = "samples/s"
constraints = ["tp * pp <= nproc * 2", "mode in ('a', 'b') or tp == 1"]

[knobs]
tp = { values = [1, 2, 4] }
pp = { kind = "integer", low = 1, high = 3, step = 1 }
lr = { kind = "float", low = 0.1, high = 0.3, step = 0.1 }
mode = { values = ["a", "b", "c"] }
flag = { values = [true, false] }

[constants]
nproc = 2

[derived]
degree = "tp * pp"
"""


def write(tmp_path: Path, text: str, name: str = "space.toml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


# --- space files ------------------------------------------------------------------------------

def test_space_file_has_every_kind_of_knob_constraints_and_derived_keys(tmp_path):
    space = get(str(write(tmp_path, SPACE)))
    assert isinstance(space, FileSpace) and space.name == "toy" and space.workload == "command"
    assert [d.values for d in space.dimensions[:3]] == [(1, 2, 4), (1, 2, 3), (0.1, 0.2, 0.3)]
    configs = list(space.enumerate())
    assert configs and all(c["tp"] * c["pp"] <= 4 for c in configs)
    assert all(c["degree"] == c["tp"] * c["pp"] and c["nproc"] == 2 for c in configs)
    assert not any(c["mode"] == "c" and c["tp"] > 1 for c in configs)
    assert any(c["mode"] == "c" for c in configs)
    with pytest.raises(SpaceError, match=r"'tp \* pp <= nproc \* 2' does not hold for nproc=2, pp=3, tp=2"):
        space.validate({"tp": 2, "pp": 3, "lr": 0.1, "mode": "a", "flag": True})
    assert space.ref == str(tmp_path / "space.toml")


@pytest.mark.parametrize("body, line, words", [
    ('name = "x"\nworld_size_key = "n"\n[constants]\nn = 1\n[knobs]\na = { kind = "choice", values = [1] }\n', 6,
     "unknown kind 'choice'"),
    ('name = "x"\nworld_size_key = "n"\n[constants]\nn = 1\n[knobs]\n\na = { kind = "integer", low = 4, high = 2 }\n',
     7, "bad range low=4, high=2"),
    ('name = "x"\nworld_size_key = "n"\n[constants]\nn = 1\n[knobs]\na = { kind = "float", low = 0.1, high = 0.35, '
     'step = 0.1 }\n', 6, "not a multiple of step"),
    ('name = "x"\nworld_size_key = "n"\nconstraints = [\n  "a <= n",\n  "a * tpx <= 4",\n]\n[constants]\nn = 1\n'
     '[knobs]\na = { values = [1, 2] }\n', 5, "names 'tpx', which is not a knob"),
    ('name = "x"\nworld_size_key = "n"\nconstraints = ["__import__(\'os\').system(\'true\') == 0"]\n'
     '[constants]\nn = 1\n[knobs]\na = { values = [1] }\n', 3, "only min, max, abs may be called"),
    ('name = "x"\nworld_size_key = "n"\nconstraints = ["a.real > 0"]\n[constants]\nn = 1\n[knobs]\n'
     'a = { values = [1] }\n', 3, "'Attribute' is not allowed"),
    ('name = "x"\nworld_size_key = "n"\nknob = 3\n[constants]\nn = 1\n[knobs]\na = { values = [1] }\n', 3,
     "unknown key 'knob'"),
    ('name = "x"\nworld_size_key = "n"\n[constants]\nn = 1\n[knobs]\na = { values = [] }\n', 6,
     "values must be a non-empty list"),
    ('name = "x"\n[knobs]\na = { values = [1] }\n', 1, "world_size_key = 'world_size' is not a knob"),
])
def test_a_malformed_space_file_is_one_line_naming_the_line(tmp_path, body, line, words):
    path = write(tmp_path, body)
    with pytest.raises(SpaceFileError) as info:
        get(str(path))
    message = str(info.value)
    assert message.startswith(f"{path} line {line}: ") and words in message and "\n" not in message


def test_invalid_toml_and_a_missing_file_are_clear(tmp_path):
    with pytest.raises(SpaceFileError, match=r"not valid TOML: .*line 2"):
        get(str(write(tmp_path, 'name = "x"\n[knobs\n')))
    with pytest.raises(SpaceFileError, match="no such file"):
        get(str(tmp_path / "nope.toml"))


def test_expressions_are_interpreted_not_evaluated():
    assert Expression.parse("max(tp, pp) if mode == 'a' else -1")({"tp": 2, "pp": 3, "mode": "a"}) == 3
    for bad in ("[x for x in (1, 2)]", "(lambda: 1)()", "a[0]", "open('f')"):
        with pytest.raises(ValueError):
            Expression.parse(bad)


# --- templates and parsers ----------------------------------------------------------------------

def test_template_renders_knobs_quoted_and_leaves_shell_variables():
    out = render("run --mode {mode} --flag {flag} --home ${HOME} --port {master_port}",
                 {"mode": "a b", "flag": False}, {"master_port": 29500})
    assert out == "run --mode 'a b' --flag false --home ${HOME} --port 29500"


def test_torchtitan_parser_reads_the_documented_step_lines_with_colours():
    text = ("[rank0]:[titan] 2025-01-10 12:00:00,123 - root - INFO - \x1b[31mstep:  1  \x1b[32mloss: 12.0000  "
            "\x1b[33mmemory: 30.10GiB(38.05%)  \x1b[34mtps: 1,024  \x1b[36mtflops: 58.30  \x1b[35mmfu: 5.89%\x1b[39m\n"
            "[rank0]:[titan] ... - INFO - step: 10  loss:  7.1234  grad_norm:  1.2000  memory: 31.20GiB(39.46%)  "
            "tps: 7,389  tflops: 428.12  mfu: 43.29%\n"
            "[rank0]:[titan] ... - INFO - validate step: 10  loss:  7.0000  memory: 31.20GiB(39.46%)  tps: 9,000\n")
    rows = parse_torchtitan(text)
    assert [r["step"] for r in rows] == [1, 10]
    assert rows[1] == {"step": 10, "loss": 7.1234, "peak_memory_gib": 31.2, "throughput_per_device": 7389.0,
                       "tflops_per_device": 428.12, "mfu": 0.4329}


def test_torchtitan_parser_reads_a_step_without_mfu():
    """torchtitan 0.3.0 prints ``mfu: N/A`` when it does not know the device's peak."""
    [row] = parse_torchtitan("step:  5  loss:  6.5  grad_norm:  0.9  memory:  2.00GiB(2.5%)  tps: 12,345  "
                             "tflops: 1.50  mfu: N/A")
    assert row["throughput_per_device"] == 12345.0 and "mfu" not in row


def test_the_torchtitan_example_space_renders_its_entry_point_flags():
    space = get(str(ROOT / "examples" / "torchtitan" / "space.toml"))
    config = space.validate({"nproc": 8, "tp": 2, "model_config": "llama3_debugmodel_float8", "local_batch": 2,
                             "seq_len": 4096, "reshard": "never", "compile": "enable", "ac": "full"})
    with pytest.raises(SpaceError, match="nproc % tp == 0"):
        space.validate({**config, "nproc": 2, "tp": 4})
    cmd = render(space.command, config, {"total_steps": 12})
    assert cmd.startswith("torchrun --standalone --nproc-per-node 8 -m torchtitan.train --module llama3 "
                          "--config llama3_debugmodel_float8 --training.steps 12 --metrics.log-freq 1")
    assert "--parallelism.tensor-parallel-degree 2" in cmd and cmd.endswith("--compile.enable activation-checkpoint:full")


def _example_script_args(argv: list[str]):
    """examples/fsdp2/train.py's own argument parser on ``argv`` (the script is not a package module)."""
    spec = importlib.util.spec_from_file_location("fsdp2_train", ROOT / "examples" / "fsdp2" / "train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    old, sys.argv = sys.argv, ["train.py", *argv]
    try:
        return module.parse_args()
    finally:
        sys.argv = old


def test_the_gpu_example_space_renders_commands_its_script_accepts():
    space = get(str(ROOT / "examples" / "fsdp2" / "cuda.toml"))
    configs = space.sample(6, seed=0)
    assert {c["nproc"] for c in configs} == {1} and all(c["width"] * c["depth"] <= 65536 for c in configs)
    for config in configs:
        cmd = render(space.command, config, {"total_steps": 8, "space_dir": "examples/fsdp2"})
        assert cmd.startswith("torchrun --standalone --nproc-per-node 1 examples/fsdp2/train.py --device cuda ")
        args = _example_script_args(cmd.split("train.py ", 1)[1].split())
        assert (args.device, args.dtype, args.batch, args.width, args.depth, args.steps) == \
            ("cuda", config["dtype"], config["batch"], config["width"], config["depth"], 8)
        assert args.reshard == ("true" if config["reshard"] else "false")


@pytest.mark.slow
def test_the_fsdp2_example_trains_in_bf16_on_two_cpu_ranks(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    env = {**os.environ, "PERFZOO_METRICS_FILE": str(metrics), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(["torchrun", "--standalone", "--nproc-per-node", "2", str(ROOT / "examples" / "fsdp2" / "train.py"),
                           "--dtype", "bf16", "--batch", "16", "--width", "256", "--depth", "2", "--steps", "3"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3] and all(r["samples_per_step"] == 32 for r in rows)
    assert all(r["step_time_s"] > 0 and 0 < r["loss"] < 10 for r in rows) and "peak_memory_gib" not in rows[0]
    assert rows[-1]["loss"] < rows[0]["loss"]  # AdamW at lr 1e-3 on a fixed batch: the loss falls


def test_the_gpu_example_dataset_is_what_its_space_and_script_reported():
    """datasets/fsdp2-h200: 23 jobs of examples/fsdp2/cuda.toml on one H200 (its card says how)."""
    space = get(str(ROOT / "examples" / "fsdp2" / "cuda.toml"))
    records = RecordStore(ROOT / "datasets" / "fsdp2-h200", create=False).records()
    assert len(records) == 23 and all(r.status == "ok" and r.workload == "command" for r in records)
    for r in records:
        assert space.validate(r.config) == r.config and r.annotations["space"] == "fsdp2-cuda-example"
        assert r.hardware.accelerator == "H200-141GB" and r.software.torch.startswith("2.11.0+cu")
        steps = [float(t) for t in r.annotations["step_times_s"].split()]
        assert len(steps) == r.metrics.step_time_n == 6  # --steps 6 after 2 warm-up steps
        rates = sorted(r.config["global_batch"] / t for t in steps)
        assert rates[0] <= r.metrics.throughput <= rates[-1]  # the p90 of per-step samples/s
        assert 0.05 < r.metrics.peak_memory_gib < 139.8  # torch.cuda.max_memory_allocated, reported by the script

def test_regex_parser_and_its_validation():
    assert parse_regex("it/s=12.5 x\nnothing\nit/s=13", r"it/s=(?P<throughput>[\d.]+)") == [
        {"throughput": 12.5}, {"throughput": 13.0}]
    with pytest.raises(ValueError, match="needs a named group"):
        MetricSource(parser="regex", regex=r"(\d+)")
    with pytest.raises(ValueError, match="is not a regular expression"):
        MetricSource(parser="regex", regex=r"(?P<throughput>[")


# --- the command workload with real processes ----------------------------------------------------

JOB = """\
import json, os, sys, time
mode = sys.argv[1]
steps = int(sys.argv[2])
if mode == "crash":
    sys.exit("boom: the job fell over")
if mode == "hang":
    time.sleep(60)
if mode == "oom":
    x = bytearray(2 * 1024 ** 3)
if mode == "killed":
    os.kill(os.getpid(), 9)
if mode == "titan":
    for s in range(1, steps + 1):
        print(f"[rank0]: step: {s:2}  loss: 7.0  memory: 1.50GiB(2.00%)  tps: {1000 + s:,}  tflops: 10.00  mfu: 5.00%")
    sys.exit(0)
if mode in ("ok", "teardown", "partial"):
    with open(os.environ["PERFZOO_METRICS_FILE"], "a") as f:
        f.write("this line is not JSON\\n")
        for s in range(1, steps + (0 if mode == "partial" else 1)):
            f.write(json.dumps({"step": s, "step_time_s": 0.5 if s == 1 else 0.1, "samples_per_step": 8}) + "\\n")
if mode in ("teardown", "partial"):
    sys.exit("RuntimeError: Connection closed by peer")
"""


@pytest.fixture()
def job_space(tmp_path):
    (tmp_path / "job.py").write_text(JOB)
    return write(tmp_path, f"""\
        name = "modes"
        world_size_key = "nproc"
        throughput_unit = "samples/s"
        command = "{sys.executable} {{space_dir}}/job.py {{mode}} {{total_steps}}"
        [knobs]
        mode = {{ values = ["ok", "crash", "hang", "oom", "killed", "silent", "titan", "teardown", "partial"] }}
        [constants]
        nproc = 1
        memory_budget_gib = 1.0
        """)


def run_modes(job_space, tmp_path, modes, *extra, store=None):
    configs = tmp_path / f"configs-{'-'.join(modes)}.jsonl"
    configs.write_text("".join(json.dumps({"mode": m}) + "\n" for m in modes))
    out = tmp_path / (store or f"store-{'-'.join(modes)}")
    rc = collect.main(["--space", str(job_space), "--configs", str(configs), "--out", str(out), "--timeout", "5",
                       "--steps", "4", "--warmup", "1", "--no-progress", *extra])
    assert rc == 0
    lines = (out / "records.jsonl").read_text().splitlines()
    return {r.config["mode"]: r for r in (JobRecord.model_validate_json(line) for line in lines)}


def test_each_outcome_of_a_command_job_is_the_right_record(job_space, tmp_path):
    recs = run_modes(job_space, tmp_path, ["ok", "crash", "hang", "oom", "killed", "silent"])
    ok = recs["ok"]
    assert ok.status == "ok" and ok.metrics.step_time_n == 4  # step 1 (warm-up) left out
    assert ok.metrics.throughput == pytest.approx(80.0) and ok.metrics.throughput_unit == "samples/s"
    assert "line 1: not JSON" in ok.annotations["metrics_lines_skipped"]
    assert ok.annotations["command"].endswith("job.py ok 5")
    assert recs["crash"].status == "failed" and recs["crash"].failure.kind == "crash"
    assert "boom: the job fell over" in recs["crash"].failure.message
    assert recs["hang"].status == "timeout" and recs["hang"].failure.kind == "timeout"
    assert recs["oom"].status == "oom" and "MemoryError" in recs["oom"].failure.message
    assert recs["oom"].failure.memory["limit_gib"] == 1.0
    assert recs["killed"].status == "oom" and "SIGKILL" in recs["killed"].failure.message
    silent = recs["silent"]
    assert silent.status == "failed" and silent.failure.kind == "no_metrics"
    assert "exited 0 but reported no metrics in $PERFZOO_METRICS_FILE" in silent.failure.message


def test_an_exit_after_the_last_reported_step_keeps_the_measurement(job_space, tmp_path, capsys):
    recs = run_modes(job_space, tmp_path, ["teardown", "partial"])
    down = recs["teardown"]  # every step reported, then exit 1 (as a racy gloo teardown does)
    assert down.status == "ok" and down.metrics.step_time_n == 4 and down.metrics.throughput == pytest.approx(80.0)
    assert down.annotations["teardown_exit_code"] == 1
    assert "Connection closed by peer" in down.annotations["teardown_output"]
    partial = recs["partial"]  # the last step never reported: the job did not finish
    assert partial.status == "failed" and partial.failure.kind == "crash" and partial.failure.exit_code == 1
    assert "teardown_exit_code" not in partial.annotations
    out = capsys.readouterr().out
    assert re.search(r"exited non-zero after its last step\s+1  e\.g\. 'RuntimeError: Connection closed by peer'",
                     out), out


def test_torchtitan_and_regex_parsers_through_collect(job_space, tmp_path):
    titan = run_modes(job_space, tmp_path, ["titan"], "--metric-parser", "torchtitan")["titan"]
    assert titan.status == "ok" and titan.metrics.throughput_unit == "tokens/s"
    assert titan.metrics.step_time_n == 4 and titan.metrics.mfu == pytest.approx(0.05)
    assert 1002 <= titan.metrics.throughput <= 1005  # tps x 1 rank, p90 over steps 2..5
    rx = run_modes(job_space, tmp_path, ["titan"], "--metric-regex", r"tps: (?P<throughput>[\d,]+)",
                   store="regex")["titan"]
    assert rx.status == "ok" and rx.metrics.throughput_unit == "samples/s" and rx.metrics.step_time_n == 4


def test_command_usage_errors_name_the_fix(job_space, tmp_path, capsys):
    def err(*argv, out=tmp_path / "x"):
        assert collect.main([*argv, "--out", str(out), "--no-progress"]) == 2
        return capsys.readouterr().err

    assert "neither a knob of the space (mode, nproc, memory_budget_gib) nor a harness value" in err(
        "--space", str(job_space), "--n", "1", "--command", "run {nosuch}")
    assert "is for your own job" in err("--space", "llm-small", "--n", "1", "--command", "run")
    bare = write(tmp_path, 'name = "b"\nworld_size_key = "n"\n[knobs]\na = { values = [1] }\n[constants]\nn = 1\n',
                 "bare.toml")
    assert "give --command 'TEMPLATE'" in err("--space", str(bare), "--n", "1")
    run_modes(job_space, tmp_path, ["silent"])  # a store of the space file's command
    assert "holds jobs of another command" in err("--space", str(job_space), "--n", "1", "--command", "true {mode}",
                                                  out=tmp_path / "store-silent")
    assert "read with another metric source" in err("--space", str(job_space), "--n", "1", "--metric-parser",
                                                    "torchtitan", out=tmp_path / "store-silent")


# --- the worked example: the whole loop on a plain FSDP2 script ------------------------------------

@pytest.mark.slow
def test_the_cpu_example_loop_runs_end_to_end(tmp_path, capsys):
    from perfzoo import bench, tune
    from perfzoo.search import cli as search_cli

    store = tmp_path / "store"
    assert collect.main(["--space", str(EXAMPLE), "--n", "8", "--seed", "1", "--out", str(store), "--steps", "3",
                         "--warmup", "1", "--no-progress"]) == 0
    records = RecordStore(store).records()
    failed = [r.failure.message[-3000:] for r in records if r.status != "ok"]
    assert len(records) == 8 and len(failed) <= 1, "\n\n".join(failed)
    assert all(r.workload == "command" and r.annotations["space"] == "fsdp2-cpu-example" for r in records)
    assert bench.main(["--datasets", str(store), "--predictors", "ridge", "--splits", "random", "--seeds", "2",
                       "--out", str(tmp_path / "lb"), "--no-figures", "--no-artifacts", "--no-cache", "-q"]) == 0
    assert "store" in (tmp_path / "lb" / "README.md").read_text()
    proposals = tmp_path / "proposals.jsonl"
    assert search_cli.main(["--space", str(EXAMPLE), "--dataset", str(store), "--predictor", "ridge", "--top-k", "2",
                            "--n-samples", "200", "--restarts", "1", "--out", str(proposals)]) == 0
    proposed = [json.loads(line)["config"] for line in proposals.read_text().splitlines()]
    measured = {json.dumps(r.config, sort_keys=True) for r in records}
    assert len(proposed) == 2 and not {json.dumps(c, sort_keys=True) for c in proposed} & measured
    assert tune.main(["--space", str(EXAMPLE), "--store", str(tmp_path / "tune"), "--n-random", "2", "--rounds", "1",
                      "--top-k", "1", "--predictor", "ridge", "--steps", "3", "--warmup", "1", "--n-samples", "200",
                      "--restarts", "1", "--no-progress"]) == 0
    tuned = RecordStore(tmp_path / "tune").records()
    assert len(tuned) == 3 and {r.sweep_id.rsplit("-", 1)[1] for r in tuned} == {"random", "round1"}
    summary = json.loads(next((tmp_path / "tune" / "tune").glob("*-summary.json")).read_text())
    assert summary["space"] == "fsdp2-cpu-example"


# --- torchrun inside a command job: its temp folders and its process group -------------------------

@pytest.fixture()
def torchrun_space(tmp_path):
    (tmp_path / "job.py").write_text(JOB)
    return write(tmp_path, f"""\
        name = "torchrun-modes"
        world_size_key = "nproc"
        throughput_unit = "samples/s"
        command = "{sys.executable} -m torch.distributed.run --standalone --nproc-per-node 1 {{space_dir}}/job.py {{mode}} {{total_steps}}"
        [knobs]
        mode = {{ values = ["ok", "hang"] }}
        [constants]
        nproc = 1
        """)


def test_a_torchrun_command_job_leaves_no_torchelastic_folder_in_tmpdir(torchrun_space, tmp_path, monkeypatch):
    """torchrun's agent makes a torchelastic_* folder in $TMPDIR per job and keeps it (16 after the README's
    tune); the job's TMPDIR is in its folder, removed with it."""
    import tempfile

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    recs = run_modes(torchrun_space, tmp_path, ["ok"], "--timeout", "90")
    assert recs["ok"].status == "ok" and recs["ok"].metrics.step_time_n == 4
    assert list(tmp.iterdir()) == []  # no torchelastic_*, no job folder
    assert not (tmp_path / "store-ok" / "in-flight").exists()  # the marker went with the job


def test_a_collect_killed_outright_has_its_torchrun_job_ended_and_its_folder_removed_on_restart(
        torchrun_space, tmp_path, capsys):
    """kill -9 of collect left the job's torchrun (its own session) running with its temp folder; the
    store's in-flight marker names its process group, which the next collect ends, saying so in one line."""
    import signal
    import time

    import psutil

    out = tmp_path / "store"
    (tmp_path / "hang.jsonl").write_text(json.dumps({"mode": "hang"}) + "\n")
    proc = subprocess.Popen([sys.executable, "-m", "perfzoo.collect", "--space", str(torchrun_space), "--configs",
                             str(tmp_path / "hang.jsonl"), "--out", str(out), "--timeout", "120", "--steps", "4",
                             "--warmup", "1", "--no-progress"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)

    def rank_started() -> bool:  # torchrun's rank runs job.py; its agent's line names job.py too
        lines = [" ".join(p.cmdline()) for p in psutil.Process(proc.pid).children(recursive=True)]
        return any("job.py" in line and "torch.distributed.run" not in line for line in lines)

    started = set()  # whatever it started, ended here if the test fails half way
    try:
        deadline = time.time() + 90
        while time.time() < deadline and not rank_started():
            time.sleep(0.2)
        markers = list((out / "in-flight").glob("*.json"))
        assert len(markers) == 1, "the job never started"
        marker = json.loads(markers[0].read_text())
        job = psutil.Process(marker["pgid"])
        tree = [job, *job.children(recursive=True)]
        started.update(tree)
        assert len(tree) >= 2  # torchrun's agent (bash ran it in its place) and its rank
        assert any(Path(f).name.startswith("torchelastic_") for f in os.listdir(Path(marker["folders"][0]) / "tmp"))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert all(p.is_running() for p in tree)  # orphaned: nothing ended them
        run_modes(torchrun_space, tmp_path, ["ok"], "--timeout", "90", store="store")
        err = capsys.readouterr().err
        said = [line for line in err.splitlines() if line.startswith("collect: ended process group")]
        assert said == [f"collect: ended process group {marker['pgid']}, the job an earlier launcher killed outright left "
                        f"running, and removed {marker['folders'][0]} (its TMPDIR with it)"]
        psutil.wait_procs(tree, timeout=10)
        assert not any(p.is_running() for p in tree) and not Path(marker["folders"][0]).exists()
        assert not (out / "in-flight").exists()
    finally:
        if proc.poll() is None:
            started.update(psutil.Process(proc.pid).children(recursive=True))
        proc.kill()
        for p in started:
            if p.is_running():
                p.kill()
