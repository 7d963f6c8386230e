"""A plan's gain over an MoE recipe: the winner's curse per kind of model, and a claim only where a published
run of the same model has the pick's structure (perfzoo issue 67)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfzoo.plan import Cluster, plan, report
from perfzoo.plan import claims, shrinkage
from perfzoo.plan.scoring import Scorer
from perfzoo.search import Formula

H100 = "H100-SXM-80GB"


def test_gain_is_shrunk_and_widened_by_the_kind_of_model():
    """A predicted 1.5x: exp(SHRINK ln 1.5) - 1, give or take 1.2816 sqrt(2) RESIDUAL_SD in logs, by kind."""
    for kind, k, sd in (("dense", shrinkage.SHRINK["dense"], shrinkage.RESIDUAL_SD["dense"]),
                        ("moe", shrinkage.SHRINK["moe"], shrinkage.RESIDUAL_SD["moe"])):
        central, low, high = shrinkage.gain(1500.0, 1000.0, kind)
        half = 1.2816 * np.sqrt(2) * sd
        assert central == pytest.approx(1.5 ** k - 1)
        assert (low, high) == pytest.approx((np.exp(k * np.log(1.5) - half) - 1, np.exp(k * np.log(1.5) + half) - 1))
    # by hand with the measured constants: dense 1.5^0.889 = e^0.3605, half-width 1.2816 x 1.4142 x 0.158 = 0.2864;
    # MoE 1.5^0.669 = e^0.2713, half-width 1.2816 x 1.4142 x 0.224 = 0.4060: a smaller share, a wider interval
    assert shrinkage.gain(1500.0, 1000.0, "dense") == pytest.approx((0.4340, 0.0769, 0.9095), abs=5e-4)
    assert shrinkage.gain(1500.0, 1000.0, "moe") == pytest.approx((0.3116, -0.1261, 0.9684), abs=5e-4)
    assert shrinkage.kind({"n_experts": 64}) == "moe" and shrinkage.kind({"n_experts": 1}) == "dense"


def test_published_structures_place_ep_by_the_accelerators_nvlink_domain():
    frame = pd.DataFrame({"config.model_name": ["OLMoE-1B-7B", "OLMoE-1B-7B", "OLMoE-1B-7B", "no such model", "OLMoE-1B-7B"],
                          "hardware.accelerator": ["H100-80GB", "GB200", "H100-80GB", "H100-80GB", "H100-80GB"],
                          "config.ep": [16.0, 64.0, np.nan, 8.0, 8.0], "config.etp": [np.nan, 1.0, np.nan, 1.0, 1.0],
                          "status": ["ok", "ok", "ok", "ok", "oom"]})
    found = claims.structures(frame)
    assert found["model"].tolist() == ["olmoe-1b-7b"] * 3  # an unknown model and a run out of memory back nothing
    assert found["placement"].tolist() == ["EP across NVLink domains", "EP inside one NVLink domain", "no EP"]


RECIPE = {"tp": 1, "pp": 1, "vp": 1, "cp": 1, "ep": 16, "micro_batch_size": 1, "activation_checkpointing": "full",
          "fsdp": "zero1", "precision": "bf16"}


@pytest.fixture(scope="module")
def leaves_ep():
    """olmoe-1b-7b on 16 H100s (two 8-GPU domains) against a published EP 16 recipe, ranked by a toy predictor
    that favours no EP (the top pick: ep 1), given the published runs to back a claim with."""
    published = pd.DataFrame([{**{f"config.{k}": v for k, v in RECIPE.items()}, "label": "a recipe",
                               "measured_tokens_per_s_per_device": 1000.0, "config.framework": "megatron-lm"}])
    no_ep = Scorer(Formula(lambda X: 1000.0 / X["config.ep"].to_numpy(dtype=float)))

    def run(placements):
        runs = pd.DataFrame({"model": "olmoe-1b-7b", "placement": placements, "dispatcher": None})
        return plan("olmoe-1b-7b", Cluster(gpus=16, accelerator=H100), seq_len=4096, global_batch=64,
                    framework="megatron-lm", scorer=no_ep, published=published, runs=runs)
    return run


def test_a_gain_over_an_ep_recipe_no_published_run_backs_is_not_claimed(leaves_ep):
    p = leaves_ep(["EP inside one NVLink domain", "EP across NVLink domains"])
    base = p.baselines.iloc[0]
    assert int(p.layouts["ep"].iloc[0]) == 1 and int(base["ep"]) == 16
    assert base["gain"] == pytest.approx(16.0 ** shrinkage.SHRINK["moe"] - 1) and base["gain_low"] > 0
    assert base["claim"] == "unbacked: no published run of olmoe-1b-7b has no EP"
    text = report.table(p)
    assert ("  not claimed beaten: no published run of olmoe-1b-7b has no EP, and the predictor errs most on "
            "expert-parallel layouts; measure the top pick before taking the gain") in text
    assert report.records(p, 1)[-1]["claim"] == base["claim"]


def test_a_gain_over_an_ep_recipe_a_published_run_of_the_picks_structure_backs_is_claimed(leaves_ep):
    p = leaves_ep(["no EP"])
    assert p.baselines.iloc[0]["claim"] == "claimed" and "not claimed beaten" not in report.table(p)


def test_the_recipes_stated_dispatcher_must_be_the_picks_in_the_backing_run():
    runs = pd.DataFrame({"model": ["m", "m"], "placement": ["EP inside one NVLink domain"] * 2,
                         "dispatcher": [None, "alltoall"]})
    recipe = {"ep": 16, "moe_dispatcher": "deepep"}
    assert claims.verdict((0.3, 0.1, 0.6), {"ep": 8, "etp": 1, "moe_dispatcher": "alltoall"}, recipe, "m", 8,
                          runs) == "claimed"
    assert claims.verdict((0.3, 0.1, 0.6), {"ep": 8, "etp": 1, "moe_dispatcher": "flex"}, recipe, "m", 8, runs) == (
        "unbacked: no published run of m has EP inside one NVLink domain with the flex dispatcher")
    assert claims.verdict((-0.3, -0.5, -0.1), {"ep": 1}, recipe, "m", 8, runs) == "slower"


def test_a_gain_resting_on_a_dispatch_overlap_the_recipe_does_not_state_needs_a_run_that_overlaps():
    """Same EP degree, the pick turns the A2A overlap on: it leaves the recipe's dispatch, and only a published run
    of the model stating that overlap backs the gain."""
    runs = pd.DataFrame({"model": ["m"], "placement": ["EP inside one NVLink domain"], "dispatcher": [None],
                         "overlaps": [()]})
    pick, recipe = {"ep": 8, "etp": 1, "moe_a2a_overlap": True}, {"ep": 8}
    assert claims.left(pick, recipe) == "its dispatch without the A2A overlap"
    assert claims.verdict((0.3, 0.1, 0.6), pick, recipe, "m", 8, runs) == (
        "unbacked: no published run of m has EP inside one NVLink domain and the A2A overlap")
    runs.at[0, "overlaps"] = ("moe_a2a_overlap",)
    assert claims.verdict((0.3, 0.1, 0.6), pick, recipe, "m", 8, runs) == "claimed"
    assert claims.overlaps({"config.moe_a2a_overlap": "true"}, "config.") == ("moe_a2a_overlap",)


def test_without_the_published_tables_a_gain_that_leaves_ep_is_unbacked_and_says_why():
    """The tests run without the external data: nothing can back the claim, and the verdict names the tables."""
    assert claims.verdict((0.3, 0.1, 0.6), {"ep": 1}, {"ep": 16}, "m", 8) == (
        "unbacked: no published tables (published-llm) here to find a run of m with no EP")
