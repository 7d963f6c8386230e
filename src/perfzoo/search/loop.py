"""The closed CubicML loop: random jobs -> fit -> search -> launch the top k -> refit, R rounds.

Every job the loop launches lands in one :class:`~perfzoo.store.RecordStore`, tagged with
the sweep id ``<tag>-<phase>`` (phases: ``random``, ``round1`` .. ``roundR``, and the
optional ``control`` (extra random jobs, so the loop can be compared with the same number
of random jobs), ``baseline`` (the hand-tuned config) and ``confirm`` (the best config of
the loop, of random search and the hand-tuned one measured again, so the comparison is
not a comparison of lucky maxima)). Before a phase launches, its plan
(the configs, with the predictions that chose them) is written to
``<store>/tune/<tag>-<phase>.jsonl``. The loop's state is derived from those two things
only: a planned config is done when the store holds a record of it. Killed at any point and
started again with the same arguments, the loop relaunches nothing that finished, reuses
the plan of the phase it was in, and carries on.

Launching goes through a *launcher*: ``launcher(configs, sweep_id) -> None`` appends one
record per config to the store (the ``confirm`` phase also passes ``repeat=n``: repeat
indices ``0 .. n-1``). The default, :class:`CollectLauncher`, runs
``python -m perfzoo.collect --configs ... --out <store>`` in-process (the harness: torchrun per
job, per-job timeouts, OOM detection). Tests inject a cheap stand-in.

>>> loop = ClosedLoop("fsdp-ads", "runs/tune", n_random=100, rounds=3, top_k=20)  # doctest: +SKIP
>>> summary = loop.run()                                                          # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np
import pandas as pd

from perfzoo import collect
from perfzoo.records import JobRecord, canonical_json
from perfzoo.search.encoding import SpaceCodec
from perfzoo.store import RecordStore

PLAN_DIR = "tune"
Launcher = Callable[[list, str], None]


def config_id(config: dict) -> str:
    """A config's identity in the loop: its canonical JSON (complete configs compare equal)."""
    return canonical_json(config)


# --- launchers ----------------------------------------------------------------------------

class LaunchInterrupted(KeyboardInterrupt):
    """The launcher stopped before every job ran (Ctrl-C, SIGTERM): run the loop again to resume."""


class CollectLauncher:
    """Runs configs through the harness: :func:`perfzoo.collect.run`, called as a function.

    ``space`` is what collect's ``space`` takes (a name, or a space file's path); ``options``
    are more :class:`~perfzoo.collect.CollectConfig` fields (``timeout``, ``steps``, ``warm``,
    ``command``, ...; collect's defaults otherwise); ``progress``: collect's bar.
    """

    def __init__(self, space: str, store: Union[str, Path], *, options: Optional[dict] = None, progress: bool = True):
        self.space = space
        self.store = Path(store)
        self.options = dict(options or {})
        self.progress = progress

    def __call__(self, configs: list, sweep_id: str, repeat: int = 1) -> None:
        """Run ``configs`` (repeat indices ``0 .. repeat - 1``; those in the store are skipped)."""
        if not configs:
            return
        plan_dir = self.store / PLAN_DIR
        plan_dir.mkdir(parents=True, exist_ok=True)
        path = plan_dir / f"{sweep_id}-launch.jsonl"
        _write_lines(path, [{"config": c} for c in configs])
        config = collect.CollectConfig(out=str(self.store), space=self.space, configs=str(path), sweep_id=sweep_id,
                                       repeat=repeat, no_progress=not self.progress, **self.options)
        if collect.run(config, provenance=f"python -m perfzoo.tune (sweep {sweep_id})") == 1:
            raise LaunchInterrupted(f"collect was interrupted during {sweep_id}")


def _write_lines(path: Path, rows: list[dict]) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
    os.replace(tmp, path)


# --- the hand-tuned baseline ----------------------------------------------------------------

def hand_tuned_ladder(space: Any) -> list[dict]:
    """The hand-tuned baseline of ``fsdp-ads``, as a ladder to climb down.

    What an engineer does without a searcher: every layer ``FULL_SHARD`` (the safest, least
    memory), the memory budget left at its default (unlimited), and the largest local batch
    that fits: the ladder lists the batches largest first; the loop runs them in order and
    stops at the first job that finishes ``ok``.
    """
    codec = space if isinstance(space, SpaceCodec) else SpaceCodec(space)
    sp = codec.space
    shard = [d for d in sp.dimensions if d.name.startswith("shard_")]
    if not shard or "local_batch" not in codec.names:
        raise ValueError(f"no hand-tuned baseline is defined for space {sp.name!r} (only for fsdp-ads-like spaces)")
    out = []
    memory = _memory_knob(codec)
    for batch in sorted(sp.dimension("local_batch").values, reverse=True):
        cfg = {d.name: "FULL_SHARD" for d in shard}
        cfg["local_batch"] = batch
        if memory is not None:
            values = sp.dimension(memory).values
            cfg[memory] = None if None in values else max(v for v in values)
        out.append(sp.validate(cfg))
    return out


def _memory_knob(codec: SpaceCodec) -> Optional[str]:
    """The space's memory knob: ``memory_headroom_gib`` (v2) or ``memory_budget_gib`` (v1), if any."""
    return next((k for k in ("memory_headroom_gib", "memory_budget_gib") if k in codec.names), None)


# what the v2 tower needs above its footprint with every layer FULL_SHARD, and per example of
# local batch (GiB), and what a NO_SHARD layer adds per parameter (the other half of its fp32
# parameters, gradients and Adam m and v, 16 / 2 bytes, and optimizer temporaries): calibration runs
EXPERT_BASE_GIB, EXPERT_PER_EXAMPLE_GIB, EXPERT_NO_SHARD_BYTES = 0.054, 0.000025, 9.4


def tower_layer_params(config: dict) -> list[int]:
    """Parameters of each layer of an fsdp config (no torch: the arithmetic of
    :class:`harness.workloads.fsdp_ads.TowerLayer` and ``InteractionLayer``)."""
    from harness.workloads.fsdp_ads import MLP_MULT, layer_widths

    widths = layer_widths(config)
    ins = [int(config["width"]), *widths[:-1]]
    tower = len(set(ins + widths)) > 1
    out = []
    for a, b in zip(ins, widths):
        mlp = 2 * a + a * MLP_MULT * b + MLP_MULT * b + MLP_MULT * b * b + b  # norm, up, down
        out.append(mlp + ((a * b if a != b else 0) if tower else a * a + a))  # skip, or the cross layer
    return out


def expert_ladder(space: Any) -> list[dict]:
    """The expert heuristic of ``fsdp-ads-v2``, fixed before any search ran, as a ladder.

    What an engineer who knows FSDP does: the most memory (the largest headroom level), and at
    each local batch, largest first, NO_SHARD the smallest layers (their all-gathers are the
    worst latency per byte) while a memory estimate (:data:`EXPERT_BASE_GIB` + batch x
    :data:`EXPERT_PER_EXAMPLE_GIB` + :data:`EXPERT_NO_SHARD_BYTES` per NO_SHARD parameter) stays
    within it; the others FULL_SHARD. The loop runs the rungs in order until one finishes ``ok``.
    """
    codec = space if isinstance(space, SpaceCodec) else SpaceCodec(space)
    sp, memory = codec.space, _memory_knob(codec)
    if memory != "memory_headroom_gib":
        raise ValueError(f"no expert heuristic is defined for space {sp.name!r} (only for fsdp-ads-v2-like spaces)")
    limit = max(sp.dimension(memory).values)
    ladder = []
    for cfg in hand_tuned_ladder(codec):
        params = tower_layer_params(cfg)
        estimate = EXPERT_BASE_GIB + EXPERT_PER_EXAMPLE_GIB * cfg["local_batch"]
        for i in sorted(range(len(params)), key=params.__getitem__):
            extra = EXPERT_NO_SHARD_BYTES * params[i] / 2**30
            if estimate + extra > limit:
                break
            cfg[f"shard_{i:02d}"], estimate = "NO_SHARD", estimate + extra
        ladder.append(sp.validate(cfg))
    return ladder


# the baseline phases: ladder and the rule written into the plan
BASELINES = {
    "baseline": (hand_tuned_ladder, "the FSDP default: every layer FULL_SHARD, the most memory, the largest local "
                                    "batch that runs ok (tried largest first)"),
    "expert": (expert_ladder, "the expert heuristic: NO_SHARD the smallest layers while a memory estimate allows, "
                              "the most memory, the largest local batch that runs ok"),
}


# --- the loop -------------------------------------------------------------------------------

@dataclass
class Phase:
    name: str
    sweep_id: str
    planned: int
    done: int
    ok: int
    best: Optional[float]
    records: list = field(default_factory=list, repr=False)


class ClosedLoop:
    """The closed loop over ``space`` with records in ``store`` (see the module docstring).

    Parameters
    ----------
    space : a Space or its name.
    store : the record store (a path or :class:`RecordStore`).
    launcher : ``launcher(configs, sweep_id)`` appends one record per config to ``store``;
        default :class:`CollectLauncher` (the harness).
    n_random, rounds, top_k : N random jobs, then R rounds of the top k proposals.
    searcher : ``reinforce`` (default), ``exhaustive``, ``tpe`` or ``random`` (the best of
        random configs by the predictor).
    predictor : a zoo member name (refitted every round on the loop's records), ``best``
        (the member and parameters of the leaderboard's best predictor for ``dataset``; falls
        back to ``lightgbm``), or a factory ``callable() -> unfitted predictor``.
    failure : also fit the ``failure`` classifier and search for predicted throughput x
        P(success) (once a failure has been seen).
    seed : seeds the random phase (and the searchers, ``seed + round``).
    tag : sweep-id prefix (default ``tune-<space>-s<seed>``).
    train_on : ``'loop'`` (only the loop's own records) or ``'store'`` (every record in the
        store of this space: a warm start from earlier sweeps).
    control : extra random jobs after the rounds (0: none; e.g. ``rounds * top_k`` so that
        random search with the same number of jobs is measured too).
    hand_tuned : also run the hand-tuned baseline, the FSDP default (:func:`hand_tuned_ladder`).
    expert : also run the expert heuristic (:func:`expert_ladder`).
    confirm : at the end, measure each arm's ``race`` best candidates this many more times; each
        arm's champion is then its candidate with the best median (a failed run counts as 0), so a
        lucky single measurement cannot name a champion.
    race : candidates per arm re-measured by ``confirm`` (default 3; 1: only the best).
    search_options : extra keyword arguments for the searcher (e.g. ``n_samples``).
    log : where progress lines go (``print`` by default; None: silent).
    """

    def __init__(self, space: Any, store: Union[str, Path, RecordStore], *, launcher: Optional[Launcher] = None,
                 n_random: int = 100, rounds: int = 3, top_k: int = 20, searcher: str = "reinforce",
                 predictor: Union[str, Callable[[], Any]] = "lightgbm", failure: bool = True, seed: int = 0,
                 tag: Optional[str] = None, train_on: str = "loop", control: int = 0, hand_tuned: bool = False,
                 expert: bool = False, confirm: int = 0, race: int = 3,
                 dataset: Optional[str] = None, search_options: Optional[dict] = None,
                 log: Optional[Callable[[str], None]] = print):
        self.codec = space if isinstance(space, SpaceCodec) else SpaceCodec(space)
        self.space = self.codec.space
        self.store = store if isinstance(store, RecordStore) else RecordStore(store)
        self.launcher = launcher if launcher is not None else CollectLauncher(self.space.ref, self.store.path)
        for name, v in (("n_random", n_random), ("top_k", top_k)):
            if int(v) < 1:
                raise ValueError(f"{name} must be at least 1, got {v}")
        if rounds < 0 or control < 0 or confirm < 0 or race < 1:
            raise ValueError("rounds, control and confirm must be >= 0, race >= 1")
        if train_on not in ("loop", "store"):
            raise ValueError(f"train_on must be 'loop' or 'store', got {train_on!r}")
        from perfzoo.search import SEARCHERS

        if searcher not in SEARCHERS:
            raise ValueError(f"unknown searcher {searcher!r}; choose one of {sorted(SEARCHERS)}")
        self.n_random, self.rounds, self.top_k = int(n_random), int(rounds), int(top_k)
        self.searcher = searcher
        self.predictor = predictor
        self.failure = failure
        self.seed = int(seed)
        self.tag = tag or f"tune-{self.space.name}-s{self.seed}"
        self.train_on = train_on
        self.control = int(control)
        self.hand_tuned = hand_tuned
        self.expert = expert
        self.race = int(race)
        self.confirm = int(confirm)
        self.dataset = dataset
        self.search_options = dict(search_options or {})
        self.log = log or (lambda s: None)
        self.plan_dir = self.store.path / PLAN_DIR
        self.notes: list[str] = []

    # -- phases and state ----------------------------------------------------------------------
    def loop_phases(self) -> list[str]:
        """The phases whose jobs are the loop's own: the random start and the search rounds."""
        return ["random"] + [f"round{r}" for r in range(1, self.rounds + 1)]

    def phases(self) -> list[str]:
        out = self.loop_phases()
        if self.control:
            out.append("control")
        if self.hand_tuned:
            out.append("baseline")
        if self.expert:
            out.append("expert")
        if self.confirm:
            out.append("confirm")
        return out

    def sweep_id(self, phase: str) -> str:
        return f"{self.tag}-{phase}"

    def plan_path(self, phase: str) -> Path:
        return self.plan_dir / f"{self.sweep_id(phase)}.jsonl"

    def read_plan(self, phase: str) -> Optional[list[dict]]:
        p = self.plan_path(phase)
        if not p.is_file():
            return None
        return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]

    def _records(self) -> list[JobRecord]:
        return [r for r in self.store.records() if r.workload == self.space.workload]

    def state(self) -> list[Phase]:
        """Each phase with its planned / done / ok job counts and best measured throughput."""
        records = self._records()
        measured = {config_id(r.config) for r in records}
        out = []
        for phase in self.phases():
            sid = self.sweep_id(phase)
            mine = [r for r in records if r.sweep_id == sid]
            plan = self.read_plan(phase)
            planned = len(plan) if plan is not None else 0
            done = sum(config_id(p["config"]) in measured for p in plan) if plan else len(mine)
            ok = [r.metrics.throughput for r in mine if r.status == "ok" and r.metrics.throughput is not None]
            out.append(Phase(phase, sid, planned, done, len(ok), max(ok) if ok else None, mine))
        return out

    # -- running ---------------------------------------------------------------------------------
    def run(self) -> "LoopSummary":
        """Run (or resume) every phase; returns the :class:`LoopSummary`."""
        t0 = time.perf_counter()
        for i, phase in enumerate(self.phases()):
            if phase in BASELINES:
                self._run_baseline(phase)
                continue
            if phase == "confirm":
                self._run_confirm()
                continue
            plan = self.read_plan(phase)
            if plan is None:
                plan = self._make_plan(phase, i)
                self.plan_dir.mkdir(parents=True, exist_ok=True)
                _write_lines(self.plan_path(phase), plan)
            measured = {config_id(r.config) for r in self._records()}
            todo = [p["config"] for p in plan if config_id(p["config"]) not in measured]
            if not todo:
                self.log(f"[{self.tag}] {phase}: all {len(plan)} jobs are in the store")
                continue
            self.log(f"[{self.tag}] {phase}: launching {len(todo)} of {len(plan)} planned jobs "
                     f"(sweep {self.sweep_id(phase)})")
            self.launcher(todo, self.sweep_id(phase))
            measured = {config_id(r.config) for r in self._records()}
            missing = [c for c in todo if config_id(c) not in measured]
            if missing:
                raise RuntimeError(f"{phase}: the launcher returned but {len(missing)} of {len(todo)} jobs have "
                                   f"no record in {self.store.path}; run again to retry them")
        summary = self.summary()
        summary.seconds = time.perf_counter() - t0
        return summary

    def _make_plan(self, phase: str, position: int) -> list[dict]:
        records = self._records()
        measured_ids = {config_id(r.config) for r in records}
        if phase in ("random", "control"):
            seed = self.seed if phase == "random" else self.seed + 10_007
            exclude = []
            if phase == "control":
                exclude = [p["config"] for ph in self.phases()[:position] for p in (self.read_plan(ph) or [])]
            n = self.n_random if phase == "random" else self.control
            idx = self.codec.sample(n, seed=np.random.default_rng([seed, 2]), unique=True,
                                    exclude=self.codec.keys(self.codec.index_of(exclude)) if exclude else None)
            return [{"config": c, "phase": phase} for c in self.codec.configs(idx)]
        # a search round: fit on what the loop (or the store) has measured, propose the top k
        r = int(phase[len("round"):])
        train = self._training_records()
        predictor, failure = self.fit(train)
        exclude = [rec.config for rec in records] + [p["config"] for ph in self.phases()[:position]
                                                     for p in (self.read_plan(ph) or [])]
        from perfzoo.search import search

        opts = dict(self.search_options)
        opts.setdefault("seed", self.seed * 1000 + r)
        t = time.perf_counter()
        result = search(self.searcher, self.codec, predictor, self.top_k, failure=failure, exclude=exclude, **opts)
        self.log(f"[{self.tag}] {phase}: fitted {type(predictor).__name__} on {len(train)} records "
                 f"({sum(x.status == 'ok' for x in train)} ok), {self.searcher} proposed {len(result)} configs "
                 f"in {time.perf_counter() - t:.1f} s (best predicted {np.nanmax(result.predicted):,.1f})")
        lines = result.records()
        for line in lines:
            line["phase"] = phase
        assert all(config_id(x["config"]) not in measured_ids for x in lines)
        return lines

    def _training_records(self) -> list[JobRecord]:
        records = self._records()
        if self.train_on == "store":
            return records
        mine = {self.sweep_id(p) for p in self.phases()}
        return [r for r in records if r.sweep_id in mine]

    def make_predictor(self) -> Any:
        """A new, unfitted predictor of the configured kind."""
        from perfzoo import zoo

        if callable(self.predictor):
            return self.predictor()
        if self.predictor == "best":
            try:
                from sklearn.base import clone

                return clone(zoo.load_best(self.dataset or "fsdp-cpu"))
            except Exception as exc:  # no leaderboard yet
                note = f"no best predictor available ({type(exc).__name__}: {exc}); using lightgbm"
                if note not in self.notes:
                    self.notes.append(note)
                    self.log(f"[{self.tag}] {note}")
                return zoo.make("lightgbm")
        return zoo.make(self.predictor)

    def fit(self, records: Sequence[JobRecord]) -> tuple[Any, Any]:
        """``(predictor, failure or None)`` fitted on ``records``."""
        X, y, failed = training_frame(self.codec, records)
        ok = np.isfinite(y)
        if ok.sum() < 2:
            raise RuntimeError(f"only {int(ok.sum())} successful jobs to fit a predictor on; "
                               "run more random jobs first (--n-random)")
        predictor = self.make_predictor().fit(X[ok].reset_index(drop=True), y[ok])
        failure = None
        if self.failure and failed.any():
            from perfzoo import zoo

            failure = zoo.make("failure").fit(X, failed)
        return predictor, failure

    def _run_baseline(self, phase: str) -> None:
        sid = self.sweep_id(phase)
        ladder_fn, rule = BASELINES[phase]
        plan = self.read_plan(phase)
        if plan is None:
            plan = [{"config": c, "phase": phase, "rule": rule} for c in ladder_fn(self.codec)]
            self.plan_dir.mkdir(parents=True, exist_ok=True)
            _write_lines(self.plan_path(phase), plan)
        for p in plan:
            cfg = p["config"]
            cid = config_id(cfg)
            recs = [r for r in self._records() if config_id(r.config) == cid]
            if not recs:
                self.log(f"[{self.tag}] {phase}: trying local_batch {cfg.get('local_batch')}")
                self.launcher([cfg], sid)
                recs = [r for r in self._records() if config_id(r.config) == cid]
            if any(r.status == "ok" for r in recs):
                return

    def arms(self, state: Optional[list[Phase]] = None) -> dict[str, list[JobRecord]]:
        """The records of each arm of the comparison: ``loop`` (random phase + rounds),
        ``random`` (random phase + control), ``hand-tuned`` and ``expert`` (the baselines)."""
        by = {p.name: p for p in (state if state is not None else self.state())}
        return {"loop": [r for n in self.loop_phases() if n in by for r in by[n].records],
                "random": by["random"].records + (by["control"].records if "control" in by else []),
                "hand-tuned": by["baseline"].records if "baseline" in by else [],
                "expert": by["expert"].records if "expert" in by else []}

    def candidates(self, state: Optional[list[Phase]] = None) -> dict[str, list[dict]]:
        """Each arm's configs in the race: its ``race`` best by a single measurement (a baseline:
        the one rung that ran)."""
        out = {}
        for name, recs in self.arms(state).items():
            ok = sorted((r for r in recs if r.status == "ok" and r.metrics.throughput is not None),
                        key=lambda r: -r.metrics.throughput)
            configs: dict[str, dict] = {}
            for r in ok:
                if len(configs) < (self.race if name in ("loop", "random") else 1):
                    configs.setdefault(config_id(r.config), r.config)
            if configs:
                out[name] = list(configs.values())
        return out

    def champions(self, state: Optional[list[Phase]] = None) -> dict[str, dict]:
        """The configs the comparison is about: each arm's best single measurement."""
        return {name: configs[0] for name, configs in self.candidates(state).items()}

    def _run_confirm(self) -> None:
        sid = self.sweep_id("confirm")
        seen: dict[str, dict] = {}
        for configs in self.candidates().values():
            for cfg in configs:
                seen.setdefault(config_id(cfg), cfg)
        counts = Counter(config_id(r.config) for r in self._records())
        todo = [cfg for cid, cfg in seen.items() if counts[cid] < 1 + self.confirm]
        if not todo:
            self.log(f"[{self.tag}] confirm: every champion has {1 + self.confirm} measurements")
            return
        self.log(f"[{self.tag}] confirm: measuring {len(todo)} configs {self.confirm} more times")
        self.launcher(todo, sid, repeat=1 + self.confirm)

    def confirmed(self, state: Optional[list[Phase]] = None) -> dict[str, dict]:
        """Each arm's champion after the race: of its :meth:`candidates`, the one with the best median
        over every measurement (a run that did not finish ``ok`` counts as 0), with its values and
        the medians of the candidates it beat."""
        recs = self._records()
        out = {}
        for name, configs in self.candidates(state).items():
            raced = []
            for cfg in configs:
                cid = config_id(cfg)
                vals = [r.metrics.throughput if r.status == "ok" and r.metrics.throughput is not None else 0.0
                        for r in recs if config_id(r.config) == cid]
                raced.append({"median": float(np.median(vals)), "n": len(vals),
                              "ok": sum(v > 0 for v in vals), "values": [float(v) for v in vals], "config": cfg})
            best = max(raced, key=lambda c: c["median"])
            out[name] = {**best, "raced": [c["median"] for c in raced]}
        return out

    # -- results ---------------------------------------------------------------------------------
    def summary(self) -> "LoopSummary":
        return LoopSummary.from_state(self, self.state())


@dataclass
class LoopSummary:
    """The loop's outcome: per-phase counts and bests, and the comparisons that matter."""

    tag: str
    space: str
    phases: list
    loop_best: Optional[float]
    loop_jobs: int
    random_best: Optional[float]
    random_jobs: int
    baseline: Optional[float]
    baseline_config: Optional[dict]
    unit: str
    seconds: float = 0.0
    notes: list = field(default_factory=list)
    confirmed: dict = field(default_factory=dict)

    @classmethod
    def from_state(cls, loop: ClosedLoop, state: list) -> "LoopSummary":
        arms = loop.arms(state)
        loop_recs, rand_recs = arms["loop"], arms["random"]
        base_ok = [r for r in arms["hand-tuned"] if r.status == "ok"]
        unit = next((r.metrics.throughput_unit for r in loop_recs if r.metrics.throughput_unit), "") or ""
        return cls(tag=loop.tag, space=loop.space.name,
                   phases=[{"phase": p.name, "sweep_id": p.sweep_id, "planned": p.planned, "done": p.done,
                            "ok": p.ok, "best": p.best} for p in state],
                   loop_best=_best(loop_recs), loop_jobs=len(loop_recs), random_best=_best(rand_recs),
                   random_jobs=len(rand_recs), baseline=_best(base_ok),
                   baseline_config=base_ok[0].config if base_ok else None, unit=unit, notes=list(loop.notes),
                   confirmed=loop.confirmed(state) if loop.confirm else {})

    def table(self) -> str:
        rows = [("phase", "sweep id", "planned", "done", "ok", f"best {self.unit}".strip())]
        for p in self.phases:
            rows.append((p["phase"], p["sweep_id"], str(p["planned"]), str(p["done"]), str(p["ok"]),
                         "-" if p["best"] is None else f"{p['best']:,.1f}"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
        lines.append("")
        lines.append(f"loop (random + rounds, {self.loop_jobs} jobs): best {_fmt(self.loop_best)}")
        if self.random_jobs > self.n_random_phase():
            lines.append(f"random search ({self.random_jobs} jobs): best {_fmt(self.random_best)}  "
                         f"(loop vs random: {_gain(self.loop_best, self.random_best)})")
        if self.baseline is not None:
            lines.append(f"hand-tuned baseline: {_fmt(self.baseline)}  (loop vs hand-tuned: "
                         f"{_gain(self.loop_best, self.baseline)}; local_batch "
                         f"{(self.baseline_config or {}).get('local_batch')})")
        if self.confirmed:
            c = self.confirmed
            lines.append("")
            lines.append("raced (each arm's best candidates re-measured; champion = best median, a failed run = 0):")
            for name in ("loop", "random", "hand-tuned", "expert"):
                if name in c:
                    raced = "" if len(c[name]["raced"]) < 2 else \
                        f" (best of {len(c[name]['raced'])} raced: {', '.join(_fmt(v) for v in c[name]['raced'])})"
                    lines.append(f"  {name:<10} {_fmt(c[name]['median'])} over {c[name]['ok']}/{c[name]['n']} ok "
                                 f"runs{raced}")
            lo = c.get("loop", {}).get("median")
            for name in ("random", "hand-tuned", "expert"):
                if name in c:
                    lines.append(f"  loop vs {name}: {_gain(lo, c[name]['median'])}")
        return "\n".join(lines)

    def n_random_phase(self) -> int:
        return next((p["done"] for p in self.phases if p["phase"] == "random"), 0)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("tag", "space", "phases", "loop_best", "loop_jobs", "random_best",
                                              "random_jobs", "baseline", "baseline_config", "unit", "seconds",
                                              "notes", "confirmed")}


def _best(records: Sequence[JobRecord]) -> Optional[float]:
    vals = [r.metrics.throughput for r in records if r.status == "ok" and r.metrics.throughput is not None]
    return max(vals) if vals else None


def _fmt(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:,.1f}"


def _gain(a: Optional[float], b: Optional[float]) -> str:
    if a is None or b is None or b <= 0:
        return "n/a"
    return f"{100.0 * (a / b - 1.0):+.1f}%"


def training_frame(codec: SpaceCodec, records: Sequence[JobRecord]) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """``(X, y, failed)`` of records: X holds the space's ``config.<dimension>`` columns
    (what the searcher varies), y the throughput (NaN where the job failed)."""
    cols = [f"config.{n}" for n in codec.names]
    rows = [{c: r.config.get(c[len("config."):]) for c in cols} for r in records]
    X = pd.DataFrame(rows, columns=cols)
    y = np.array([r.metrics.throughput if r.status == "ok" and r.metrics.throughput is not None else np.nan
                  for r in records], dtype=float)
    failed = np.array([r.status != "ok" for r in records], dtype=bool)
    return X, y, failed


# --- the frontier figure ------------------------------------------------------------------------

def frontier_figure(summary_or_loop: Any, path: Union[str, Path], permutations: int = 100, seed: int = 0,
                    title: Optional[str] = None) -> Optional[Path]:
    """The paper's Figure 2(a): measured throughput per job in launch order, one colour per
    round (dotted: each job; solid: the running maximum), the random phase's running maximum
    averaged over ``permutations`` orders; failed jobs are not plotted. The hand-tuned
    baseline and the best of the control random jobs are drawn as horizontal lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    loop = summary_or_loop
    state = {p.name: p for p in loop.state()}
    phases = loop.loop_phases()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    x0 = 0
    run_max = -np.inf
    unit = ""
    rng = np.random.default_rng(seed)
    for i, ph in enumerate(phases):
        if ph not in state:
            continue
        recs = sorted(state[ph].records, key=lambda r: r.started_at)
        n = len(recs)
        if n == 0:
            continue
        xs = np.arange(x0 + 1, x0 + n + 1)
        vals = np.array([r.metrics.throughput if r.status == "ok" and r.metrics.throughput is not None else np.nan
                         for r in recs], dtype=float)
        unit = unit or next((r.metrics.throughput_unit for r in recs if r.metrics.throughput_unit), "")
        c = colors[i % len(colors)]
        ok = np.isfinite(vals)
        ax.plot(xs[ok], vals[ok], ":", marker=".", markersize=4, color=c, alpha=0.6, linewidth=0.8)
        if ph == "random":
            filled = np.where(ok, vals, -np.inf)
            curves = []
            for _ in range(permutations):
                perm = rng.permutation(filled)
                curves.append(np.maximum.accumulate(perm))
            curves = np.where(np.isfinite(curves), curves, np.nan)
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # orders whose first jobs all failed
                front = np.nanmean(curves, axis=0)
            label = f"random ({n} jobs; frontier averaged over {permutations} orders)"
            run_max = max(run_max, np.nanmax(filled)) if np.isfinite(filled).any() else run_max
        else:
            front = np.maximum.accumulate(np.maximum(np.where(ok, vals, -np.inf), run_max))
            front = np.where(np.isfinite(front), front, np.nan)
            run_max = np.nanmax([run_max, np.nanmax(np.where(ok, vals, -np.inf))])
            label = f"{ph.replace('round', 'round ')} ({n} jobs, {int((~ok).sum())} failed)"
        ax.plot(xs, front, "-", color=c, linewidth=2, label=label)
        x0 += n
    if "baseline" in state and state["baseline"].best is not None:
        ax.axhline(state["baseline"].best, color="k", linestyle="--", linewidth=1,
                   label=f"FSDP default ({state['baseline'].best:,.0f})")
    if "expert" in state and state["expert"].best is not None:
        ax.axhline(state["expert"].best, color="tab:purple", linestyle="--", linewidth=1,
                   label=f"expert heuristic ({state['expert'].best:,.0f})")
    if "control" in state and state["control"].records:
        both = state["random"].records + state["control"].records
        b = _best(both)
        if b is not None:
            ax.axhline(b, color="grey", linestyle="-.", linewidth=1,
                       label=f"best of {len(both)} random jobs ({b:,.0f})")
    ax.set_xlabel("jobs launched (in order)")
    ax.set_ylabel(f"measured throughput (p90{', ' + unit if unit else ''})")
    ax.set_title(title or f"{loop.space.name}: closed loop {loop.tag} ({loop.searcher} + predictor)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


__all__ = ["ClosedLoop", "CollectLauncher", "LaunchInterrupted", "LoopSummary", "hand_tuned_ladder", "expert_ladder",
           "frontier_figure", "training_frame", "config_id"]
