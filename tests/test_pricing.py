"""The library layer under the commands: one way to resolve a predictor, one error wording, one fallback."""

import pytest

from perfzoo import pricing, zoo
from perfzoo.console import InputError
from perfzoo.datasets import load_dataset
from perfzoo.plan.cli import main as plan_main
from perfzoo.predict import main as predict_main
from perfzoo.search.cli import main as search_main

CONFIG = ["model=llama3-8b", "n_gpus=8", "accelerator=H100-SXM-80GB", "seq_len=2048", "global_batch_size=64"]


@pytest.fixture
def no_leaderboard(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFZOO_LEADERBOARD", str(tmp_path / "empty"))


def test_best_without_a_shipped_member_fits_the_one_fallback_and_says_so(no_leaderboard, capsys):
    resolved = pricing.resolve("best", "llm-h100", interval=False)
    assert resolved.fallback and resolved.name == pricing.FALLBACK == "lightgbm"
    assert resolved.note.startswith("the leaderboard ships no predictor for llm-h100: lightgbm fitted on the ")
    assert pricing.shipped_member("llm-h100")[:2] == (pricing.FALLBACK, {})  # the closed loop's, unfitted
    assert predict_main(["--dataset", "llm-h100", "--set", *CONFIG]) == 0
    assert capsys.readouterr().out.startswith("predictor: the leaderboard ships no predictor for llm-h100: lightgbm")


def test_the_shipped_member_is_loaded_with_its_unit_and_without_its_data():
    resolved = pricing.resolve("best", "llm-h100")
    assert not resolved.fallback and resolved.note == f"the leaderboard's best for llm-h100 ({resolved.name})"
    assert resolved._training is None and not resolved.per_device  # llm-h100 measures tokens/s of the job
    assert resolved.predictor.target_name_ == load_dataset("llm-h100").target


@pytest.mark.parametrize("main, argv", [
    (predict_main, ["--dataset", "nosuch", "--set", *CONFIG]),
    (plan_main, ["--model", "llama3-8b", "--gpus", "8", "--accelerator", "H100-SXM-80GB", "--seq-len", "2048",
                 "--global-batch", "64", "--dataset", "nosuch"]),
    (search_main, ["--space", "llm-small", "--dataset", "nosuch"]),
])
def test_an_unknown_dataset_is_named_as_one_by_every_command(main, argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ": error: " in err[0], err
    assert "nosuch" in err[0] and "--predictor" not in err[0]


def test_a_predictor_that_is_none_of_the_three_is_one_line_with_the_members():
    with pytest.raises(InputError, match=r"^--predictor nosuch: not 'best', a saved predictor's folder or a zoo "
                                         r"member; the members: constant, analytic"):
        pricing.resolve("nosuch", "llm-h100")


def test_only_a_saved_folder_needs_no_dataset(tmp_path):
    folder = tmp_path / "ridge"
    ds = load_dataset("llm-h100")
    zoo.make("ridge").fit(ds.labelled().ok().X, ds.labelled().ok().y, dataset=ds.name).save(folder)
    assert pricing.resolve(str(folder), None).name == "ridge"
    with pytest.raises(InputError, match="--predictor ridge needs --dataset"):
        pricing.resolve("ridge", None)
