"""The configs a collect run measures and the names of its jobs: every config checked against the
space (:func:`resolve_configs`; :func:`infer_space` finds the space of a ``--configs`` file), your
command's launch template and metric source (:func:`command_of`), a job's identity (the config its
id hashes, :func:`job_identity`) and the run's sweep id (:func:`sweep_id`).
"""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
from pathlib import Path

from harness.command import MetricSource, check_template
from perfzoo import spaces as _spaces
from perfzoo import workloads
from perfzoo.collect.config import CollectConfig
from perfzoo.console import InputError, read_configs, read_located
from perfzoo.records import Metrics


def infer_space(path: str) -> str:
    r"""The one registered space that every config in ``path`` fits (collect's ``--configs`` with
    neither ``--space`` nor ``--workload``); a :class:`InputError` when none or several do.

    >>> import json, tempfile
    >>> f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
    >>> _ = f.write(json.dumps({"config": _spaces.get("fsdp-ads-v3").sample(1, seed=0)[0]}) + "\n"); f.close()
    >>> infer_space(f.name)
    'fsdp-ads-v3'
    """
    raws = read_configs(path)

    def fits(name: str) -> bool:
        space = _spaces.get(name)
        try:
            for raw in raws:
                space.validate(raw)
        except _spaces.SpaceError:
            return False
        return True

    matches = [name for name in _spaces.names() if fits(name)]
    if len(matches) != 1:
        found = f"fit the spaces {', '.join(matches)}" if matches else "fit no registered space"
        raise InputError(f"--configs {path}: the configs {found}; name one with --space")
    return matches[0]


def resolve_configs(config: CollectConfig, space: _spaces.Space) -> list[dict]:
    """Validated, complete configs (a :class:`InputError` names the first bad one)."""
    wkey = space.world_size_key
    if config.configs:
        configs = []
        for where, raw in read_located(config.configs):
            raw = dict(raw)
            if config.nproc is not None:
                if wkey in raw and int(raw[wkey]) != config.nproc:
                    raise InputError(f"{where}: knob '{wkey}' = {raw[wkey]} but --nproc {config.nproc}")
                raw.setdefault(wkey, config.nproc)
            try:
                configs.append(space.validate(raw))
            except _spaces.SpaceError as exc:
                raise InputError(f"{where}: {exc}") from None
        unique = list({json.dumps(c, sort_keys=True, default=str): c for c in configs}.values())
        if len(unique) < len(configs):
            print(f"perfzoo.collect: {len(configs) - len(unique)} repeated config(s) in {config.configs} run "
                  "once (measure a config several times with --repeat)", file=sys.stderr)
        return unique
    if config.n is None or config.n < 1:
        raise InputError("--n must be at least 1")
    if config.nproc is None:
        return space.sample(config.n, seed=config.seed)
    dim = space._dims.get(wkey)
    allowed = dim.values if dim is not None else (space.constants.get(wkey),)
    if not any(_spaces._same(config.nproc, v) for v in allowed):
        raise InputError(f"--nproc {config.nproc}: space '{space.name}' allows {wkey} in {list(allowed)}")
    if dim is None:
        return space.sample(config.n, seed=config.seed)
    sub = _spaces.Space(name=space.name, workload=space.workload,
                        dimensions=[d for d in space.dimensions if d.name != wkey],
                        constants={**space.constants, wkey: config.nproc}, derived=space.derived,
                        constraints=space.constraints, world_size_key=wkey)
    return [space.validate({k: c[k] for k in c}) for c in sub.sample(config.n, seed=config.seed)]


def command_of(config: CollectConfig, space: _spaces.Space):
    """``(template, MetricSource)`` for a space of the command workload, else ``None``."""
    given = [f"--{f.replace('_', '-')}" for f in ("command", "metric_parser", "metric_regex", "throughput_unit")
             if getattr(config, f) is not None]
    if space.workload != "command":
        if given:
            raise InputError(f"{given[0]} is for your own job (a .toml space of the command workload); "
                             f"space {space.name} runs the built-in '{space.workload}' workload")
        return None
    template = config.command or (space.command if isinstance(space, _spaces.FileSpace) else None)
    if not template:
        raise InputError(f"space {space.name} runs a command: give --command 'TEMPLATE' (e.g. 'torchrun "
                         "--standalone --nproc-per-node {nproc} train.py --batch {batch}') or command = \"...\" "
                         "in the space file")
    if isinstance(space, _spaces.FileSpace):  # a command that finds the files beside its space file
        template = template.replace("{space_dir}", shlex.quote(str(Path(space.path).resolve().parent)))
    if config.warm or config.mode == "inprocess":
        raise InputError("--warm and --mode inprocess run the built-in workloads; a command job is its own process")
    if config.metric_parser and config.metric_regex:
        raise InputError("give --metric-parser or --metric-regex, not both")
    parser = "regex" if config.metric_regex else (config.metric_parser or "file")
    default_unit = "tokens/s" if parser == "torchtitan" else (
        space.throughput_unit if isinstance(space, _spaces.FileSpace) else "items/s")
    try:
        check_template(template, space.knobs())
        source = MetricSource(parser=parser, regex=config.metric_regex, unit=config.throughput_unit or default_unit)
        Metrics(throughput_unit=source.unit)
    except ValueError as exc:
        raise InputError(" ".join(str(exc).split())[:300]) from None
    return template, source


def job_identity(workload: workloads.WorkloadSpec, cfg: dict) -> dict:
    """A config as its job id sees it: without the keys its workload's harness implies (a record
    that predates such a key keeps its id, so a resumed sweep still skips it).

    >>> llm = workloads.get("llm")
    >>> job_identity(llm, {"precision": "fp8", "low_precision_backward": False})
    {'precision': 'fp8'}
    """
    said = workload.implied(cfg) if workload.implied else {}
    return {k: v for k, v in cfg.items() if not (k in said and said[k] == v)}


def sweep_id(config: CollectConfig, space_name: str, configs: list[dict]) -> str:
    """The sweep id every record of the run holds: ``config.sweep_id``, else the space's name and a
    hash of the workload, the space, the repeats and the configs (the same run, the same id)."""
    if config.sweep_id:
        return config.sweep_id
    h = hashlib.sha256(json.dumps([config.workload, space_name, config.repeat, configs],
                                  sort_keys=True, default=str).encode()).hexdigest()[:10]
    return f"{space_name}-{h}"


__all__ = ["command_of", "infer_space", "job_identity", "resolve_configs", "sweep_id"]
