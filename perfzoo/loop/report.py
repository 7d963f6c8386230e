"""What the closed loop reports: each phase's state (:class:`Phase`), the summary with the
champion and its speedups (:class:`LoopSummary`), and the frontier figure (the paper's Figure 2(a)).

>>> s = LoopSummary(tag="t", space="s", unit="queries/s", phases=[],
...                 arms={"loop": {"jobs": 10, "best": 120.0, "config": {"batch": 64}},
...                       "random": {"jobs": 10, "best": 100.0, "config": {"batch": 32}},
...                       "user": {"jobs": 1, "best": 80.0, "config": {"batch": 16}}})
>>> s.champion["config"], {arm: round(x, 2) for arm, x in s.speedups().items()}
({'batch': 64}, {'random': 1.2, 'user': 1.5})
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from perfzoo.console import pyplot
from perfzoo.loop.race import BASELINE_ARMS
from perfzoo.records import JobRecord


@dataclass
class Phase:
    """One phase of the loop as the store and its plan show it."""

    name: str
    sweep_id: str
    planned: int
    done: int
    ok: int
    best: Optional[float]
    records: list = field(default_factory=list, repr=False)


@dataclass
class LoopSummary:
    """The loop's outcome: per-phase counts and bests, each arm's best single run (``arms``: arm ->
    ``{"jobs", "best", "config"}``) and, after a race, each arm's champion (``confirmed``,
    :func:`perfzoo.loop.race.confirmed`)."""

    tag: str
    space: str
    unit: str
    phases: list
    arms: dict
    seconds: float = 0.0
    notes: list = field(default_factory=list)
    confirmed: dict = field(default_factory=dict)

    def best(self, arm: str) -> Optional[float]:
        """The best single run of ``arm`` (``loop``, ``random`` or a baseline's); None before one ran ok."""
        return self.arms[arm]["best"]

    def jobs(self, arm: str) -> int:
        """The jobs ``arm`` ran."""
        return self.arms[arm]["jobs"]

    def beyond_random(self) -> Optional[str]:
        """What the search rounds found beyond the loop's random jobs, in one line (None without rounds)."""
        rounds = [p for p in self.phases if p["phase"].startswith("round")]
        first = next((p["best"] for p in self.phases if p["phase"] == "random"), None)
        if not rounds:
            return None
        found = [p["best"] for p in rounds if p["best"] is not None]
        best = max(found) if found else None
        jobs = sum(p["done"] for p in rounds)
        if best is None or first is None or best <= first:
            return (f"search rounds ({jobs} jobs): best {_fmt(best)}, nothing faster than the {self.n_random_phase()} "
                    f"random jobs' best {_fmt(first)}: the champion is a random job")
        return (f"search rounds ({jobs} jobs): best {_fmt(best)}, {_gain(best, first)} beyond the "
                f"{self.n_random_phase()} random jobs' best {_fmt(first)}")

    def values(self) -> dict[str, tuple[float, dict]]:
        """Each arm's ``(value, config)`` the comparison uses: its race champion's median after a
        race, else its best single run (arms without an ok run are left out)."""
        if self.confirmed:
            return {arm: (c["median"], c["config"]) for arm, c in self.confirmed.items()}
        return {arm: (a["best"], a["config"]) for arm, a in self.arms.items() if a["best"] is not None}

    @property
    def champion(self) -> Optional[dict]:
        """The loop's champion: ``{"value", "config", "how"}`` (None before a loop job ran ok)."""
        values = self.values()
        if "loop" not in values:
            return None
        how = (f"median of its {self.confirmed['loop']['n']} race runs" if self.confirmed
               else "best single run; race it with --confirm N for a median")
        return {"value": values["loop"][0], "config": values["loop"][1], "how": how}

    def speedups(self) -> dict[str, float]:
        """The loop champion's value over each other arm's (random search at equal jobs where the
        loop ran a control, and every baseline), as a ratio; arms without a value are left out."""
        values = self.values()
        if "loop" not in values:
            return {}
        return {arm: values["loop"][0] / value for arm, (value, _) in values.items()
                if arm != "loop" and value > 0 and (arm != "random" or self.jobs("random") > self.n_random_phase())}

    def table(self) -> str:
        rows = [("phase", "sweep id", "planned", "done", "ok", f"best {self.unit}".strip())]
        for p in self.phases:
            rows.append((p["phase"], p["sweep_id"], str(p["planned"]), str(p["done"]), str(p["ok"]),
                         "-" if p["best"] is None else f"{p['best']:,.1f}"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
        lines.append("")
        lines.append(f"loop (random + rounds, {self.jobs('loop')} jobs): best {_fmt(self.best('loop'))}")
        beyond = self.beyond_random()
        if beyond is not None:
            lines.append(beyond)
        if self.jobs("random") > self.n_random_phase():
            lines.append(f"random search ({self.jobs('random')} jobs): best {_fmt(self.best('random'))}  "
                         f"(loop vs random: {_gain(self.best('loop'), self.best('random'))})")
        for arm in BASELINE_ARMS.values():
            if arm in self.arms:
                lines.append(f"{arm} baseline: {_fmt(self.best(arm))}  (loop vs {arm}: "
                             f"{_gain(self.best('loop'), self.best(arm))})")
        if self.confirmed:
            c = self.confirmed
            lines.append("")
            lines.append("raced (each arm's best candidates re-measured, the better half again; champion = the "
                         "finalist with the best median of its race runs, a failed run = 0):")
            for name in c:
                raced = "" if len(c[name]["raced"]) < 2 else \
                    f" (best of {len(c[name]['raced'])} raced, race medians: " \
                    f"{', '.join(_fmt(v) for v in c[name]['raced'])})"
                lines.append(f"  {name:<10} {_fmt(c[name]['median'])} over {c[name]['ok']}/{c[name]['n']} ok "
                             f"runs{raced}")
            lo = c.get("loop", {}).get("median")
            for name in c:
                if name != "loop":
                    lines.append(f"  loop vs {name}: {_gain(lo, c[name]['median'])}")
        champion = self.champion
        if champion is not None:
            lines.append("")
            lines.append(f"champion: {_fmt(champion['value'])} {self.unit} ({champion['how']})".replace("  ", " "))
            lines.append(f"  config: {json.dumps(champion['config'], sort_keys=True, default=str)}")
            for arm, ratio in self.speedups().items():
                lines.append(f"  speedup over {arm}: {ratio:.3f}x ({100 * (ratio - 1):+.1f}%)")
        if self.notes:
            lines += ["", *(f"note: {note}" for note in self.notes)]
        return "\n".join(lines)

    def n_random_phase(self) -> int:
        return next((p["done"] for p in self.phases if p["phase"] == "random"), 0)

    def to_dict(self) -> dict:
        return {**{k: getattr(self, k) for k in ("tag", "space", "unit", "phases", "arms", "seconds", "notes",
                                                  "confirmed", "champion")},
                "speedups": self.speedups()}


def _best(records: Sequence[JobRecord]) -> Optional[float]:
    vals = [r.metrics.throughput for r in records if r.status == "ok" and r.metrics.throughput is not None]
    return max(vals) if vals else None


def _fmt(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:,.1f}"


def _gain(a: Optional[float], b: Optional[float]) -> str:
    if a is None or b is None or b <= 0:
        return "n/a"
    return f"{100.0 * (a / b - 1.0):+.1f}%"



def frontier_figure(state: Sequence[Phase], loop_phases: Sequence[str], path: Path, title: str,
                    permutations: int = 100, seed: int = 0) -> Path:
    """The paper's Figure 2(a): measured throughput per job in launch order, one colour per
    round (dotted: each job; solid: the running maximum), the random phase's running maximum
    averaged over ``permutations`` orders; failed jobs are not plotted. Each baseline that ran
    and the best of the control random jobs are drawn as horizontal lines. ``state``: the
    loop's phases (:meth:`~perfzoo.loop.ClosedLoop.state`), ``loop_phases``: the names of the
    random phase and the rounds."""
    plt = pyplot()

    state = {p.name: p for p in state}
    phases = list(loop_phases)
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
    for (phase, arm), color in zip(BASELINE_ARMS.items(), ("k", "tab:purple", "tab:brown")):
        if phase in state and state[phase].best is not None:
            ax.axhline(state[phase].best, color=color, linestyle="--", linewidth=1,
                       label=f"{arm} baseline ({state[phase].best:,.0f})")
    if "control" in state and state["control"].records:
        both = state["random"].records + state["control"].records
        b = _best(both)
        if b is not None:
            ax.axhline(b, color="grey", linestyle="-.", linewidth=1,
                       label=f"best of {len(both)} random jobs ({b:,.0f})")
    ax.set_xlabel("jobs launched (in order)")
    ax.set_ylabel(f"measured throughput (p90{', ' + unit if unit else ''})")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


__all__ = ["LoopSummary", "Phase", "frontier_figure"]
