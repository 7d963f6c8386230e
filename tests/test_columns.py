"""Columns, the light frame of arrays: constants held once, read by cost models as a frame; the
codec builds them from index rows as its frames would be, and enumerates the grid in order."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfzoo import analytic
from perfzoo.plan.layouts import Cluster, layout_space
from perfzoo.plan.planner import resolve_model
from perfzoo.records.columns import Columns, repeat_to
from perfzoo.spaces import get
from perfzoo.spaces.codec import SpaceCodec
from perfzoo.zoo import analytic_features
from perfzoo.zoo.analytic_features import estimates


def test_constants_broadcast_and_rows_select():
    cols = Columns({"config.tp": np.array([1, 2, 4, 8]), "config.precision": pd.Categorical(["bf16"]),
                    "config.n_gpus": np.array([8])}, 4)
    assert len(cols) == 4 and cols.is_constant("config.n_gpus") and not cols.is_constant("config.tp")
    assert cols["config.n_gpus"].tolist() == [8]  # a cost model reads the one value; it broadcasts
    assert cols.full("config.precision").tolist() == ["bf16"] * 4
    some = cols.loc[np.array([True, False, True, False])]
    assert len(some) == 2 and some.values("config.tp").tolist() == [1, 4] and some.is_constant("config.n_gpus")
    frame = cols.to_frame()
    assert frame.shape == (4, 3) and frame["config.n_gpus"].tolist() == [8] * 4
    again = cols.reindex(["config.n_gpus", "config.absent", "config.tp"])
    assert again.columns == ["config.n_gpus", "config.absent", "config.tp"] and again.is_constant("config.absent")
    assert np.isnan(again.full("config.absent")).all() and again.values("config.tp") is cols.values("config.tp")
    with pytest.raises(ValueError, match="3 values for 4 rows"):
        Columns({"config.tp": np.array([1, 2, 3])}, 4)
    assert repeat_to(np.array([2.5]), 3).tolist() == [2.5] * 3


def test_a_frame_is_wrapped_without_copies():
    frame = pd.DataFrame({"config.tp": [1, 2], "config.precision": pd.Categorical(["bf16", "fp8"]),
                          "hardware.accelerator": ["H100", None]}, index=[10, 11])
    cols = Columns.of(frame)
    assert cols["config.tp"] is frame["config.tp"] or cols["config.tp"].equals(frame["config.tp"])
    assert np.shares_memory(cols.values("config.tp"), frame["config.tp"].to_numpy())
    assert isinstance(cols.values("config.precision"), pd.Categorical)
    assert cols.index.tolist() == [10, 11]


def plan_codec() -> tuple[SpaceCodec, dict]:
    cluster = Cluster(gpus=64, accelerator="H100-SXM-80GB")
    space = layout_space(resolve_model("llama3-8b"), cluster, seq_len=8192, global_batch=256,
                         precisions=("bf16", "fp8"))
    return SpaceCodec(space), cluster.hardware()


@pytest.mark.parametrize("space", ["fsdp-ads-v3", "llm-small", "plan"])
def test_codec_columns_are_its_frame_and_price_the_same(space):
    codec, fixed = plan_codec() if space == "plan" else (SpaceCodec(get(space)), {"hardware.accelerator": "cpu"})
    idx = codec.sample(500, seed=3)
    cols = codec.columns(idx, fixed=fixed)
    frame = codec.frame(idx, fixed=fixed)
    assert cols.columns == list(frame.columns)
    for c in cols.columns:
        v = cols.full(c)
        assert list(np.asarray(v, dtype=object)) == list(frame[c].astype(object)), c
    # the constants (and the fixed hardware) are held once
    assert cols.is_constant("hardware.accelerator")
    assert space == "llm-small" or any(cols.is_constant(c) for c in cols.columns if c.startswith("config."))
    # the cost models read the light columns as they read the frame, to the last bit
    light, full = estimates(cols), analytic.estimate_arrays(frame)
    if space == "fsdp-ads-v3":  # its cost model broadcasts the constants: they are priced once, not per row
        assert frozenset(c for c in cols.columns if cols.is_constant(c)) not in analytic_features._NO_BROADCAST
    for k in full:
        np.testing.assert_array_equal(light[k], full[k], err_msg=k)
    # ... and as they read a frame of the complete configs (each built by the space's own Python)
    configs = pd.DataFrame([{f"config.{k}": v for k, v in c.items()} | fixed for c in codec.configs(idx)])
    from_configs = analytic.estimate_arrays(configs[list(frame.columns)])
    for k in full:
        np.testing.assert_array_equal(light[k], from_configs[k], err_msg=k)


@pytest.mark.parametrize("space", ["fsdp-ads-v3", "llm-small"])
def test_all_indices_enumerates_the_grid_in_key_order(space):
    codec = SpaceCodec(get(space))
    rng = np.random.default_rng(0)
    for _ in range(50):
        start = int(rng.integers(0, codec.size))
        stop = start + int(rng.integers(1, 70_000))
        idx = codec.all_indices(start, stop)
        assert (codec.keys(idx) == np.arange(start, min(stop, codec.size))).all()
    assert codec.all_indices(codec.size, codec.size + 5).shape == (0, len(codec.names))
