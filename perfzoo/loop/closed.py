"""The closed CubicML loop: random jobs -> fit -> search -> launch the top k -> refit, R rounds.

Every job the loop launches lands in one :class:`~perfzoo.records.store.RecordStore`, tagged with
the sweep id ``<tag>-<phase>`` (phases: ``random``, ``round1`` .. ``roundR``, and the
optional ``control`` (extra random jobs, so the loop can be compared with the same number
of random jobs), ``baseline`` and ``expert`` (the workload's baselines), ``user`` (the user's own
baseline configs) and ``race`` (each arm's
best candidates measured again by successive halving, :mod:`perfzoo.loop.race`, so the
comparison is not a comparison of lucky maxima)). Before a phase launches, its plan
(the configs, with the predictions that chose them) is written to
``<store>/tune/<tag>-<phase>.jsonl``. The loop's state is derived from those two things
only: a planned config is done when the store holds a record of it. Killed at any point and
started again with the same arguments, the loop relaunches nothing that finished, reuses
the plan of the phase it was in, and carries on.

Launching goes through a *launcher* (:mod:`perfzoo.loop.launch`); the baselines are the
workload's own (its spec's ``baselines``, :mod:`perfzoo.workloads`), the race between the arms
:mod:`perfzoo.loop.race`, the summary and the frontier figure :mod:`perfzoo.loop.report`.

>>> loop = ClosedLoop(get("fsdp-ads"), RecordStore("runs/tune"), n_random=100, rounds=3, top_k=20)  # doctest: +SKIP
>>> summary = loop.run()                                                                            # doctest: +SKIP
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np
import pandas as pd

from perfzoo.console import DataError, InputError
from perfzoo import pricing, zoo
from perfzoo.hardware.capability import kind
from perfzoo.loop import race
from perfzoo.loop.launch import PLAN_DIR, CollectLauncher, Launcher, write_lines
from perfzoo.loop.race import BASELINE_ARMS, config_id
from perfzoo.loop.report import LoopSummary, Phase, frontier_figure
from perfzoo.records import JobRecord
from perfzoo.records.store import RecordStore
from perfzoo.search import Objective, Reinforce, Searcher
from perfzoo.spaces import Space
from perfzoo.spaces.codec import SpaceCodec
from perfzoo.workloads import Baseline, get as get_workload


class ClosedLoop:
    """The closed loop over ``space`` with records in ``store`` (see the module docstring).

    Parameters
    ----------
    space : the Space searched.
    store : the record store.
    launcher : ``launcher(configs, sweep_id)`` appends one record per config to ``store``;
        default :class:`~perfzoo.loop.launch.CollectLauncher` (the harness).
    n_random, rounds, top_k : N random jobs, then R rounds of the top k proposals.
    searcher : the :class:`~perfzoo.search.Searcher` run each round (default :class:`~perfzoo.search.Reinforce`
        with its defaults); its ``seed`` is replaced by ``seed * 1000 + round``.
    predictor : a zoo member name (refitted every round on the loop's records), ``best``
        (the member and parameters of the leaderboard's best predictor for ``dataset``; falls
        back to ``lightgbm``), or a factory ``callable() -> unfitted predictor``.
    failure : also fit the ``failure`` classifier and search for predicted throughput x
        P(success) (once a failure has been seen).
    seed : seeds the random phase (and the searcher, ``seed * 1000 + round``).
    tag : sweep-id prefix (default ``tune-<space>-s<seed>``).
    train_on : ``'loop'`` (only the loop's own records) or ``'store'`` (every record in the
        store of this space: a warm start from earlier sweeps).
    control : extra random jobs after the rounds (0: none; e.g. ``rounds * top_k`` so that
        random search with the same number of jobs is measured too).
    hand_tuned : also run the hand-tuned baseline: the ``baseline`` ladder of the space's workload
        (its spec's ``baselines``; ``fsdp``: the FSDP default,
        :func:`~perfzoo.workloads.fsdp_ads.baselines.hand_tuned_ladder`).
    expert : also run its ``expert`` ladder (``fsdp``: the expert heuristic,
        :func:`~perfzoo.workloads.fsdp_ads.baselines.expert_ladder`).
    baseline : the user's own baseline, for any space: configs of the space tried in order until
        one finishes ``ok`` (phase ``user``, arm ``user``), raced like the workload's baselines.
    confirm : race runs of each arm's finalists (0: no race). At the end each arm's ``race`` best
        configs are measured :data:`~perfzoo.loop.race.FIRST_RUNS` more times, the better half of
        each searched arm (and the baselines) until they have ``confirm`` race runs; each arm's
        champion is its finalist with the best median over them (a failed run counts as 0), so a
        lucky single measurement cannot name a champion (:mod:`perfzoo.loop.race`).
    race : candidates per searched arm in the race (default 3; 1: only the best).
    log : where progress lines go (``print`` by default; None: silent).
    """

    def __init__(self, space: Space, store: RecordStore, *, launcher: Optional[Launcher] = None,
                 n_random: int = 100, rounds: int = 3, top_k: int = 20, searcher: Searcher = Reinforce(),
                 predictor: Union[str, Callable[[], Any]] = "lightgbm", failure: bool = True, seed: int = 0,
                 tag: Optional[str] = None, train_on: str = "loop", control: int = 0, hand_tuned: bool = False,
                 expert: bool = False, baseline: Sequence[dict] = (), confirm: int = 0, race: int = 3,
                 dataset: Optional[str] = None, log: Optional[Callable[[str], None]] = print):
        self.codec = SpaceCodec(space)
        self.space = space
        self.store = store
        self.launcher = launcher if launcher is not None else CollectLauncher(self.space.ref, self.store.path)
        for name, v in (("n_random", n_random), ("top_k", top_k)):
            if int(v) < 1:
                raise InputError(f"{name} must be at least 1, got {v}")
        if rounds < 0 or control < 0 or confirm < 0 or race < 1:
            raise InputError("rounds, control and confirm must be >= 0, race >= 1")
        if train_on not in ("loop", "store"):
            raise InputError(f"train_on must be 'loop' or 'store', got {train_on!r}")
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
        self.user_baseline = [space.validate(c) for c in baseline]
        self.race = int(race)
        self.confirm = int(confirm)
        self.dataset = dataset
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
        if self.user_baseline:
            out.append("user")
        if self.confirm:
            out.append("race")
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
        """Each phase with its planned / done / ok job counts and best measured throughput; a baseline's
        rung the store had measured already (a config of the random phase, say) with those runs."""
        records = self._records()
        measured = {config_id(r.config) for r in records}
        out = []
        for phase in self.phases():
            sid = self.sweep_id(phase)
            mine = [r for r in records if r.sweep_id == sid]
            plan = self.read_plan(phase)
            if phase in BASELINE_ARMS and plan:  # a rung the store had measured was not run again: its runs stand
                reused = {config_id(p["config"]) for p in plan} - {config_id(r.config) for r in mine}
                mine += [r for r in records if config_id(r.config) in reused and r.sweep_id != self.sweep_id("race")]
            planned = len(plan) if plan is not None else 0
            done = sum(config_id(p["config"]) in measured for p in plan) if plan else len(mine)
            ok = [r.metrics.throughput for r in mine if r.status == "ok" and r.metrics.throughput is not None]
            out.append(Phase(phase, sid, planned, done, len(ok), max(ok) if ok else None, mine))
        return out

    # -- running ---------------------------------------------------------------------------------
    def run(self) -> LoopSummary:
        """Run (or resume) every phase; returns the :class:`LoopSummary`."""
        self.check_plans()
        t0 = time.perf_counter()
        for i, phase in enumerate(self.phases()):
            if phase in BASELINE_ARMS:
                self._run_baseline(phase)
                continue
            if phase == "race":
                self._run_race()
                continue
            plan = self.read_plan(phase)
            if plan is None:
                plan = self._make_plan(phase, i)
                self.plan_dir.mkdir(parents=True, exist_ok=True)
                write_lines(self.plan_path(phase), plan)
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
        searcher = replace(self.searcher, seed=self.seed * 1000 + r)
        t = time.perf_counter()
        objective = Objective(self.codec, predictor, failure, seed=searcher.seed)
        result = searcher.propose(objective, self.top_k, self.codec.keys_of(exclude))
        self.log(f"[{self.tag}] {phase}: fitted {type(predictor).__name__} on {len(train)} records "
                 f"({sum(x.status == 'ok' for x in train)} ok), {searcher.name} proposed {len(result)} configs "
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
        if callable(self.predictor):
            return self.predictor()
        if self.predictor == "best":  # the shipped member, unfitted (pricing's fallback where none ships)
            name, params, note = pricing.shipped_member(self.dataset or "fsdp-cpu")
            if note and note not in self.notes:
                self.notes.append(note)
                self.log(f"[{self.tag}] {note}")
            return zoo.make(name, **params)
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
            failure = zoo.make("failure").fit(X, failed)
        return predictor, failure

    def _baseline(self, phase: str) -> Baseline:
        """The ladder of baseline phase ``phase``: the user's configs (``user``), else the space's
        workload's (:mod:`perfzoo.workloads`)."""
        if phase == "user":
            return Baseline(lambda codec: self.user_baseline,
                            "the user's baseline: the given configs, tried in order until one runs ok")
        own = get_workload(self.space.workload).baselines
        if phase not in own:
            raise InputError(f"no {phase!r} baseline is defined for space {self.space.name!r}: the "
                             f"{self.space.workload!r} workload has {', '.join(map(repr, own)) or 'none'}")
        return own[phase]

    def _run_baseline(self, phase: str) -> None:
        sid = self.sweep_id(phase)
        baseline = self._baseline(phase)
        plan = self.read_plan(phase)
        if plan is None:
            plan = [{"config": c, "phase": phase, "rule": baseline.rule} for c in baseline.ladder(self.codec)]
            self.plan_dir.mkdir(parents=True, exist_ok=True)
            write_lines(self.plan_path(phase), plan)
        for i, p in enumerate(plan, 1):
            cfg = p["config"]
            cid = config_id(cfg)
            recs = [r for r in self._records() if config_id(r.config) == cid]
            if not recs:
                self.log(f"[{self.tag}] {phase}: trying config {i} of {len(plan)}")
                self.launcher([cfg], sid)
                recs = [r for r in self._records() if config_id(r.config) == cid]
            if any(r.status == "ok" for r in recs):
                return

    def arms(self, state: Optional[list[Phase]] = None) -> dict[str, list[JobRecord]]:
        """The records of each arm of the comparison (:func:`perfzoo.loop.race.arms`)."""
        by = {p.name: p.records for p in (state if state is not None else self.state())}
        return race.arms(by, self.loop_phases())

    def candidates(self, state: Optional[list[Phase]] = None) -> dict[str, list[dict]]:
        """Each arm's configs in the race (:func:`perfzoo.loop.race.candidates`)."""
        return race.candidates(self.arms(state), self.race)

    def champions(self, state: Optional[list[Phase]] = None) -> dict[str, dict]:
        """The configs the comparison is about: each arm's best single measurement."""
        return {name: configs[0] for name, configs in self.candidates(state).items()}

    def _race_records(self) -> list[JobRecord]:
        sid = self.sweep_id("race")
        return [r for r in self._records() if r.sweep_id == sid]

    def _run_race(self) -> None:
        """The race's two stages (:mod:`perfzoo.loop.race`); each launch skips what already ran."""
        sid = self.sweep_id("race")
        raced = self.candidates()
        first = race.first_stage_runs(self.confirm)
        everyone = [c for configs in raced.values() for c in configs]
        self.log(f"[{self.tag}] race: {len(everyone)} candidates, {first} runs each")
        self.launcher(everyone, sid, repeat=1 + first)  # repeat 0 is the run that made it a candidate
        if first < self.confirm:
            final = race.finalists(raced, race.race_values(self._race_records()), self.confirm)
            finalists = [c for configs in final.values() for c in configs]
            self.log(f"[{self.tag}] race: {len(finalists)} finalists, {self.confirm} runs each")
            self.launcher(finalists, sid, repeat=1 + self.confirm)

    def confirmed(self, state: Optional[list[Phase]] = None) -> dict[str, dict]:
        """Each arm's champion after the race (:func:`perfzoo.loop.race.confirmed`)."""
        return race.confirmed(self.candidates(state), self._race_records(), self.confirm)

    def check_plans(self) -> None:
        """A ``ValueError`` when the store's plan of the ``user`` phase holds other configs than
        ``baseline`` (a resumed run given another baseline file)."""
        plan = self.read_plan("user") if self.user_baseline else None
        if plan is not None and [config_id(p["config"]) for p in plan] != [config_id(c) for c in self.user_baseline]:
            raise DataError(f"the store's plan {self.plan_path('user')} holds other baseline configs than the ones "
                             "given; give the same baseline, or another store")

    # -- results ---------------------------------------------------------------------------------
    def summary(self) -> LoopSummary:
        """Each phase's state, each arm's best single run and, after a race, each arm's champion."""
        state = self.state()
        unit = next((r.metrics.throughput_unit for p in state for r in p.records if r.metrics.throughput_unit), "")
        arms = {}
        for arm, records in self.arms(state).items():
            ok = [r for r in records if r.status == "ok" and r.metrics.throughput is not None]
            best = max(ok, key=lambda r: r.metrics.throughput, default=None)
            arms[arm] = {"jobs": len(records), "best": best.metrics.throughput if best else None,
                         "config": best.config if best else None}
        return LoopSummary(tag=self.tag, space=self.space.name, unit=unit or "",
                           phases=[{"phase": p.name, "sweep_id": p.sweep_id, "planned": p.planned, "done": p.done,
                                    "ok": p.ok, "best": p.best} for p in state],
                           arms=arms, notes=[*self.notes, *machines_note([r for p in state for r in p.records])],
                           confirmed=self.confirmed(state) if self.confirm else {})

    def frontier_figure(self, path: Path) -> Path:
        """The frontier figure of the loop so far (:func:`perfzoo.loop.report.frontier_figure`)."""
        return frontier_figure(self.state(), self.loop_phases(), path,
                               f"{self.space.name}: closed loop {self.tag} ({self.searcher.name} + predictor)")


def machines_note(records: Sequence[JobRecord]) -> list[str]:
    """A note when the loop's jobs ran on machines of more than one kind (:func:`perfzoo.hardware.capability.kind`:
    a loop resumed on another VM): its arms then do not compare, whatever the ratio says.

    >>> hw = {"accelerator": "cpu", "accelerator_count": 1}
    >>> rec = lambda **more: JobRecord(job_id="j", source="measured", provenance="doc", status="ok",
    ...     started_at="2026-11-28T10:00:00Z", workload="llm", config={}, hardware={**hw, **more})
    >>> machines_note([rec(cpu_capability="AVX2"), rec(cpu_capability="AVX2"), rec()])
    ['its jobs ran on machines of 2 kinds (CPU: AVX2 (bf16 matmul emulated): 2 jobs; CPU: unknown CPU capability: 1 jobs): arms measured on different ones do not compare']
    >>> machines_note([rec(), rec()])
    []
    """
    kinds = Counter(kind(r.hardware.model_dump()) for r in records)
    if len(kinds) < 2:
        return []
    return [f"its jobs ran on machines of {len(kinds)} kinds ({'; '.join(f'{k}: {n} jobs' for k, n in kinds.most_common())}): "
            "arms measured on different ones do not compare"]


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


__all__ = ["ClosedLoop", "Phase", "machines_note", "training_frame"]
