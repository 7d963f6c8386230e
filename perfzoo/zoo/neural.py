"""``mlp_rank_ensemble``: the CubicML paper's ads-model predictor, as published.

Wen et al. 2024, appendix A.1.1: an ensemble of 10 neural networks of identical
architecture; each configuration one-hot encoded; one hidden layer of 1600 units with
dropout 0.5; AMSGrad, 200 epochs, batch size 64, learning rate 0.001, weight decay 0.005;
Margin Ranking Loss with margin 0.001. Trained with PyTorch on the CPU.

Choices the paper leaves open, made here: ReLU activation; PyTorch's default
initialisation; weight decay as Adam's L2 term (``torch.optim.Adam(amsgrad=True,
weight_decay=...)``); the ranking pairs of a mini-batch are all its pairs of rows with
different throughput (within the same group of comparable jobs when groups are given),
with target +1 when the first is faster; member ``i`` is seeded ``random_state + i``; the
ensemble's score is the mean of the members' scores (``predict_std``: their spread).
Fitted weights are kept as numpy arrays, so a saved model loads and predicts without
torch state.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo.console import InputError
from perfzoo.zoo.base import EncodedPredictor
from perfzoo.zoo.boosting import ranking_groups
from perfzoo.zoo.features import FeatureEncoder


class MLPRankEnsemblePredictor(EncodedPredictor):
    """The paper's ensemble of one-hidden-layer MLPs trained with margin ranking loss.

    Parameters (defaults are the paper's)
    -------------------------------------
    n_models : 10; hidden : 1600; dropout : 0.5; epochs : 200; batch_size : 64;
    lr : 1e-3; weight_decay : 5e-3; margin : 1e-3; max_onehot : 32 (numeric columns with
    more distinct values are binned before one-hot); group_by : columns whose values mark
    comparable jobs (default: ``workload`` if present); n_jobs : torch CPU threads while
    fitting; random_state : seed.

    Predictions are ranking scores (``output = 'score'``). Tests and quick looks pass fewer
    ``epochs`` / ``n_models``.
    """

    name = "mlp_rank_ensemble"
    encoding = "onehot"
    output = "score"
    has_std = True
    fit_cost = 50.0

    def __init__(self, n_models: int = 10, hidden: int = 1600, dropout: float = 0.5, epochs: int = 200,
                 batch_size: int = 64, lr: float = 1e-3, weight_decay: float = 5e-3, margin: float = 1e-3,
                 max_onehot: int = 32, group_by: Optional[Sequence[str]] = None, n_jobs: int = 1,
                 random_state: int = 0):
        self.n_models = n_models
        self.hidden = hidden
        self.dropout = dropout
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.margin = margin
        self.max_onehot = max_onehot
        self.group_by = group_by
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _encoder(self):
        return FeatureEncoder("onehot", analytic=False, max_onehot=self.max_onehot)

    def _validate_params(self) -> None:
        super()._validate_params()
        for p in ("n_models", "hidden", "epochs", "batch_size"):
            if int(getattr(self, p)) < 1:
                raise InputError(f"mlp_rank_ensemble: {p} must be >= 1, got {getattr(self, p)!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise InputError(f"mlp_rank_ensemble: dropout must be in [0, 1), got {self.dropout!r}")

    def _make_model(self):
        return None  # the weights live in self.weights_

    def _fit_model(self, Z, z, X, groups) -> None:
        import torch
        from torch import nn

        # groups of comparable jobs (no cutting into small queries: pairs come from batches)
        big = max(len(z), 1)
        gid = ranking_groups(X, groups, self.group_by, big, self.random_state)
        Zt = torch.as_tensor(np.asarray(Z, dtype=np.float32))
        yt = torch.as_tensor(np.asarray(z, dtype=np.float32))
        gt = torch.as_tensor(gid)
        n, d = Zt.shape
        threads = torch.get_num_threads()
        torch.set_num_threads(max(1, int(self.n_jobs)))
        self.weights_ = []
        try:
            for i in range(int(self.n_models)):
                seed = int(self.random_state) + i
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(seed)
                    net = nn.Sequential(nn.Linear(d, self.hidden), nn.ReLU(), nn.Dropout(self.dropout),
                                        nn.Linear(self.hidden, 1))
                    opt = torch.optim.Adam(net.parameters(), lr=self.lr, weight_decay=self.weight_decay, amsgrad=True)
                    loss_fn = nn.MarginRankingLoss(margin=self.margin)
                    rng = np.random.default_rng(seed)
                    net.train()
                    for _ in range(int(self.epochs)):
                        perm = torch.as_tensor(rng.permutation(n))
                        for start in range(0, n, int(self.batch_size)):
                            idx = perm[start:start + int(self.batch_size)]
                            yb, gb = yt[idx], gt[idx]
                            ii, jj = torch.triu_indices(len(idx), len(idx), offset=1)
                            keep = (yb[ii] != yb[jj]) & (gb[ii] == gb[jj])
                            if not bool(keep.any()):
                                continue
                            ii, jj = ii[keep], jj[keep]
                            s = net(Zt[idx]).squeeze(1)
                            target = torch.sign(yb[ii] - yb[jj])
                            loss = loss_fn(s[ii], s[jj], target)
                            opt.zero_grad()
                            loss.backward()
                            opt.step()
                    lin1, lin2 = net[0], net[3]
                    self.weights_.append((
                        lin1.weight.detach().numpy().T.astype(np.float64), lin1.bias.detach().numpy().astype(np.float64),
                        lin2.weight.detach().numpy().reshape(-1).astype(np.float64), float(lin2.bias.detach().numpy()[0]),
                    ))
        finally:
            torch.set_num_threads(threads)

    def _member_scores(self, Z: np.ndarray) -> np.ndarray:
        """Scores of every member, shape (n_models, rows); in float64 (a row scores the same
        alone as inside a batch) and in chunks to bound memory."""
        Z = np.asarray(Z, dtype=np.float64)
        out = np.empty((len(self.weights_), len(Z)), dtype=np.float64)
        chunk = 16384
        for m, (W1, b1, w2, b2) in enumerate(self.weights_):
            for start in range(0, len(Z), chunk):
                h = Z[start:start + chunk] @ W1
                h += b1
                np.maximum(h, 0.0, out=h)
                out[m, start:start + chunk] = h @ w2 + b2
        return out

    def _predict_model(self, Z) -> np.ndarray:
        return self._member_scores(Z).mean(axis=0)

    def predict_std(self, X: pd.DataFrame) -> np.ndarray:
        """Spread (standard deviation) of the members' scores for each config."""
        self._check_fitted()
        if self.constant_ is not None:
            return np.zeros(len(X))
        return self._member_scores(self.encoder_.transform(X)).std(axis=0)
