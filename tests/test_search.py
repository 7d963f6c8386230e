"""The searchers: REINFORCE finds a known optimum and beats random search at equal samples;
constraints are never violated; proposals exclude measured configs and duplicates; the
vectorised encodings agree with the space's own validation; the exhaustive fast path is exact."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd
import pytest

from perfzoo import zoo
from perfzoo.datasets import load_dataset
from perfzoo.records import JobRecord, job_id_for
from perfzoo.records.store import RecordStore
from perfzoo.search import SEARCHERS, TPE, Exhaustive, Formula, RandomSearch, Reinforce, make, propose
from perfzoo.spaces import Space, get
from perfzoo.spaces.codec import SpaceCodec
from perfzoo.testing import K, V, SearcherTestKit, check_searcher, toy_reward, toy_space

# --- the shared searcher kit, and a toy space with a known optimum (perfzoo.testing's) -------

KIT_SETTINGS = {"tpe": {"n_samples": 120}, "random": {"n_samples": 400}}  # quicker than the defaults


class TestEveryRegisteredSearcher(SearcherTestKit):
    """Every registered searcher keeps the contract of :class:`perfzoo.testing.SearcherTestKit`
    (a searcher added to ``perfzoo.search.SEARCHERS`` is tested here without another line)."""

    @pytest.fixture(params=sorted(SEARCHERS))
    def searcher(self, request):
        return make(request.param, **KIT_SETTINGS.get(request.param, {}))


def test_check_searcher_is_the_kit_as_a_function():
    check_searcher(RandomSearch(n_samples=400))

    class Careless(RandomSearch):  # forgets the exclusions
        def propose(self, objective, top_k, exclude=None):
            return super().propose(objective, top_k)

    with pytest.raises(AssertionError, match="proposed an excluded config"):
        check_searcher(Careless(n_samples=6000))


def test_reinforce_finds_the_optimum_in_most_seeds_and_beats_random():
    space, f = toy_space(), toy_reward()
    truth = propose(Exhaustive(), space, f, top_k=1)
    assert truth.stats["valid"] == V ** K - V ** (K - 2)
    opt_key, opt = truth.keys[0], truth.predicted[0]
    seeds = range(8)
    rl_hits = rd_hits = 0
    rl_best, rd_best = [], []
    for s in seeds:
        r = propose(Reinforce(seed=s), space, f, top_k=1)  # the paper's settings: 3 x 2000 samples, batch 30, lr 0.01
        assert r.stats["sampled"] == 3 * 2000 + 3
        rl_hits += int(r.keys[0] == opt_key)
        rl_best.append(r.predicted[0] / opt)
        q = propose(RandomSearch(n_samples=3 * 2000, seed=s), space, f, top_k=1)  # equal samples
        rd_hits += int(q.keys[0] == opt_key)
        rd_best.append(q.predicted[0] / opt)
    assert rl_hits >= 6, (rl_hits, rl_best)
    assert rl_hits > rd_hits
    assert np.mean(rl_best) > np.mean(rd_best)


def test_reinforce_learns_away_from_uniform_and_pools_restarts():
    space, f = toy_space(), toy_reward()
    r = propose(Reinforce(n_samples=600), space, f, top_k=10)
    assert r.history.shape == (3, 20)
    # mean batch reward rises as the policies learn
    assert r.history[:, -5:].mean() > r.history[:, :5].mean()
    assert len(r.stats["best_reward_per_restart"]) == 3
    assert r.stats["final_entropy"] < K * np.log(V)
    assert len(set(r.keys.tolist())) == 10


# --- constraints ----------------------------------------------------------------------------

def test_codec_validity_and_derived_keys_match_the_space():
    space = get("llm-small")
    codec = SpaceCodec(space)
    rng = np.random.default_rng(0)
    raw = rng.integers(0, codec.cards, size=(3000, len(codec.names)))
    mask = codec.valid(raw)
    configs = [{n: codec.values[i][j] for i, (n, j) in enumerate(zip(codec.names, row))} for row in raw.tolist()]
    assert mask.tolist() == [space.is_valid(c) for c in configs]
    assert 0 < mask.mean() < 1
    good = raw[mask][:50]
    frame = codec.frame(good, categorical=False)
    for (_, row), cfg in zip(frame.iterrows(), codec.configs(good)):
        for k, v in cfg.items():
            assert row[f"config.{k}"] == v
    assert (codec.decode(codec.keys(good)) == good).all()
    assert (codec.index_of(codec.configs(good)) == good).all()


def test_searchers_never_propose_configs_that_violate_constraints():
    space = get("llm-small")

    greedy = Formula(lambda X: (X["config.n_heads"].to_numpy() * X["config.micro_batch_size"].to_numpy()  # rewards
                                * X["config.seq_len"].to_numpy() / X["config.n_kv_heads"].to_numpy()))  # the forbidden corners

    r = propose(Reinforce(n_samples=600, seed=1), space, greedy, top_k=30)
    assert r.stats["invalid"] > 0  # it did try invalid configs, and was penalised
    results = [r, propose(RandomSearch(n_samples=500, seed=1), space, greedy, top_k=30),
               propose(TPE(n_samples=90, seed=1), space, greedy, top_k=10),
               propose(Exhaustive(), space, greedy, top_k=30)]
    for res in results:
        assert len(res) > 0
        for cfg in res.configs:
            assert space.validate(cfg) == cfg
    # exhaustive is the ground truth: nothing valid scores higher than its best
    assert r.predicted[0] <= results[-1].predicted[0] + 1e-9


# --- exclusion and duplicates ---------------------------------------------------------------

def _fsdp_records(n: int, seed: int = 0) -> list[JobRecord]:
    space = get("fsdp-ads")
    configs = space.sample(n, seed=seed)
    rng = np.random.default_rng(seed)
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    out = []
    for i, cfg in enumerate(configs):
        fast = sum(cfg[f"shard_{j:02d}"] == "NO_SHARD" for j in range(11))
        oom = cfg["memory_budget_gib"] is not None and cfg["memory_budget_gib"] < 0.37 and cfg["local_batch"] >= 128
        qps = cfg["local_batch"] * (10 + fast) * float(rng.uniform(0.9, 1.1))
        hw = {"accelerator": "cpu", "accelerator_count": 2}
        out.append(JobRecord(
            job_id=job_id_for("fsdp", cfg, hw), sweep_id="test", source="measured", provenance="test",
            started_at=t0 + timedelta(seconds=i), ended_at=t0 + timedelta(seconds=i + 1),
            status="oom" if oom else "ok", failure={"kind": "oom"} if oom else None, workload="fsdp",
            config=cfg, hardware=hw,
            metrics={} if oom else {"throughput": qps, "throughput_unit": "queries/s", "throughput_stat": "p90"}))
    return out


def test_proposals_exclude_measured_configs_and_duplicates():
    space, f = toy_space(), toy_reward()
    best = propose(Exhaustive(), space, f, top_k=20)
    measured = best.configs[:10]  # the 10 best are "already measured"
    for searcher in (Reinforce(seed=3), Exhaustive(), RandomSearch(n_samples=3000, seed=3)):
        res = propose(searcher, space, f, top_k=20, exclude=measured)
        keys = res.keys.tolist()
        assert len(keys) == 20 == len(set(keys))
        assert not set(keys) & set(best.keys[:10].tolist())
        assert res.stats["excluded_known"] == 10
    ex = propose(Exhaustive(), space, f, top_k=10, exclude=measured)
    assert ex.keys.tolist() == best.keys[10:20].tolist()  # the next 10, in order


def test_exhaustive_tree_path_is_exact_and_failure_weighted():
    # a 6-layer version of fsdp-ads: small enough to also score chunk by chunk
    full = get("fsdp-ads")
    dims = [d for d in full.dimensions if d.name in {f"shard_{i:02d}" for i in range(6)} | {"local_batch",
                                                                                              "memory_budget_gib"}]
    space = Space(name="fsdp-small", workload="fsdp", dimensions=dims,
                  constants={k: v for k, v in full.constants.items()} | {f"shard_{i:02d}": "FULL_SHARD"
                                                                         for i in range(6, 11)})
    records = _fsdp_records(200)
    codec = SpaceCodec(space)
    cols = [f"config.{n}" for n in codec.names]
    X = pd.DataFrame([{c: r.config[c[7:]] for c in cols} for r in records])
    y = np.array([r.metrics.throughput if r.status == "ok" else np.nan for r in records])
    model = zoo.make("lightgbm", n_estimators=60).fit(X[np.isfinite(y)], y[np.isfinite(y)])
    failure = zoo.make("failure", model="lightgbm", min_class_for_trees=5).fit(X, ~np.isfinite(y))
    fast = propose(Exhaustive(), space, model, top_k=15, failure=failure)
    slow = propose(Exhaustive(fast=False, chunk_size=4096), space, model, top_k=15, failure=failure)
    assert fast.stats["path"] == "treegrid" and slow.stats["path"] == "chunked"
    assert fast.stats["valid"] == slow.stats["valid"] == codec.size
    np.testing.assert_allclose(fast.reward, slow.reward, rtol=1e-9)
    np.testing.assert_allclose(fast.predicted, slow.predicted, rtol=1e-9)
    assert (fast.p_success < 1).any() and (fast.p_success > 0.5).all()
    # the logistic form of the failure classifier is additive over knobs: also exact
    logistic = zoo.make("failure", model="logistic").fit(X, ~np.isfinite(y))
    fast = propose(Exhaustive(), space, model, top_k=15, failure=logistic)
    slow = propose(Exhaustive(fast=False, chunk_size=4096), space, model, top_k=15, failure=logistic)
    assert fast.stats["path"] == "treegrid"
    np.testing.assert_allclose(fast.reward, slow.reward, rtol=1e-9)


class _OnFrames:
    """Today's path, kept as the reference: a fitted zoo model predicting from the DataFrame the
    codec builds (the objective hands a model that is no zoo predictor a frame)."""

    def __init__(self, model):
        self.model = model
        self.output, self.has_std, self.input_columns_ = model.output, model.has_std, model.input_columns_

    def predict(self, X):
        assert isinstance(X, pd.DataFrame)
        return self.model.predict(X)

    def predict_failure(self, X):
        assert isinstance(X, pd.DataFrame)
        return self.model.predict_failure(X)


def _v3_small() -> Space:
    """fsdp-ads-v3 with 6 sharding knobs (the rest FULL_SHARD): 32,805 configs."""
    full = get("fsdp-ads-v3")
    keep = {f"shard_{i:02d}" for i in range(6)} | {"local_batch", "tensor_budget_mib"}
    return Space(name="fsdp-v3-small", workload="fsdp", dimensions=[d for d in full.dimensions if d.name in keep],
                 constants=full.constants | {f"shard_{i:02d}": "FULL_SHARD" for i in range(6, 11)})


def test_searches_on_columns_propose_what_they_proposed_on_frames():
    from perfzoo.datasets import load_dataset
    from perfzoo.search.command import fixed_columns, measured_configs

    space = _v3_small()  # the fsdp-cpu models as the search command fits them
    ds = load_dataset("fsdp-cpu")
    ok = ds.ok()
    fixed = fixed_columns(ds, SpaceCodec(space).knob_columns(), [])
    measured = measured_configs(ds)
    failure = zoo.make("failure").fit(ds.frame[list(ds.feature_columns)], ds.failed)
    assert failure.kind_ == "lightgbm"
    for name in ("ridge", "lightgbm", "roofline"):
        model = zoo.make(name).fit(ok.X, ok.y)
        # the frames one chunk at a time; the columns also in threads (n_jobs=2), over other chunks
        for searcher, fast_searcher in ((Exhaustive(), Exhaustive(n_jobs=2, chunk_size=5000)),
                                        (Reinforce(seed=2, n_samples=300), Reinforce(seed=2, n_samples=300))):
            fast = propose(fast_searcher, space, model, 40, failure=failure, exclude=measured, fixed=fixed)
            slow = propose(searcher, space, _OnFrames(model), 40, failure=_OnFrames(failure), exclude=measured,
                           fixed=fixed)
            assert fast.keys.tolist() == slow.keys.tolist(), (name, searcher)
            np.testing.assert_allclose(fast.reward, slow.reward, rtol=1e-12)
            np.testing.assert_allclose(fast.predicted, slow.predicted, rtol=1e-12)


@pytest.mark.parametrize("mode", ["expected", "filter", "none"])
def test_exhaustive_with_a_failure_classifier_scores_it_only_where_it_can_matter(mode):
    from perfzoo.datasets import load_dataset
    from perfzoo.search import Objective
    from perfzoo.search.command import fixed_columns, measured_configs

    space = _v3_small()
    codec = SpaceCodec(space)
    ds = load_dataset("fsdp-cpu")
    # without a classifier, the roofline: it ignores the memory budget, so every prediction has 9 ties
    model = zoo.make("roofline" if mode == "none" else "ridge").fit(ds.ok().X, ds.ok().y)
    failure = None if mode == "none" else zoo.make("failure").fit(ds.frame[list(ds.feature_columns)], ds.failed)
    objective = Objective(codec, model, failure, fixed=fixed_columns(ds, codec.knob_columns(), []),
                          failure_mode="expected" if mode == "none" else mode)
    exclude = codec.keys_of(measured_configs(ds))
    found = Exhaustive(chunk_size=4096).propose(objective, 30, exclude)
    if failure is not None:
        assert 0 < found.stats["failure_scored"] < codec.size / 4  # P(success) of a few configs only
    else:
        assert len(np.unique(found.reward)) < len(found.reward)  # ties in the top 30, split across chunks
    # every config scored by both models, the best 30 not measured: the same configs, the same rewards
    idx = codec.all_indices()
    pred, ps, reward = objective.score(idx)
    keys = codec.keys(idx)
    order = [k for k in np.lexsort((-pred, -reward)) if keys[k] not in set(exclude.tolist())][:30]
    assert found.keys.tolist() == keys[order].tolist()
    np.testing.assert_array_equal(found.reward, reward[order])
    assert found.stats["max_reward"] == reward.max() and found.stats["max_predicted"] == np.nanmax(pred)
    assert found.stats["valid"] == int(codec.valid(idx).sum())


def test_proposals_file_runs_through_collect(tmp_path):
    from perfzoo.collect import cli as collect
    from perfzoo.search.cli import main

    store = RecordStore(tmp_path / "ds")
    store.extend(_fsdp_records(60, seed=1))
    out = tmp_path / "proposals.jsonl"
    rc = main(["--space", "fsdp-ads", "--dataset", str(tmp_path / "ds"), "--predictor", "lightgbm",
               "--top-k", "5", "--n-samples", "300", "--out", str(out)])
    assert rc == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 5 and [x["rank"] for x in lines] == [1, 2, 3, 4, 5]
    measured = {json.dumps(r.config, sort_keys=True) for r in store.records()}
    assert not {json.dumps(x["config"], sort_keys=True) for x in lines} & measured
    assert all(x["predicted"] > 0 and 0 <= x["p_success"] <= 1 for x in lines)
    assert collect.main(["--space", "fsdp-ads", "--configs", str(out), "--out", str(tmp_path / "run"),
                         "--dry-run"]) == 0


def test_search_cli_errors_are_one_line(capsys):
    from perfzoo.search.cli import main

    assert main(["--space", "no-such-space"]) == 2
    assert "unknown search space" in capsys.readouterr().err
    assert main(["--space", "fsdp-ads", "--predictor", "lightgbm"]) == 2
    assert "needs --dataset" in capsys.readouterr().err


def test_tpe_without_optuna_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "optuna", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r"pip install perfzoo\[search\]"):
        propose(TPE(n_samples=10), toy_space(), toy_reward(), top_k=1)


def test_run_from_python_returns_the_proposals(tmp_path):
    from perfzoo.search.command import SearchConfig, run

    out = tmp_path / "p.jsonl"
    result = run(SearchConfig(space="llm-small", dataset="llm-cpu", predictor="ridge", failure="none",
                              searcher="random", n_samples=300, top_k=3, out=str(out)))
    assert len(result) == 3 and result.space.name == "llm-small" and list(result.predicted) == sorted(result.predicted, reverse=True)
    assert result.stats["dataset"] == "llm-cpu" and result.stats["best_measured"] > 0
    assert [json.loads(line)["config"] for line in out.read_text().splitlines()] == result.configs


@pytest.mark.parametrize("fields, message", [
    ({"top_k": 0}, "--top-k must be at least 1"),
    ({"searcher": "annealing"}, "--searcher 'annealing': choose one of"),
    ({"searcher": "exhaustive", "n_samples": 100}, "--n-samples does not apply to --searcher exhaustive"),
    ({"fixed": ["hardware.accelerator"]}, "--set 'hardware.accelerator': expected COLUMN=VALUE"),
])
def test_a_bad_config_field_is_named(fields, message):
    from perfzoo.console import InputError
    from perfzoo.search.command import SearchConfig

    with pytest.raises(InputError, match=message):
        SearchConfig(space="llm-small", **fields)


def test_a_search_fitted_on_few_jobs_carries_a_caveat(tmp_path, capsys):
    from perfzoo.search.cli import main

    for n, caveat in ((6, True), (30, False)):
        store = RecordStore(tmp_path / f"ds{n}")
        store.extend(_fsdp_records(n, seed=2))
        assert main(["--space", "fsdp-ads", "--dataset", str(tmp_path / f"ds{n}"), "--predictor", "ridge",
                     "--failure", "none", "--searcher", "random", "--n-samples", "200", "--top-k", "2"]) == 0
        out = capsys.readouterr()
        said = [line for line in out.out.splitlines() if line.startswith("caveat: ")]
        ok = len(load_dataset(str(tmp_path / f"ds{n}")).ok())  # the jobs that ran (some records failed)
        if caveat:
            assert ok < 20 and said == [f"caveat: the predictor learned from {ok} measured jobs of ds{n} (under 20): "
                                        "its ranking and any gain over the best measured are a guess until measured; "
                                        "collect the proposals and search again"]
            assert said[0] in out.err  # said as it fits, too
        else:
            assert ok >= 20 and said == [] and "caveat" not in out.err


def test_search_out_is_checked_before_the_search_and_named_as_given(tmp_path):
    from perfzoo.console import InputError
    from perfzoo.search.command import SearchConfig

    with pytest.raises(InputError, match=r"^--out /proc/perfzoo/p.jsonl: cannot write there"):
        SearchConfig(space="fsdp-ads", out="/proc/perfzoo/p.jsonl")
    with pytest.raises(InputError, match=f"^--out {tmp_path}: is a folder; give a file path$"):
        SearchConfig(space="fsdp-ads", out=str(tmp_path))
    assert not list(tmp_path.iterdir())  # the check leaves nothing behind
    blocked = tmp_path / "file"
    blocked.write_text("")
    result = propose(RandomSearch(n_samples=20, seed=0), toy_space(), toy_reward(), top_k=1)
    with pytest.raises(OSError) as info:  # a write that fails names the file asked for, not its .tmp
        result.write_jsonl(blocked / "p.jsonl")
    assert info.value.filename == str(blocked / "p.jsonl")


class _BigBatchesFail:
    """A failure classifier that fails most configs with a large batch: the best predictions, so
    the chunks' first batches cannot fill the top k and the search goes on past them."""

    input_columns_ = ["config.local_batch", "config.tensor_budget_mib"]

    def predict_failure(self, X):
        return (X["config.local_batch"].to_numpy() >= 64) * 0.9 + (X["config.tensor_budget_mib"].to_numpy() < 40) * 0.05


@pytest.mark.parametrize("mode", ["expected", "filter"])
def test_exhaustive_goes_past_the_first_batch_when_failures_empty_it(mode):
    from perfzoo.datasets import load_dataset
    from perfzoo.search import Objective
    from perfzoo.search.command import fixed_columns

    space = _v3_small()
    codec = SpaceCodec(space)
    ds = load_dataset("fsdp-cpu")
    model = zoo.make("ridge").fit(ds.ok().X, ds.ok().y)
    objective = Objective(codec, model, _BigBatchesFail(), fixed=fixed_columns(ds, codec.knob_columns(), []),
                          failure_mode=mode)
    found = Exhaustive(chunk_size=2048, n_jobs=2).propose(objective, 30)
    assert found.stats["failure_scored"] > 2048  # more than the first batch had to be scored
    idx = codec.all_indices()
    pred, ps, reward = objective.score(idx)
    order = np.lexsort((-pred, -reward))[:30]
    assert found.keys.tolist() == codec.keys(idx)[order].tolist()
    np.testing.assert_array_equal(found.reward, reward[order])
    assert found.stats["max_reward"] == reward.max() and found.stats["max_predicted"] == np.nanmax(pred)
