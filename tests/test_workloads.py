"""The workload registry: a workload is one bundle (perfzoo.workloads), and generic code finds it."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pandas as pd
import pytest

from harness import workloads as harness_workloads
from perfzoo import spaces, workloads
from perfzoo.analytic import ESTIMATE_COLUMNS, estimate_arrays
from perfzoo.analytic._frame import num
from perfzoo.collect.cli import main as collect
from perfzoo.workloads import WorkloadSpec, _base
from perfzoo.zoo import features

TOY_SPACE = spaces.Space(
    name="toy-space",
    workload="toy",
    dimensions=[spaces.Categorical("toy_size", "widgets per step", choices=(1, 2, 4, 64)),
                spaces.Categorical("toy_flag", "an optional switch", choices=(False, True))],
    constants={"n_ranks": 1},
    world_size_key="n_ranks",
    description="a toy workload's space",
)


def _toy_cost(df: pd.DataFrame) -> dict[str, np.ndarray]:
    out = {c: np.full(len(df), np.nan) for c in ESTIMATE_COLUMNS}
    out["throughput"] = 1000.0 * num(df, "toy_size")
    return out


TOY = WorkloadSpec(name="toy", harness="toy_harness.workload", throughput_unit="widgets/s", default_space="toy-space",
                   spaces=(TOY_SPACE,), cost=_toy_cost, claims=lambda df: ~np.isnan(num(df, "toy_size")),
                   size_keys=frozenset({"toy_size"}), optional_keys=frozenset({"toy_flag"}))


@pytest.fixture
def toy(monkeypatch):
    """The toy workload registered for one test (the registry restored afterwards)."""
    monkeypatch.setattr(_base, "_SPECS", dict((s.name, s) for s in workloads.specs()))
    return workloads.register(TOY)


def test_the_builtin_bundles_are_registered_in_claim_order():
    assert workloads.names() == ["fsdp", "llm", "command"]
    for spec in workloads.specs():
        # each job carries this path and the worker imports it (the command workload's is its launcher's module)
        assert importlib.import_module(spec.harness)
        assert spec.default_space is None or spec.default_space in {s.name for s in spec.spaces}
        assert all(spaces.get(s.name) is s for s in spec.spaces)
    assert {s.name for spec in workloads.specs() for s in spec.spaces} == set(spaces.names())
    assert workloads.get("fsdp").baselines.keys() == {"baseline", "expert"} and not workloads.get("llm").baselines
    assert all(harness_workloads.load(workloads.get(name).harness).build for name in ("fsdp", "llm"))


def test_a_name_registers_once():
    with pytest.raises(ValueError, match="a workload named 'fsdp' is already registered .*another name"):
        workloads.register(WorkloadSpec(name="fsdp", harness="x", throughput_unit="items/s"))
    clash = spaces.Space(name="llm-small", workload="other", dimensions=[spaces.Categorical("a", choices=(1,))])
    with pytest.raises(ValueError, match="space names already registered: 'llm-small' \\(workload 'llm'\\)"):
        workloads.register(WorkloadSpec(name="other", harness="x", throughput_unit="items/s", spaces=(clash,)))
    with pytest.raises(ValueError, match="unknown workload 'nope'; registered workloads are"):
        workloads.get("nope")
    with pytest.raises(ValueError, match="belong to other workloads"):
        WorkloadSpec(name="x", harness="x", throughput_unit="items/s", spaces=(clash,))
    with pytest.raises(ValueError, match="needs its claims"):
        WorkloadSpec(name="x", harness="x", throughput_unit="items/s", cost=_toy_cost)


def test_a_registered_workload_is_picked_up_everywhere(toy, tmp_path, capsys):
    # spaces: by name, listed
    assert spaces.get("toy-space") is TOY_SPACE and "toy-space" in spaces.names()
    # analytic: its rows go to its cost model, the others' rows are unchanged
    fsdp = pd.DataFrame([{**workloads.get("fsdp").spaces[0].sample(1, seed=0)[0]}]).add_prefix("config.")
    mixed = pd.concat([fsdp, pd.DataFrame({"config.toy_size": [2, 4]})], ignore_index=True)
    est = estimate_arrays(mixed)
    assert est["throughput"][1:].tolist() == [2000.0, 4000.0]
    alone = estimate_arrays(fsdp)
    assert alone["memory_bytes"][0] > 0 and all(np.array_equal(est[c][:1], alone[c], equal_nan=True) for c in alone)
    # features: its vocabulary
    assert "toy_size" in features.size_keys() and features.is_optional("config.toy_flag")
    X = pd.DataFrame({"config.toy_size": [1, 2, 4], "config.toy_flag": [True, False, True]})
    assert "config.toy_size" in features.FeatureEncoder("native").fit(X).log_columns_
    # collect: --workload picks its default space; a dry run needs no harness code
    assert collect(["--workload", "toy", "--n", "3", "--dry-run", "--out", str(tmp_path / "s")]) == 0
    out, err = capsys.readouterr()
    assert "toy-space (toy), 3 configs" in err
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 3 and all(TOY_SPACE.validate(r["config"]) == r["config"] for r in rows)


def test_a_workload_registered_in_a_test_is_gone_after_it():
    assert "toy" not in workloads.names() and "toy-space" not in spaces.names()


def test_a_job_names_the_module_that_builds_it():
    with pytest.raises(ValueError, match="names no harness module"):
        harness_workloads.load("")
    with pytest.raises(ValueError, match="has no build"):
        harness_workloads.load("harness.jobs")
