"""The README as a front page: its first screen answers the newcomer's three questions with
commands that parse and name what perfzoo can price, its set-up commands are the ones CI runs,
its example outputs are real (scripts/readme_outputs.py re-runs them) and its links lead somewhere."""

from __future__ import annotations

import doctest
import importlib.util
import re
import shlex
import sys
from pathlib import Path

import pytest

from perfzoo.cli import command_module
from perfzoo.hardware import accelerators
from perfzoo.llmconfig import catalog, huggingface
from perfzoo.plan.planner import resolve_model

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
FIRST_SCREEN = 40  # lines


def _script():
    spec = importlib.util.spec_from_file_location("readme_outputs", ROOT / "scripts" / "readme_outputs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def first_screen_plans() -> list:
    """The ``perfzoo plan`` commands on the README's first screen, parsed by plan's own parser."""
    parser = command_module("plan").build_parser()
    lines = README.splitlines()[:FIRST_SCREEN]
    return [parser.parse_args(shlex.split(line)[2:]) for line in lines if line.strip().startswith("perfzoo plan ")]


def test_the_first_screen_answers_the_three_questions():
    plans = {(args.model, args.gpus): args for args in first_screen_plans()}
    llama, qwen = plans[("llama3-70b", 256)], plans[("qwen3-30b-a3b", 16)]
    for args in (llama, qwen):
        assert catalog.get(args.model)["n_layers"] > 0  # a catalog model
        assert accelerators.spec(args.accelerator).name.startswith("H100")
    own = next(args for (model, gpus), args in plans.items() if model.endswith("config.json") and gpus == 32)
    assert accelerators.spec(own.accelerator).name.startswith("A100") and "80GB" in own.accelerator
    # the shipped config.json is a Llama-like Hugging Face config plan reads as it is
    path = ROOT / own.model
    shape = resolve_model(str(path))
    assert shape["n_layers"] == 28 and shape["hidden_dim"] == 3072 and shape["n_kv_heads"] == 8
    assert shape == resolve_model(huggingface.from_hf_config(path))
    for args in plans.values():
        assert args.seq_len and args.global_batch  # every question states its sequence and batch


def test_the_set_up_commands_are_the_ones_ci_runs():
    main_job = "pip install torch==2.13.0 && pip install -e . && python -m perfzoo.bench --quick"
    tests = 'pip install torch==2.13.0 && pip install -e ".[test]" && python -m pytest -q'
    assert f"    {main_job}\n" in README and f"    {tests}\n" in README
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -q torch==2.13.0" in ci
    assert 'pip install -q -e ".[test]" && python -m pytest -q' in ci  # the README's, quietly
    assert "../shared/external" in README and "PERFZOO_EXTERNAL_DATA" in README


def test_every_example_shows_real_output():
    script = _script()
    found = script.examples(README.splitlines())
    commands = [e.command.split()[:2] for e in found]
    for question in (["perfzoo", "predict"], ["perfzoo", "plan"], ["perfzoo", "tune"], ["perfzoo", "bench"]):
        assert question in commands
    lines = README.splitlines()
    for example in found:
        body = lines[example.start + 1 + example.command_lines:example.end]
        assert [line for line in body if line != "..."], f"no output under $ {example.command}"


def test_the_refresh_script_reads_examples_and_keeps_lines():
    script = _script()
    assert doctest.testmod(script, optionflags=doctest.ELLIPSIS).failed == 0
    text = ["<!-- output: keep=0:1,-1: width=20 slow -->", "```console", "$ perfzoo plan --gpus 8 \\",
            "    --seq-len 4096", "old", "```"]
    (example,) = script.examples(text)
    assert example.command == "perfzoo plan --gpus 8 --seq-len 4096" and example.command_lines == 2
    assert example.slow and example.options["keep"] == "0:1,-1:" and example.end == 5
    with pytest.raises(ValueError, match="just above a ```console fence"):
        script.examples(["<!-- output: -->", "text"])


def test_the_readme_links_lead_somewhere():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [link for link in links if not re.match(r"\w+://", link)]
    assert local and all((ROOT / link).exists() for link in local), [l for l in local if not (ROOT / l).exists()]
