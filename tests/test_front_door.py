"""Issue 53, the front door: one answer per layout from ``predict`` and ``plan``, what was read and
filled shown, memory in the user's units, ties said, and each bad input a one-line error."""

import json
import re

import numpy as np
import pytest

from perfzoo import analytic, llmconfig, zoo
from perfzoo.console import RunFailed, InputError
from perfzoo.datasets import load_dataset
from perfzoo.llmconfig import huggingface, layout_defaults
from perfzoo.llmconfig import ConfigError
from perfzoo.plan import Cluster, PlanError, Scorer, plan
from perfzoo.plan.command import PlanConfig
from perfzoo.plan.layouts import LAYOUT_KNOBS, divisors
from perfzoo.plan.report import records, table
from perfzoo.predict import main as predict_main
from perfzoo.pricing import Resolved, price, resolve
from perfzoo.search import Formula

H100 = "H100-SXM-80GB"
# the newcomer's layout: Llama 3 70B on 256 H100s, tp4 pp4 dp16, micro batch 1
LAYOUT = {"model": "llama3-70b", "seq_len": 8192, "global_batch_size": 1024, "n_gpus": 256, "tp": 4, "pp": 4,
          "micro_batch_size": 1, "accelerator": H100}


def predict_frame(configs, training, predictor=None, **kw):
    """``configs`` priced as ``predict`` prices them: by ``predictor`` fitted on ``training``, else ``--predictor best``."""
    resolved = (Resolved.fitted(predictor, training) if predictor is not None
                else resolve("best", training.name, training=training))
    return price(configs, resolved, **kw)


@pytest.fixture(scope="module")
def lab(synthetic):
    """A small LLM dataset and ridge fitted on it: a real zoo member that reads the layout knobs."""
    training = load_dataset(str(synthetic / "lab_benchmarks.csv"))
    ok = training.labelled().ok()
    return training, zoo.make("ridge").fit(ok.X, ok.y, dataset=training.name)


@pytest.fixture(scope="module")
def planned(lab):
    training, ridge = lab
    scorer = Scorer(ridge, per_device=training.target.endswith("_per_device"))
    baseline = {k: LAYOUT[k] for k in ("tp", "pp", "micro_batch_size")}
    return plan("llama3-70b", Cluster(gpus=256, accelerator=H100), seq_len=8192, global_batch=1024, scorer=scorer,
                baseline=baseline)


def test_plan_and_predict_agree_on_number_and_verdict_for_a_layout(lab, planned):
    training, ridge = lab
    base = planned.baselines.iloc[0]
    top = planned.layouts.iloc[0]
    knobs = {k: (top[k].item() if hasattr(top[k], "item") else top[k]) for k in LAYOUT_KNOBS}
    got = predict_frame([LAYOUT, {**LAYOUT, **knobs}], training, ridge)
    for (_, row), theirs in zip(got.iterrows(), (base, top)):
        assert row["predicted_tokens_per_s_per_device"] == pytest.approx(theirs["predicted_tokens_per_s_per_device"],
                                                                         rel=1e-9)
        assert bool(row["fits_in_memory"]) == bool(theirs["fits"])
        assert row["analytic.memory_bytes"] / 2**30 == pytest.approx(theirs["memory_gib"], rel=1e-9)
    # the defaults spelled out (fsdp=none over 16 ranks is read as the zero1 plan prices) change nothing
    spelled = {**LAYOUT, "cp": 1, "vp": 1, "ep": 1, "activation_checkpointing": "none", "fsdp": "none",
               "precision": "bf16", "sequence_parallel": True, "flash_attention": True}
    again = predict_frame([spelled], training, ridge).iloc[0]
    assert again["predicted_tokens_per_s_per_device"] == pytest.approx(got["predicted_tokens_per_s_per_device"].iloc[0],
                                                                       rel=1e-9)
    assert again["read_as"].startswith("fsdp=none with 16 data-parallel ranks read as zero1")
    # the newcomer's layout needs ~74 GiB of the H100's 79 without recompute: within the device with the memory
    # model's error at 5% risk, so both commands keep checkpointing off and say it fits
    assert got["fits_in_memory"].iloc[0] and base["fits"] and base["activation_checkpointing"] == "none"
    assert 0.9 < got["analytic.memory_fraction"].iloc[0] < 1.0
    assert got["fits_in_memory"].iloc[1]  # a plan's pick fits by its own rule
    # with a flat 10% margin it does not fit without recompute: both fill the least recompute that fits, alike
    tight = plan("llama3-70b", Cluster(gpus=256, accelerator=H100), seq_len=8192, global_batch=1024,
                 scorer=Scorer(ridge, memory_margin=0.1), baseline={k: LAYOUT[k] for k in ("tp", "pp", "micro_batch_size")})
    mine = predict_frame([LAYOUT], training, ridge, memory_margin=0.1).iloc[0]
    theirs = tight.baselines.iloc[0]
    assert theirs["activation_checkpointing"] in ("selective", "full") and theirs["fits"] and mine["fits_in_memory"]
    assert f"activation_checkpointing={theirs['activation_checkpointing']}" in mine["filled"]
    assert mine["predicted_tokens_per_s_per_device"] == pytest.approx(theirs["predicted_tokens_per_s_per_device"])


def test_predict_and_plan_print_the_margin_the_defaults_the_framework_and_the_shape(synthetic, planned, capsys):
    argv = ["--dataset", str(synthetic / "lab_benchmarks.csv"), "--predictor", "ridge", "--set",
            *[f"{k}={v}" for k, v in LAYOUT.items()]]
    assert predict_main(argv) == 0
    out = capsys.readouterr().out
    assert "filled: cp=1 vp=1 ep=1 grad_accum=64 activation_checkpointing=none fsdp=zero1 precision=bf16" in out
    assert "framework: not given, priced as no framework in particular" in out
    assert ("model: llama3-70b: 80 layers, hidden 8,192, FFN 28,672, 64 heads, 8 KV heads, 70.6B parameters; from "
            "catalog (llama3-70b)") in out
    assert "the rule: fits when the peak allocated x 1.042 (the memory model's error at 5% risk" in out
    text = table(planned)
    assert "memory: fits when the peak allocated x 1.042" in text and "model: llama3-70b: 80 layers" in text
    assert "every layout runs flash attention and, with tp > 1, sequence parallelism; framework: not given" in text
    assert "baseline (your baseline): tp4 pp4 vp1 cp1 dp16 mb1x64 ac:none zero1 bf16 (filled cp=1 vp=1" in text
    framed = plan({**llmconfig.preset("llama3-8b"), "framework": "megatron-bridge"}, Cluster(gpus=8, accelerator=H100),
                  seq_len=4096, global_batch=64, scorer=planned.scorer)
    assert "framework: megatron-bridge" in table(framed)


def test_memory_is_given_as_the_peak_allocated_and_what_the_device_needs(lab, planned, capsys):
    training, ridge = lab
    row = predict_frame([LAYOUT], training, ridge).iloc[0]
    est = analytic.estimate({**llmconfig.preset("llama3-70b"), **layout_defaults.complete(llmconfig.check(LAYOUT)).config})
    assert row["analytic.peak_allocated_bytes"] == pytest.approx(est["peak_allocated_bytes"])
    assert row["analytic.memory_bytes"] == pytest.approx(est["peak_allocated_bytes"] + est["overhead_bytes"])
    assert row["analytic.memory_bytes"] / row["device_memory_bytes"] == pytest.approx(est["memory_fraction"])
    from perfzoo.predict import memory_text

    text = memory_text(row.to_dict())
    assert text.startswith(f"peak allocated {row['analytic.peak_allocated_bytes'] / 2**30:,.1f} GiB per device (what "
                           "torch.cuda.max_memory_allocated reports)")
    assert f"needs {row['analytic.memory_bytes'] / 2**30:,.1f} GiB of its" in text
    top = planned.layouts.iloc[0]
    assert top["peak_allocated_gib"] < top["memory_gib"] <= 0.9 * top["device_memory_gib"]
    assert "alloc GiB" in table(planned) and records(planned, 1)[0]["peak_allocated_gib"] == pytest.approx(
        top["peak_allocated_gib"])


def test_sharding_names_say_what_they_mean():
    cfg = llmconfig.check({**LAYOUT, "fsdp": "none"})
    done = layout_defaults.complete(cfg)
    assert done.config["fsdp"] == "zero1" and "give fsdp=no_shard for plain DDP" in done.read_as[0]
    ddp = layout_defaults.complete(llmconfig.check({**LAYOUT, "fsdp": "no_shard"})).config
    zero1 = done.config
    # plain DDP keeps every rank's optimizer state: more memory than the distributed optimizer
    mem = analytic.estimate(ddp)["memory_bytes"], analytic.estimate(zero1)["memory_bytes"]
    assert mem[0] > mem[1] + 10 * 2**30
    staged = layout_defaults.complete(llmconfig.check({**LAYOUT, "zero_stage": 3}))
    assert staged.config["fsdp"] == "full_shard" and staged.read_as == ["zero_stage=3 read as fsdp=full_shard"]
    one = layout_defaults.complete(llmconfig.check({**LAYOUT, "n_gpus": 16, "global_batch_size": 16}))
    assert one.config["dp"] == 1 and one.config["fsdp"] == "none"  # one data-parallel rank: nothing to shard


GOOD = ["model=llama3-8b", "seq_len=4096", "global_batch_size=256", "n_gpus=64", "accelerator=H100-SXM-80GB"]


@pytest.mark.parametrize("items, message", [
    (["n_gpus=64", "global_batch_size=32"], "global_batch_size = 32 is fewer sequences than the dp = 64 data-parallel"),
    (["n_gpus=64", "global_batch_size=100"], "global_batch_size = 100 is not divisible by dp = 64"),
    (["n_gpus=1e9"], r"n_gpus=1000000000.0: must be at most 1,048,576 \(devices\)"),
    (["seq_len=1e12"], r"seq_len=1000000000000.0: must be at most 16,777,216 \(tokens\)"),
    (["global_batch_size=1e12"], "global_batch_size=1000000000000.0: must be at most 16,777,216"),
    (["zero_stage=5"], r"zero_stage=5: must be at most 3 \(stage\)$"),
    (["zero_stage=3", "fsdp=none"], "zero_stage = 3 and fsdp = none name different shardings .*give one of them"),
    (["n_experts=8", "model=llama3-8b"], "a mixture of 8 experts gives no experts_per_token"),
])
def test_each_bad_count_or_conflict_is_one_line_and_exit_2(synthetic, capsys, items, message):
    keys = {i.split("=", 1)[0] for i in items}
    argv = [i for i in GOOD if i.split("=", 1)[0] not in keys] + items
    code = predict_main(["--dataset", str(synthetic / "lab_benchmarks.csv"), "--predictor", "ridge", "--set", *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and re.search(message, err), err


class Broken(Formula):
    name = "broken-member"


def test_a_predictor_returning_nan_is_an_error_naming_it(lab):
    training, _ = lab
    nan = Broken(lambda X: np.full(len(X), np.nan))
    with pytest.raises(RunFailed, match="predictor broken-member returned nan for config 1"):
        predict_frame([LAYOUT], training, nan)
    with pytest.raises(RunFailed, match="predictor broken-member returned nan for"):
        plan("llama3-8b", Cluster(gpus=8, accelerator=H100), seq_len=4096, global_batch=64, scorer=Scorer(nan))


def test_output_paths_are_checked_before_work_and_named_as_given(tmp_path, capsys):
    base = dict(model="llama3-8b", gpus=8, accelerator=H100, seq_len=4096, global_batch=64)
    with pytest.raises(InputError, match=r"^--out /proc/x.jsonl: cannot write a file there"):
        PlanConfig(**base, out="/proc/x.jsonl")  # the config refuses it: nothing is planned
    taken = tmp_path / "taken"
    taken.write_text("")
    with pytest.raises(InputError, match=f"--plot {taken}/p.png: {taken} is a file, not a folder"):
        PlanConfig(**base, plot=str(taken / "p.png"))  # a folder it would make is checked above it
    with pytest.raises(InputError, match="is a folder"):
        PlanConfig(**base, out=str(tmp_path))
    PlanConfig(**base, out=str(tmp_path / "ok.jsonl"), plot=str(tmp_path / "new" / "p.png"))
    assert list(tmp_path.iterdir()) == [taken]  # the check leaves nothing behind, makes no folder


def test_a_mistyped_option_is_named(capsys):
    with pytest.raises(SystemExit) as info:
        predict_main(["--sett", "model=llama3-8b"])
    assert info.value.code == 2
    assert "unrecognized option --sett (did you mean --set" in capsys.readouterr().err
    from perfzoo.plan.cli import main as plan_main

    with pytest.raises(SystemExit):
        plan_main(["--model", "llama3-8b", "--gpu", "8", "--globl-batch", "64"])
    assert "unrecognized option --globl-batch (did you mean --global-batch" in capsys.readouterr().err


def test_an_undecodable_configs_file_is_named(tmp_path, capsys):
    path = tmp_path / "configs.jsonl"
    path.write_bytes(b"\xff\xfe{\"n_layers\": 2}\n")
    assert predict_main(["--configs", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"perfzoo.predict: error: --configs {path}: not UTF-8 text (byte ") and err.endswith("is 0xff); save it as UTF-8")


def test_a_configs_file_is_answered_row_by_row_and_the_refused_rows_listed(synthetic, tmp_path, capsys):
    good = {"model": "llama3-8b", "seq_len": 4096, "global_batch_size": 64, "n_gpus": 8, "accelerator": H100}
    path = tmp_path / "configs.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in (good, {**good, "tp": 3}, {**good, "tp": 2},
                                                     {**good, "global_batch_size": 4})) + "\n")
    code = predict_main(["--dataset", str(synthetic / "lab_benchmarks.csv"), "--predictor", "ridge", "--configs",
                         str(path)])
    captured = capsys.readouterr()
    assert code == 1
    assert "config 1:" in captured.out and "config 3:" in captured.out and "config 2:" not in captured.out
    err = captured.err.strip().splitlines()
    assert err[0] == f"perfzoo.predict: refused {path} line 2: tp x pp x cp = 3 x 1 x 1 = 3 does not divide n_gpus = 8"
    assert err[1].startswith(f"perfzoo.predict: refused {path} line 4: global_batch_size = 4 is fewer sequences")
    assert err[2] == "perfzoo.predict: 2 of 4 configs refused (above); the other 2 priced"
    path.write_text(json.dumps({**good, "tp": 3}) + "\n")
    assert predict_main(["--dataset", str(synthetic / "lab_benchmarks.csv"), "--predictor", "ridge", "--configs",
                         str(path)]) == 1
    assert "none of its 1 configs can be priced" in capsys.readouterr().err


def _hf(tmp_path, name, config):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(config))
    return path


def test_a_hugging_face_config_missing_a_field_takes_its_architectures_default_or_is_refused(tmp_path):
    llama = {"model_type": "llama", "num_hidden_layers": 16, "hidden_size": 2048, "num_attention_heads": 16,
             "vocab_size": 32000}
    keys, sources = huggingface.read(_hf(tmp_path, "llama", llama))
    assert keys["ffn_dim"] == 11008 and sources["ffn_dim"] == "transformers' LlamaConfig default intermediate_size"
    assert keys["n_kv_heads"] == 16 and "multi-head attention" in sources["n_kv_heads"]
    assert sources["n_layers"] == "config.json" and keys["gated_mlp"] is True
    mixtral = {"model_type": "mixtral", "num_hidden_layers": 4, "hidden_size": 1024, "num_attention_heads": 8,
               "vocab_size": 32000, "intermediate_size": 3584, "num_local_experts": 8}
    keys, sources = huggingface.read(_hf(tmp_path, "mixtral", mixtral))
    assert keys["experts_per_token"] == 2 and "MixtralConfig default num_experts_per_tok" in sources["experts_per_token"]
    assert keys["moe_ffn_dim"] == 3584 and sources["moe_ffn_dim"] == "config.json"
    unknown = {**llama, "model_type": "toy"}
    with pytest.raises(ConfigError, match=r"gives no intermediate_size \(model_type 'toy', whose defaults perfzoo does "
                                          r"not know\); the cost depends on it"):
        huggingface.read(_hf(tmp_path, "toy", unknown))
    keys, sources = huggingface.read(_hf(tmp_path, "toy", unknown), {"ffn_dim": 5632, "gated_mlp": True})
    assert keys["ffn_dim"] == 5632 and sources["ffn_dim"] == "--set"
    moe = {**unknown, "intermediate_size": 1024, "num_experts": 8}
    with pytest.raises(ConfigError, match="gives no num_experts_per_tok"):
        huggingface.read(_hf(tmp_path, "moe", moe))


def test_an_unknown_architecture_is_refused_until_its_mlp_is_said(tmp_path, capsys):
    """FancyNewForCausalLM was priced as a Llama (gated, as its silu suggested) and named after its folder:
    whether an MLP is gated is the model class's, so an architecture perfzoo does not know is refused in
    one line naming it and the fix; with --set gated_mlp it is read from the file."""
    from perfzoo.plan.cli import main as plan_main

    fancy = {"architectures": ["FancyNewForCausalLM"], "model_type": "fancy_new", "num_hidden_layers": 16,
             "hidden_size": 2048, "intermediate_size": 5632, "num_attention_heads": 16, "num_key_value_heads": 4,
             "vocab_size": 32000, "hidden_act": "silu"}
    path = tmp_path / "fancy" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(fancy))
    argv = ["--model", str(path), "--gpus", "8", "--accelerator", H100, "--seq-len", "4096", "--global-batch", "64"]
    assert plan_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(
        f"perfzoo.plan: error: {path}: FancyNewForCausalLM is an architecture perfzoo does not know") and \
        "--set gated_mlp=true or false" in err, err
    for gated in (True, False):
        keys, sources = huggingface.read(path, {"gated_mlp": gated})
        assert keys["gated_mlp"] is gated and sources["gated_mlp"] == "--set" and keys["ffn_dim"] == 5632
    nameless = {k: v for k, v in fancy.items() if k not in ("architectures", "model_type")}
    with pytest.raises(ConfigError, match="model_type \\(none\\) is an architecture perfzoo does not know"):
        huggingface.read(_hf(tmp_path, "nameless", nameless))
    keys, _ = huggingface.read(_hf(tmp_path, "gpt2", {**nameless, "model_type": "gpt2", "hidden_act": "gelu_new"}))
    assert keys["gated_mlp"] is False  # a known class of two matrices


def test_plan_prints_the_shape_it_read_from_a_config_json(tmp_path, planned):
    from perfzoo.plan.planner import model_keys

    path = _hf(tmp_path, "config", {"model_type": "llama", "num_hidden_layers": 16, "hidden_size": 2048,
                                    "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000})
    shape, sources = model_keys(str(path))
    p = plan(shape, Cluster(gpus=8, accelerator=H100), seq_len=4096, global_batch=64, scorer=planned.scorer)
    p.sources = sources
    line = next(x for x in table(p).splitlines() if x.startswith("model: "))
    assert "16 layers, hidden 2,048, FFN 11,008, 16 heads, 4 KV heads" in line
    assert "from config.json (layers, hidden, heads, KV heads), transformers' LlamaConfig default " \
           "intermediate_size (FFN)" in line
    with pytest.raises(PlanError, match="the model gives no experts_per_token"):
        model_keys(None, {"n_layers": 2, "hidden_dim": 64, "n_heads": 4, "vocab_size": 100, "n_experts": 4})


class Banded:
    """A toy predictor with an interval of +-10%: fewer pipeline stages and bigger micro-batches are faster."""

    output = "throughput"
    has_std = False
    name = "banded"

    def predict(self, X):
        return 1000.0 / X["config.pp"].to_numpy(dtype=float) + X["config.micro_batch_size"].to_numpy(dtype=float)

    def predict_interval(self, X):
        p = self.predict(X)
        return 0.9 * p, 1.1 * p


def test_ties_are_ties():
    p = plan("llama3-8b", Cluster(gpus=16, accelerator=H100), seq_len=4096, global_batch=128, scorer=Scorer(Banded()),
             baseline={"tp": 2, "pp": 2})
    top = p.layouts["predicted_tokens_per_s_per_device"].iloc[0]
    inside = p.layouts["predicted_tokens_per_s_per_device"] >= 0.9 * top
    assert p.tie["ranks"] == inside.sum() > 1 and p.tie["what"] == "80% interval"
    text = table(p, 3)
    assert f"~ ranks 1-{inside.sum():,} are within the predictor's error" in text
    assert "\n   1~  tp" in text
    base = p.baselines.iloc[0]  # pp 2: 500 + 1 against the top pick's 1,000 + ...: outside the interval
    assert not base["within_error"] and "% faster" in text
    near = plan("llama3-8b", Cluster(gpus=16, accelerator=H100), seq_len=4096, global_batch=128,
                scorer=Scorer(Banded()), baseline={"tp": 2, "pp": 1, "micro_batch_size": 4})
    assert near.baselines.iloc[0]["within_error"]
    assert "no measurable gain: the top pick's expected" in table(near)
    assert records(near, 1)[0]["within_error"] is True


def test_more_gpus_than_anyone_has_is_refused_at_once():
    with pytest.raises(PlanError, match=r"--gpus 1,000,000,000: must be at most 1,048,576"):
        Cluster(gpus=10**9, accelerator=H100)
    assert divisors(720720)[:6] == [1, 2, 3, 4, 5, 6] and len(divisors(720720)) == 240
    assert divisors(2**20) == [2**i for i in range(21)]
