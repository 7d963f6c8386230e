"""What the closed loop reports: the summary table and the frontier figure (the paper's Figure 2(a))."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np

from perfzoo.records import JobRecord

if TYPE_CHECKING:
    from perfzoo.loop.closed import ClosedLoop


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
    def from_state(cls, loop: "ClosedLoop", state: list) -> "LoopSummary":
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
            lines.append("raced (each arm's best candidates re-measured, the better half again; champion = the "
                         "finalist with the best median of its race runs, a failed run = 0):")
            for name in ("loop", "random", "hand-tuned", "expert"):
                if name in c:
                    raced = "" if len(c[name]["raced"]) < 2 else \
                        f" (best of {len(c[name]['raced'])} raced, race medians: " \
                        f"{', '.join(_fmt(v) for v in c[name]['raced'])})"
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



def frontier_figure(loop: "ClosedLoop", path: Path, permutations: int = 100, seed: int = 0,
                    title: Optional[str] = None) -> Path:
    """The paper's Figure 2(a): measured throughput per job in launch order, one colour per
    round (dotted: each job; solid: the running maximum), the random phase's running maximum
    averaged over ``permutations`` orders; failed jobs are not plotted. The hand-tuned
    baseline and the best of the control random jobs are drawn as horizontal lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    ax.set_title(title or f"{loop.space.name}: closed loop {loop.tag} ({loop.searcher.name} + predictor)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


__all__ = ["LoopSummary", "frontier_figure"]
