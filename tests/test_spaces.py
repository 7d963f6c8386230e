"""Search spaces: sampling gives valid configs, validation names the knob, the value and the fix."""

import pytest

from perfzoo import spaces
from perfzoo.spaces import Categorical, Constraint, Integer, Space, SpaceError, SteppedFloat


def test_registry_has_the_builtin_spaces():
    assert {"fsdp-ads", "llm-small"} <= set(spaces.names())
    assert spaces.get("fsdp-ads").workload == "fsdp"
    assert spaces.get("llm-small").workload == "llm"
    with pytest.raises(SpaceError, match="unknown search space 'nope'.*fsdp-ads"):
        spaces.get("nope")


def test_fsdp_ads_has_the_papers_shape():
    space = spaces.get("fsdp-ads")
    shard = [d for d in space.dimensions if d.name.startswith("shard_")]
    assert len(shard) == 11 and all(len(d) == 3 for d in shard)
    assert len(space.dimension("local_batch")) == 5
    budgets = space.dimension("memory_budget_gib").values
    assert None in budgets and 8 <= len(budgets) <= 10
    assert space.size() == 3**11 * 5 * len(budgets)


@pytest.mark.parametrize("name", ["fsdp-ads", "llm-small"])
def test_sample_gives_distinct_valid_complete_configs(name):
    space = spaces.get(name)
    configs = space.sample(200, seed=3)
    assert len({tuple(sorted(c.items(), key=lambda kv: kv[0])) for c in configs}) == 200
    for c in configs:
        assert space.validate(c) == c
        assert set(c) == set(space.knobs())
        assert all(isinstance(v, (bool, int, float, str)) or v is None for v in c.values())
    assert space.sample(20, seed=3) == configs[:20]  # seeded and prefix-stable
    assert space.sample(20, seed=4) != configs[:20]


def test_llm_constraints_hold_in_samples():
    for c in spaces.get("llm-small").sample(300, seed=0):
        assert c["hidden_dim"] % c["n_heads"] == 0
        assert c["n_heads"] % c["n_kv_heads"] == 0
        assert c["micro_batch_size"] * c["seq_len"] <= 512
        assert c["global_batch_size"] == c["micro_batch_size"] * c["dp"] * c["grad_accum"]
        assert c["dp"] == c["n_gpus"] and c["tp"] == c["pp"] == c["cp"] == 1


def _llm_base():
    return dict(n_layers=2, hidden_dim=128, n_heads=4, n_kv_heads=2, ffn_dim=256, vocab_size=2048,
                seq_len=128, micro_batch_size=2, precision="fp32", activation_checkpointing="none",
                compile=False, fsdp="full_shard", n_gpus=1)


@pytest.mark.parametrize("change, message", [
    ({"n_kv_heads": 3}, "knob 'n_kv_heads' = 3 is not allowed; allowed values are [1, 2, 4, 8]"),
    ({"n_heads": 2, "n_kv_heads": 4}, "n_heads = 2 is not divisible by n_kv_heads = 4"),
    ({"precision": "fp16"}, "knob 'precision' = 'fp16' is not allowed; allowed values are [\"fp32\", \"bf16\"]"),
    ({"ffn_dim": 300}, "knob 'ffn_dim' = 300 is not allowed; allowed values are integers 256..1024 in steps of 256"),
    ({"micro_batch_size": 4, "seq_len": 256}, "4 x 256 = 1024 tokens per rank exceeds 512"),
    ({"global_batch_size": 3}, "global_batch_size = 3 is not divisible by micro_batch_size x dp"),
    ({"colour": "red"}, "unknown knob 'colour'"),
    ({"tp": 2}, "knob 'tp' = 2 does not agree"),
])
def test_validate_rejects_with_a_clear_message(change, message):
    space = spaces.get("llm-small")
    with pytest.raises(SpaceError) as info:
        space.validate({**_llm_base(), **change})
    assert message in str(info.value)
    assert str(info.value).startswith("space 'llm-small': ")


def test_validate_fills_constants_and_derived_keys_and_checks_them():
    space = spaces.get("llm-small")
    c = space.validate({**_llm_base(), "global_batch_size": 8})
    assert c["grad_accum"] == 4 and c["n_params"] > 0
    fsdp = spaces.get("fsdp-ads")
    raw = {f"shard_{i:02d}": "NO_SHARD" for i in range(11)}
    raw.update(local_batch=16, memory_budget_gib=None)
    full = fsdp.validate(raw)
    assert full["n_layers"] == 11 and full["world_size"] == 2
    with pytest.raises(SpaceError, match="missing knob 'local_batch'"):
        fsdp.validate({k: v for k, v in raw.items() if k != "local_batch"})
    with pytest.raises(SpaceError, match="knob 'width' = 512 is not allowed; it is fixed to 128"):
        fsdp.validate({**raw, "width": 512})
    with pytest.raises(SpaceError, match="knob 'shard_03' = 'HYBRID'"):
        fsdp.validate({**raw, "shard_03": "HYBRID"})
    assert fsdp.validate({**raw, "memory_budget_gib": 0.4})["memory_budget_gib"] == 0.4


def test_dimension_kinds_enumerate_and_constraints():
    space = Space(
        name="toy", workload="llm",
        dimensions=[Categorical("a", choices=("x", "y")), Integer("b", low=1, high=4),
                    SteppedFloat("c", low=0.5, high=1.0, step=0.25, allow_none=True)],
        constraints=[Constraint("b_even_for_y", lambda c: "b must be even when a = 'y'"
                                if c["a"] == "y" and c["b"] % 2 else None)])
    assert space.dimension("c").values == (0.5, 0.75, 1.0, None)
    assert space.size() == 2 * 4 * 4
    every = list(space.enumerate())
    assert len(every) == 4 * 4 + 2 * 4  # a='x': all b; a='y': b in {2, 4}
    assert space.dimension("c").index(0.75) == 1
    with pytest.raises(SpaceError, match="b must be even"):
        space.validate({"a": "y", "b": 3, "c": None})
    with pytest.raises(SpaceError, match="could not draw 100 distinct"):
        space.sample(100, seed=0, max_tries=50)
    with pytest.raises(SpaceError, match="more than limit"):
        list(spaces.get("fsdp-ads").enumerate())


def test_llm_gpu_space_derives_a_llama_shape_from_depth_and_width():
    from harness.workloads.llm_shapes import param_counts

    space = spaces.get("llm-gpu")
    cfg = space.validate({"n_layers": 20, "hidden_dim": 2048, "seq_len": 4096, "micro_batch_size": 4,
                          "precision": "bf16", "activation_checkpointing": "none", "compile": True})
    assert (cfg["n_heads"], cfg["ffn_dim"], cfg["n_kv_heads"]) == (16, 5632, 4)  # head dim 128; 8/3 d up to 256
    assert cfg["n_params"] == param_counts(cfg)[0] and 1.0e9 < cfg["n_params"] < 1.1e9
    sizes = [c["n_params"] for c in space.enumerate()]
    assert 1.0e8 < min(sizes) and max(sizes) < 3.0e9
    with pytest.raises(spaces.SpaceError, match="32,768"):
        space.validate(dict(cfg, seq_len=8192, micro_batch_size=8))


# a space file's lines --------------------------------------------------------------------------

ESCAPED = '''name = "demo"
world_size_key = "n"
# a comment that mentions tp <= zz
constraints = [
  "mode == \\"a\\" or tp <= n",
  "mode == \\"b\\" or tp <= zz",
]
[knobs]
tp = { values = [1, 2, 4] }
mode = { values = ["a", "b"] }
[constants]
n = 2
'''


def test_a_constraint_error_names_the_line_it_is_written_on(tmp_path):
    """A constraint with TOML escapes (``\\"``) is found on its own line, not on line 1 or a comment."""
    path = tmp_path / "space.toml"
    path.write_text(ESCAPED)
    with pytest.raises(spaces.SpaceFileError) as info:
        spaces.get(str(path))
    assert str(info.value).startswith(f"{path} line 6: constraint 'mode == \"b\" or tp <= zz' names 'zz'")


def test_a_config_outside_a_file_space_names_the_constraint_and_its_line(tmp_path):
    path = tmp_path / "space.toml"
    path.write_text(ESCAPED.replace('"mode == \\"b\\" or tp <= zz",', '"tp != 2",'))
    space = spaces.get(str(path))
    with pytest.raises(SpaceError) as info:
        space.validate({"tp": 4, "mode": "b"})
    assert str(info.value) == ("space 'demo': 'mode == \"a\" or tp <= n' does not hold for mode='b', n=2, tp=4 "
                               f"(constraint 'mode == \"a\" or tp <= n', {path} line 5)")
    with pytest.raises(SpaceError, match=rf"\(constraint 'tp != 2', {path} line 6\)"):
        space.validate({"tp": 2, "mode": "a"})


def test_an_unknown_workload_is_named_with_the_known_ones_not_an_internal_key(tmp_path):
    """``workload = "llm-foo"`` was reported as a missing ``world_size_key``, a name the user never wrote."""
    from perfzoo import workloads

    path = tmp_path / "space.toml"
    path.write_text('name = "x"\nworkload = "llm-foo"\n[knobs]\ntp = { values = [1, 2] }\n')
    with pytest.raises(spaces.SpaceFileError) as info:
        spaces.get(str(path))
    assert str(info.value) == (f"{path} line 2: workload = 'llm-foo' is not a workload perfzoo knows; known: "
                               f"{', '.join(workloads.names())} (register yours with perfzoo.workloads.register)")
    assert "world_size_key" not in str(info.value) and {"llm", "fsdp", "command"} <= set(workloads.names())
