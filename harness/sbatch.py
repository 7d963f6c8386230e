"""What a job asks Slurm for, declared once for every command that submits (collect's profiling
jobs, bench's fits): :class:`SlurmOptions`, sbatch's options of the same names and the submitit
parameters of an array of jobs, each field with the flag that sets it.

A command's config holds one ``SlurmOptions`` (its ``slurm`` field): :func:`add_arguments` puts
the flags on the command's parser, each writing its field of that one value, and
:meth:`SlurmOptions.requested` checks it against the command's ``--launcher`` (a Slurm option
with ``--launcher local`` is a mistake, named). The launcher that submits is :mod:`harness.slurm`.

>>> import argparse
>>> parser = argparse.ArgumentParser()
>>> add_arguments(parser)
>>> parser.set_defaults(slurm=SlurmOptions())
>>> slurm = parser.parse_args(["--partition", "cpu", "--time", "5", "--slurm-arg", "reservation=r1"]).slurm
>>> slurm.partition, slurm.time_min, slurm.extra
('cpu', 5, {'reservation': 'r1'})
>>> slurm.requested("local")
Traceback (most recent call last):
...
ValueError: --partition is a Slurm option; add --launcher slurm
"""

from __future__ import annotations

import argparse
import math
from dataclasses import MISSING, Field, dataclass, field, fields, replace
from typing import Any, Callable, Optional

from harness.jobs import JobSpec

NO_OP_SIGNAL = "URG"


def _flag(flag: str, kind: type, help: str, default: Any = None, metavar: Optional[str] = None,
          per_node: bool = False, factory: Optional[Callable[[], Any]] = None) -> Any:
    """A field of :class:`SlurmOptions` with the flag that sets it (``kind``: its argparse type;
    ``per_node``: only for jobs that lay out torchrun agents over nodes; ``factory``: makes a
    mutable default)."""
    meta = {"flag": flag, "kind": kind, "help": help, "metavar": metavar, "per_node": per_node}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def _default(f: Field) -> Any:
    return f.default_factory() if f.default is MISSING else f.default


@dataclass(frozen=True)
class SlurmOptions:
    """What every array asks Slurm for (sbatch's options of the same names), in the order the
    commands' ``--help`` lists them.

    ``time_min`` defaults to the job's wall-clock limit rounded up to minutes plus 2;
    ``cpus_per_task`` on CPU defaults to the ranks per task (one core per CPU rank).
    ``extra`` holds further ``sbatch`` options, e.g. ``{"reservation": "r1"}``; ``folder`` the
    job files and logs (None: the command's default).
    """

    partition: Optional[str] = _flag("--partition", str, "partition to submit to (default: the cluster's default)")
    account: Optional[str] = _flag("--account", str, "account to charge")
    qos: Optional[str] = _flag("--qos", str, "quality of service")
    constraint: Optional[str] = _flag("--constraint", str, "node features (sbatch --constraint)")
    extra: dict = _flag("--slurm-arg", str, "any other sbatch option, e.g. --slurm-arg reservation=r1 (repeatable)",
                        factory=dict, metavar="KEY=VALUE")
    poll_s: float = _flag("--poll", float, "seconds between sacct polls (default 2)", default=2.0)
    nodes: int = _flag("--nodes", int, "nodes per job (default 1)", default=1, per_node=True)
    tasks_per_node: int = _flag("--tasks-per-node", int, "torchrun agents per node (default 1; each starts world "
                                "size / (nodes x this) ranks)", default=1, per_node=True)
    gpus_per_node: Optional[int] = _flag("--gpus-per-node", int, "GPUs per node (with --device cuda)", per_node=True)
    cpus_per_task: Optional[int] = _flag("--cpus-per-task", int, "cores per task (default on CPU: one per rank)")
    time_min: Optional[int] = _flag("--time", int, "Slurm time limit per job in minutes (default: --timeout rounded "
                                    "up, plus 2)", metavar="MIN")
    mem_gb: Optional[float] = _flag("--mem-gb", float, "memory per node in GiB (sbatch --mem)")
    array_parallelism: int = _flag("--array-parallelism", int, "array elements running at once (default 256)",
                                   default=256)
    folder: Optional[str] = _flag("--slurm-folder", str, "job files and logs, on a file system the nodes share "
                                  "(default: OUT/slurm)", metavar="DIR")

    @property
    def agents(self) -> int:
        """torchrun agents (Slurm tasks) per job."""
        return self.nodes * self.tasks_per_node

    def requested(self, launcher: str, per_node: bool = True) -> Optional[SlurmOptions]:
        """These options where ``launcher`` (a command's ``--launcher``) is ``slurm``, None where it
        is ``local``; a ValueError names a Slurm option given (set to other than its default) with
        ``local``, a value out of range, or, where the command's jobs are not laid out over nodes
        (``per_node`` False), a per-node option."""
        given = [f.metadata for f in fields(self) if getattr(self, f.name) != _default(f)]
        if launcher != "slurm":
            if given:
                raise ValueError(f"{given[0]['flag']} is a Slurm option; add --launcher slurm")
            return None
        for meta in given:
            if meta["per_node"] and not per_node:
                raise ValueError(f"{meta['flag']} is for jobs laid out over nodes; this command's jobs run as one "
                                 "Slurm task each: leave it out")
        for f in fields(self):
            value, kind, flag = getattr(self, f.name), f.metadata["kind"], f.metadata["flag"]
            if kind is int and value is not None and value < 1:
                raise ValueError(f"{flag} must be at least 1")
            if kind is float and value is not None and value <= 0:
                raise ValueError(f"{flag} must be positive")
        return self

    def check(self, nproc: int, device: str) -> None:
        """Raise ValueError (naming the fix) if a job of ``nproc`` ranks cannot be laid out."""
        if self.nodes < 1 or self.tasks_per_node < 1:
            raise ValueError("--nodes and --tasks-per-node must be at least 1")
        if nproc % self.agents:
            raise ValueError(f"a job of {nproc} ranks does not split over {self.nodes} node(s) x "
                             f"{self.tasks_per_node} task(s); choose --nodes/--tasks-per-node that divide it")
        if device == "cuda" and self.gpus_per_node and nproc // self.nodes != self.gpus_per_node:
            raise ValueError(f"a job of {nproc} ranks on {self.nodes} node(s) uses {nproc // self.nodes} GPUs "
                             f"per node, but --gpus-per-node is {self.gpus_per_node}; collect configs of world "
                             f"size {self.nodes * self.gpus_per_node} or change --nodes/--gpus-per-node")

    def identity(self, device: str, nproc: int) -> dict:
        """What identifies the hardware of a job before it runs (goes into the job id)."""
        return {"launcher": "slurm", "device": device, "accelerator_count": nproc, "nodes": self.nodes,
                "partition": self.partition, "constraint": self.constraint, "gpus_per_node": self.gpus_per_node}

    def executor_parameters(self, spec: JobSpec, name: str) -> dict:
        """The :meth:`submitit.SlurmExecutor.update_parameters` arguments of an array of ``spec`` s."""
        per_task = spec.nproc // self.agents
        params = {"job_name": name, "nodes": self.nodes, "ntasks_per_node": self.tasks_per_node,
                  "time": self.time_min or math.ceil(spec.timeout_s / 60) + 2,
                  "array_parallelism": self.array_parallelism, "stderr_to_stdout": True,
                  # the harness does not checkpoint: submitit's pre-timeout signal (USR2, which
                  # would requeue or end the job early) is replaced by one nobody acts on, so a
                  # job past its limit ends as Slurm's TIMEOUT
                  "additional_parameters": {"signal": f"{NO_OP_SIGNAL}@60", **self.extra}}
        cpus = self.cpus_per_task or (per_task if spec.device == "cpu" else None)
        for key, value in (("partition", self.partition), ("gpus_per_node", self.gpus_per_node),
                           ("cpus_per_task", cpus), ("account", self.account), ("qos", self.qos),
                           ("constraint", self.constraint)):
            if value is not None:
                params[key] = value
        if self.mem_gb is not None:
            params["mem"] = f"{int(self.mem_gb * 1024)}MB"
        return params


class _SetField(argparse.Action):
    """Sets one field of the :class:`SlurmOptions` at ``namespace.<dest>`` (``--slurm-arg``: adds
    one ``KEY=VALUE`` to ``extra``)."""

    def __init__(self, option_strings, dest, name: str, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.name = name

    def __call__(self, parser, namespace, value, option_string=None):
        options = getattr(namespace, self.dest, None) or SlurmOptions()
        if self.name == "extra":
            key, sep, text = value.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"--slurm-arg {value!r}: expected KEY=VALUE, e.g. reservation=r1")
            value = {**options.extra, key.strip().lstrip("-").replace("-", "_"): text}
        setattr(namespace, self.dest, replace(options, **{self.name: value}))


def add_arguments(group, per_node: bool = True, helps: Optional[dict[str, str]] = None, dest: str = "slurm") -> None:
    """The flags of :class:`SlurmOptions` on an argparse parser or ``group``, each setting its field
    of the one value at ``dest`` (a command's config field; give the parser ``set_defaults(slurm=
    SlurmOptions())``, as :func:`perfzoo.console.field_defaults` does). ``per_node`` False leaves out
    the options of jobs laid out over nodes; ``helps`` replaces the help of fields whose meaning
    the command words its own way (e.g. ``{"time_min": "... (default 60)"}``)."""
    helps = helps or {}
    for f in fields(SlurmOptions):
        meta = f.metadata
        if meta["per_node"] and not per_node:
            continue
        group.add_argument(meta["flag"], dest=dest, action=_SetField, name=f.name, type=meta["kind"],
                           metavar=meta["metavar"] or meta["flag"][2:].upper().replace("-", "_"),
                           help=helps.get(f.name, meta["help"]))


__all__ = ["NO_OP_SIGNAL", "SlurmOptions", "add_arguments"]
