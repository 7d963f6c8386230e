"""Each split keeps its promise, on synthetic frames with traps and on the real datasets."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from perfzoo.datasets import load_dataset
from perfzoo.evaluation import splits as S


def _toy(n: int = 200, seed: int = 0) -> SimpleNamespace:
    """A dataset-like object: duplicates, many rows per timestamp, scales 1..16."""
    rng = np.random.default_rng(seed)
    days = rng.integers(0, 12, n)  # only 12 distinct times: ties everywhere
    frame = pd.DataFrame({
        "config_key": [f"c{v}" for v in rng.integers(0, n // 3, n)],  # ~3 rows per config
        "started_at": pd.Timestamp("2024-01-01", tz="UTC") + pd.to_timedelta(days, unit="D"),
        "config.n_gpus": rng.choice([1, 2, 4, 8, 16], n),
        "source": rng.choice(["a", "b", "c"], n),
        "status": rng.choice(["ok", "ok", "ok", "oom"], n),
    })
    return SimpleNamespace(frame=frame, duplicate_key="config_key", time_column="started_at",
                           scale_column="config.n_gpus", scale_threshold=4)


def _partition(split, n):
    both = np.concatenate([split.train, split.test])
    assert np.intersect1d(split.train, split.test).size == 0
    return np.sort(both)


@pytest.mark.parametrize("seed", range(6))
def test_random_keeps_duplicates_on_one_side(seed):
    ds = _toy(seed=seed)
    sp = S.random_split(ds, seed)
    assert np.array_equal(_partition(sp, len(ds.frame)), np.arange(len(ds.frame)))
    keys = ds.frame["config_key"].to_numpy()
    assert not set(keys[sp.train]) & set(keys[sp.test])
    assert 0.18 <= sp.test.size / len(ds.frame) <= 0.32


def test_random_differs_by_seed_and_repeats_by_seed():
    ds = _toy()
    a, b, a2 = S.random_split(ds, 0), S.random_split(ds, 1), S.random_split(ds, 0)
    assert np.array_equal(a.test, a2.test)
    assert not np.array_equal(a.test, b.test)


def test_temporal_has_no_time_leak_even_with_ties():
    ds = _toy()
    sp = S.temporal_split(ds)
    t = ds.frame["started_at"]
    assert t.iloc[sp.train].max() < t.iloc[sp.test].min()
    assert pd.Timestamp(sp.info["cut"]) == t.iloc[sp.test].min()  # the cut is the first test time
    assert np.array_equal(_partition(sp, len(ds.frame)), np.arange(len(ds.frame)))
    assert 0.6 <= sp.train.size / len(ds.frame) <= 0.9


def test_temporal_refuses_a_single_timestamp():
    ds = _toy()
    ds.frame["started_at"] = pd.Timestamp("2024-01-01", tz="UTC")
    with pytest.raises(S.SplitNotApplicable, match="share one"):
        S.temporal_split(ds)


def test_scale_has_no_scale_leak():
    ds = _toy()
    sp = S.scale_split(ds)
    g = ds.frame["config.n_gpus"].to_numpy()
    assert g[sp.train].max() <= 4 < g[sp.test].min()
    with pytest.raises(S.SplitNotApplicable):
        S.scale_split(SimpleNamespace(frame=ds.frame, scale_column=None, scale_threshold=None))


def test_group_holds_each_value_out():
    ds = _toy()
    splits = S.group_splits(ds, "source")
    assert [s.fold for s in splits] == ["a", "b", "c"]
    src = ds.frame["source"].to_numpy()
    for s in splits:
        assert set(src[s.test]) == {s.fold} and s.fold not in set(src[s.train])


def test_curve_is_nested_eligible_and_disjoint_from_test():
    ds = _toy(n=400)
    ok = (ds.frame["status"] == "ok").to_numpy()
    splits = S.curve_splits(ds, sizes=(25, 50, 100), seeds=range(3))
    assert sorted({s.seed for s in splits}) == [0, 1, 2]
    for seed in range(3):
        by_n = {int(s.fold): s for s in splits if s.seed == seed}
        assert set(by_n) == {25, 50, 100}
        assert set(by_n[25].train) <= set(by_n[50].train) <= set(by_n[100].train)
        for n, s in by_n.items():
            assert s.train.size == n and ok[s.train].all()
            assert np.intersect1d(s.train, s.test).size == 0


def test_make_splits_repeats_deterministic_splits_per_seed():
    ds = _toy()
    temporal = S.make_splits(ds, "temporal", seeds=range(3))
    assert [s.seed for s in temporal] == [0, 1, 2]
    assert all(np.array_equal(s.test, temporal[0].test) for s in temporal)
    with pytest.raises(ValueError, match="unknown split"):
        S.make_splits(ds, "bogus")


# --- the real datasets --------------------------------------------------------------------


@pytest.mark.external
def test_real_vtrain_scale_and_random():
    ds = load_dataset("vtrain-a100")
    sp = S.scale_split(ds)
    scale = pd.to_numeric(ds.frame[ds.scale_column]).to_numpy()
    assert scale[sp.train].max() <= ds.scale_threshold < scale[sp.test].min()
    with pytest.raises(S.SplitNotApplicable):
        S.temporal_split(ds)  # one timestamp for all rows
    rs = S.random_split(ds, 3)
    keys = ds.frame[ds.duplicate_key].to_numpy()
    assert not set(keys[rs.train]) & set(keys[rs.test])


@pytest.mark.external
def test_real_published_llm_temporal_and_duplicates():
    ds = load_dataset("published-llm")
    sp = S.temporal_split(ds)
    t = pd.to_datetime(ds.frame[ds.time_column], utc=True)
    assert t.iloc[sp.train].max() < t.iloc[sp.test].min()
    assert pd.Timestamp(sp.info["cut"]) == t.iloc[sp.test].min()
    keys = ds.frame[ds.duplicate_key]
    assert keys.duplicated().any(), "published-llm should hold re-published configurations"
    for seed in range(5):
        rs = S.random_split(ds, seed)
        k = keys.to_numpy()
        assert not set(k[rs.train]) & set(k[rs.test])


def _nodes_frame(nodes) -> SimpleNamespace:
    frame = pd.DataFrame({"config_key": [f"c{i}" for i in range(len(nodes))], "hardware.nodes": nodes,
                          "status": "ok"})
    return SimpleNamespace(frame=frame, duplicate_key="config_key")


def test_node_split_trains_within_a_node_and_tests_across_nodes():
    ds = _nodes_frame([1, 1, 2, 8, None, 1, 64])
    sp = S.node_split(ds)
    assert sp.kind == sp.name == "node" and sp.name in S.TRANSFER_SPLITS
    assert sp.train.tolist() == [0, 1, 5] and sp.test.tolist() == [2, 3, 6]
    assert sp.info["unknown_node_rows"] == 1  # neither side
    assert [s.seed for s in S.make_splits(ds, "node", seeds=range(3))] == [0, 1, 2]  # deterministic rows
    with pytest.raises(S.SplitNotApplicable, match="0 multi-node"):
        S.node_split(_nodes_frame([1, 1, 1]))


def test_shots_draw_whole_configurations_by_seed():
    ds = _toy(n=90)
    keys = ds.frame["config_key"].to_numpy()
    a, a2, b = S.shots_split(ds, 3, seed=0), S.shots_split(ds, 3, seed=0), S.shots_split(ds, 3, seed=1)
    assert np.array_equal(a.train, a2.train) and not np.array_equal(a.train, b.train)
    assert len(set(keys[a.train])) == 3 and not set(keys[a.train]) & set(keys[a.test])  # every copy on one side
    assert np.array_equal(_partition(a, 90), np.arange(90))
    assert S.shots_split(ds, 0, seed=0).train.size == 0
    with pytest.raises(S.SplitNotApplicable, match="leave no test rows"):
        S.shots_split(ds, len(set(keys)), seed=0)

