"""``python -m perfzoo.collect``: user errors, resuming a killed sweep, timeouts, the summary."""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from perfzoo import spaces
from perfzoo.collect.cli import main
from perfzoo.records.store import RecordStore

REPO = Path(__file__).resolve().parent.parent


def llm_raw(**over):
    raw = dict(n_layers=2, hidden_dim=128, n_heads=4, n_kv_heads=2, ffn_dim=256, vocab_size=2048,
               seq_len=64, micro_batch_size=1, precision="fp32", activation_checkpointing="none",
               compile=False, fsdp="full_shard", n_gpus=1)
    raw.update(over)
    return raw


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


# user errors: rejected before anything is launched -------------------------------------------

@pytest.mark.parametrize("bad, message", [
    ({"n_kv_heads": 3}, "line 2: space 'llm-small': knob 'n_kv_heads' = 3 is not allowed; "
                        "allowed values are [1, 2, 4, 8]"),
    ({"n_heads": 2, "n_kv_heads": 4}, "n_heads = 2 is not divisible by n_kv_heads = 4"),
    ({"global_batch_size": 5, "micro_batch_size": 2}, "global_batch_size = 5 is not divisible by micro_batch_size x dp"),
    ({"fsdp": "zero3"}, "knob 'fsdp' = 'zero3' is not allowed"),
])
def test_invalid_config_is_rejected_before_launch(tmp_path, capsys, bad, message):
    configs = write_jsonl(tmp_path / "c.jsonl", [llm_raw(), llm_raw(**bad)])
    code = main(["--workload", "llm", "--configs", configs, "--out", str(tmp_path / "store")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("perfzoo.collect: error: ") and message in err
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "store").exists()  # nothing launched, nothing written


def test_other_user_errors_are_one_line(tmp_path, capsys):
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text('{"n_layers": 2,\n')
    cases = [
        (["--workload", "llm", "--configs", str(bad_json)], "bad.jsonl line 1: not valid JSON"),
        (["--workload", "llm", "--configs", str(tmp_path / "missing.jsonl")], "no such file"),
        (["--workload", "fsdp", "--space", "llm-small", "--n", "1"], "is a space of the 'llm' workload"),
        (["--space", "nope", "--n", "1"], "unknown search space 'nope'"),
        (["--workload", "fsdp", "--n", "1", "--nproc", "3"], "--nproc 3: space 'fsdp-ads-v3' allows world_size in [2]"),
        (["--workload", "llm", "--n", "2", "--mode", "inprocess", "--nproc", "2"], "world-size-1 jobs only"),
    ]
    for args, message in cases:
        assert main(args + ["--out", str(tmp_path / "s")]) == 2, args
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1, err


def test_searcher_lines_and_dry_run(tmp_path, capsys):
    configs = write_jsonl(tmp_path / "p.jsonl", [{"config": llm_raw()}, {"config": llm_raw(n_gpus=2)},
                                                  llm_raw(seq_len=128)])
    assert main(["--workload", "llm", "--configs", configs, "--repeat", "2", "--dry-run",
                 "--out", str(tmp_path / "s")]) == 0
    out = capsys.readouterr()
    jobs = [json.loads(line) for line in out.out.splitlines()]
    assert len(jobs) == 6 and len({j["job_id"] for j in jobs}) == 6
    assert sorted(j["nproc"] for j in jobs) == [1, 1, 1, 1, 2, 2]
    assert all(spaces.get("llm-small").validate(j["config"]) == j["config"] for j in jobs)
    assert "4 in-process, 2 torchrun" in out.err
    # repeats interleaved: every config's first run before any config's second
    assert [j["repeat"] for j in jobs] == [0, 0, 1, 1, 0, 1]
    # --n with --nproc draws only configs of that world size, seeded
    assert main(["--workload", "llm", "--n", "5", "--nproc", "2", "--dry-run", "--out", str(tmp_path / "s")]) == 0
    drawn = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(drawn) == 5 and all(j["config"]["n_gpus"] == 2 for j in drawn)


def test_a_datasets_configs_alone_name_their_space_and_store(tmp_path, monkeypatch, capsys):
    """``collect --configs FILE`` with no other flag: the space is the one every line fits, the store
    runs/<space>; configs that fit no space (or several) get a one-line error naming --space."""
    monkeypatch.chdir(tmp_path)
    for dataset, space in (("fsdp-cpu", "fsdp-ads-v3"), ("llm-cpu", "llm-small")):
        assert main(["--configs", str(REPO / "datasets" / dataset / "repeat-configs.jsonl"), "--dry-run"]) == 0
        err = capsys.readouterr().err
        assert f"fit space {space}" in err and f"already in runs/{space}" in err, err
    odd = write_jsonl(tmp_path / "odd.jsonl", [{"layers": 3}])
    assert main(["--configs", odd, "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("the configs fit no registered space; name one with --space"), err


# real sweeps -----------------------------------------------------------------------------

def _collect(args, **kw):
    env = dict(os.environ, **kw.pop("env", {}))
    return subprocess.Popen([sys.executable, "-m", "perfzoo.collect", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


@pytest.mark.slow
def test_a_killed_sweep_resumes_without_duplicates(tmp_path):
    store_dir = tmp_path / "store"
    configs = write_jsonl(tmp_path / "c.jsonl", [llm_raw(seq_len=64), llm_raw(seq_len=128), llm_raw(seq_len=256),
                                                  llm_raw(n_layers=4)])
    args = ["--workload", "llm", "--configs", configs, "--nproc", "1", "--steps", "2", "--warmup", "1",
            "--out", str(store_dir), "--no-progress"]
    proc = _collect(args)
    store = RecordStore(store_dir)
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if (store_dir / "records.jsonl").exists() and len(store) >= 1:
            break
        time.sleep(0.2)
    assert proc.poll() is None, "the sweep finished before it could be killed: " + proc.stderr.read()
    family = psutil.Process(proc.pid).children(recursive=True)
    proc.kill()  # SIGKILL: no clean-up at all, as if the machine had pulled the plug
    proc.wait()
    for p in family:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    first = len(RecordStore(store_dir))
    assert 1 <= first < 4

    again = _collect(args)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert f"{first} already in" in err
    records = RecordStore(store_dir).records()
    assert len(records) == 4
    assert len({r.job_id for r in records}) == 4
    lines = (store_dir / "records.jsonl").read_text().splitlines()
    assert len(lines) == 4  # nothing written twice, no torn line
    assert "jobs stored" in out and "ok" in out  # the summary table
    assert all(r.provenance.startswith("python -m perfzoo.collect --workload llm") for r in records)
    assert len({r.sweep_id for r in records}) == 1


@pytest.mark.slow
def test_two_concurrent_collects_of_one_sweep_store_each_job_once_and_say_so(tmp_path):
    """Both run every job (neither can know the other's), the store keeps one record per job, and
    the two summaries together count each job once as stored; the other run is counted as raced."""
    store_dir = tmp_path / "store"
    configs = write_jsonl(tmp_path / "c.jsonl", [llm_raw(seq_len=64), llm_raw(seq_len=128), llm_raw(seq_len=256)])
    args = ["--workload", "llm", "--configs", configs, "--nproc", "1", "--steps", "2", "--warmup", "1",
            "--out", str(store_dir), "--no-progress"]
    procs = [_collect(args), _collect(args)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    assert len(RecordStore(store_dir)) == 3
    assert len((store_dir / "records.jsonl").read_text().splitlines()) == 3
    stored = [int(re.search(r"jobs stored\s+(\d+)", out).group(1)) for out, _ in outs]
    raced = [int(m.group(1)) if (m := re.search(r"stored first by another collect\s+(\d+)", out)) else 0
             for out, _ in outs]
    skipped = [int(re.search(r"skipped \(already in store\)\s+(\d+)", out).group(1)) for out, _ in outs]
    assert sum(stored) == 3 and all(st + r + sk == 3 for st, r, sk in zip(stored, raced, skipped))


@pytest.mark.slow
def test_collect_records_timeouts_and_goes_on(tmp_path):
    configs = write_jsonl(tmp_path / "c.jsonl", [llm_raw(), llm_raw(seq_len=128)])
    proc = _collect(["--workload", "llm", "--configs", configs, "--timeout", "4", "--steps", "2",
                     "--out", str(tmp_path / "s"), "--no-progress"], env={"PERFZOO_TEST_HANG": "1"})
    t0 = time.time()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    records = RecordStore(tmp_path / "s").records()
    assert [r.status for r in records] == ["timeout", "timeout"]
    assert all(r.failure.kind == "timeout" for r in records)
    assert time.time() - t0 < 2 * (4 + 6) + 20
    assert "timeout" in out


def test_run_from_python_lists_the_jobs_of_a_dry_run(tmp_path, capsys):
    from perfzoo.collect import CollectConfig, run

    assert run(CollectConfig(out=str(tmp_path / "s"), workload="llm", n=3, nproc=1, dry_run=True)) == 0
    jobs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(jobs) == 3 and all(j["config"]["n_gpus"] == 1 for j in jobs)


@pytest.mark.parametrize("fields, message", [
    ({"n": 1, "configs": "c.jsonl"}, "give exactly one of --n and --configs"),
    ({"n": 1, "steps": 0}, "--steps must be at least 1"),
    ({"n": 1, "device": "gpu"}, "--device 'gpu': choose one of cpu, cuda"),
    ({"n": 1, "ran_on": "FOO-9000"}, "--ran-on FOO-9000: not a row of the accelerator table"),
])
def test_a_bad_config_field_is_named(fields, message):
    from perfzoo.console import InputError
    from perfzoo.collect import CollectConfig

    with pytest.raises(InputError, match=message):
        CollectConfig(out="runs/x", **fields)


def test_ran_on_is_for_your_own_command_only(tmp_path):
    from perfzoo.collect import CollectConfig, run
    from perfzoo.console import InputError

    with pytest.raises(InputError, match="--ran-on H100-SXM-80GB: only for your own command's jobs"):
        run(CollectConfig(out=str(tmp_path / "s"), workload="llm", n=1, nproc=1, ran_on="H100-SXM-80GB", dry_run=True))
    assert not (tmp_path / "s").exists()  # refused before the store is created


def test_collect_flags_given_to_tune_become_the_fields_they_set():
    from harness.sbatch import SlurmOptions
    from perfzoo.collect import CollectConfig, options_from_argv

    options = options_from_argv(["--batch-size=20", "--launcher=slurm", "--partition", "cpu",
                                 "--slurm-arg", "reservation=r1", "--slurm-arg=--begin=now"])
    slurm = SlurmOptions(partition="cpu", extra={"reservation": "r1", "begin": "now"})
    assert options == {"batch_size": 20, "launcher": "slurm", "slurm": slurm}
    assert CollectConfig(out="runs/x", n=1, **options).slurm.requested("slurm") == slurm
    assert options_from_argv([]) == {}


# the summary ------------------------------------------------------------------------------------

def test_the_summary_counts_failure_reasons_and_rates_only_completed_jobs(tmp_path, capsys):
    space = tmp_path / "space.toml"
    space.write_text(f'''name = "broken"
world_size_key = "nproc"
command = "{{mode}}"
[knobs]
mode = {{ values = ["perfzoo-no-such-command-xyz", "true", "{sys.executable} -c pass"] }}
[constants]
nproc = 1
''')
    configs = write_jsonl(tmp_path / "c.jsonl", [{"mode": "perfzoo-no-such-command-xyz"}, {"mode": "true"}])
    assert main(["--space", str(space), "--configs", configs, "--repeat", "2", "--out", str(tmp_path / "s"),
                 "--no-progress", "--timeout", "20"]) == 0
    out = capsys.readouterr().out
    rows = dict(re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in out.splitlines() if "  " in line.strip())
    assert rows["failed"] == "4"
    assert re.search(r"failure reasons\s+2 command not found \(exit 127\)  e\.g\. '.*perfzoo-no-such-command-xyz.*"
                     r"command not found'", out), out
    assert re.search(r"\n\s+2 no_metrics  e\.g\. '", out), out  # `true` exits 0 and reports nothing
    assert "jobs/hour" not in out  # no job completed: a rate of jobs that failed at once means nothing


# how torchrun 2.13 ends when a rank raises: the rank's traceback, then its own, then a banner
TORCHRUN_CRASH = """[rank1]: Traceback (most recent call last):
[rank1]:   File "train.py", line 3, in <module>
[rank1]: RuntimeError: Gloo connectFullMesh failed
[rank0]: RuntimeError: [pair.cc:553] Connection closed by peer [127.0.0.1]:44450.
Traceback (most recent call last):
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def test_the_summary_table_of_a_tally():
    from datetime import datetime, timezone

    from perfzoo.records import JobRecord
    from perfzoo.collect.tally import Tally

    def record(i, status, exit_code=None, kind=None, qps=None, message=""):
        return JobRecord(job_id=f"j{i}", source="measured", provenance="t", status=status, workload="command",
                         started_at=datetime(2026, 1, 1, tzinfo=timezone.utc), config={"a": i},
                         hardware={"accelerator": "cpu", "accelerator_count": 1},
                         failure=None if status == "ok" else {"kind": kind, "exit_code": exit_code, "message": message},
                         metrics={"throughput": qps, "throughput_unit": "items/s"} if qps else {})

    tally = Tally()
    for i, (status, exit_code, kind, qps, message) in enumerate([
            ("ok", None, None, 10.0, ""), ("ok", None, None, 30.0, ""), ("oom", None, "oom", None, "MemoryError"),
            ("failed", 127, "crash", None, "sh: 1: x: not found"),
            ("failed", 127, "crash", None, "sh: 1: y: not found"),
            ("failed", -11, "crash", None, "Segmentation fault\n"), ("failed", 1, "crash", None, TORCHRUN_CRASH),
            ("timeout", None, "timeout", None, "")]):
        tally.add(record(i, status, exit_code, kind, qps, message))
    table = tally.table(3600.0, 0, "runs/x")
    lines = table.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("failure reasons"))
    column = lines[0].rindex(" ") + 1  # where the values start ("jobs stored   8")
    assert [line[column:] for line in lines[start:start + 5]] == [
        "2 command not found (exit 127)  e.g. 'sh: 1: x: not found'", "1 oom  e.g. 'MemoryError'",
        "1 crash (killed by signal 11)  e.g. 'Segmentation fault'",
        "1 crash (exit 1)  e.g. '[rank1]: RuntimeError: Gloo connectFullMesh failed'", "1 timeout"]
    assert "3,600.0 s  (2 completed jobs/hour)" in table
