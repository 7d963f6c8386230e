"""A predictor's offsets as a Gaussian process: which configs share them, how far they spread, and
what measured runs say of the rest (what :mod:`perfzoo.zoo.anchor` anchors with).

A run's offset is ``log(measured / predicted)``. Two levels, read off the configs (:func:`keys`):

* a **group**: the same model shape, accelerator, precision, task and framework (:data:`GROUP_KEYS`);
* a **cluster**: the same accelerator and framework (:data:`CLUSTER_KEYS`), the cluster and its software.

One config's offset varies by ``tau_c^2 + tau_g^2 + sigma^2`` (:class:`Spread`: between clusters,
between the models of a cluster, between the layouts of a model), the base predictor's own:
estimated from its out-of-fold residuals on its training data, where each published source is a
stack it never saw (:meth:`Spread.estimate`, which :class:`perfzoo.zoo.interval.Interval` runs when
it is fitted). Two configs share ``rho(d) (tau_c^2 [one cluster] + (tau_g^2 + sigma^2) [one model])``
of it (:func:`covariance`), ``rho`` the share carried across their layout distance ``d`` (GPUs and
nodes, parallel sizes, batch, recompute, sequence: :mod:`perfzoo.zoo.similarity`, fitted on the shared
tables' pairs). Given runs, a config's offset has a posterior mean (the shift) and variance
(:func:`posterior`): one run moves a layout of its model by ``rho(d)`` of its offset (0.90 on its own
layout, 0.77 one doubling away, 0.30 seven), a layout of another model on its cluster by the
cluster's share only, ``rho(d) tau_c^2 / (tau_c^2 + tau_g^2 + sigma^2)``; runs that agree move it
further, and a config no run shares a cluster with is not moved. ``z``, the standardised anchored
residuals met when the same anchoring is replayed on the training residuals, gives the anchored
interval its quantiles (:meth:`Spread.quantiles`); :func:`updated` reads the spread again from the
runs themselves.

>>> import numpy as np, pandas as pd
>>> z = np.array([-1.3, 0.0, 1.3])
>>> spread = Spread(between_clusters=0.04, between_groups=0.02, within=0.01, z=z, z_weights=np.ones(3),
...                 z_cluster=z, z_cluster_weights=np.ones(3))
>>> runs = pd.DataFrame({"config.hidden_dim": [4096], "config.n_gpus": [8], "hardware.accelerator": ["H100"]})
>>> queries = pd.DataFrame({"config.hidden_dim": [4096, 4096, 8192], "config.n_gpus": [8, 64, 8],
...                         "hardware.accelerator": ["H100"] * 3})
>>> shift, var, level = posterior(keys(runs), np.log([1.5]), keys(queries), spread)
>>> [round(float(np.exp(s)), 3) for s in shift], level.tolist()   # its layout, 8x the GPUs; another model
([1.439, 1.252, 1.231], ['group', 'group', 'cluster'])
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from perfzoo.hardware import accelerators
from perfzoo.records.vocabulary import is_missing, normalize_framework, precision_format
from perfzoo.zoo import similarity
from perfzoo.zoo.conformal import conformal_quantiles
from perfzoo.zoo.similarity import Similarity

# the model's shape: what a group shares besides the cluster, precision and task
SHAPE_KEYS = ("config.n_layers", "config.hidden_dim", "config.ffn_dim", "config.n_heads", "config.n_kv_heads",
              "config.vocab_size", "config.n_experts", "config.experts_per_token", "config.moe_ffn_dim")
CLUSTER_KEYS = ("hardware.accelerator", "config.framework")
GROUP_KEYS = (*SHAPE_KEYS, "config.precision", "config.task", *CLUSTER_KEYS)
MIN_VARIANCE = 1e-4  # sigma^2 is never taken as exactly 0 (1% in log space)
# how many runs' worth the training sigma^2 counts for against the runs' own scatter (updated): the
# published tables' own sigma^2 vary as a scaled chi-square of about 1.5 degrees of freedom
# (2 / variance of their logs over the six sources)
SIGMA_PRIOR_DOF = 2.0
# tau_c^2 and tau_g^2 are never taken below 10%: stacks and models differ at least that much in every
# published comparison, and training data too small to show it (a handful of rows) must not make a
# run count for little
MIN_BETWEEN = 1e-2
DRAWS = 3  # replays of the anchoring per group and shot count in Spread.estimate
SHOTS = (1, 2, 3)  # anchor counts replayed in Spread.estimate
STACK_LEVEL = 0.8  # the one-sided level of tau_c^2's upper confidence bound (new_stack_factor)


@dataclass(frozen=True)
class Keys:
    """Each row's group and cluster as comparable labels (hashes of the normalised key columns) and
    its place in layout space (:func:`perfzoo.zoo.similarity.layout`; None: nothing known of it)."""

    group: np.ndarray
    cluster: np.ndarray
    layout: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.group)

    def take(self, rows: Any) -> Keys:
        return Keys(self.group[rows], self.cluster[rows], None if self.layout is None else self.layout[rows])

    def coordinates(self) -> np.ndarray:
        """The layout coordinates, all unknown (NaN) where none were given."""
        return self.layout if self.layout is not None else np.full((len(self), len(similarity.COORDINATES) + 1), np.nan)


def _normalised(X: pd.DataFrame, columns: Sequence[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per key column, ``(codes, texts)``: each row's code into the normalised texts that equal
    configs share (a missing column or cell: ``?``), each distinct value read once."""
    text = {"hardware.accelerator": _accelerator,
            "config.framework": lambda v: "?" if is_missing(v) else normalize_framework(v),
            "config.precision": lambda v: "?" if is_missing(v) else precision_format(v),
            "config.task": lambda v: "?" if is_missing(v) else "".join(ch for ch in str(v).lower() if ch.isalnum())}
    number = lambda v: "?" if is_missing(v) or not np.isfinite(float(v)) else f"{float(v):.6g}"  # noqa: E731
    out = {}
    for c in columns:
        if c not in X.columns:
            out[c] = (np.zeros(len(X), dtype=np.int64), np.array(["?"], dtype=object))
            continue
        col = X[c] if c in text else pd.to_numeric(X[c], errors="coerce")
        codes, uniques = pd.factorize(col, use_na_sentinel=True)
        fn = text.get(c, number)
        texts = np.array([fn(u) for u in uniques] + [fn(None)], dtype=object)
        out[c] = (np.where(codes < 0, len(uniques), codes), texts)
    return out


def _label(parts: dict[str, tuple[np.ndarray, np.ndarray]], columns: Sequence[str]) -> np.ndarray:
    """One uint64 per row, equal where the normalised texts of ``columns`` are: each text hashed
    once (the same in any frame), then mixed row by row."""
    label = np.zeros(len(next(iter(parts.values()))[0]), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for c in columns:
            codes, texts = parts[c]
            hashed = pd.util.hash_array(np.array([f"{c}={t}" for t in texts], dtype=object))
            label = label * np.uint64(1_000_003) ^ hashed[codes]
    return label


def _accelerator(name: Any) -> str:
    if is_missing(name):
        return "?"
    with warnings.catch_warnings():  # an unknown accelerator is refused elsewhere; here it is just text
        warnings.simplefilter("ignore")
        found = accelerators.spec(name)
    return found.name if found is not None else accelerators.normalise(str(name))


def keys(X: pd.DataFrame) -> Keys:
    """Each row's anchoring group and cluster (:data:`GROUP_KEYS`, :data:`CLUSTER_KEYS`).

    Where a table gives no shape (no hidden size), the model's parameter count tells models apart.

    >>> k = keys(pd.DataFrame({"config.hidden_dim": [4096, 4096, 8192], "hardware.accelerator": ["H100", "DGX-H100", "H100"]}))
    >>> bool(k.group[0] == k.group[1]), bool(k.group[0] == k.group[2]), bool(k.cluster[0] == k.cluster[2])
    (True, False, True)
    >>> k = keys(pd.DataFrame({"config.n_params": [5e9, 2e10], "hardware.accelerator": ["H100", "H100"]}))
    >>> bool(k.group[0] == k.group[1])
    False
    """
    unshaped = X["config.hidden_dim"].isna() if "config.hidden_dim" in X.columns else pd.Series(True, index=X.index)
    size = X["config.n_params"].where(unshaped) if "config.n_params" in X.columns else None
    parts = _normalised(X if size is None else X.assign(**{"config.n_params": size}), (*GROUP_KEYS, "config.n_params"))
    return Keys(_label(parts, (*GROUP_KEYS, "config.n_params")), _label(parts, CLUSTER_KEYS), similarity.layout(X))


# --- the spread of offsets ---------------------------------------------------------------

@dataclass(frozen=True)
class Spread:
    """The variance components of a predictor's log offsets (``between_clusters``: tau_c^2,
    ``between_groups``: tau_g^2 within a cluster, ``within``: sigma^2 between the configs of a group)
    and ``z``, the standardised anchored residuals (weights ``z_weights``) the intervals take their
    quantiles from."""

    between_clusters: float
    between_groups: float
    within: float
    z: np.ndarray  # rows a run of their own group anchors
    z_weights: np.ndarray
    z_cluster: np.ndarray  # rows anchored by runs of their cluster only
    z_cluster_weights: np.ndarray
    similarity: Similarity = similarity.FITTED  # the share of an offset carried across a layout distance

    @property
    def prior(self) -> float:
        """The variance of one config's offset before any run: tau_c^2 + tau_g^2 + sigma^2."""
        return self.between_clusters + self.between_groups + self.within

    @classmethod
    def estimate(cls, residuals: np.ndarray, row_keys: Keys, sources: np.ndarray | None = None,
                 seed: int = 0, releases: np.ndarray | None = None) -> Spread:
        """The spread of out-of-fold ``residuals`` (one per training row, each predicted without its
        source). A cluster or group of the training data is one within a source (``sources``: each
        row's; None: one source) and a software release (``releases``: each row's; None: one), so a
        source's own offset counts as its clusters' spread, and a release's as its groups': a user's
        runs and the layouts they ask about run one release.

        The variances come from the method of moments of the nested one-way layout; tau_c^2, seen
        in a handful of sources, is taken at its upper confidence bound (:func:`new_stack_factor`):
        a new stack is one draw from a population a few sources barely describe. ``z`` comes from
        replaying the anchoring on the training rows: K = 1, 2, 3 runs of one group predict the rest
        of that group and the other groups of its cluster, :data:`DRAWS` draws each, every source
        weighed alike; each run's share carried by layout distance (:attr:`similarity`)."""
        r = np.asarray(residuals, dtype=float)
        src = np.zeros(len(r), dtype=np.int64) if sources is None else pd.factorize(np.asarray(sources, dtype=object))[0]
        rel = np.zeros(len(r), dtype=np.int64) if releases is None else pd.factorize(np.asarray(releases, dtype=object))[0]
        group = pd.factorize(pd.Series(list(zip(src, rel, row_keys.group))))[0]
        cluster = pd.factorize(pd.Series(list(zip(src, rel, row_keys.cluster))))[0]
        within, between_groups, between_clusters = _components(r, group, cluster)
        between_clusters *= new_stack_factor(int(np.unique(src).size))
        spread = cls(between_clusters, between_groups, within, *([np.zeros(0)] * 4))
        z = _replayed_z(r, Keys(group, cluster, row_keys.layout), src, spread, seed)
        return replace(spread, z=z["group"][0], z_weights=z["group"][1], z_cluster=z["cluster"][0],
                       z_cluster_weights=z["cluster"][1])

    def relative(self, alpha: float = 0.2) -> tuple[float, float]:
        """``(low, high)`` factors of the error between two layouts of one model: how far measured /
        predicted of one may lie from the other's, were the other measured (one run anchoring its
        group). Tighter than an absolute interval: a model's offset is shared by its layouts.

        >>> z = np.linspace(-1.5, 1.5, 101)
        >>> low, high = Spread(0.04, 0.02, 0.01, z, np.ones(101), z, np.ones(101)).relative()
        >>> round(low, 3), round(high, 3)
        (0.846, 1.182)
        """
        tau = self.between_clusters + self.between_groups
        sd = np.sqrt(tau * self.within / (tau + self.within) + self.within)
        z_lo, z_hi = self.quantiles(alpha)
        return float(np.exp(z_lo * sd)), float(np.exp(z_hi * sd))

    def quantiles(self, alpha: float, level: str = "group") -> tuple[float, float]:
        """The ``alpha / 2`` and ``1 - alpha / 2`` quantiles of the standardised residuals of rows
        anchored at ``level`` (``group`` or ``cluster``; conformal ranks, weighted)."""
        z, w = (self.z, self.z_weights) if level == "group" else (self.z_cluster, self.z_cluster_weights)
        return conformal_quantiles(z, alpha, w)


def new_stack_factor(sources: int, level: float = STACK_LEVEL) -> float:
    """How much a variance seen between ``sources`` sources is raised to its upper ``level``
    confidence bound, ``(k - 1) / chi2_{1 - level}(k - 1)`` (1 below two sources: nothing to bound).

    >>> round(new_stack_factor(5), 2), round(new_stack_factor(50), 2), new_stack_factor(1)
    (2.43, 1.21, 1.0)
    """
    if sources < 2:
        return 1.0
    from scipy.stats import chi2  # at fit time only: loading and anchoring a predictor imports no scipy

    return float((sources - 1) / chi2.ppf(1 - level, sources - 1))


def _components(r: np.ndarray, group: np.ndarray, cluster: np.ndarray) -> tuple[float, float, float]:
    """``(sigma^2, tau_g^2, tau_c^2)`` by moments: the pooled variance inside groups; the variance of
    group means about their cluster's, less what sigma^2 puts there; the variance of cluster means,
    less what the lower levels put there. Floored at :data:`MIN_VARIANCE` and :data:`MIN_BETWEEN`."""
    d = pd.DataFrame({"r": r, "g": group, "c": cluster})
    g = d.groupby("g").agg(r=("r", "mean"), n=("r", "size"), c=("c", "first"), ss=("r", lambda v: ((v - v.mean()) ** 2).sum()))
    dof = (g["n"] - 1).sum()
    within = float(g["ss"].sum() / dof) if dof > 0 else MIN_VARIANCE
    cm = g.groupby("c").agg(r=("r", "mean"), groups=("r", "size"))
    g["dev"] = g["r"] - g["c"].map(cm["r"])
    multi = g["c"].map(cm["groups"]) > 1
    if multi.any():
        k = cm["groups"][cm["groups"] > 1]
        between_groups = float((g.loc[multi, "dev"] ** 2).sum() / (k - 1).sum()) - within * float((1 / g.loc[multi, "n"]).mean())
    else:
        between_groups = 0.0
    between_groups = max(between_groups, MIN_BETWEEN)
    if len(cm) > 1:
        per_row = float((1 / g["n"]).mean())
        between_clusters = float(cm["r"].var(ddof=1)) - between_groups * float((1 / cm["groups"]).mean()) - within * per_row
    else:
        between_clusters = 0.0
    return max(within, MIN_VARIANCE), between_groups, max(between_clusters, MIN_BETWEEN)


def _replayed_z(r: np.ndarray, row_keys: Keys, src: np.ndarray, spread: Spread,
                seed: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The anchoring replayed on training residuals (:meth:`Spread.estimate`): K = :data:`SHOTS` rows
    of each group, :data:`DRAWS` draws, predict the group's other rows and its cluster's other groups
    (:func:`posterior`); ``(z, weights)`` of the standardised residuals of the group-anchored and of
    the cluster-anchored rows."""
    rng = np.random.default_rng(seed)
    members = pd.Series(np.arange(len(r))).groupby(row_keys.group).indices
    of_cluster = pd.Series(np.arange(len(r))).groupby(row_keys.cluster).indices
    covariances: dict = {}  # a cluster's rows (sorted) and their covariances, computed once per cluster
    zs, same, sources = [], [], []
    for rows in members.values():
        cluster = row_keys.cluster[rows[0]]
        if cluster not in covariances:
            on = of_cluster[cluster]
            covariances[cluster] = (on, covariance(row_keys.take(on), row_keys.take(on), spread))
        on, C = covariances[cluster]
        others = np.setdiff1d(on, rows)
        for k in SHOTS:
            if rows.size < k or (rows.size == k and others.size == 0):
                continue
            for _ in range(DRAWS):
                shots = rng.choice(rows, k, replace=False)
                query = np.concatenate([np.setdiff1d(rows, shots), others])
                at_shots, at_query = np.searchsorted(on, shots), np.searchsorted(on, query)
                shift, var = _conditional(C[np.ix_(at_shots, at_shots)], C[np.ix_(at_query, at_shots)], r[shots], spread)
                zs.append((r[query] - shift) / np.sqrt(np.maximum(var, MIN_VARIANCE)))
                same.append(np.arange(query.size) < rows.size - k)
                sources.append(src[query])
    z, at, where = (np.concatenate(v) if v else np.zeros(0) for v in (zs, same, sources))
    at = at.astype(bool)
    return {"group": _weighted(z[at], where[at]), "cluster": _weighted(z[~at], where[~at])}


def _weighted(z: np.ndarray, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``z`` with weights that count every source alike (the Gaussian's 10% and 90% points where
    fewer than two were replayed)."""
    if z.size < 2:
        return np.array([-1.2816, 1.2816]), np.ones(2)
    s = pd.Series(sources)
    w = 1.0 / s.map(s.value_counts()).to_numpy(dtype=float)
    return z, w * len(w) / w.sum()


# --- the posterior ------------------------------------------------------------------------

def covariance(a: Keys, b: Keys, spread: Spread) -> np.ndarray:
    """``(len(a), len(b))`` covariances of offsets: ``rho(d) (tau_c^2 [one cluster] + (tau_g^2 +
    sigma^2) [one model])``, ``rho`` the share carried across the layout distance ``d``
    (:attr:`Spread.similarity`). Two configs of one model on one layout share ``rho(0)`` of their
    offset; of another model, the cluster's share only; far apart in layout, little of either."""
    same_c = a.cluster[:, None] == b.cluster[None, :]
    same_g = a.group[:, None] == b.group[None, :]
    rho = spread.similarity(similarity.distance(a.coordinates(), b.coordinates()))
    return rho * (spread.between_clusters * same_c + (spread.between_groups + spread.within) * same_g)


def posterior(runs: Keys, offsets: np.ndarray, queries: Keys, spread: Spread) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(shift, variance, level)`` per query: the posterior mean and variance of its offset given the
    runs' ``offsets`` (log measured / predicted; :func:`covariance`, prior variance
    :attr:`Spread.prior`), and ``level``, ``group`` where a run shares its group, ``cluster`` where one
    shares only its cluster, ``none`` (shift 0, the prior variance) otherwise."""
    offsets = np.asarray(offsets, dtype=float)
    n = len(queries)
    shift, var = np.zeros(n), np.full(n, spread.prior)
    level = np.full(n, "none", dtype=object)
    seen = np.isin(queries.cluster, runs.cluster) if len(runs) else np.zeros(n, dtype=bool)
    if not seen.any():
        return shift, var, level
    q = queries.take(seen)
    shift[seen], var[seen] = _moments(runs, offsets, q, spread)
    level[seen] = np.where(np.isin(q.group, runs.group), "group", "cluster")
    return shift, var, level


def _moments(runs: Keys, offsets: np.ndarray, queries: Keys, spread: Spread) -> tuple[np.ndarray, np.ndarray]:
    """:func:`posterior`'s mean and variance for queries that share a cluster with a run."""
    return _conditional(covariance(runs, runs, spread), covariance(queries, runs, spread), offsets, spread)


def _conditional(K: np.ndarray, k: np.ndarray, offsets: np.ndarray, spread: Spread) -> tuple[np.ndarray, np.ndarray]:
    """The Gaussian conditional of the queries' offsets given the runs': ``K`` the runs' covariances
    (its diagonal set to the prior here), ``k`` the queries' with the runs."""
    K = np.array(K, dtype=float)
    np.fill_diagonal(K, spread.prior)
    solve = np.linalg.solve(K, np.column_stack([offsets, k.T]))
    return k @ solve[:, 0], np.maximum(spread.prior - np.einsum("ij,ji->i", k, solve[:, 1:]), 0.0)


def updated(spread: Spread, runs: Keys, offsets: np.ndarray) -> Spread:
    """``spread`` as the runs themselves show it. tau_g^2 is raised to what they show where they
    cover two or more groups of one cluster (the variance of their group means about their
    cluster's, less what sigma^2 puts there): runs of models that disagree say their models differ
    more than the training sources did. Where groups hold two or more runs, their scatter inside
    their groups, read against the share their layout distance leaves apart (``1 - rho(d)``:
    :func:`covariance`), measures an offset's prior variance (a scaled inverse chi-square prior of
    :data:`SIGMA_PRIOR_DOF` degrees of freedom at the training value) and sigma^2 takes what tau_c^2
    and tau_g^2 leave of it: how far one stack's layouts stray from the cost model differs from
    source to source (log sd 0.06 to 0.11 between the published tables' groups, 0.4 on vTrain's),
    and three runs of a model say which kind of stack this is.

    >>> spread = Spread(0.01, 0.01, 0.01, *([np.zeros(2)] * 4))
    >>> runs = Keys(np.array([1, 2, 3]), np.array([7, 7, 7]))
    >>> round(updated(spread, runs, np.log([1.0, 1.5, 2.0])).between_groups, 3)
    0.111
    >>> tight = updated(spread, Keys(np.array([1, 1, 1]), np.array([7, 7, 7])), np.log([1.0, 1.01, 0.99]))
    >>> round(tight.within, 4)   # three runs of one layout that agree: little scatter
    0.0001
    """
    if len(runs) < 2:
        return spread
    r = np.asarray(offsets, dtype=float)
    coords = runs.coordinates()
    scatter, dof = 0.0, 0
    for rows in pd.Series(np.arange(len(r))).groupby(runs.group).indices.values():
        if rows.size > 1:
            i, j = np.triu_indices(rows.size, 1)
            apart = 1 - spread.similarity(similarity.distance(coords[rows], coords[rows])[i, j])
            scatter += float(((r[rows] - r[rows].mean()) ** 2).sum()) / float(apart.mean())
            dof += rows.size - 1
    within = spread.within
    if dof:
        total = (SIGMA_PRIOR_DOF * spread.prior + scatter) / (SIGMA_PRIOR_DOF + dof)
        within = max(total - spread.between_clusters - spread.between_groups, MIN_VARIANCE)
    g = pd.DataFrame({"r": r, "g": runs.group, "c": runs.cluster}).groupby("g").agg(
        r=("r", "mean"), n=("r", "size"), c=("c", "first"))
    g = g[g["c"].map(g["c"].value_counts()) > 1]
    between_groups = spread.between_groups
    if not g.empty:
        dev = g["r"] - g.groupby("c")["r"].transform("mean")
        seen = float((dev ** 2).sum() / (len(g) - g["c"].nunique())) - within * float((1 / g["n"]).mean())
        between_groups = max(between_groups, seen)
    return replace(spread, between_groups=between_groups, within=within)


__all__ = ["CLUSTER_KEYS", "GROUP_KEYS", "Keys", "Spread", "covariance", "keys", "new_stack_factor", "posterior",
           "updated"]
