"""The training frameworks a plan prices for, writes launch lines for, and reads a baseline from.

One module per framework behind :class:`Framework` (:mod:`._base`):

=========================  ==================================================================
:mod:`.torchtitan`         torchtitan 0.3.0: ``--module/--config`` and dotted flags; older TOML
:mod:`.megatron_lm`        Megatron-LM's ``pretrain_gpt.py`` argument list
:mod:`.megatron_bridge`    Megatron-Bridge 0.3: a recipe and ``ConfigContainer`` overrides
:mod:`.nemo`               NeMo 2.0: priced as NeMo, written as Megatron-Bridge as priced
=========================  ==================================================================

>>> sorted(FRAMEWORKS)
['megatron-bridge', 'megatron-lm', 'nemo', 'torchtitan']
>>> get("torchtitan").refuses({"fsdp": "zero1"})
'torchtitan has no ZeRO-1 (its data parallelism is FSDP2 or DDP)'
>>> line = ["--tensor-model-parallel-size", "4", "--micro-batch-size", "1", "--seq-length", "8192"]
>>> read_text(line, "x").layout["tp"]
4
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from perfzoo.frameworks import megatron_bridge, megatron_lm, nemo, torchtitan
from perfzoo.frameworks._base import Baseline, ExportError, Framework, Launch, script, script_command

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FRAMEWORKS: dict[str, Framework] = {f.name: f for f in (torchtitan.FRAMEWORK, megatron_bridge.FRAMEWORK,
                                                         megatron_lm.FRAMEWORK, nemo.FRAMEWORK)}


def get(name: str) -> Framework:
    """The framework called ``name`` (a :data:`FRAMEWORKS` key); an unknown name is an
    :class:`ExportError` listing them."""
    if name not in FRAMEWORKS:
        raise ExportError(f"--framework {name}: perfzoo prices and writes {', '.join(FRAMEWORKS)}")
    return FRAMEWORKS[name]


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
    An unreadable file is an :class:`ExportError` naming it."""
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


__all__ = ["Baseline", "ExportError", "FRAMEWORKS", "Framework", "Launch", "get", "read_baseline", "read_text",
           "script", "script_command"]
