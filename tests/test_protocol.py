"""The measurement protocol (harness.protocol) with real processes: threads and cores per rank,
the quiet-machine guard, and memory limits relative to a rank's own footprint."""

import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import psutil
import pytest

from harness import protocol
from harness.jobs import JobSpec
from harness.launchers import worker_env
from harness.workloads.fsdp_ads import AdsModel, layer_widths
from perfzoo import spaces
from perfzoo.collect.cli import main as collect
from perfzoo.records.store import RecordStore
from perfzoo.workloads.fsdp_ads import EXPERT_ESTIMATES, expert_ladder, hand_tuned_ladder, tower_layer_params

from test_collect import llm_raw, write_jsonl

SPIN = "import time\nt = time.time()\nwhile time.time() - t < 60: pass\n"


@pytest.fixture
def spinner():
    """Another process keeping one core busy."""
    proc = subprocess.Popen([sys.executable, "-c", SPIN])
    yield proc
    proc.kill()
    proc.wait()


def test_external_load_sees_other_processes_and_not_the_jobs_own(spinner):
    # both probes over one window, while the spinner's own CPU is read beside them: whatever else the
    # machine runs (the other test workers), taking the spinner as "the job" takes out its share
    spin = psutil.Process(spinner.pid)
    before, t0 = sum(spin.cpu_times()[:2]), time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        seen, excluded = pool.map(lambda pids: protocol.external_load(pids, probe_s=1.0), [set(), {spinner.pid}])
    share = (sum(spin.cpu_times()[:2]) - before) / (time.perf_counter() - t0)  # the spinner's busy cores
    assert share > 0.3 and seen > 0.8 * share  # it ran, and the probe saw it
    assert seen - excluded == pytest.approx(share, abs=0.25)  # "the job" is not counted as the machine's load


def test_wait_for_quiet_gives_up_after_the_wait():
    loads = iter([1.0, 0.9, 0.1])
    load, waited = protocol.wait_for_quiet(lambda: next(loads), wait_s=60)
    assert load == 0.1 and 1.5 < waited < 5
    load, waited = protocol.wait_for_quiet(lambda: 1.0, wait_s=0.5)
    assert load == 1.0 and waited < 3


@pytest.mark.slow
def test_a_busy_machine_flags_the_job_or_fails_it_under_require_quiet(tmp_path, spinner):
    configs = write_jsonl(tmp_path / "c.jsonl", [llm_raw()])
    assert collect(["--space", "llm-small", "--configs", configs, "--out", str(tmp_path / "flagged"), "--quiet-wait", "1",
                    "--no-progress"]) == 0
    (flagged,) = RecordStore(tmp_path / "flagged").records()
    assert flagged.status == "ok" and flagged.metrics.noisy is True
    assert flagged.annotations["external_load_cores"] > protocol.QUIET_CORES
    assert flagged.annotations["threads"] == 1 and flagged.annotations["affinity"] is not None
    assert collect(["--space", "llm-small", "--configs", configs, "--out", str(tmp_path / "strict"), "--quiet-wait", "1",
                    "--require-quiet", "--no-progress"]) == 0
    (strict,) = RecordStore(tmp_path / "strict").records()
    assert strict.status == "failed" and strict.failure.kind == "noisy_machine"
    assert "noisy machine" in strict.failure.message


def _config(pattern: str, batch: int, **memory) -> dict:
    names = {"F": "FULL_SHARD", "S": "SHARD_GRAD_OP", "N": "NO_SHARD"}
    return {**{f"shard_{i:02d}": names[p] for i, p in enumerate(pattern)}, "local_batch": batch, **memory}


@pytest.mark.slow
def test_headroom_over_the_footprint_gives_the_same_status_on_every_repeat(tmp_path):
    # NO_SHARD everywhere needs more than the smallest headroom on every CPU measured so far (over 0.070 GiB
    # on the Intel Xeon of datasets/fsdp-cpu, 0.055-0.071 on an AMD EPYC); FULL_SHARD at batch 8 fits at 0.061
    configs = write_jsonl(tmp_path / "c.jsonl", [_config("N" * 11, 128, memory_headroom_gib=0.055),
                                                    _config("F" * 11, 8, memory_headroom_gib=0.061)])
    assert collect(["--space", "fsdp-ads-v2", "--configs", configs, "--repeat", "2", "--warm",
                    "--steps", "2", "--warmup", "1", "--out", str(tmp_path / "s"), "--no-progress"]) == 0
    records = RecordStore(tmp_path / "s").records()
    status = {(r.config["local_batch"], r.annotations["repeat"]): r.status for r in records}
    assert status == {(128, 0): "oom", (128, 1): "oom", (8, 0): "ok", (8, 1): "ok"}
    ok = [r for r in records if r.status == "ok"]
    assert all(r.annotations["memory_headroom_gib"] == 0.061 and r.annotations["memory_footprint_gib"] > 0.1
               for r in ok)
    oom = [r for r in records if r.status == "oom"]
    assert all(r.failure.kind == "oom" for r in oom)


@pytest.mark.slow
def test_a_live_tensor_budget_fails_the_configs_that_need_more_on_every_repeat(tmp_path, capsys):
    # FULL_SHARD everywhere holds 30.10 MiB of tensors at batch 8 and 32.35 at batch 128 (fsdp-ads-v3's docstring)
    configs = write_jsonl(tmp_path / "c.jsonl", [_config("F" * 11, b, tensor_budget_mib=32) for b in (128, 8)])
    assert collect(["--space", "fsdp-ads-v3", "--configs", configs, "--repeat", "2", "--warm",
                    "--steps", "2", "--out", str(tmp_path / "s"), "--no-progress"]) == 0
    records = RecordStore(tmp_path / "s").records()
    status = {(r.config["local_batch"], r.annotations["repeat"]): r.status for r in records}
    assert status == {(128, 0): "oom", (128, 1): "oom", (8, 0): "ok", (8, 1): "ok"}
    assert {r.annotations["tensor_peak_mib"] for r in records if r.status == "ok"} == {30.099}
    assert all("over the 32.00 MiB budget (tensor_budget_mib)" in r.failure.message for r in records if r.status == "oom")
    # the summary reports the spread over the repeats
    summary = capsys.readouterr().out
    assert re.search(r"repeat CV \(1 configs ok every run\)\s+median \d+\.\d%", summary), summary
    assert re.search(r"one status on every run\s+2 of 2 configs", summary), summary


def test_v2_tower_layers_differ_by_more_than_16x_and_the_arithmetic_matches_torch():
    cfg = spaces.get("fsdp-ads-v2").sample(1)[0]
    model = AdsModel(layer_widths(cfg), cfg["width"], cfg["n_tables"], cfg["rows_per_table"], cfg["emb_dim"])
    counts = [sum(p.numel() for p in layer.parameters()) for layer in model.layers]
    assert counts == tower_layer_params(cfg)
    assert max(counts) / min(counts) >= 16
    v1 = spaces.get("fsdp-ads").sample(1)[0]
    v1_model = AdsModel(layer_widths(v1), v1["width"], v1["n_tables"], v1["rows_per_table"], v1["emb_dim"])
    assert [sum(p.numel() for p in layer.parameters()) for layer in v1_model.layers] == tower_layer_params(v1)


def test_the_baselines_use_the_most_memory_and_the_expert_keeps_small_layers_unsharded():
    space = spaces.get("fsdp-ads-v2")
    default, expert = hand_tuned_ladder(space), expert_ladder(space)
    assert [c["local_batch"] for c in default] == [128, 64, 32, 16, 8]
    assert all(c["memory_headroom_gib"] == 0.071 for c in default + expert)
    assert all(c[f"shard_{i:02d}"] == "FULL_SHARD" for c in default for i in range(11))
    top = expert[0]
    params = tower_layer_params(top)
    unsharded = [params[i] for i in range(11) if top[f"shard_{i:02d}"] == "NO_SHARD"]
    sharded = [params[i] for i in range(11) if top[f"shard_{i:02d}"] == "FULL_SHARD"]
    assert unsharded and sharded and max(unsharded) <= min(sharded)  # smallest layers first
    with pytest.raises(ValueError, match="no expert heuristic"):
        expert_ladder(spaces.get("fsdp-ads"))


def test_the_v3_expert_keeps_its_memory_estimate_within_nine_tenths_of_the_largest_budget():
    space = spaces.get("fsdp-ads-v3")
    expert = expert_ladder(space)
    assert [c["local_batch"] for c in expert] == [128, 64, 32, 16, 8]
    assert all(c["tensor_budget_mib"] == 48 for c in expert + hand_tuned_ladder(space))
    top, params = expert[0], tower_layer_params(expert[0])
    unsharded = [i for i in range(11) if top[f"shard_{i:02d}"] == "NO_SHARD"]
    est = EXPERT_ESTIMATES["tensor_budget_mib"]
    estimate = est.base + est.per_example * 128 + 8.0 * sum(params[i] for i in unsharded) / 2**20
    assert estimate <= 0.9 * 48 < estimate + 8.0 * min(p for i, p in enumerate(params) if i not in unsharded) / 2**20
    assert len(unsharded) == 9


def test_rank_threads_share_the_cores():
    assert protocol.rank_threads(2, 2) == 1 and protocol.rank_threads(16, 3) == 5 and protocol.rank_threads(1, 4) == 1


MALLOC_PROBE = """
import ctypes
from harness import memory
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
for _ in range(3):  # allocate and free 1 MiB; the last round is the one measured
    p = libc.malloc(1 << 20)
    held = memory.data_gib()
    libc.free(p)
    returned = held - memory.data_gib()
print(round(returned * 2**30 / 2**20, 2))
"""


@pytest.mark.parametrize("headroom, returned_mib", [(0.1, 1.0), (None, 0.0)])
def test_malloc_returns_freed_buffers_to_the_system_only_under_an_rlimit_budget(headroom, returned_mib):
    # a rank under RLIMIT_DATA starts with every buffer of 64 KiB or more its own mapping, so the data segment
    # follows the live tensors; without a budget glibc keeps its defaults (it raises the mmap threshold after
    # the first free and keeps later buffers in the heap: no page fault per allocation, the cost of the budget)
    spec = JobSpec(workload="fsdp", config={"memory_headroom_gib": headroom}, job_id="probe")
    env = worker_env(spec)
    assert spec.rlimit_budget == (headroom is not None)
    out = subprocess.run([sys.executable, "-c", MALLOC_PROBE], capture_output=True, text=True, check=True, env=env)
    assert float(out.stdout) == pytest.approx(returned_mib, abs=0.02)
