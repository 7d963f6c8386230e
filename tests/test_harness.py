"""The harness: real torchrun and in-process jobs on CPU, failures as data.

These launch real training jobs (2 gloo ranks or one in-process worker) on the CPU; each
takes a few seconds, more on a loaded machine. CUDA paths (NCCL, CUDA events, memory
fraction, MFU) cannot run here.
"""

import tempfile
import time

import psutil
import pytest
import torch

from harness.environment import capture_hardware, capture_software, hardware_key, peak_bf16_flops, short_gpu_name
from harness.jobs import JobSpec, to_record
from harness.launchers import InProcessBatchLauncher, LocalTorchrunLauncher, WarmTorchrunLauncher
from harness.timing import max_over_ranks, summarize_steps
from perfzoo import spaces, workloads
from perfzoo.records import JobRecord, job_id_for, parse_record

pytestmark = pytest.mark.slow


def fsdp_config(batch=16, budget=None, strategies=("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD"), **over):
    raw = {f"shard_{i:02d}": strategies[i % len(strategies)] for i in range(11)}
    raw.update(local_batch=batch, memory_budget_gib=budget)
    cfg = spaces.get("fsdp-ads").validate(raw)
    cfg.update(over)  # harness-level knobs outside the space (e.g. fsdp_api) for the tests
    return cfg


def llm_config(**over):
    raw = dict(n_layers=2, hidden_dim=128, n_heads=4, n_kv_heads=2, ffn_dim=256, vocab_size=2048,
               seq_len=64, micro_batch_size=2, precision="fp32", activation_checkpointing="none",
               compile=False, fsdp="full_shard", n_gpus=1)
    raw.update(over)
    return spaces.get("llm-small").validate(raw)


def spec_for(workload, config, nproc, timeout=120.0, **kw):
    hw = capture_hardware("cpu", nproc)
    return JobSpec(workload=workload, config=config, nproc=nproc, steps=kw.pop("steps", 3),
                   module=workloads.get(workload).harness,
                   warmup=kw.pop("warmup", 1), timeout_s=timeout,
                   job_id=job_id_for(workload, config, hardware_key(hw), kw.get("repeat", 0)), **kw)


def record_of(outcome, unit):
    rec = to_record(outcome, hardware=capture_hardware("cpu", outcome.spec.nproc), software=capture_software(),
                    provenance="pytest", sweep_id="test", throughput_unit=unit)
    return parse_record(rec.to_json())  # the schema accepts it on the way back in


def _leftovers(marker: str) -> list:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(marker in part for part in (p.info["cmdline"] or [])):
                found.append(p)
        except psutil.Error:
            pass
    return found


# pure pieces -------------------------------------------------------------------------

def test_step_stats_take_the_max_over_ranks_and_flag_noise():
    assert max_over_ranks([[1, 5, 3], [2, 4, 3, 9]]) == [2, 5, 3]
    s = summarize_steps([[0.1] * 10, [0.1] * 9 + [0.2]], items_per_step=100, n_devices=2)
    assert s["step_time_n"] == 10 and s["step_time_p50_s"] == pytest.approx(0.1)
    assert s["throughput"] == pytest.approx(1000.0) and s["throughput_per_device"] == pytest.approx(500.0)
    assert s["noisy"] is False
    noisy = summarize_steps([[0.1, 0.2, 0.1, 0.3, 0.1, 0.25]], items_per_step=10)
    assert noisy["noisy"] is True and noisy["noise_iqr_over_median"] > 0.1


def test_environment_capture_and_gpu_tables():
    hw = capture_hardware("cpu", 2)
    assert hw["accelerator"] == "cpu" and hw["accelerator_count"] == 2 and hw["cpu_cores"] >= 1
    sw = capture_software()
    assert sw["torch"] and sw["perfzoo"] and sw["python"]
    assert hardware_key(hw) == {"accelerator": "cpu", "accelerator_count": 2, "nodes": 1, "cpu": hw["cpu"],
                                "cpu_capability": hw["cpu_capability"]}
    assert hw["cpu_capability"] and hw["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert hw["matmul_fp32_gflops"] > 0 and hw["matmul_bf16_gflops"] > 0  # the probe ran
    JobRecord.model_validate({"job_id": "j", "source": "measured", "provenance": "test", "status": "ok",
                              "started_at": "2026-11-28T00:00:00Z", "workload": "llm", "config": {},
                              "hardware": hw})  # every captured fact is a schema field
    assert peak_bf16_flops("NVIDIA H100 80GB HBM3") == 989e12
    assert peak_bf16_flops("NVIDIA A100-SXM4-40GB") == 312e12
    assert peak_bf16_flops("cpu") is None
    assert short_gpu_name("NVIDIA H100 80GB HBM3") == "H100-80GB"


# real jobs ---------------------------------------------------------------------------

def test_fsdp1_per_layer_wrapping_runs():
    spec = spec_for("fsdp", fsdp_config(batch=16, fsdp_api="fsdp1", strategies=("NO_SHARD", "SHARD_GRAD_OP")),
                    nproc=2, steps=2)
    outcome = LocalTorchrunLauncher().run(spec)
    assert outcome.status == "ok", outcome.failure


def test_tiny_memory_budget_is_a_real_oom_then_a_two_rank_job_gives_an_ok_record():
    specs = [spec_for("fsdp", fsdp_config(batch=16, memory_budget_gib=0.25), nproc=2),
             spec_for("fsdp", fsdp_config(batch=16), nproc=2)]
    oom, outcome = list(LocalTorchrunLauncher().run_many(specs))  # the sweep goes on after the oom
    assert oom.status == "oom", oom.failure
    rec = record_of(oom, "queries/s")
    assert rec.failure.kind == "oom" and rec.failure.rank in (0, 1)
    # the allocation that failed was real: torch's allocator or Python's own, under RLIMIT_DATA
    assert "can't allocate memory" in rec.failure.message or "MemoryError" in rec.failure.message
    assert rec.failure.memory["limit_gib"] == 0.25
    assert rec.failure.memory["data_gib"] > 0 and rec.metrics.throughput is None

    assert outcome.status == "ok", outcome.failure
    assert [r["rank"] for r in outcome.ranks] == [0, 1]
    rec = record_of(outcome, "queries/s")
    m = rec.metrics
    assert rec.status == "ok" and rec.failure is None
    assert m.step_time_n == 3 and m.throughput > 0 and m.throughput_unit == "queries/s"
    assert m.throughput_stat == "p90" and m.throughput == m.throughput_p90
    # throughput is global: 2 ranks x 16 examples over the (max over ranks) step time
    assert m.throughput_per_device == pytest.approx(m.throughput / 2)
    assert m.step_time_p50_s <= m.step_time_p90_s <= m.step_time_p99_s
    assert m.peak_memory_gib > 0 and m.wall_time_s > m.step_time_mean_s * 3
    # every step's time is kept, so any statistic can be recomputed from the record
    ann = rec.annotations
    steps = [float(t) for t in ann["step_times_s"].split()]
    assert len(steps) == 3 and ann["items_per_step"] == 32
    assert sorted(steps)[1] == pytest.approx(m.step_time_p50_s, abs=1e-6)
    assert rec.annotations["overhead_s"] > 0 and rec.annotations["n_no_shard"] == 3
    assert rec.annotations["loadavg_1m"] >= 0 and rec.annotations["peak_data_gib"] > 0
    assert rec.hardware.accelerator_count == 2 and rec.software.env.get("OMP_NUM_THREADS") == "1"


def test_hanging_job_times_out_and_leaves_no_process():
    spec = spec_for("fsdp", fsdp_config(batch=16), nproc=2, timeout=6.0, debug={"hang": True})
    t0 = time.perf_counter()
    outcome = LocalTorchrunLauncher().run(spec)
    elapsed = time.perf_counter() - t0
    assert outcome.status == "timeout"
    assert elapsed < 6.0 + 2 * 3.0 + 5.0  # the limit, SIGTERM grace, SIGKILL grace, slack
    rec = record_of(outcome, "queries/s")
    assert rec.failure.kind == "timeout" and "wall-clock limit of 6 s" in rec.failure.message
    time.sleep(0.5)
    assert _leftovers(f"perfzoo-{spec.job_id[:8]}") == []  # torchrun and both ranks are gone


def test_inprocess_batch_oom_timeout_and_crash_do_not_poison_later_jobs():
    ok1 = spec_for("llm", llm_config(), nproc=1)
    oom = spec_for("llm", {**llm_config(), "memory_budget_gib": 0.05}, nproc=1)
    ok2 = spec_for("llm", llm_config(precision="bf16", activation_checkpointing="selective"), nproc=1)
    hang = spec_for("llm", llm_config(n_layers=4), nproc=1, timeout=4.0, debug={"hang": True})
    crash = spec_for("llm", llm_config(fsdp="no_shard"), nproc=1, debug={"crash": "boom from the test"})
    ok3 = spec_for("llm", llm_config(activation_checkpointing="full", fsdp="shard_grad_op"), nproc=1)
    launcher = InProcessBatchLauncher()
    outcomes = list(launcher.run_many([ok1, ok2, oom, hang, crash, ok3]))
    assert [o.status for o in outcomes] == ["ok", "ok", "oom", "timeout", "failed", "ok"], \
        [(o.status, o.failure) for o in outcomes]
    assert [o.spec.job_id for o in outcomes] == [s.job_id for s in (ok1, ok2, oom, hang, crash, ok3)]
    # the first two jobs share one worker; the budgeted job gets its own (its malloc is set as the worker
    # starts); a fresh worker after the oom, the timeout and the crash
    assert len(launcher.worker_starts) == 5
    pids = [o.ranks[0]["pid"] for o in outcomes[:3]]
    assert pids[0] == pids[1] != pids[2]
    assert "boom from the test" in outcomes[4].failure["message"]
    rec = record_of(outcomes[5], "tokens/s")
    assert rec.status == "ok" and rec.metrics.throughput > 0 and rec.metrics.tflops_per_device > 0
    assert rec.annotations["launcher"] == "inprocess" and rec.metrics.mfu is None  # no peak known for CPUs


def test_warm_torchrun_mode_oom_ok_timeout_and_a_two_rank_llm_job():
    specs = [spec_for("fsdp", fsdp_config(batch=32, memory_budget_gib=0.3), nproc=2),
             spec_for("fsdp", fsdp_config(batch=32, strategies=("NO_SHARD", "FULL_SHARD")), nproc=2),
             spec_for("fsdp", fsdp_config(batch=64), nproc=2, timeout=6.0, debug={"hang": True}),
             spec_for("llm", llm_config(n_gpus=2, fsdp="no_shard", precision="bf16"), nproc=2, steps=2)]
    launcher = WarmTorchrunLauncher()
    outcomes = list(launcher.run_many(specs))
    assert [o.status for o in outcomes] == ["oom", "ok", "timeout", "ok"], [(o.status, o.failure) for o in outcomes]
    # the budgeted job's warm worker starts with its malloc set; the timeout killed the second worker
    assert len(launcher.worker_starts) == 3
    ok = record_of(outcomes[1], "queries/s")
    assert ok.annotations["launcher"] == "torchrun-warm" and "rank0_import_s" not in ok.annotations
    assert {r["pid"] for r in outcomes[1].ranks}.isdisjoint({r["pid"] for r in outcomes[0].ranks})  # new ranks
    llm = record_of(outcomes[3], "tokens/s")
    assert llm.metrics.throughput_unit == "tokens/s" and llm.hardware.accelerator_count == 2
    assert llm.metrics.throughput_per_device == pytest.approx(llm.metrics.throughput / 2)


def test_fp8_is_refused_clearly_without_a_capable_gpu():
    cfg = {**llm_config(), "precision": "fp8"}  # outside llm-small: harness-level check
    outcome = next(InProcessBatchLauncher().run_many([spec_for("llm", cfg, nproc=1)]))
    assert outcome.status == "failed"
    assert outcome.failure["kind"] == "unsupported" and "fp8" in outcome.failure["message"]


def test_merge_decides_the_status_from_rank_reports_and_what_the_launcher_saw():
    from datetime import datetime, timezone

    from harness.jobs import merge

    now = datetime.now(timezone.utc)
    spec = spec_for("fsdp", fsdp_config(batch=16, memory_budget_gib=0.36), nproc=2)
    ok = {"rank": 0, "status": "ok", "step_times": [0.1], "items_per_step": 16}
    oom = {"rank": 1, "status": "oom", "error": {"kind": "oom", "message": "can't allocate memory"},
           "memory": {"limit_gib": 0.36}}

    def status(reports, **kw):
        args = dict(exit_code=1, timed_out=False, log_tail="", started_at=now, ended_at=now,
                    wall_time_s=1.0, launcher="test")
        args.update(kw)
        return merge(spec, reports, **args)

    assert status([ok, dict(ok, rank=1)], exit_code=0).status == "ok"
    assert status([ok, oom], timed_out=True).status == "oom"  # a reported oom beats the timeout
    assert status([ok], timed_out=True).status == "timeout"
    assert status([ok]).status == "failed"  # one rank never reported
    died = status([], exit_code=-9, log_tail="terminate called after throwing an instance of 'std::bad_alloc'")
    assert died.status == "oom" and died.failure["kind"] == "oom"  # a death without a report, under a budget
    crash = status([{"rank": 0, "status": "failed", "error": {"kind": "crash", "message": "boom"}}])
    assert crash.status == "failed" and crash.failure["message"] == "boom" and crash.failure["rank"] == 0


def test_torchrun_leaves_nothing_in_the_temporary_directory(tmp_path, monkeypatch):
    """torchrun's elastic agent makes a torchelastic_* folder per job in $TMPDIR: the launchers give each
    job a TMPDIR inside its own folder, removed with it (53 were left behind after one tune)."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    (tmp_path / "jobs").mkdir()
    tempfile.tempdir = None  # re-read $TMPDIR
    try:
        spec = spec_for("fsdp", fsdp_config(batch=16), nproc=1, steps=1)
        assert LocalTorchrunLauncher(workdir=str(tmp_path / "jobs")).run(spec).status == "ok"
        assert WarmTorchrunLauncher(workdir=str(tmp_path / "jobs")).run(spec).status == "ok"
    finally:
        tempfile.tempdir = None
    assert not list(tmp_path.glob("torchelastic_*"))
    assert not list((tmp_path / "jobs").iterdir())
