"""The training frameworks: one bundle each (a :class:`Framework`, :mod:`._base`) declaring what it
runs, what the cost model assumes of it, what a published row of it leaves to its recipe, and, for
those perfzoo writes, its launch line and how a user's is read back; one module per framework:

=========================  ==================================================================
:mod:`.unknown`            no framework in particular: a config that names none (priced by its other keys)
:mod:`.pytorch`            plain PyTorch: prices, writes no launch line
:mod:`.torchtitan`         torchtitan 0.3.0: ``--module/--config`` and dotted flags; older TOML
:mod:`.llm_foundry`        llm-foundry (Composer): prices, writes no launch line
:mod:`.megatron_lm`        Megatron-LM's ``pretrain_gpt.py`` argument list (Megatron-Core's declarations)
:mod:`.nemo`               NeMo 2.0: priced as NeMo, written as Megatron-Bridge as priced
:mod:`.megatron_bridge`    Megatron-Bridge 0.3: a recipe and ``ConfigContainer`` overrides
=========================  ==================================================================

:data:`REGISTRY` holds them; its keys are the ``framework`` config key's values
(:data:`perfzoo.records.vocabulary.FRAMEWORKS`); :data:`READ_ORDER` is the order a table's cell is read,
the most specific first ("Megatron-Bridge" is not Megatron-LM, "pytorch/torchtitan" is torchtitan: each
bundle says what it reads before). Frameworks a
table names that perfzoo has no bundle for are :data:`UNPRICED` (their rows read as ``unknown``,
and the load report says which). :func:`refusal` is the one rule every command applies to a
config; :data:`FRAMEWORKS` the ones ``plan --framework`` writes launch lines for.

A new framework: a module here that declares ``FRAMEWORK = Framework(name=..., phrases=..., runs=...,
physics=..., recipe=...)`` (a subclass for a launch line), and one line in :data:`REGISTRY`.

>>> sorted(FRAMEWORKS)
['megatron-bridge', 'megatron-lm', 'nemo', 'torchtitan']
>>> refusal({"framework": "torchtitan", "fsdp": "zero1"})
'fsdp=zero1 under framework=torchtitan: torchtitan has no ZeRO-1 (its data parallelism is FSDP2 or DDP); give fsdp=full_shard, shard_grad_op, hybrid_shard, no_shard or none'
>>> refusal({"n_layers": 32, "pp": 2, "vp": 3}).split(":")[0], refusal({"framework": "nemo", "fsdp": "zero1"})
('pp=2 vp=3', None)
>>> line = ["--tensor-model-parallel-size", "4", "--micro-batch-size", "1", "--seq-length", "8192"]
>>> read_text(line, "x").layout["tp"]
4
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from perfzoo.frameworks import llm_foundry, megatron_bridge, megatron_lm, nemo, pytorch, torchtitan, unknown
from perfzoo.frameworks._base import (ALTERNATE_MATMULS, DEEPEP_GROUPS, DISPATCHERS, MATMULS, UNKNOWN, Baseline, ExportError, Framework, Launch,
                                      Physics, Recipe, Runs, linear_heads, model_linear_heads, script, script_command)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REGISTRY: dict[str, Framework] = {f.name: f for f in (
    unknown.FRAMEWORK,
    pytorch.FRAMEWORK,
    torchtitan.FRAMEWORK,
    llm_foundry.FRAMEWORK,
    megatron_lm.FRAMEWORK,
    nemo.FRAMEWORK,
    megatron_bridge.FRAMEWORK,
)}
CODES = tuple(REGISTRY)  # the framework key's values


def _read_order(bundles: Sequence[Framework]) -> tuple[Framework, ...]:
    """``bundles`` in the order a table's cell is read: each before those it names in ``read_before``,
    else in the registry's order.

    >>> [f.name for f in _read_order(tuple(REGISTRY.values())) if f.phrases]
    ['torchtitan', 'llm-foundry', 'megatron-bridge', 'nemo', 'megatron-lm', 'pytorch']
    """
    left, order = list(bundles), []
    while left:
        after = {name for f in left for name in f.read_before}
        ready = next((f for f in left if f.name not in after), None)
        if ready is None:
            raise ValueError(f"frameworks {', '.join(f.name for f in left)} each read before another: a circle")
        order.append(ready)
        left.remove(ready)
    return tuple(order)


READ_ORDER = _read_order(tuple(REGISTRY.values()))  # the most specific first
FRAMEWORKS: dict[str, Framework] = {name: f for name, f in sorted(REGISTRY.items()) if f.entry}  # launch lines
# training frameworks a table names that the cost model has no bundle for (JAX: XLA's fusions, its own
# sharding): such a row's framework is left unknown, and the load report says which it was
UNPRICED = (("MaxText (JAX)", ("maxtext",)), ("Paxml (JAX)", ("paxml", "pax")))


def get(name: Optional[str]) -> Framework:
    """The framework called ``name`` (a :data:`REGISTRY` key; None: :mod:`.unknown`); an unknown name
    is an :class:`ExportError` listing them."""
    if name is None:
        return REGISTRY[UNKNOWN]
    if name not in REGISTRY:
        raise ExportError(f"--framework {name}: perfzoo prices {', '.join(c for c in CODES if c != UNKNOWN)} "
                          f"and writes launch lines for {', '.join(FRAMEWORKS)}")
    return REGISTRY[name]


def writer(name: Optional[str]) -> Framework:
    """The framework called ``name`` where perfzoo writes its launch lines; else an :class:`ExportError`
    naming those it writes."""
    found = get(name)
    if not found.entry:
        raise ExportError(f"--export for {found.name}: perfzoo writes no {found.name} launch line; give --framework "
                          f"{'|'.join(FRAMEWORKS)}")
    return found


def refusal(config: Mapping[str, Any]) -> Optional[str]:
    """Why the framework ``config`` names (its ``framework`` key; absent, None or a name perfzoo has no
    bundle for: :mod:`.unknown`) cannot run it, or None (:meth:`Framework.refuses`): the rule
    ``predict``, plan's layouts and baselines, every exporter and a user's calibration runs share."""
    name = config.get("framework")
    return REGISTRY.get(name if isinstance(name, str) else UNKNOWN, REGISTRY[UNKNOWN]).refuses(config)


def _after(words: Sequence[str], entries: Sequence[str]) -> tuple[list[str], list[str]]:
    """``words`` split after the first of ``entries`` (the launcher's part, the program's arguments)."""
    for i, w in enumerate(words):
        if any(w == e or w.endswith("/" + e) for e in entries):
            return list(words[:i]), list(words[i + 1:])
    return [], list(words)


def read_text(words: Sequence[str], source: str) -> Baseline:
    """A launch line or argument list (split into words) read as torchtitan's or Megatron-LM's.

    torchtitan's: ``--module``/``--config`` or ``--parallelism.*``/``--training.*`` flags (after
    ``-m torchtitan.train`` where the line has it); Megatron-LM's: ``--tensor-model-parallel-size``
    or ``--micro-batch-size`` (after ``pretrain_gpt.py``). ``torchrun``'s ``--nnodes`` and
    ``--nproc-per-node`` give the GPUs."""
    words = list(words)
    if any(w in ("--module", "torchtitan.train") or w.startswith(("--module=", "--parallelism.", "--training."))
           for w in words):
        launcher, args = _after(words, ("torchtitan.train", "train.py"))
        baseline = torchtitan.FRAMEWORK.read(args, source)
        baseline.gpus = megatron_lm.read_gpus(launcher)
        return baseline
    if any(w.startswith(("--tensor-model-parallel-size", "--micro-batch-size")) for w in words):
        return megatron_lm.read_arguments(words, source)
    raise ExportError(f"{source}: neither torchtitan arguments (--module/--config, --parallelism.*), Megatron-LM "
                      "arguments (--tensor-model-parallel-size, --micro-batch-size ...) nor a torchtitan TOML file")


def read_baseline(path: str | Path) -> Baseline:
    """The user's launch file at ``path``: a torchtitan TOML of the older releases (``.toml``), or
    a shell script / argument file holding a torchtitan or Megatron-LM line (:func:`read_text`).
    An unreadable file is an :class:`ExportError` naming it. A line that gives layers per stage
    leaves its virtual stages to :meth:`Baseline.settle` with the model's layers."""
    path = Path(path)
    source = f"--baseline-from {path}"
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ExportError(f"{source}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ExportError(f"{source}: not UTF-8 text (byte {exc.start}); give the launch line or TOML file") from None
    if path.suffix == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ExportError(f"{source}: not TOML ({exc})") from None
        return torchtitan.read_toml(data, source)
    try:
        words = script_command(text)
    except ValueError as exc:
        raise ExportError(f"{source}: cannot split it into arguments ({exc})") from None
    return read_text(words, source)


__all__ = ["ALTERNATE_MATMULS", "Baseline", "CODES", "DEEPEP_GROUPS", "DISPATCHERS", "ExportError", "FRAMEWORKS", "Framework", "Launch", "MATMULS",
           "Physics", "READ_ORDER", "REGISTRY", "Recipe", "Runs", "UNKNOWN", "UNPRICED", "get", "linear_heads",
           "model_linear_heads", "read_baseline",
           "read_text", "refusal", "script", "script_command", "writer"]
