"""The extension point: one :class:`Framework` per training framework a plan can be priced for,
exported to and read back from (one module per framework, :mod:`perfzoo.frameworks`).

A layout here is one of a plan's configs (:meth:`perfzoo.plan.Plan.configs`): the model's shape
keys, ``seq_len``, ``global_batch_size``, ``n_gpus`` and the layout knobs ``tp pp vp cp ep dp
micro_batch_size grad_accum activation_checkpointing fsdp precision``. A :class:`Launch` adds the
nodes it runs on. A framework says which layouts it cannot run (:meth:`Framework.refuses`, a
constraint of the plan's space), writes a layout as its own launch line
(:meth:`Framework.command`) and reads a user's launch line back into a layout
(:meth:`Framework.read`, a :class:`Baseline`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Collection, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo.analytic.shape import ModelShape
from perfzoo.console import UsageError
from perfzoo.llmconfig import catalog


class ExportError(UsageError):
    """A layout or model a framework cannot be given as asked (exit status 2); the message names the fix."""


@dataclass(frozen=True)
class Launch:
    """Where a layout runs: ``nodes`` nodes of ``gpus_per_node`` GPUs (``torchrun``'s
    ``--nnodes`` and ``--nproc-per-node``)."""

    nodes: int
    gpus_per_node: int

    def torchrun(self) -> list[str]:
        """``torchrun``'s arguments: standalone on one node, a c10d rendezvous at
        ``$MASTER_ADDR:$MASTER_PORT`` (29500 unless set) on several (run the same line on each node)."""
        if self.nodes == 1:
            return ["torchrun", "--standalone", "--nproc-per-node", str(self.gpus_per_node)]
        return ["torchrun", "--nnodes", str(self.nodes), "--nproc-per-node", str(self.gpus_per_node),
                "--rdzv-backend", "c10d", "--rdzv-endpoint", "$MASTER_ADDR:${MASTER_PORT:-29500}"]


@dataclass
class Baseline:
    """A user's launch line read back (:meth:`Framework.read`): the ``framework``, the layout
    knobs it sets (``layout``), ``seq_len`` / ``global_batch_size`` (``workload``), the catalog
    ``model`` it names or the shape keys it gives (``shape``), the GPUs it runs on (``gpus``,
    from ``torchrun``'s ``--nnodes x --nproc-per-node`` where the file has them), ``settings``: config
    keys the line sets that are no layout knob (``tp_comm_overlap``; the plan prices every layout with
    them, like for like), and ``notes``: what was read as a default, said."""

    framework: str
    layout: dict = field(default_factory=dict)
    workload: dict = field(default_factory=dict)
    model: Optional[str] = None
    shape: dict = field(default_factory=dict)
    gpus: Optional[int] = None
    settings: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class Framework:
    """One training framework (subclass it in a module of :mod:`perfzoo.frameworks`).

    ``name`` is its value of the ``framework`` config key (:data:`perfzoo.records.vocabulary.FRAMEWORKS`),
    what prices a layout as the framework runs it; ``entry`` what the launch line runs
    (``-m torchtitan.train``, ``pretrain_gpt.py``); ``version`` the release the flags are spelled for.
    """

    name: str = ""
    entry: Sequence[str] = ()
    version: str = ""
    precisions: Sequence[str] = ("bf16", "fp8")  # what its launch lines can say

    def refuses(self, layout: Mapping[str, Any]) -> Optional[str]:
        """Why the framework cannot run ``layout`` (a plan space's constraint), or None."""
        return None

    def check_precisions(self, precisions: Sequence[str]) -> None:
        """Raise :class:`ExportError` for a precision of ``precisions`` the framework does not train in
        (checked before the plan is made; :meth:`refuses` keeps such layouts out of a plan's space)."""

    def check_export(self, model: Mapping[str, Any], precisions: Sequence[str]) -> None:
        """Raise :class:`ExportError` if no layout of ``model`` in ``precisions`` can be written
        (checked before the plan is made)."""
        unwritten = [p for p in precisions if p not in self.precisions]
        if unwritten:
            raise ExportError(f"--export for {self.name}: perfzoo writes {' and '.join(self.precisions)} launch "
                              f"lines, not {', '.join(unwritten)}: plan --precision {','.join(self.precisions)}")

    def arguments(self, layout: Mapping[str, Any]) -> list[str]:
        """The framework's own arguments that run ``layout`` (after :attr:`entry`)."""
        raise NotImplementedError

    def command(self, layout: Mapping[str, Any], launch: Launch) -> list[str]:
        """The whole launch line: ``torchrun``, :attr:`entry`, :meth:`arguments`."""
        return [*launch.torchrun(), *self.entry, *self.arguments(layout)]

    def read(self, args: Sequence[str], source: str) -> Baseline:
        """A user's arguments (``source`` names where they came from, for messages) as a :class:`Baseline`."""
        raise ExportError(f"{source}: reading {self.name} arguments as a baseline is not supported")


def _priced(keys: Mapping[str, Any]) -> np.ndarray:
    """What the cost model prices of a model's shape ``keys`` (its stated size and name left out)."""
    shape = ModelShape(pd.DataFrame([{k: v for k, v in keys.items() if k in catalog.SHAPE_KEYS and k != "n_params"}]))
    return np.array([np.ravel(x)[0] for x in (shape.L, shape.d, shape.a, shape.kv_heads, shape.h_qk, shape.h_v, shape.V,
                                              shape.tied, shape.mtp, shape.total_params, shape.matmul_params,
                                              shape.expert_params, shape.core_flops_per_token(True))], dtype=float)


def catalog_model(model: Mapping[str, Any], known: Collection[str]) -> tuple[str | None, str]:
    """``(name, why not)``: the model of ``known`` (catalog models a framework has a recipe or config
    for) that ``model`` is: its ``model_name``, else the catalog model whose shape a Hugging Face
    ``config.json`` gives (named after the file), where all the cost model prices of the two agrees;
    else None and, where the shape is only like a catalog model's, what differs."""
    name = str(model.get("model_name"))
    if name in known:
        return name, ""
    match = catalog.by_shape(model)
    if match not in known:
        return None, ""
    mine, theirs = _priced(model), _priced(catalog.get(match))
    if np.allclose(mine, theirs, rtol=1e-9, equal_nan=True):
        return match, ""
    return None, (f" (its layers, width and heads are {match}'s, but not all of its shape: {mine[9] / 1e9:,.1f}B "
                  f"parameters against {theirs[9] / 1e9:,.1f}B)")


def stage_split(n_layers: int, pp: int, vp: int) -> tuple[int, int]:
    """How ``n_layers`` layers split over ``pp`` pipeline ranks of ``vp`` virtual stages each, in the
    two forms Megatron-Core and torchtitan both take: ``(layers per virtual stage, 0)`` where the
    stages divide the layers, else ``(layers per virtual stage, 1)`` with the embedding and the loss
    counted as a layer each (Megatron's ``--account-for-embedding/loss-in-pipeline-split``,
    torchtitan's ``pipeline_parallel_first/last_stage_less_layers`` 1: Llama 3.1 405B's 126 layers
    over 16 x 8 stages); an :class:`ExportError` for a split that is neither.

    >>> stage_split(32, 4, 2), stage_split(126, 16, 8), stage_split(126, 8, 1)
    ((4, 0), (1, 1), (16, 1))
    """
    stages = pp * vp
    if n_layers % stages == 0:
        return n_layers // stages, 0
    if (n_layers + 2) % stages == 0:
        return (n_layers + 2) // stages, 1
    raise ExportError(f"{n_layers} layers do not split over pp {pp} x vp {vp} = {stages} stages, evenly or with the "
                      f"embedding and the loss counted as a layer each ({n_layers + 2}); choose another pp or vp")


def check_expanded(args: Sequence[str], flags: Collection[str], source: str) -> None:
    """An :class:`ExportError` where one of ``flags`` takes a shell variable in ``args`` (``--flag $TP``,
    ``--flag=${TP}``): a file is read as written, with no shell to expand it.

    >>> check_expanded(["--tp", "$TP"], {"--tp"}, "job.sh")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    perfzoo.frameworks._base.ExportError: job.sh: --tp $TP is a shell variable, ... e.g. --tp 4
    """
    for i, word in enumerate(args):
        flag, eq, value = word.partition("=")
        if not eq:
            flag, value = word, (args[i + 1] if i + 1 < len(args) else "")
        if flag in flags and "$" in value:
            raise ExportError(f"{source}: {flag} {value} is a shell variable, which perfzoo does not expand (it reads "
                              f"the file as written): write its value in its place, e.g. {flag} 4")


def script(command: Sequence[str], comments: Sequence[str]) -> str:
    """A bash script: ``comments`` as ``#`` lines, then ``command`` one argument (or flag and
    its value) a line. Shell variables in the rendezvous endpoint are left for the shell.

    >>> print(script(["torchrun", "--standalone", "-m", "x", "--a", "1", "--b"], ["hi"]))
    #!/usr/bin/env bash
    # hi
    torchrun \\
      --standalone \\
      -m x \\
      --a 1 \\
      --b
    <BLANKLINE>
    """
    words = [w if "$" in w else shlex.quote(w) for w in command]
    lines, i = [], 0
    while i < len(words):
        word = words[i]
        if i + 1 < len(words) and word.startswith("-") and not words[i + 1].startswith("-"):
            word, i = f"{word} {words[i + 1]}", i + 1
        lines.append(word)
        i += 1
    return "\n".join(["#!/usr/bin/env bash", *(f"# {c}" for c in comments), " \\\n  ".join(lines), ""])


def script_command(text: str) -> list[str]:
    """The launch line of a :func:`script`, split as the shell would (comments dropped,
    continuation lines joined; shell variables left as written).

    >>> script_command("#!/usr/bin/env bash\\n# c\\ntorchrun --standalone \\\\\\n  --a 1\\n")
    ['torchrun', '--standalone', '--a', '1']
    """
    return shlex.split(text.replace("\\\n", " "), comments=True)


__all__ = ["Baseline", "ExportError", "Framework", "Launch", "catalog_model", "check_expanded", "script",
           "script_command", "stage_split"]
