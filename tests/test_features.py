"""Feature encodings and target transforms: fitted once, consistent on any later frame."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfzoo.zoo.analytic_features import ANALYTIC_FEATURES, n_devices
from perfzoo.zoo.features import ENCODINGS, FeatureEncoder
from perfzoo.zoo.targets import TargetTransform


def frame(n: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "config.n_layers": rng.choice([12, 24, 48], n),
        "config.hidden_dim": rng.choice([1024, 2048, 4096], n),
        "config.n_heads": 16,
        "config.seq_len": rng.choice([1024, 2048], n),
        "config.global_batch_size": rng.choice([16, 32, 64], n),
        "config.micro_batch_size": rng.choice([1, 2, 4], n),
        "config.n_gpus": 8,
        "config.tp": rng.choice([1, 2], n),
        "config.precision": rng.choice(["bf16", "fp32"], n),
        "config.activation_checkpointing": rng.choice(["none", "full", None], n),
        "config.compile": rng.choice([True, False], n),
        "hardware.accelerator": rng.choice(["A100-80GB", "H100-80GB"], n),
        "metrics.throughput": rng.uniform(1e3, 1e5, n),  # never a feature
    })


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_fitted_encoding_is_consistent_on_new_frames(encoding):
    X = frame()
    enc = FeatureEncoder(encoding).fit(X)
    Z = enc.transform(X)
    assert Z.shape == (len(X), len(enc.feature_names_))
    assert not any("metrics." in f for f in enc.feature_names_)
    # a single row encodes exactly as it does inside the full frame
    one = enc.transform(X.iloc[[7]])
    if encoding == "native":
        pd.testing.assert_frame_equal(one, Z.iloc[[7]])
    else:
        np.testing.assert_array_equal(one, Z[[7]])
    # reordered / extra columns change nothing
    shuffled = X[X.columns[::-1]].assign(extra=1)
    again = enc.transform(shuffled)
    if encoding == "native":
        pd.testing.assert_frame_equal(again, Z)
    else:
        np.testing.assert_array_equal(again, Z)


def test_native_categories_and_unseen_values():
    X = frame()
    enc = FeatureEncoder("native").fit(X)
    Z = enc.transform(X)
    assert isinstance(Z["config.precision"].dtype, pd.CategoricalDtype)
    assert list(Z["config.precision"].cat.categories) == ["bf16", "fp32"]
    assert list(Z["config.compile"].cat.categories) == ["False", "True"]  # booleans are categorical
    new = X.iloc[:2].assign(**{"config.precision": "fp8", "hardware.accelerator": "B200"})
    Zn = enc.transform(new)
    assert Zn["config.precision"].isna().all() and Zn["hardware.accelerator"].isna().all()
    # ... and the categories stay the fitted ones, so a tree model sees the same codes
    assert list(Zn["config.precision"].cat.categories) == ["bf16", "fp32"]


def test_onehot_unseen_is_all_zeros_and_many_values_are_binned():
    X = frame(200)
    X["config.memory_budget_gib"] = np.linspace(10, 80, 200)  # 200 distinct values -> quantile bins
    enc = FeatureEncoder("onehot", max_onehot=8).fit(X)
    budget = [f for f in enc.feature_names_ if f.startswith("config.memory_budget_gib=")]
    assert len(budget) == 8
    Z = enc.transform(X)
    assert (Z[:, [enc.feature_names_.index(f) for f in budget]].sum(axis=1) == 1).all()
    new = enc.transform(X.iloc[:1].assign(**{"config.precision": "fp8", "config.n_layers": 7}))
    prec = [enc.feature_names_.index(f) for f in enc.feature_names_ if f.startswith("config.precision=")]
    layers = [enc.feature_names_.index(f) for f in enc.feature_names_ if f.startswith("config.n_layers=")]
    assert new[0, prec].sum() == 0 and new[0, layers].sum() == 0
    assert not any(f.startswith("analytic.") for f in enc.feature_names_)  # the paper's input: configs only


def test_log_sizes_and_analytic_columns():
    X = frame()
    enc = FeatureEncoder("native").fit(X)
    assert "log.config.hidden_dim" in enc.feature_names_
    Z = enc.transform(X)
    np.testing.assert_allclose(Z["log.config.hidden_dim"], np.log2(X["config.hidden_dim"]))
    for col in ("analytic.log_flops_per_token", "analytic.log_throughput", "analytic.log_memory_bytes",
                "analytic.bubble", "analytic.log1p_comm_tp_bytes"):
        assert col in enc.feature_names_ and col in ANALYTIC_FEATURES
    assert np.isfinite(Z["analytic.log_throughput"]).all()
    assert not any(f.startswith("analytic.") for f in FeatureEncoder("native", analytic=False).fit(X).feature_names_)


def test_scaled_is_standardised_and_numeric_fills_missing():
    X = frame()
    Z = FeatureEncoder("scaled").fit_transform(X)
    assert np.isfinite(Z).all()
    np.testing.assert_allclose(Z.mean(axis=0), 0, atol=1e-9)
    X2 = X.copy()
    X2.loc[0, "config.tp"] = np.nan
    enc = FeatureEncoder("numeric").fit(X2)
    Z2 = enc.transform(X2)
    assert Z2.dtype == np.float32 and np.isfinite(Z2).all()
    assert Z2[0, enc.feature_names_.index("config.tp")] == np.nanmedian(X2["config.tp"])


def test_missing_optional_column_is_unknown_but_a_required_one_raises():
    X = frame()
    for encoding in ENCODINGS:
        enc = FeatureEncoder(encoding).fit(X)
        out = enc.transform(X.drop(columns=["hardware.accelerator", "config.precision"]))
        assert len(out) == len(X)
        with pytest.raises(ValueError, match="config.hidden_dim"):
            enc.transform(X.drop(columns=["config.hidden_dim"]))


def test_constant_and_empty_columns():
    X = frame().assign(**{"config.vocab_size": None})
    enc = FeatureEncoder("scaled").fit(X)
    assert "config.vocab_size" not in enc.input_columns_  # never had a value
    assert "config.n_heads" in enc.input_columns_          # constant: kept, harmless
    assert np.isfinite(enc.transform(X)).all()


def test_bad_input_names_the_fix():
    with pytest.raises(ValueError, match="encoding"):
        FeatureEncoder("embedding")
    with pytest.raises(TypeError, match="DataFrame"):
        FeatureEncoder().fit(np.zeros((3, 2)))
    with pytest.raises(RuntimeError, match="fit"):
        FeatureEncoder().transform(frame())


@pytest.mark.parametrize("kind", ["raw", "log", "per_device", "log_per_device", "log_ratio"])
def test_target_transforms_round_trip(kind):
    X = frame().assign(**{"config.n_gpus": np.tile([2, 8], 20)})
    y = X["metrics.throughput"].to_numpy()
    t = TargetTransform(kind).fit(y, X)
    np.testing.assert_allclose(t.inverse(t.transform(y, X), X), y, rtol=1e-10)


def test_log_ratio_picks_the_unit_of_the_target():
    X = frame().assign(**{"config.n_gpus": np.tile([2, 8], 20)})
    from perfzoo.analytic import throughput

    glob = throughput(X).to_numpy() * 0.4
    assert TargetTransform("log_ratio").fit(glob, X).per_device_ is False
    assert TargetTransform("log_ratio").fit(glob / X["config.n_gpus"].to_numpy(), X).per_device_ is True
    # the residual of an exactly-proportional target is constant
    t = TargetTransform("log_ratio").fit(glob, X)
    np.testing.assert_allclose(t.transform(glob, X), np.log(0.4))


@pytest.mark.parametrize("kind", ["log_ratio", "log_roofline_ratio"])
def test_the_unit_is_told_apart_when_every_training_job_ran_on_one_device_count(kind):
    """Eight GPUs everywhere: the spread of the log-ratio is the same in both units, so the
    efficiency decides (per-device tokens/s over a global ideal would be 5% efficient)."""
    X = frame().assign(**{"config.n_gpus": 8})
    from perfzoo.analytic import throughput

    glob = throughput(X).to_numpy() * 0.4
    assert TargetTransform(kind).fit(glob, X).per_device_ is False
    assert TargetTransform(kind).fit(glob / 8, X).per_device_ is True
    big = X.assign(**{"config.n_gpus": 64})
    per_device = TargetTransform(kind).fit(glob / 8, X)
    # a 64-GPU job's per-device prediction stays near its own ideal x the efficiency, not 8x over
    ratio = per_device.inverse(np.zeros(len(big)), big) / (throughput(big).to_numpy() / 64)
    assert np.all((ratio > 0.1) & (ratio <= 1.0 + 1e-9))


def test_n_devices_falls_back_to_one():
    assert n_devices(pd.DataFrame({"hardware.accelerator_count": [4, None]})).tolist() == [4.0, 1.0]



# --- the fast path: a space's configs as columns of arrays, encoded as today's frames are --------

def _space_inputs(dataset: str, space: str, n: int = 400):
    from perfzoo.datasets import load_dataset
    from perfzoo.search.command import fixed_columns
    from perfzoo.spaces import get
    from perfzoo.spaces.codec import SpaceCodec

    ds = load_dataset(dataset)
    codec = SpaceCodec(get(space))
    fixed = fixed_columns(ds, codec.knob_columns(), [])
    idx = codec.sample(n, seed=5)
    light = codec.columns(idx, list(ds.feature_columns), fixed)
    # today's path: the complete configs (each built by the space's own Python) as a DataFrame
    configs = pd.DataFrame([{f"config.{k}": v for k, v in c.items()} | fixed for c in codec.configs(idx)])
    return ds, light, configs[light.columns]


@pytest.mark.parametrize("dataset,space", [("fsdp-cpu", "fsdp-ads-v3"), ("llm-cpu", "llm-small")])
def test_space_columns_encode_as_frames_of_the_configs(dataset, space):
    ds, light, frame = _space_inputs(dataset, space)
    assert any(light.is_constant(c) for c in light.columns)  # the fixed hardware, held once
    X = ds.ok().X
    for encoding in ENCODINGS:
        enc = FeatureEncoder(encoding).fit(X)
        fast, slow = enc.transform(light), enc.transform(frame)
        if encoding == "native":
            pd.testing.assert_frame_equal(fast, slow)
            np.testing.assert_array_equal(enc.matrix(light), enc.matrix(frame))
            # the matrix is what LightGBM reads from the frame: categories as codes, NaN unseen
            cats = enc.categorical_features_
            expected = slow.assign(**{c: slow[c].cat.codes.replace(-1, np.nan).astype(float) for c in cats})
            np.testing.assert_array_equal(enc.matrix(light), expected.to_numpy(dtype=float))
        else:
            np.testing.assert_array_equal(fast, slow)
        if encoding in ("numeric", "scaled"):
            w = np.random.default_rng(0).normal(size=len(enc.feature_names_))
            size = np.abs(slow.astype(float)) @ np.abs(w)  # rounding: of each term (float32 for numeric)
            tol = (1e-6 if encoding == "numeric" else 1e-12) * (size + 1.5)
            assert (np.abs(enc.linear(light, w, 1.5) - (slow.astype(float) @ w + 1.5)) <= tol).all()
    y = ds.ok().y
    for kind in ("log_ratio", "log_roofline_ratio"):
        t = TargetTransform(kind).fit(y, X)
        z = np.linspace(-1, 1, len(light))
        np.testing.assert_array_equal(t.inverse(z, light), t.inverse(z, frame))


def test_linear_is_the_standardised_matrix_times_the_weights_missing_values_included():
    enc = FeatureEncoder("scaled").fit(frame())
    Y = frame(12, seed=1)
    Y["config.seq_len"] = Y["config.seq_len"].astype(float)
    Y.loc[[2, 5], "config.seq_len"] = np.nan  # missing numbers (and the estimates they feed): training medians
    Y.loc[3, "config.precision"] = "fp8"  # an unseen category: no weight
    Y = Y.drop(columns="hardware.accelerator")  # an optional column absent: unknown on every row
    w = np.random.default_rng(1).normal(size=len(enc.feature_names_))
    Z = enc.transform(Y)
    assert Y["config.seq_len"].isna().sum() == 2
    np.testing.assert_allclose(enc.linear(Y, w, 0.3), Z @ w + 0.3, rtol=1e-12, atol=1e-9)
    with pytest.raises(ValueError, match="no linear form"):
        FeatureEncoder("native").fit(frame()).linear(Y, w)
