"""The environment as data: what decides a machine's speed is captured (fake /proc/cpuinfo and
nvidia-smi text), recorded, told apart by datasets and splits, and named where a re-measurement
meets an earlier record (collect's summary, the calibration join) instead of a drift."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import environment
from perfzoo import spaces
from perfzoo.cli import main as perfzoo_main
from perfzoo.collect.tally import Tally
from perfzoo.datasets import load_dataset
from perfzoo.datasets.dataset import Dataset
from perfzoo.evaluation.splits import group_splits
from perfzoo.hardware import capability
from perfzoo.records import JobRecord, job_id_for
from perfzoo.records.store import RecordStore
from perfzoo.zoo import calibrate

REPO = Path(__file__).resolve().parent.parent

EPYC_AVX2 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
stepping\t: 1
flags\t\t: fpu vme de pse tsc msr sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 bmi2

processor\t: 1
vendor_id\t: AuthenticAMD
flags\t\t: fpu avx512f
"""
SAPPHIRE_RAPIDS = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz
stepping\t: 8
flags\t\t: fpu sse2 avx avx2 fma avx512f avx512dq avx512_vnni avx512_bf16 avx512_fp16 amx_bf16 amx_tile amx_int8
"""
GENOA = """vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
stepping\t: 1
flags\t\t: avx2 fma avx512f avx512_bf16 avx512_vnni
"""
GRAVITON3 = """processor\t: 0
BogoMIPS\t: 2100.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics sve bf16 i8mm
CPU implementer\t: 0x41
CPU part\t: 0xd40
"""


@pytest.mark.parametrize("text, facts, label", [
    (EPYC_AVX2, {"cpu_vendor": "AuthenticAMD", "cpu_family": 25, "cpu_model_number": 1, "cpu_stepping": 1,
                 "cpu_flags": "avx2 fma"}, "AVX2"),  # the second processor's avx512f is not the first's
    (SAPPHIRE_RAPIDS, {"cpu_vendor": "GenuineIntel", "cpu_family": 6, "cpu_model_number": 143, "cpu_stepping": 8,
                       "cpu_flags": "amx_bf16 amx_int8 amx_tile avx2 avx512_bf16 avx512_fp16 avx512_vnni avx512f fma"},
     "AMX"),
    (GENOA, {"cpu_vendor": "AuthenticAMD", "cpu_family": 25, "cpu_model_number": 17, "cpu_stepping": 1,
             "cpu_flags": "avx2 avx512_bf16 avx512_vnni avx512f fma"}, "AVX-512 BF16"),
    (GRAVITON3, {"cpu_vendor": None, "cpu_family": None, "cpu_model_number": None, "cpu_stepping": None,
                 "cpu_flags": ""}, "SVE256"),  # no x86 class: torch's dispatch level names it
])
def test_cpuinfo_text_gives_the_facts_and_the_capability(text, facts, label):
    found = environment.cpu_facts(text)
    assert found == facts
    assert capability.cpu_capability(found["cpu_flags"].split(), "SVE256") == label


def test_this_cpu_reads_the_file_and_leaves_what_it_cannot_read_unknown(tmp_path, monkeypatch):
    import torch

    fake = tmp_path / "cpuinfo"
    fake.write_text(GENOA)
    monkeypatch.setattr(environment, "CPUINFO", fake)
    environment.this_cpu.cache_clear()
    try:
        cpu = environment.this_cpu()
        assert cpu["cpu_capability"] == "AVX-512 BF16" and cpu["cpu_model_number"] == 17
        assert cpu["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
        environment.this_cpu.cache_clear()
        monkeypatch.setattr(environment, "CPUINFO", tmp_path / "absent")  # not Linux
        cpu = environment.this_cpu()
        assert cpu["cpu_flags"] is None and cpu["cpu_family"] is None
        assert cpu["cpu_capability"] == torch.backends.cpu.get_cpu_capability()  # torch's level, not a guess
    finally:
        environment.this_cpu.cache_clear()


def test_the_matmul_probe_measures_both_dtypes_on_one_thread():
    import torch

    threads = torch.get_num_threads()
    rates = environment.matmul_rates()
    assert rates["matmul_fp32_gflops"] > 0 and rates["matmul_bf16_gflops"] > 0
    assert torch.get_num_threads() == threads  # the probe's one thread is given back


@pytest.mark.parametrize("text, expected", [
    ("1980, 2619, 700.00\n", (1980.0, 2619.0, 700.0)),
    ("1410, 1593, 400.00\n1410, 1593, 300.00\n", (1410.0, 1593.0, 400.0)),  # the first GPU's
    ("[N/A], 2619, [Not Supported]", (None, 2619.0, None)),
    ("", (None, None, None)),
])
def test_nvidia_smi_limits_are_read_and_unreported_ones_stay_unknown(text, expected):
    assert tuple(environment.gpu_limits(text).values()) == expected


def test_a_cuda_capture_carries_the_gpu_limits(monkeypatch):
    facts = {"name": "NVIDIA H100 80GB HBM3", "short": "H100-80GB", "memory_gib": 79.1, "count": 8,
             "capability": (9, 0), "driver": "550.54", "interconnect": "nvlink",
             "limits": environment.gpu_limits("1980, 2619, 500.00")}
    monkeypatch.setattr(environment, "_gpu_facts", lambda: facts)
    hw = environment.capture_hardware("cuda", 8)
    assert hw["accelerator"] == "H100-80GB" and hw["accelerator_power_limit_w"] == 500.0
    assert hw["accelerator_clock_max_mhz"] == 1980.0 and "matmul_bf16_gflops" not in hw  # no CPU probe
    JobRecord.model_validate(record(1.0, **hw).to_dict())


def test_cpu_job_ids_tell_capabilities_apart_and_old_ones_keep_theirs():
    base = {"accelerator": "cpu", "accelerator_count": 1, "nodes": 1, "cpu": "AMD EPYC"}
    old = environment.hardware_key(base)
    assert old == base  # a machine whose capability is unknown keys its jobs as before
    avx2 = environment.hardware_key({**base, "cpu_capability": "AVX2"})
    bf16 = environment.hardware_key({**base, "cpu_capability": "AVX-512 BF16"})
    assert len({job_id_for("llm", {"a": 1}, k) for k in (old, avx2, bf16)}) == 3


# comparing machines ---------------------------------------------------------------------

CPU = {"accelerator": "cpu"}


@pytest.mark.parametrize("measured, recorded, expected", [
    ({**CPU, "cpu_capability": "AVX2"}, {**CPU, "cpu_capability": "AVX-512 BF16"},
     "measured on AVX2 (bf16 matmul emulated), the record on AVX-512 BF16 (native bf16): not comparable"),
    ({**CPU, "cpu_capability": "AVX2", "matmul_bf16_gflops": 1.1, "matmul_fp32_gflops": 73.0}, {**CPU},
     "the record's CPU capability is unknown (not recorded): the machines may differ "
     "(this one: AVX2 (bf16 matmul 1.1 GFLOP/s against 73 in fp32))"),
    ({**CPU}, {**CPU, "cpu_capability": "AMX"},
     "this machine's CPU capability is unknown: the machines may differ (the record: AMX (bf16 matmul on AMX tiles))"),
    ({**CPU}, {**CPU, "cpu_capability": float("nan")}, "the CPU capability of both machines is unknown: they may differ"),
    ({**CPU, "cpu_capability": "AVX2", "cpu_stepping": 1}, {**CPU, "cpu_capability": "AVX2", "cpu_stepping": 2}, None),
    ({**CPU, "cpu": "AMD EPYC", "cpu_capability": "AVX2", "cpu_family": 25},
     {**CPU, "cpu": "AMD EPYC", "cpu_capability": "AVX2", "cpu_family": 23},
     "measured on AMD EPYC, AVX2 (bf16 matmul emulated), the record on AMD EPYC, AVX2 (bf16 matmul emulated): "
     "other CPUs, not comparable"),  # one capability, another generation
    ({**CPU, "cpu": "AMD EPYC", "cpu_capability": "AVX2"}, {**CPU, "cpu": "AMD EPYC"},
     "the record's CPU capability is unknown (not recorded): the machines may differ "
     "(this one: AVX2 (bf16 matmul emulated))"),  # llm-cpu's records: the same name, not known to be alike
    ({"accelerator": "H100-80GB", "accelerator_power_limit_w": 700.0},
     {"accelerator": "H100-80GB", "accelerator_power_limit_w": 690.0}, None),  # within 3%: one setting
    ({"accelerator": "H100-80GB", "accelerator_clock_max_mhz": 1980.0},
     {"accelerator": "H100-80GB", "accelerator_clock_max_mhz": 1755.0},
     "measured on H100-80GB (1980 MHz max SM clock), the record on H100-80GB (1755 MHz max SM clock): not comparable"),
    ({"accelerator": "H100-80GB", "accelerator_power_limit_w": 700.0}, {"accelerator": "H100-80GB"},
     "the record's GPU clocks and power limit are unknown (not recorded): the machines may differ "
     "(this one: H100-80GB (700 W power limit))"),
    ({"accelerator": "H100-80GB"}, {**CPU, "cpu_capability": "AMX"},
     "measured on H100-80GB (clocks and power limit unknown), the record on AMX (bf16 matmul on AMX tiles): not comparable"),
])
def test_difference_names_what_differs_and_what_is_unknown(measured, recorded, expected):
    assert capability.difference(measured, recorded) == expected


# datasets and splits ----------------------------------------------------------------------

def record(tput: float, *, config=None, repeat=0, workload="llm", space=None, **hardware) -> JobRecord:
    hw = {"accelerator": "cpu", "accelerator_count": 1, "cpu": "AMD EPYC", **hardware}
    cfg = config or {"seq_len": 128, "n_layers": 2, "precision": "bf16"}
    return JobRecord(job_id=job_id_for(workload, cfg, environment.hardware_key(hw), repeat), source="measured",
                     provenance="test", started_at="2026-11-28T10:00:00Z", status="ok", workload=workload,
                     config=cfg, hardware=hw, annotations={"space": space} if space else {},
                     metrics={"throughput": tput, "throughput_unit": "tokens/s"})


def mixed_records(n: int = 6) -> list[JobRecord]:
    """``n`` configs measured long ago (capability unknown) and again on an AVX2 machine at a tenth."""
    configs = [{"seq_len": 128, "n_layers": k, "precision": "bf16"} for k in range(1, n + 1)]
    return ([record(5000.0 / c["n_layers"], config=c) for c in configs]
            + [record(500.0 / c["n_layers"], config=c, cpu_capability="AVX2", cpu_flags="avx2 fma") for c in configs])


def test_a_dataset_of_two_capabilities_groups_splits_and_shows_them(tmp_path, capsys):
    ds = Dataset.from_records("mixed", mixed_records(), group_columns=["config.precision"])
    col = capability.CPU_COLUMN
    assert col in ds.group_columns and col in ds.feature_columns and col in ds.comparable_columns
    assert ds.machines() == {"AMD EPYC: AVX2 (bf16 matmul emulated)": 6, "AMD EPYC: unknown CPU capability": 6}
    held_out = {sp.fold: len(sp.test) for sp in group_splits(ds, col, min_test=5, min_train=5)}
    assert held_out == {"AVX2": 6, "(missing)": 6}
    assert len(set(ds.comparable_groups())) == 12  # a config on two machines: two groups a searcher does not mix

    one_kind = Dataset.from_records("avx2", mixed_records()[6:])
    assert col not in one_kind.group_columns and col not in one_kind.feature_columns  # constant: nothing to tell apart

    store = RecordStore(tmp_path / "mixed")
    for rec in mixed_records():
        store.append(rec)
    assert perfzoo_main(["datasets", "show", str(tmp_path / "mixed")]) == 0
    out = capsys.readouterr().out
    assert "machines    AMD EPYC: AVX2 (bf16 matmul emulated): 6 rows; AMD EPYC: unknown CPU capability: 6 rows" in out
    assert f"{col} (2 values)" in out  # unknown is a value of its own


def test_bundled_records_made_before_the_capture_are_unknown_and_keep_their_hash():
    for name in ("llm-cpu", "fsdp-cpu"):
        ds = load_dataset(name)
        assert ds.machines() == {"AMD EPYC: unknown CPU capability": len(ds)}
        assert capability.CPU_COLUMN not in ds.frame.columns  # nothing invented, the frame as before
    assert load_dataset("llm-cpu").content_hash() == "6519426d393bb2f3"  # leaderboard/best.json's


# where a re-measurement meets its record ----------------------------------------------------

def test_collects_summary_names_the_capability_difference_instead_of_a_drift():
    earlier, again = mixed_records(3)[:3], mixed_records(3)[3:]
    tally = Tally(earlier=earlier)
    for rec in again:
        tally.add(rec)
    (label, text), = tally.remeasured_rows()
    assert label == "vs earlier records of these configs"
    assert text.startswith("0.10x (3 configs, 0.10-0.10): not a drift: the earlier records' CPU capability is "
                           "unknown (not recorded): the machines may differ (this one: AVX2")

    known = [r.model_copy(update={"hardware": r.hardware.model_copy(update={"cpu_capability": "AVX-512 BF16"})})
             for r in earlier]
    tally = Tally(earlier=known)
    for rec in again:
        tally.add(rec)
    assert "not a drift: measured on AVX2 (bf16 matmul emulated), the earlier records on AVX-512 BF16 (native bf16): " \
           "not comparable" in tally.table(1.0, 0, "store")

    tally = Tally(earlier=again)
    tally.add(record(450.0, config=again[0].config, cpu_capability="AVX2", repeat=1))
    (_, text), = tally.remeasured_rows()
    assert text.startswith("0.90x (1 configs, 0.90-0.90): a drift on one kind of machine, AVX2")


def test_the_calibration_join_names_runs_that_re_measure_training_configs_elsewhere():
    train = Dataset.from_records("train", mixed_records()[:6])
    runs = Dataset.from_records("runs", mixed_records()[6:9])
    joined = calibrate.join(train, runs)
    assert joined.machines == ("3 of your jobs re-measure training configurations: the training records' CPU "
                               "capability is unknown (not recorded): the machines may differ (this one: AVX2 "
                               "(bf16 matmul emulated))",)
    assert joined.describe("runs.jsonl").endswith(joined.machines[0])
    same = calibrate.join(Dataset.from_records("train", mixed_records()[6:]), runs)
    assert same.machines == ()  # one kind of machine: nothing to say


def test_compare_reads_another_store_and_a_bad_one_is_one_line(tmp_path, capsys):
    from perfzoo.collect import CollectConfig
    from perfzoo.collect.cli import main as collect
    from perfzoo.collect.sweep import earlier_records

    recs = mixed_records(2)
    ours = recs[:2]
    other = RecordStore(tmp_path / "other")
    for rec in (recs[0], recs[2]):  # the same record in both counts once
        other.append(rec)
    found = earlier_records(CollectConfig(n=1, compare=str(tmp_path / "other")), ours)
    assert [r.record_id for r in found] == [recs[0].record_id, recs[1].record_id, recs[2].record_id]
    code = collect(["--workload", "llm", "--n", "1", "--compare", str(tmp_path / "nowhere"), "--out", str(tmp_path / "s")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--compare" in err[0] and "give a record store" in err[0]
    assert not (tmp_path / "s" / "records.jsonl").exists()  # nothing ran


def test_a_loop_whose_jobs_ran_on_two_kinds_of_machine_says_its_arms_do_not_compare():
    from perfzoo.loop.closed import machines_note
    from perfzoo.loop.report import LoopSummary

    arms = {"loop": {"jobs": 6, "best": 500.0, "config": {}}, "random": {"jobs": 6, "best": 5000.0, "config": {}}}
    summary = LoopSummary(tag="t", space="llm-small", unit="tokens/s", phases=[], arms=arms,
                          notes=machines_note(mixed_records(3)))
    assert summary.table().endswith("note: its jobs ran on machines of 2 kinds (AMD EPYC: unknown CPU capability: 3 "
                                    "jobs; AMD EPYC: AVX2 (bf16 matmul emulated): 3 jobs): arms measured on different "
                                    "ones do not compare")
    assert machines_note(mixed_records(3)[3:]) == []


@pytest.mark.slow
def test_a_real_collect_records_this_cpu_and_compares_with_an_earlier_record_of_another_capability(tmp_path):
    here = environment.this_cpu()["cpu_capability"]
    other = "AMX" if here != "AMX" else "AVX2"
    raw = dict(n_layers=2, hidden_dim=128, n_heads=4, n_kv_heads=2, ffn_dim=256, vocab_size=2048, seq_len=64,
               micro_batch_size=1, precision="bf16", activation_checkpointing="none", compile=False,
               fsdp="full_shard", n_gpus=1)
    config = spaces.get("llm-small").validate(raw)
    RecordStore(tmp_path / "before").append(record(1e6, config=config, space="llm-small", cpu_capability=other))
    (tmp_path / "c.jsonl").write_text(json.dumps(raw) + "\n")
    proc = subprocess.run([sys.executable, "-m", "perfzoo.collect", "--workload", "llm", "--configs",
                           str(tmp_path / "c.jsonl"), "--steps", "2", "--warmup", "1", "--quiet-wait", "0",
                           "--compare", str(tmp_path / "before" / "records.jsonl"), "--out", str(tmp_path / "s"),
                           "--no-progress"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    new = RecordStore(tmp_path / "s").records()
    assert len(new) == 1 and new[0].status == "ok" and new[0].hardware.cpu_capability == here
    assert new[0].hardware.matmul_bf16_gflops > 0 and new[0].hardware.cpu_flags is not None
    assert f"not a drift: measured on {here}" in proc.stdout and f"the earlier records on {other}" in proc.stdout
