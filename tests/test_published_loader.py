"""The published-table loader on real-world, untidy files: null spellings, derived targets,
unlabelled and skipped rows, and a load report that accounts for every row. Rows written here
and the synthetic tables of tests/data/external; the real files where a test asks for ``external``."""

import shutil
from collections import Counter

import numpy as np
import pytest

from perfzoo import analytic
from perfzoo.cli import main as perfzoo_main
from perfzoo.datasets import EXTERNAL, load_dataset
from perfzoo.datasets.sources import read_published
from perfzoo.datasets.sources._csv import NULL_SPELLINGS

from test_datasets import published_row

PUBLISHED_FILES = [spec.files[0] for name, spec in EXTERNAL.items() if name.startswith("published-") and spec.files]


@pytest.fixture(autouse=True)
def architectures(tmp_path, synthetic):
    """An architecture table beside the test files, as in the external directory."""
    shutil.copy(synthetic / "model_architectures.csv", tmp_path / "model_architectures.csv")


def load_rows(tmp_path, write_published, rows, name="lab.csv"):
    return read_published(write_published(tmp_path / name, rows))


@pytest.mark.parametrize("spelling", sorted(NULL_SPELLINGS | {"none", "N/A", "NA", "N.A."}))
def test_every_null_spelling_is_an_unknown_value(tmp_path, write_published, spelling):
    load = load_rows(tmp_path, write_published, [published_row(vp=spelling, ep=spelling, tp=spelling)])
    (record,), (report,) = load
    assert record.config["vp"] is None and record.config["ep"] is None and record.config["tp"] is None
    assert report.rows == report.labelled == 1
    assert report.null_cells == ({} if not spelling.strip() else {"vp": 1, "ep": 1, "tp": 1})


def test_a_categorical_none_is_a_value_and_n_a_is_unknown(tmp_path, write_published):
    load = load_rows(tmp_path, write_published, [
        published_row(activation_checkpointing="none"), published_row(activation_checkpointing="n/a", seq_len="4096")])
    assert [r.config["activation_checkpointing"] for r in load.records] == ["none", None]


def test_tokens_per_second_derived_from_tflops_with_the_formula_recorded(tmp_path, write_published):
    (record,), (report,) = load_rows(tmp_path, write_published, [
        published_row(tokens_per_sec_per_gpu="", tflops_per_gpu="400")])
    flops = analytic.flops_per_token(record.config)  # Llama 3 8B filled from model_architectures.csv
    assert record.metrics.throughput_per_device == pytest.approx(400e12 / flops)
    assert record.metrics.throughput == pytest.approx(64 * 400e12 / flops)
    assert record.status == "ok" and record.annotations["label"] == "tokens/s from TFLOP/s"
    assert "tflops_per_gpu*1e12/flops_per_token" in record.annotations["perfzoo_derived"]
    assert report.derived["tokens/s from TFLOP/s"] == 1 and report.labelled == 1


def test_tokens_per_second_derived_from_mfu_against_the_bf16_peak(tmp_path, write_published):
    (record,), _ = load_rows(tmp_path, write_published, [
        published_row(tokens_per_sec_per_gpu="n/a", mfu="0.4", gpu_type="H100-SXM-80GB")])
    flops = analytic.flops_per_token(record.config)
    assert record.metrics.throughput_per_device == pytest.approx(0.4 * 989e12 / flops)
    assert record.annotations["label"] == "tokens/s from MFU"
    assert "989 TFLOP/s" in record.annotations["perfzoo_derived"]


def test_the_file_flop_convention_is_read_off_rows_that_give_both(tmp_path, write_published):
    cfg = load_rows(tmp_path, write_published, [published_row()], "probe.csv").records[0].config
    model = analytic.flops_per_token(cfg)
    hardware = analytic.flops_per_token({**cfg, "activation_checkpointing": "full"}, recompute=True)
    # a lab whose TFLOP/s count recompute: 4,000 tokens/s at the hardware-FLOPs rate
    tflops = 4000 * hardware / 1e12
    load = load_rows(tmp_path, write_published, [
        published_row(tflops_per_gpu=f"{tflops:.3f}"),
        published_row(tokens_per_sec_per_gpu="", tflops_per_gpu=f"{tflops:.3f}", seq_len="8192", global_batch_size="128"),
    ])
    report = load.reports[0]
    assert report.flop_convention.startswith("hardware FLOPs") and model < hardware
    assert load.records[1].metrics.throughput_per_device == pytest.approx(4000, rel=1e-3)


def test_a_row_whose_flops_count_attention_over_short_samples_is_read_as_packed(tmp_path, write_published):
    """A row whose TFLOP/s and tokens/s imply fewer FLOPs per token than its sequence's attention
    needs, down to what short samples need, packed short samples (NeMo's SFT and LoRA rows); the
    file's other rows of the model count the whole sequence, so the count is the file's own."""
    cfg = load_rows(tmp_path, write_published, [published_row()], "probe.csv").records[0].config
    whole = analytic.flops_per_token(cfg)
    packed = analytic.flops_per_token({**cfg, "packed_sample_len": 512})
    assert packed < 0.9 * whole  # Llama 3 8B at 8,192 tokens: attention is over a tenth of its FLOPs
    # two pre-training rows count the whole sequence (and so set the file's convention)
    rows = [published_row(tflops_per_gpu=f"{4000 * whole / 1e12:.3f}")] * 2 + [
        published_row(task="SFT", tokens_per_sec_per_gpu="5000", tflops_per_gpu=f"{5000 * packed / 1e12:.3f}")]
    load = load_rows(tmp_path, write_published, rows)
    *pre, sft = load.records
    assert [r.config.get("packed_sample_len") for r in pre] == [None, None]
    assert sft.config["packed_sample_len"] == pytest.approx(512, abs=2)
    assert "packed_sample_len=" in sft.annotations["perfzoo_derived"]
    assert load.reports[0].derived["packed_sample_len from the published FLOPs per token"] == 1
    # the same configuration published twice with figures rounded apart: one sample length for both
    again = published_row(task="SFT", tokens_per_sec_per_gpu="5000", tflops_per_gpu=f"{5000 * packed * 1.002 / 1e12:.3f}")
    copies = load_rows(tmp_path, write_published, rows[:2] * 2 + rows[2:] + [again], "copies.csv").records[4:]
    assert copies[0].config == copies[1].config  # one configuration, as the splits must see it
    # the same SFT row alone: no row shows that the file counts this model's FLOPs as perfzoo does
    alone = load_rows(tmp_path, write_published, rows[2:], "alone.csv").records[0]
    assert alone.config.get("packed_sample_len") is None
    # a count half the attention short (a causal count) is no packing
    causal = analytic.flops_per_token(cfg, causal=True)
    half = load_rows(tmp_path, write_published, rows[:2] + [published_row(tflops_per_gpu=f"{4000 * causal / 1e12:.3f}")],
                     "causal.csv").records[2]
    assert half.config.get("packed_sample_len") is None


def test_a_row_without_a_usable_target_is_an_unlabelled_config(tmp_path, write_published):
    path = write_published(tmp_path / "lab.csv", [
        published_row(),
        published_row(tokens_per_sec_per_gpu="", seq_len="4096"),  # nothing to derive from
        published_row(tokens_per_sec_per_gpu="", tflops_per_gpu="300", model_name="Mystery 9B",
                      seq_len="2048"),  # no architecture: FLOPs per token unknown
    ])
    ds = load_dataset(str(path))
    assert ds.frame["status"].tolist() == ["ok", "ok", "ok"] and not ds.failed.any()
    assert ds.unlabelled.tolist() == [False, True, True]
    assert len(ds.labelled()) == 1 and np.isfinite(ds.labelled().y).all()
    labels = ds.frame["annotations.label"].tolist()
    assert labels[1] == "unlabelled: no tokens/s, TFLOP/s or MFU"
    assert "architecture unknown" in labels[2]
    assert ds.summary()["unlabelled"] == 2
    assert ds.load_reports[0].unlabelled == 2


def test_a_measured_row_of_a_model_it_cannot_describe_is_kept_but_not_scored(tmp_path, write_published):
    # tokens/s published, but no shape, no n_params and no size in the name: no predictor can
    # price the row, so it is no training or test example; its figure stays in the record
    path = write_published(tmp_path / "lab.csv", [
        published_row(),
        published_row(model_name="dense model (unspecified)", tokens_per_sec_per_gpu="8307.5"),
        published_row(model_name="Mystery 9B", tokens_per_sec_per_gpu="5000"),  # its size is in its name
        # a mixture of experts by its name: the size it states is the total, not what a token computes
        published_row(model_name="Mystery MoE 132B", tokens_per_sec_per_gpu="7000"),
        # one whose name states its active size has no expert count: refused (test_loader_refusals)
        published_row(model_name="Mystery-80B-A3B", tokens_per_sec_per_gpu="7000"),
    ])
    ds = load_dataset(str(path))
    assert ds.unlabelled.tolist() == [False, True, False, True] and not ds.failed.any()
    assert ds.frame["config.n_params"].iloc[3:].isna().all()
    assert [line for line, _ in ds.load_reports[0].skipped] == [6]
    row = ds.frame.iloc[1]
    assert row["annotations.label"].startswith("unlabelled: model unknown (no shape, no n_params)")
    assert row["annotations.published_tokens_per_gpu"] == 8307.5 and np.isnan(row["metrics.throughput_per_device"])
    assert ds.frame.iloc[2]["config.n_params"] == 9e9 and ds.y[2] == 5000
    assert ds.load_reports[0].unlabelled == 2 and ds.load_reports[0].labelled == 2


def test_rows_that_cannot_be_jobs_are_skipped_and_listed(tmp_path, write_published):
    (record,), (report,) = load_rows(tmp_path, write_published, [
        published_row(n_gpus="", tp="2", pp="4", cp="", dp="8"),  # n_gpus = 2*4*8
        published_row(n_gpus="n/a", tp="", dp="8"),
        published_row(gpu_type="-"),
    ])
    assert record.config["n_gpus"] == 64 and "n_gpus=tp*pp*cp*dp" in record.annotations["perfzoo_derived"]
    assert report.rows == 3 and report.labelled == 1
    assert [line for line, _ in report.skipped] == [3, 4]
    assert "no GPU count" in report.skipped[0][1] and "no accelerator" in report.skipped[1][1]
    # a file of nothing but such rows reads as no records, each row listed
    records, (report,) = load_rows(tmp_path, write_published, [published_row(gpu_type="-")], "none.csv")
    assert records == [] and report.rows == 1 and len(report.skipped) == 1


def test_an_unreadable_optional_cell_is_kept_as_text_and_reported(tmp_path, write_published):
    (record,), (report,) = load_rows(tmp_path, write_published, [published_row(vp="interleaved")])
    assert record.config["vp"] is None and record.annotations["vp_raw"] == "interleaved"
    assert report.unreadable_cells == {"vp": 1}


def test_the_model_catalog_fills_what_the_architecture_table_lacks(tmp_path, write_published):
    # "Kimi K2" is in perfzoo's catalog but not in the test architecture table; Llama 3 8B is in
    # both: the table's fields first, then the catalog's keys the table has no column for
    (kimi, llama), (report,) = load_rows(tmp_path, write_published, [
        published_row(model_name="Kimi_K2 (tokendrop)", n_gpus="256", dp="256"), published_row()])
    assert kimi.config["n_layers"] == 61 and kimi.config["kv_lora_rank"] == 512 and kimi.config["n_experts"] == 384
    assert kimi.config["moe_token_drop"] is True and kimi.annotations["catalog_model"] == "kimi-k2"
    assert kimi.annotations["arch_filled"] is None and "moe_ffn_dim" in kimi.annotations["arch_catalog"]
    assert llama.annotations["arch_filled"] and llama.config["n_layers"] == 32
    assert report.derived["architecture from perfzoo's model catalog"] == 2
    assert report.derived["architecture from model_architectures.csv"] == 1
    # a variant that says MTP is off sets it; one in parentheses that names no variant is left alone
    (no_mtp,), _ = load_rows(tmp_path, write_published, [published_row(model_name="DeepSeekV3 (w/o MTP)")], "b.csv")
    assert no_mtp.config["mtp_layers"] == 0 and no_mtp.config["q_lora_rank"] == 1536
    (odd,), _ = load_rows(tmp_path, write_published, [published_row(model_name="Mystery (9B)")], "c.csv")
    assert odd.annotations["catalog_model"] is None


def test_a_local_batch_cell_is_not_a_micro_batch(tmp_path, write_published):
    (record,), (report,) = load_rows(tmp_path, write_published, [published_row(micro_batch_size="32 (local batch)")])
    assert record.config["micro_batch_size"] is None and record.annotations["micro_batch_size_raw"] == "32 (local batch)"
    assert report.derived["micro batch unknown (the cell gives the local batch)"] == 1


def test_a_knob_a_row_leaves_blank_takes_its_frameworks_default(tmp_path, write_published):
    # torchtitan checkpoints activations selectively unless told otherwise; another lab's blank
    # stays unknown, and a stated mode is kept
    rows, (report,) = load_rows(tmp_path, write_published, [
        published_row(source="pytorch/torchtitan docs & benchmarks", activation_checkpointing=""),
        published_row(source="pytorch/torchtitan docs & benchmarks", activation_checkpointing="full"),
        published_row(activation_checkpointing="")])
    assert [r.config["activation_checkpointing"] for r in rows] == ["selective", "full", None]
    assert "activation_checkpointing=selective (torchtitan's default; the row does not say)" in \
        rows[0].annotations["perfzoo_derived"]
    assert report.derived["activation_checkpointing from the framework's default"] == 1


def test_a_bf16_tail_keeps_torchtitans_last_layers_in_bf16(tmp_path, write_published):
    # torchtitan's NVFP4 recipe converts the leading 85% of the layers (27 of Llama 3 8B's 32, rounded
    # down): 5 stay in BF16; the same words from another lab say nothing of how many
    cells = dict(precision="NVFP4 (bf16 tail)", gpu_type="B200", n_layers="32")
    rows, (report,) = load_rows(tmp_path, write_published, [
        published_row(source="pytorch/torchtitan docs & benchmarks", **cells),
        published_row(source="pytorch/torchtitan docs & benchmarks", **{**cells, "precision": "MXFP8"}),
        published_row(**cells)])
    assert [r.config.get("bf16_layers") for r in rows] == [5, None, None]
    assert report.derived["bf16_layers from a bf16 tail (torchtitan's recipe)"] == 1
    tail, full = (analytic.estimate({**r.config, "accelerator": "B200"})["compute_time_s"] for r in rows[::2])
    assert tail > full


def test_torchtitans_tensorwise_fp8_gathers_its_weights_in_fp8(tmp_path, write_published):
    # torchtitan's Float8Linear with tensorwise scales gathers its weights in FP8 (its llama3 presets
    # set float8.enable_fsdp_float8_all_gather); rowwise scales have no float8 all-gather; a BF16 row
    # or another lab's FP8 row says nothing of it
    titan = dict(source="pytorch/torchtitan docs & benchmarks", n_gpus="64", dp="64", fsdp="FSDP2 (full shard, 1D)")
    rows, (report,) = load_rows(tmp_path, write_published, [
        published_row(**titan, precision="FP8 (Float8 linears) + BF16"),
        published_row(**titan, precision="FP8 float8 rowwise"), published_row(**titan, precision="BF16"),
        published_row(precision="FP8 (Float8 linears) + BF16")])
    assert [r.config.get("fp8_param_gather") for r in rows] == [True, False, None, None]
    assert report.derived["fp8_param_gather from the precision (torchtitan)"] == 2
    sent = [analytic.comm_bytes_per_device({**r.config, "accelerator": "H100-80GB"})["comm_dp_bytes"] for r in rows[:2]]
    assert sent[0] < sent[1]


def test_torchtitan_runs_a_compiled_loss_from_april_2025(tmp_path, write_published):
    # torchtitan compiles its cross entropy with the model since 2025-04-02: a compiled row from then on
    # has a fused loss; an earlier one, an eager run, or another lab's compiled row says nothing of it
    titan = dict(source="pytorch/torchtitan docs & benchmarks", compile="true")
    rows, (report,) = load_rows(tmp_path, write_published, [
        published_row(**titan, date="2025-06-14"), published_row(**titan, date="2024-12-26"),
        published_row(**{**titan, "compile": "false"}, date="2025-06-14"), published_row(compile="true", date="2025-06-14")])
    assert [r.config.get("fused_loss") for r in rows] == [True, None, None, None]
    assert report.derived["fused_loss from compile (torchtitan since 2025-04)"] == 1
    peak = [analytic.estimate({**r.config, "accelerator": "H100-80GB"})["memory_bytes"] for r in rows[:2]]
    assert peak[0] < peak[1]


def test_torchtitan_splits_a_local_batch_into_pipeline_micro_batches(tmp_path, write_published):
    # torchtitan's schedule runs a rank's batch of 32 in pp=8 micro-batches of 4 (its default), two
    # stages per rank when interleaved: the bubble is (pp-1)/(m+pp-1), (pp-1)/(2m+pp-1) interleaved
    torchtitan = dict(source="pytorch/torchtitan docs & benchmarks", micro_batch_size="32 (local batch)", tp="8",
                      pp="8", dp="8", n_gpus="512", global_batch_size="256")
    one_f_one_b, interleaved, other = (r.config for r in load_rows(tmp_path, write_published, [
        published_row(**torchtitan, other_opts="AsyncTP; PP schedule 1F1B"),
        published_row(**torchtitan, other_opts="AsyncTP; PP schedule Interleaved 1F1B"),
        published_row(**{**torchtitan, "source": "New Lab benchmarks"})])[0])
    assert (one_f_one_b["micro_batch_size"], one_f_one_b["vp"]) == (4, None)
    assert (interleaved["micro_batch_size"], interleaved["vp"]) == (4, 2)
    assert other["micro_batch_size"] is None  # another framework's split is not known
    bubble = [analytic.pipeline_bubble(c) for c in (one_f_one_b, interleaved)]
    assert bubble == pytest.approx([7 / 15, 7 / 23])


def test_megatron_bridge_rows_are_priced_with_their_real_moe_shapes(external):
    ds = load_dataset("published-megatron-bridge", external_dir=external)
    est = analytic.estimate(ds.frame)
    by_model = est.assign(model=ds.frame["config.model_name"]).groupby("model")[["n_params", "active_params"]].first()
    # DeepSeek-V3 was priced as 6,204B parameters, Qwen3-235B-A22B as 1,620B, Qwen3-30B-A3B as 207B,
    # GPT-OSS-120B as 308B: now their published totals (DeepSeek-V3 with its MTP module: +11.5B)
    assert by_model.loc["DeepSeekV3 (w/o MTP)", "n_params"] == pytest.approx(671e9, rel=0.01)
    assert by_model.loc["DeepSeekV3", "n_params"] == pytest.approx(683e9, rel=0.01)
    assert by_model.loc["DeepSeekV3 (w/o MTP)", "active_params"] == pytest.approx(37e9, rel=0.05)
    assert by_model.loc["Qwen3_235B_a22B", "n_params"] == pytest.approx(235e9, rel=0.01)
    assert by_model.loc["Qwen3_30B_a3B", "n_params"] == pytest.approx(30.5e9, rel=0.01)
    assert by_model.loc["GPT OSS 120B", "n_params"] == pytest.approx(117e9, rel=0.01)
    # Kimi-K2 and Nemotron-3 Nano, absent from the shared architecture table, get the catalog's shape
    assert by_model.loc["Kimi_K2", "n_params"] == pytest.approx(1.04e12, rel=0.02)
    assert by_model.loc["Nemotron_3_Nano", "n_params"] == pytest.approx(31.6e9, rel=0.01)
    (report,) = ds.load_reports
    assert report.derived["architecture from perfzoo's model catalog"] == report.rows
    assert report.flop_convention.startswith("model FLOPs, causal attention")
    # every row is priced, and the ideal is never beaten: measured / ideal tokens/s below 1
    ok = ds.frame["status"] == "ok"
    ratio = ds.frame.loc[ok, "metrics.throughput_per_device"] / est.loc[ok, "throughput_per_device"]
    assert ratio.notna().all() and (ratio < 1).all()


@pytest.mark.parametrize("file", PUBLISHED_FILES)
def test_every_real_published_file_loads_with_every_row_accounted_for(external, file):
    load = read_published(external / file)
    (report,) = load.reports
    assert report.rows == report.labelled + report.unlabelled + report.oom + len(report.skipped)
    assert len(load.records) == report.rows - len(report.skipped)
    if report.derivation_check is not None:  # derived tokens/s agree with the published ones
        assert report.derivation_check == pytest.approx(1.0, abs=0.05)


def test_the_new_vendor_tables_have_derived_targets(external):
    nemo = read_published(external / "nvidia_nemo_perf_summary_2024.csv").reports[0]
    megatron = read_published(external / "megatron_lm_readme_scaling.csv").reports[0]
    assert nemo.derived["tokens/s from TFLOP/s"] == 17 and nemo.superseded > 0
    assert megatron.derived["tokens/s from MFU"] > 0 and len(megatron.skipped) == 4
    assert megatron.flop_convention.startswith("hardware FLOPs")  # Megatron counts recompute


def test_datasets_show_prints_the_load_report(capsys, synthetic):
    assert perfzoo_main(["datasets", "show", str(synthetic / "lab_benchmarks.csv")]) == 0
    out = capsys.readouterr().out
    assert ("lab_benchmarks.csv: 6 rows read: 3 labelled (1 of them derived), 1 unlabelled, 1 OOM, 1 skipped; "
            "1 superseded variants") in out
    assert "tokens/s from TFLOP/s 1" in out and "skipped line 7: no GPU count" in out


def test_rows_without_a_date_are_kept_reported_and_left_out_of_temporal_splits_only(tmp_path, write_published):
    from perfzoo.evaluation import splits

    dates = ["2025-01-01", "", "2025-02-01", "2025-03-01", "n/a", "2025-04-01", "2025-05-01", "2025-06-01"]
    path = write_published(tmp_path / "tpu.csv", [published_row(date=d, n_gpus=str(8 * (i + 1)), dp=str(8 * (i + 1)))
                                                   for i, d in enumerate(dates)])
    load = read_published(path)
    (report,) = load.reports
    assert len(load.records) == report.rows == 8 and report.labelled == 8
    assert report.undated == [3, 6]  # file lines (the header is line 1)
    assert "no date, kept (left out of temporal splits): 2 rows, lines 3, 6" in str(report)
    assert [r.started_at is None for r in load.records] == [d in ("", "n/a") for d in dates]
    ds = load_dataset(path)
    temporal = splits.temporal_split(ds)
    undated = set(np.flatnonzero(ds.frame["started_at"].isna()))
    assert len(undated) == 2 and not undated & (set(temporal.train) | set(temporal.test))
    assert len(temporal.train) + len(temporal.test) == 6 and temporal.info["undated"] == 2
    random = splits.random_split(ds, seed=0)
    assert undated <= set(random.train) | set(random.test)  # every other split keeps them
    assert perfzoo_main(["datasets", "show", str(path)]) == 0


def test_a_date_that_is_not_a_date_is_still_an_error(tmp_path, write_published):
    path = write_published(tmp_path / "bad.csv", [published_row(date="last spring")])
    with pytest.raises(ValueError, match=r"bad.csv, line 2, column 'date': 'last spring' is not a date"):
        read_published(path)


def test_a_measured_record_needs_its_start_time():
    from perfzoo.records import RecordError, parse_record

    row = {"schema_version": 1, "job_id": "j", "source": "measured", "provenance": "test", "status": "ok",
           "workload": "llm", "config": {}, "hardware": {"accelerator": "cpu", "accelerator_count": 1}}
    with pytest.raises(RecordError, match="a measured record needs started_at"):
        parse_record(row)
    assert parse_record({**row, "source": "published"}).started_at is None


def test_every_file_in_the_external_folder_loads(external):
    from perfzoo.datasets import list_datasets

    names = list_datasets(external)
    assert {"vtrain-a100", "published-llm"} <= set(names)
    for name in names:
        assert len(load_dataset(name, external_dir=external)) > 0, name


def test_the_framework_is_read_off_the_source_and_recompute_off_hardware_flops(tmp_path, write_published):
    # the source names the framework (what the memory model needs); a source naming none leaves it unknown
    (bridge, titan, lab), (report,) = load_rows(tmp_path, write_published, [
        published_row(source="NVIDIA Megatron-Bridge performance summary"),
        published_row(source="pytorch/torchtitan docs & benchmarks"), published_row()])
    assert (bridge.config["framework"], titan.config["framework"], lab.config["framework"]) == (
        "megatron-bridge", "torchtitan", None)
    assert "framework=megatron-bridge (from the source column)" in bridge.annotations["perfzoo_derived"]
    assert report.derived["framework from the source column"] == 2
    # a row whose TFLOP/s count recomputed FLOPs (HFU-like) ran with recompute: tokens/s comes from
    # the hardware FLOPs of full recompute, and the config says so where the row states no mode
    (hfu, stated), (report,) = load_rows(tmp_path, write_published, [
        published_row(tokens_per_sec_per_gpu="", tflops_per_gpu="150", activation_checkpointing="",
                      derived_fields="mfu: HFU-like"),
        published_row(tokens_per_sec_per_gpu="", tflops_per_gpu="150", activation_checkpointing="selective",
                      derived_fields="mfu: HFU-like")], "hfu.csv")
    assert hfu.config["activation_checkpointing"] == "full" and stated.config["activation_checkpointing"] == "selective"
    assert report.derived["activation checkpointing full (figures count recompute)"] == 1
    hardware = analytic.flops_per_token(hfu.config, recompute=True)  # 6N + 12Lds + the recomputed forward
    assert hardware == pytest.approx(4 / 3 * analytic.flops_per_token(hfu.config), rel=0.01)
    assert hfu.metrics.throughput_per_device == pytest.approx(150e12 / hardware, rel=1e-9)


def test_tp_communication_overlap_is_read_off_the_options_column(tmp_path, write_published):
    # Megatron-LM's README rows say "tp-comm-overlap": the row is priced with TP traffic under the
    # GEMMs; torchtitan's "async TP" is a different mechanism and is not read as it; no option: unknown
    rows, (report,) = load_rows(tmp_path, write_published, [
        published_row(tp="4", dp="1", n_gpus="4", other_opts="overlap-grad-reduce, overlap-param-gather, tp-comm-overlap"),
        published_row(tp="4", dp="1", n_gpus="4", other_opts="async TP"),
        published_row(tp="4", dp="1", n_gpus="4")])
    assert [r.config.get("tp_comm_overlap") for r in rows] == [True, None, None]
    assert "tp_comm_overlap=True (from other_opts)" in rows[0].annotations["perfzoo_derived"]
    assert report.derived["tp_comm_overlap from other_opts"] == 1
    tp = [analytic.estimate({**r.config, "accelerator": "H100-80GB"})["tp_time_s"] for r in rows]
    assert tp[1] == tp[2] > tp[0]  # the overlap leaves only the excess over compute, here none


def test_a_model_known_only_by_its_name_gets_the_size_the_name_states(tmp_path, write_published):
    # no shape, no n_params, in neither table nor catalog: predictors see no model name, so the
    # size the name states becomes n_params (after the target: a TFLOP/s row stays unlabelled)
    (named, tflops), (report,) = load_rows(tmp_path, write_published, [
        published_row(model_name="GPT3-20B"),
        published_row(model_name="Mystery 9B", tokens_per_sec_per_gpu="", tflops_per_gpu="300")])
    assert named.config["n_params"] == 20e9 and named.config["n_layers"] is None
    assert "n_params=2e+10 (from the model name)" in named.annotations["perfzoo_derived"]
    assert tflops.config["n_params"] == 9e9 and tflops.metrics.throughput_per_device is None
    assert report.derived["n_params from the model name"] == 2
    assert analytic.estimate({k: v for k, v in named.config.items() if k != "model_name"})["n_params"] == 20e9


# --- NVIDIA's DGX Cloud recipes: proxies, frameworks and layouts named in the options -------------

DGXC = "NVIDIA DGX Cloud benchmarking recipes (dgxc-benchmarking)"


def test_a_proxy_cut_to_fewer_layers_has_the_full_models_widths_and_its_own_layer_count(tmp_path, write_published):
    # "(proxy, N layers)": the full model (catalog: Grok-1's 8 experts, top-2, of 32,768) cut to N
    # layers; the totals that count the full model's layers (n_params) are not the proxy's
    rows, (report,) = load_rows(tmp_path, write_published, [
        published_row(model_name="Grok-1 (proxy, 4 layers)", n_layers="4", n_gpus="16", tp="4", dp="4", ep="4"),
        published_row(model_name="Grok-1", n_gpus="16", tp="4", dp="4", ep="4"),
        published_row(model_name="Llama 3 8B (proxy, 8 layers)")])  # in the architecture table
    proxy, full, llama = (r.config for r in rows)
    assert (proxy["n_layers"], full["n_layers"]) == (4, 64)
    for key in ("hidden_dim", "n_heads", "n_kv_heads", "vocab_size", "n_experts", "experts_per_token", "moe_ffn_dim"):
        assert proxy[key] == full[key] is not None, key
    assert proxy["n_params"] is None and full["n_params"] == 314e9
    assert (llama["n_layers"], llama["hidden_dim"], llama["n_params"]) == (8, 4096, None)
    assert report.contradictions == []  # ep = 4 needs experts: the proxy has Grok-1's
    assert report.derived["proxy models: the full model's widths, the stated layer count"] == 2
    assert "cut to 4 layers" in rows[0].annotations["perfzoo_derived"]
    params = [analytic.param_count(c) for c in (proxy, full)]
    embedding = 2 * 131072 * 6144 - 131072 * 6144  # tied: one table
    assert params[0] - embedding == pytest.approx((params[1] - embedding) * 4 / 64, rel=1e-9)


def test_the_framework_and_expert_tp_are_read_off_the_options_when_the_source_names_none(tmp_path, write_published):
    rows, (report,) = load_rows(tmp_path, write_published, [
        published_row(source=DGXC, model_name="Mixtral 8x7B", other_opts="NeMo/Megatron-Core; ETP=4"),
        published_row(source=DGXC, other_opts="MaxText (JAX)"),
        published_row(source=DGXC, other_opts="Paxml (JAX); FSDP+DP (Pax), shard group size not stated"),
        published_row(source="pytorch/torchtitan docs & benchmarks", other_opts="NeMo/Megatron-Core")])
    nemo, maxtext, pax, titan = rows
    assert [r.config["framework"] for r in rows] == ["nemo", None, None, "torchtitan"]  # the source column first
    assert nemo.config["etp"] == 4 and maxtext.config.get("etp") is None
    assert "framework=nemo (from other_opts)" in nemo.annotations["perfzoo_derived"]
    # a JAX framework is none the cost model has a recipe for: unknown, and the row says which it was
    assert "other_opts names MaxText (JAX)" in maxtext.annotations["perfzoo_derived"]
    assert report.derived["framework from other_opts"] == 1 and report.derived["etp from other_opts"] == 1
    assert report.derived["framework unknown (Paxml (JAX): no recipe in the cost model)"] == 1


def test_an_fsdp_cell_giving_a_shard_group_size_is_read_against_the_data_parallel_group(tmp_path, write_published):
    rows, (report,) = load_rows(tmp_path, write_published, [
        published_row(fsdp="0"),  # no FSDP: Megatron's data parallelism
        published_row(fsdp="64"),  # the whole data-parallel group of 64
        published_row(fsdp="128", n_gpus="512", dp="512", global_batch_size="512"),  # 128 of 512: hybrid
        published_row(fsdp="48"),  # does not divide 64: unknown, the cell kept
        published_row(fsdp="yes (FSDP+DP, size not stated)")])
    assert [r.config["fsdp"] for r in rows] == ["none", "full_shard", "hybrid_shard", None, "full_shard"]
    assert rows[3].annotations["fsdp_raw"] == "48"
    assert "a shard group of 128 of the 512 data-parallel ranks" in rows[2].annotations["perfzoo_derived"]
    assert "its shard group is not stated" in rows[4].annotations["perfzoo_derived"]
    assert report.derived["fsdp hybrid_shard from a shard-group size"] == 1
    assert report.derived["fsdp full_shard, shard group not stated"] == 1


def test_virtual_stages_without_a_pipeline_are_unset_and_the_cell_kept(tmp_path, write_published):
    rows, (report,) = load_rows(tmp_path, write_published, [
        published_row(vp="12", pp="1"), published_row(vp="4", pp="2", dp="32")])
    assert [r.config["vp"] for r in rows] == [None, 4]
    assert rows[0].annotations["vp_raw"] == "12" and report.contradictions == []
    assert report.derived["vp unset (pp = 1: no virtual pipeline)"] == 1


def test_mfu_over_the_peak_of_the_rows_precision_is_read_as_such(tmp_path, write_published):
    # a file whose FP8 rows' MFU is over the FP8 peak (half a BF16 row's at the same speed): tokens/s
    # derived from such an MFU use that peak, and the FLOP-convention line says so
    cfg = load_rows(tmp_path, write_published, [published_row()], "probe.csv").records[0].config
    flops = analytic.flops_per_token(cfg)
    h100 = dict(gpu_type="H100-SXM-80GB", precision="FP8")
    rows = [published_row(**h100, tokens_per_sec_per_gpu=str(t), mfu=f"{t * flops / 1979e12:.4f}") for t in (4000, 4200)]
    load = load_rows(tmp_path, write_published, rows + [
        published_row(**h100, tokens_per_sec_per_gpu="", mfu=f"{4100 * flops / 1979e12:.4f}")])
    report = load.reports[0]
    assert "MFU over the dense peak of each row's precision" in report.flop_convention
    assert load.records[2].metrics.throughput_per_device == pytest.approx(4100, rel=1e-3)
    assert report.derivation_check == pytest.approx(1.0, abs=1e-3)
    # the same MFU figures over the BF16 peak (a file of BF16 rows) stay read over the BF16 peak
    bf16 = load_rows(tmp_path, write_published, [{**r, "precision": "BF16"} for r in rows], "bf16.csv").reports[0]
    assert "MFU over" not in bf16.flop_convention


@pytest.mark.external
def test_the_dgxc_tables_rows_are_read_with_their_models_frameworks_and_layouts(external):
    load = read_published(external / "nvidia_dgxc_benchmarking_perf_tables.csv")
    (report,) = load.reports
    assert report.contradictions == []  # the Grok-1 proxies' expert parallelism, the H100 Maverick's vp
    configs = {r.annotations["line"]: r.config for r in load.records}
    proxies = [(line, c) for line, c in configs.items() if "(proxy," in c["model_name"]]
    assert len(proxies) == 42
    full = {"Grok-1": configs[25], "Llama 3.1 405B": configs[290]}  # the full models' rows
    for line, c in proxies:
        base = c["model_name"].split(" (proxy")[0]
        assert c["n_layers"] == int(c["model_name"].split(", ")[1].split()[0]) < full[base]["n_layers"], line
        for key in ("hidden_dim", "n_heads", "n_kv_heads", "vocab_size", "n_experts", "experts_per_token",
                    "moe_ffn_dim"):
            assert c.get(key) == full[base].get(key), (line, key)
        assert c["n_params"] is None
    assert configs[31]["n_experts"] == 8 and configs[31]["ep"] == 8
    frameworks = Counter(c["framework"] for c in configs.values())
    assert frameworks == {"nemo": 297, None: 35}  # NeMo/Megatron-Core; MaxText and Paxml (JAX) unknown
    assert (configs[284]["etp"], configs[299]["etp"], configs[280]["etp"]) == (4, 4, 1)
    assert (configs[299]["vp"], configs[296]["vp"]) == (None, 12)  # H100: pp = 1; GB200: pp = 2
    assert (configs[43]["fsdp"], configs[46]["fsdp"], configs[2]["fsdp"], configs[290]["fsdp"]) == (
        "full_shard", "hybrid_shard", "full_shard", "none")
    assert "MFU over the dense peak of each row's precision" in report.flop_convention
