"""Scoring inside slots (perfzoo.evaluation.slots): one model's layouts on one cluster."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfzoo.evaluation import slots as S

ROWS = pd.DataFrame({"config.model_name": "m", "config.n_gpus": 8, "config.global_batch_size": 64,
                     "config.seq_len": 4096, "hardware.accelerator": "H100",
                     "config.tp": [1, 2, 4, 8, 1, 2], "config.release": ["a"] * 4 + ["b"] * 2})


def test_repeats_of_a_layout_are_one_layout_at_their_medians():
    slots, layouts = S.slot_labels(ROWS), S.layout_labels(ROWS)
    assert len(set(slots)) == 1 and len(set(layouts)) == 4  # the release is no layout knob
    # tp1 ran at 100 and 120 (median 110), tp2 at 90 and 70 (80); predicted in the right order
    scores = S.slot_scores([100, 90, 60, 40, 120, 70], [10, 9, 6, 4, 10, 9], slots, layouts)
    row = scores.iloc[0]
    assert row["layouts"] == 4 and row["kendall"] == pytest.approx(1.0)
    assert row["spread"] == pytest.approx((10 / 4) / (110 / 40)) and row["regret"] == 0.0


def test_a_predictor_that_prices_every_layout_alike_orders_nothing():
    slots, layouts = S.slot_labels(ROWS), S.layout_labels(ROWS)
    flat = S.slot_scores([100, 90, 60, 40, 120, 70], [5.0] * 6, slots, layouts).iloc[0]
    assert flat["kendall"] == 0.0 and flat["spread"] == pytest.approx(40 / 110)
    # a tie at the top is broken at random: the expected regret over the four layouts
    assert flat["regret"] == pytest.approx(1 - np.mean([110, 80, 60, 40]) / 110)


def test_slots_with_fewer_layouts_or_other_settings_are_apart():
    two = ROWS.iloc[:2]
    assert S.slot_scores([100, 90], [1, 2], S.slot_labels(two), S.layout_labels(two)).empty
    other = ROWS.assign(**{"config.global_batch_size": [64, 64, 64, 128, 128, 128]})
    assert len(set(S.slot_labels(other))) == 2
    summary = S.summary(S.slot_scores([100, 90, 60, 40, 120, 70], [3, 2, 1, 3, 2, 1], S.slot_labels(other),
                                      S.layout_labels(other)))
    assert summary["slots"] == 2  # batch 64: tp 1, 2, 4; batch 128: tp 8, 1, 2
    assert S.summary(S.slot_scores([], [], [], []))["slots"] == 0


def test_only_frames_of_layouts_have_slots():
    assert S.of_frame(pd.DataFrame({"config.width": [1024], "config.local_batch": [8]})) is None
    slots, layouts = S.of_frame(ROWS)
    assert len(slots) == len(ROWS) == len(layouts)
    metrics = S.slot_metrics([100, 90, 60, 40, 120, 70], [10, 9, 6, 4, 10, 9], slots, layouts, absolute=False)
    assert metrics["slot_kendall"] == pytest.approx(1.0) and np.isnan(metrics["slot_spread"])
