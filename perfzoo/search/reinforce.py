"""REINFORCE over a search space, with a predictor as the reward (the CubicML searcher).

The policy is one categorical distribution per decision (dimension of the space), logits
starting at zero (uniform). Each step samples ``batch_size`` configs per restart, scores
them with the :class:`~perfzoo.search.objective.Objective` (predicted throughput, x P(success)
when a failure predictor is given; invalid configs get the lowest reward), and takes an Adam
step on ``-(reward - baseline) * log p(config) - entropy_coef * entropy``. The baseline is a
moving average of the batch mean reward. ``restarts`` independent policies (different seeds)
run side by side in one tensor and their samples are pooled: the paper's fix for a single
run collapsing onto one local optimum. Defaults are the paper's: Adam lr 0.01, batch 30,
2,000 sampled configs per restart, 3 restarts.

Example
-------
>>> from perfzoo.search import Formula, propose
>>> from perfzoo.spaces import get
>>> predictor = Formula(lambda X: X["config.local_batch"].to_numpy()  # higher local batch and fewer
...                     * (1 + (X.filter(like="shard_") != "FULL_SHARD").sum(axis=1).to_numpy()))  # FULL_SHARD = faster
>>> result = propose(Reinforce(n_samples=600), get("fsdp-ads"), predictor, top_k=5)
>>> len(result), result.configs[0]["local_batch"]
(5, 256)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from perfzoo.console import InputError
from perfzoo.search._base import NO_KEYS, Searcher
from perfzoo.search.objective import Objective, SearchResult, select_top


@dataclass(frozen=True, kw_only=True)
class Reinforce(Searcher):
    """REINFORCE maximising the objective's reward (see the module docstring).

    Settings
    --------
    n_samples : configurations sampled per restart (the paper: 2,000 per round).
    batch_size, lr : Adam batch and learning rate (the paper: 30, 0.01).
    restarts : independent policies with different seeds, pooled (the paper: 3).
    entropy_coef : weight of the entropy bonus (keeps the policy from collapsing early).
    baseline_decay : the moving-average baseline's decay.
    normalise_advantage : divide advantages by their batch standard deviation (makes the
        step size independent of the reward's scale).
    progress : show a progress bar.

    :meth:`propose` returns the top-k configs by reward over every sampled config of every
    restart (and each restart's final most-likely config), with ``history`` (mean batch reward
    per step and restart) and ``stats``.
    """

    name = "reinforce"
    n_samples: int = 2000
    batch_size: int = 30
    restarts: int = 3
    lr: float = 0.01
    entropy_coef: float = 0.01
    baseline_decay: float = 0.9
    normalise_advantage: bool = True
    progress: bool = False

    def __post_init__(self):
        for name in ("n_samples", "batch_size", "restarts"):
            if int(getattr(self, name)) < 1:
                raise InputError(f"reinforce: {name} must be at least 1, got {getattr(self, name)}")

    def propose(self, objective: Objective, top_k: int, exclude: np.ndarray = NO_KEYS) -> SearchResult:
        import torch

        if int(top_k) < 1:
            raise InputError(f"reinforce: top_k must be at least 1, got {top_k}")
        t0 = time.perf_counter()
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # tiny tensors: extra threads only spin (and fight the predictor for cores)
        try:
            return _run(torch, self, objective, exclude, top_k, t0)
        finally:
            torch.set_num_threads(threads)


def _run(torch, settings: Reinforce, objective: Objective, excl: np.ndarray, top_k: int, t0: float) -> SearchResult:
    codec = objective.codec
    n_samples, batch_size, lr, seed = settings.n_samples, settings.batch_size, settings.lr, settings.seed
    entropy_coef, baseline_decay = settings.entropy_coef, settings.baseline_decay
    D = len(codec.names)
    K = int(codec.cards.max())
    R = int(settings.restarts)
    cards = torch.as_tensor(codec.cards)
    pad = torch.arange(K)[None, :] >= cards[:, None]  # (D, K): True where a dimension has no such value
    gen = torch.Generator().manual_seed(int(seed))
    logits = torch.zeros(R, D, K, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([logits], lr=lr)
    steps = math.ceil(n_samples / batch_size)
    baseline = None
    all_pred, all_ps, all_reward, all_keys = [], [], [], []
    history = np.zeros((R, steps))
    n_invalid = 0
    best_per_restart = np.full(R, -np.inf)
    bar = None
    if settings.progress:
        from tqdm import tqdm

        bar = tqdm(total=steps * R * batch_size, unit="cfg", desc="reinforce", dynamic_ncols=True)
    for step in range(steps):
        B = min(batch_size, n_samples - step * batch_size)
        masked = logits.masked_fill(pad, float("-inf"))
        logp_all = torch.log_softmax(masked, dim=-1)  # (R, D, K)
        with torch.no_grad():
            probs = logp_all.exp().reshape(R * D, K)
            draw = torch.multinomial(probs, B, replacement=True, generator=gen)  # (R*D, B)
            draw = draw.reshape(R, D, B).permute(0, 2, 1).contiguous()  # (R, B, D)
        idx = draw.reshape(R * B, D).numpy().astype(np.int64)
        pred, ps, reward, keys = objective.score_cached(idx)
        valid = np.isfinite(pred)
        n_invalid += int((~valid).sum())
        all_pred.append(pred)
        all_ps.append(ps)
        all_reward.append(reward)
        all_keys.append(keys)
        best_per_restart = np.maximum(best_per_restart, reward.reshape(R, B).max(axis=1))
        r = torch.as_tensor(reward.reshape(R, B), dtype=torch.float64)
        mean = r.mean(dim=1)
        history[:, step] = mean.numpy()
        baseline = mean if baseline is None else baseline_decay * baseline + (1 - baseline_decay) * mean
        adv = r - baseline[:, None]
        if settings.normalise_advantage and B > 1:
            adv = adv / (r.std(dim=1, keepdim=True) + 1e-8)
        # log p(config) = sum over decisions of log p(choice)
        lp = torch.gather(logp_all[:, None, :, :].expand(R, B, D, K), 3, draw[..., None]).squeeze(-1).sum(-1)
        p_all = logp_all.exp()
        entropy = -(p_all * logp_all.masked_fill(pad, 0.0)).sum(dim=(-1, -2))  # (R,)
        loss = -(adv.detach() * lp).mean(dim=1).sum() - entropy_coef * entropy.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if bar is not None:
            bar.update(R * B)
            bar.set_postfix_str(f"mean reward {float(mean.mean()):.3f}", refresh=False)
    if bar is not None:
        bar.close()
    # each restart's most likely config joins the pool
    with torch.no_grad():
        mode = logits.masked_fill(pad, float("-inf")).argmax(dim=-1).numpy().astype(np.int64)  # (R, D)
    pred, ps, reward, keys = objective.score_cached(mode)
    all_pred.append(pred)
    all_ps.append(ps)
    all_reward.append(reward)
    all_keys.append(keys)
    keys = np.concatenate(all_keys)
    pred = np.concatenate(all_pred)
    ps = np.concatenate(all_ps)
    reward = np.concatenate(all_reward)
    with torch.no_grad():
        final_entropy = float(-(logp_all.exp() * logp_all.masked_fill(pad, 0.0)).sum(dim=(-1, -2)).mean())
    stats = {"sampled": int(len(keys)), "distinct": int(len(np.unique(keys))), "invalid": n_invalid,
             "restarts": R, "steps": steps, "batch_size": batch_size, "lr": lr, "seed": seed,
             "excluded_known": int(len(excl)), "final_entropy": final_entropy,
             "best_reward_per_restart": [round(float(v), 6) for v in best_per_restart],
             "predict_calls_rows": objective.n_predicted, "seconds": None}
    result = select_top(objective, keys, pred, ps, reward, top_k, excl, "reinforce", stats)
    result.history = history
    result.stats["seconds"] = round(time.perf_counter() - t0, 3)
    return result


__all__ = ["Reinforce"]
