"""Exact scoring of a whole grid by a LightGBM-based predictor, tree by tree.

When every feature a LightGBM model sees is a function of one knob (the ``native``
encoding of ``config.*`` columns is: the value, its log, its category code; analytic
features that mix knobs are not), each tree is a function of the few knobs it splits on,
and each of its leaves is a box (a product of per-knob value sets) of the grid. So a tree
becomes a small table over its knobs, tables over the same knobs add up, and the grid's
raw score is a sum of broadcast tables: a few hundred vectorised adds instead of
traversing 400 trees for each of 8 million configs. The result is checked against the
predictor's own ``predict`` on random grid points; any mismatch (or a model or encoding
this does not cover) returns ``None`` and the caller predicts chunk by chunk instead.

Models additive over knobs in a link space (the ``failure`` classifier's logistic form) are
covered by :func:`additive_grid`, checked the same way.

Covered: ``lightgbm`` / ``lightgbm_rank`` (and any :class:`~perfzoo.zoo.base.EncodedPredictor`
whose ``model_`` is a fitted LightGBM model and whose target is ``log`` or ``raw``, also wrapped in
an :class:`~perfzoo.zoo.interval.Interval`), and the ``failure`` classifier in its LightGBM or constant form.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np
import pandas as pd

from perfzoo.spaces.codec import SpaceCodec
from perfzoo.zoo.interval import Interval

MAX_GRID = 64_000_000


def _lgb_model(model: Any):
    try:
        import lightgbm as lgb
    except ImportError:  # pragma: no cover
        return None
    return model if isinstance(model, lgb.LGBMModel) and hasattr(model, "booster_") else None


def _parts(predictor: Any, kind: str):
    """``(encoder, lgb model, post)`` with ``post(raw_score) -> output``, or None.

    ``kind``: ``'predict'`` (the predictor's ``predict``) or ``'success'`` (P(success) of a
    failure classifier).
    """
    if kind == "success":
        k = getattr(predictor, "kind_", None)
        if k == "constant":
            rate = float(predictor.rate_)
            return "constant", 1.0 - rate
        if k != "lightgbm":
            return None
        lgbm = _lgb_model(getattr(predictor, "model_", None))
        if lgbm is None:
            return None
        return predictor.encoder_, lgbm, lambda raw: 1.0 - 1.0 / (1.0 + np.exp(-raw))
    if isinstance(predictor, Interval):  # predicts as its member: the member's trees are walked
        predictor = predictor.member_
    if getattr(predictor, "constant_", None) is not None:
        return None  # a constant fit: chunked prediction is cheap anyway
    lgbm = _lgb_model(getattr(predictor, "model_", None))
    enc = getattr(predictor, "encoder_", None)
    if lgbm is None or enc is None or getattr(enc, "encoding", None) != "native":
        return None
    output = getattr(predictor, "output", "throughput")
    if output == "throughput":
        target = getattr(predictor, "target_", None)
        tk = getattr(target, "kind", None)
        if tk == "log":
            post = np.exp
        elif tk == "raw":
            post = lambda raw: raw  # noqa: E731
        else:
            return None
    elif output == "score":
        post = lambda raw: raw  # noqa: E731
    else:
        return None
    return enc, lgbm, post


def _numeric_view(lgbm: Any, Z: pd.DataFrame) -> Optional[np.ndarray]:
    """The float matrix LightGBM predicts from (categoricals as codes, unseen -> NaN)."""
    try:
        from lightgbm.basic import _data_from_pandas

        mat, *_ = _data_from_pandas(Z, "auto", "auto", lgbm.booster_.pandas_categorical)
        return np.asarray(mat, dtype=np.float64)
    except Exception:  # an internal API that moved: no fast path
        return None


def _go_left_numerical(node: dict, x: np.ndarray) -> np.ndarray:
    missing = node.get("missing_type", "None")
    default_left = bool(node.get("default_left", True))
    x = np.where(np.isnan(x) & (missing != "NaN"), 0.0, x)
    thr = float(node["threshold"])
    left = x <= thr
    if missing == "Zero":
        z = (x >= -1e-35) & (x <= 1e-35)
        left = np.where(z, default_left, left)
    elif missing == "NaN":
        left = np.where(np.isnan(x), default_left, left)
    return left


def _go_left_categorical(node: dict, x: np.ndarray) -> np.ndarray:
    cats = {int(c) for c in str(node["threshold"]).split("||") if c != ""}
    out = np.zeros(len(x), dtype=bool)
    ok = ~np.isnan(x)
    xi = np.where(ok, x, -1).astype(np.int64)
    out[ok & (xi >= 0)] = np.isin(xi[ok & (xi >= 0)], list(cats))
    return out


def grid_values(predictor: Any, codec: SpaceCodec, frame_fn: Callable[[np.ndarray], pd.DataFrame],
                kind: str = "predict", check: int = 2000, seed: int = 0, max_grid: int = MAX_GRID,
                why: Optional[list] = None) -> Optional[np.ndarray]:
    """The predictor's output on every grid point of ``codec`` (index = config key), or None.

    ``frame_fn(idx)`` must build the predictor's input frame for index rows (the same one
    the caller would predict on). ``kind='success'``: P(success) of a failure classifier.
    When it returns None, the reason is appended to ``why`` (if given).
    """
    why = why if why is not None else []
    if codec.size > max_grid:
        why.append(f"the grid has {codec.size:,} points, more than {max_grid:,}")
        return None
    parts = _parts(predictor, kind)
    if parts is None:
        out = additive_grid(predictor, codec, frame_fn, kind, check=check, seed=seed)
        if out is None:
            why.append(f"{type(predictor).__name__} is neither a LightGBM model nor additive over the knobs")
        return out
    if parts[0] == "constant":
        return np.full(codec.size, parts[1])
    enc, lgbm, post = parts
    D = len(codec.names)
    cards = [int(c) for c in codec.cards]
    probe = _probe_rows(cards)
    try:
        Z = enc.transform(frame_fn(probe))
    except Exception:
        return None
    mat = _numeric_view(lgbm, Z)
    if mat is None or mat.shape[0] != len(probe):
        return None
    n_feat = mat.shape[1]
    # which dimension drives each feature (None: constant); a feature driven by two -> no fast path
    owner: list[Optional[int]] = []
    table: list[Optional[np.ndarray]] = []
    ref = mat[0]
    pos = 1
    changes = np.zeros((D, n_feat), dtype=bool)
    per_dim_vals = []
    for d in range(D):
        block = mat[pos:pos + cards[d]]
        per_dim_vals.append(block)
        same = (block == ref[None, :]) | (np.isnan(block) & np.isnan(ref[None, :]))
        changes[d] = ~same.all(axis=0)
        pos += cards[d]
    for f in range(n_feat):
        ds = np.nonzero(changes[:, f])[0]
        if len(ds) > 1:
            name = str(Z.columns[f]) if f < Z.shape[1] else f"feature {f}"
            knobs = [codec.names[d] for d in ds]
            why.append(f"feature {name} depends on {len(knobs)} knobs ({', '.join(knobs[:4])}"
                       f"{', ...' if len(knobs) > 4 else ''}), and the fast path needs one knob per feature")
            return None
        owner.append(int(ds[0]) if len(ds) else None)
        table.append(per_dim_vals[int(ds[0])][:, f] if len(ds) else None)
    # a feature that changes with a knob must not also depend on other knobs at other bases:
    # verified below against the model itself
    try:
        trees = lgbm.booster_.dump_model()["tree_info"]
    except Exception:
        return None
    tables: dict[tuple[int, ...], np.ndarray] = {}
    constant = 0.0
    for tree in trees:
        root = tree["tree_structure"]
        used: set[int] = set()
        _collect(root, owner, used)
        dims = tuple(sorted(used))
        shape = tuple(cards[d] for d in dims)
        T = np.zeros(shape)
        masks = {d: np.ones(cards[d], dtype=bool) for d in dims}
        ok = _fill(root, owner, table, ref, masks, dims, T)
        if not ok:
            return None
        if not dims:
            constant += float(T)
            continue
        if dims in tables:
            tables[dims] += T
        else:
            tables[dims] = T
    raw = _assemble(tables, cards, constant)
    out = post(raw).reshape(-1)
    # check against the real thing
    rng = np.random.default_rng(seed)
    sample = rng.integers(0, codec.size, size=min(check, codec.size))
    idx = codec.decode(sample)
    try:
        truth = _outputs(predictor, frame_fn(idx), kind)
    except Exception:
        return None
    got = out[sample]
    tol = 1e-6 * np.maximum(1.0, np.abs(truth))
    if not np.all(np.abs(got - truth) <= tol):
        why.append("the tree-by-tree grid did not match the model's own predictions on a sample")
        return None
    return out


def _probe_rows(cards: list[int]) -> np.ndarray:
    """Probe rows: the base config (every index 0), then each dimension through its values."""
    base = np.zeros(len(cards), dtype=np.int64)
    rows = [base]
    for d, c in enumerate(cards):
        for j in range(c):
            r = base.copy()
            r[d] = j
            rows.append(r)
    return np.array(rows)


def _outputs(predictor: Any, X: pd.DataFrame, kind: str) -> np.ndarray:
    if kind == "success":
        return 1.0 - np.asarray(predictor.predict_failure(X), dtype=float).reshape(-1)
    return np.asarray(predictor.predict(X), dtype=float).reshape(-1)


def additive_grid(predictor: Any, codec: SpaceCodec, frame_fn: Callable[[np.ndarray], pd.DataFrame],
                  kind: str = "predict", check: int = 2000, seed: int = 0) -> Optional[np.ndarray]:
    """The grid of a model that is additive over knobs in a link space (logit for
    probabilities, log for positive outputs, else identity): e.g. the ``failure``
    classifier's logistic form, or a linear model on single-knob features. The model is
    probed one knob at a time from a base config, the grid is the broadcast sum, and the
    result is checked on random grid points; None when the model is not additive."""
    D = len(codec.names)
    cards = [int(c) for c in codec.cards]
    try:
        out = _outputs(predictor, frame_fn(_probe_rows(cards)), kind)
    except Exception:
        return None
    if not np.all(np.isfinite(out)):
        return None
    eps = 1e-12
    if kind == "success" or (out.min() >= 0 and out.max() <= 1 and getattr(predictor, "output", "") == "probability"):
        link = lambda v: np.log(np.clip(v, eps, 1 - eps)) - np.log(np.clip(1 - v, eps, 1 - eps))  # noqa: E731
        inv = lambda z: 1.0 / (1.0 + np.exp(-z))  # noqa: E731
    elif out.min() > 0:
        link, inv = np.log, np.exp
    else:
        link = inv = lambda v: v  # noqa: E731
    z = link(out)
    offsets = []  # per knob: its values' offsets from the base config, in the link space
    pos = 1
    for d in range(D):
        offsets.append(z[pos:pos + cards[d]] - z[0])
        pos += cards[d]
    rng = np.random.default_rng(seed)
    sample = rng.integers(0, codec.size, size=min(check, codec.size))
    idx = codec.decode(sample)
    try:
        truth = _outputs(predictor, frame_fn(idx), kind)
    except Exception:
        return None
    at_sample = inv(z[0] + sum(g[idx[:, d]] for d, g in enumerate(offsets)))
    if not np.allclose(at_sample, truth, rtol=1e-6, atol=1e-9):  # checked before the grid is built
        return None
    grid = np.full(tuple(cards), z[0], dtype=np.float64)
    for d, g in enumerate(offsets):
        if np.any(g != 0):
            grid += g.reshape([cards[d] if i == d else 1 for i in range(D)])
    return inv(grid).reshape(-1)


def _collect(node: dict, owner: list, used: set) -> None:
    if "leaf_value" in node and "split_feature" not in node:
        return
    o = owner[node["split_feature"]]
    if o is not None:
        used.add(o)
    _collect(node["left_child"], owner, used)
    _collect(node["right_child"], owner, used)


def _fill(node: dict, owner: list, table: list, ref: np.ndarray, masks: dict, dims: tuple, T: np.ndarray) -> bool:
    if "split_feature" not in node:
        if not dims:
            T[...] = T + float(node["leaf_value"])
            return True
        sel = np.ix_(*[masks[d] for d in dims])
        T[sel] = float(node["leaf_value"])
        return True
    f = node["split_feature"]
    decision = node.get("decision_type", "<=")
    o = owner[f]
    vals = table[f] if o is not None else np.array([ref[f]])
    if decision == "==":
        left = _go_left_categorical(node, vals)
    elif decision == "<=":
        left = _go_left_numerical(node, vals)
    else:
        return False
    if o is None:  # a constant feature: the whole subtree goes one way
        return _fill(node["left_child"] if left[0] else node["right_child"], owner, table, ref, masks, dims, T)
    saved = masks[o]
    ok = True
    for child, m in ((node["left_child"], left), (node["right_child"], ~left)):
        sub = saved & m
        if not sub.any():
            continue
        masks[o] = sub
        ok = _fill(child, owner, table, ref, masks, dims, T) and ok
    masks[o] = saved
    return ok


def _assemble(tables: dict, cards: list, constant: float) -> np.ndarray:
    """Sum of broadcast tables over the full grid; tables over subsets of another's knobs
    are folded into it first (cheap), so the full-size adds are few."""
    D = len(cards)
    order = sorted(tables, key=lambda ds: -int(np.prod([cards[d] for d in ds])))
    hosts: dict[tuple[int, ...], np.ndarray] = {}
    for ds in order:
        T = tables[ds]
        host = None
        for h in sorted(hosts, key=lambda h: int(np.prod([cards[d] for d in h]))):
            if set(ds) <= set(h):
                host = h
                break
        if host is None:
            hosts[ds] = T.copy()
            continue
        shape = [cards[d] if d in ds else 1 for d in host]
        hosts[host] += T.reshape(shape)
    grid = np.full(tuple(cards), constant, dtype=np.float64)
    for ds, T in hosts.items():
        shape = [cards[d] if d in ds else 1 for d in range(D)]
        grid += T.reshape(shape)
    return grid


__all__ = ["grid_values"]
