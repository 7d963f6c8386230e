"""``fsdp``: a recommendation-style dense model like the CubicML paper's ads model.

Sparse features are pooled from embedding tables (``EmbeddingBag``, sum pooling) and joined
with projected dense features; then ``n_layers`` interaction/MLP layers with residuals (a
DCN-v2 style cross ``x + x0 * W_c x`` then a 4x MLP; or, when the config gives per-layer
widths ``width_00``.., a tower of 4x MLP layers whose widths differ, so that layers differ in
size by more than an order of magnitude), then two task heads (CTR and CVR) with a binary
cross-entropy loss each. Every layer gets its own sharding strategy:

============== ===================================== =====================================
strategy        FSDP2 (``fully_shard``)                FSDP1 (``FullyShardedDataParallel``)
============== ===================================== =====================================
FULL_SHARD      ``reshard_after_forward=True``         ``ShardingStrategy.FULL_SHARD``
SHARD_GRAD_OP   ``reshard_after_forward=False``        ``ShardingStrategy.SHARD_GRAD_OP``
NO_SHARD        replicate: 2-D mesh (world, 1)         ``ShardingStrategy.NO_SHARD``
============== ===================================== =====================================

The root module (embeddings, projections, heads) is fully sharded. Throughput is
examples (queries) per second. Config keys: see ``perfzoo.spaces`` (``fsdp-ads``).
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from harness.workloads import Built, RunContext
from harness.workloads.fsdp_shapes import MLP_MULT, layer_widths

NAME = "fsdp"
STRATEGIES = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD")
N_DENSE = 16  # dense input features
POOLING = 8  # ids per example per table
class InteractionLayer(nn.Module):
    """``x + x0 * cross(x)`` (feature interaction) then ``x + mlp(norm(x))``."""

    def __init__(self, width: int):
        super().__init__()
        self.cross = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, MLP_MULT * width)
        self.down = nn.Linear(MLP_MULT * width, width)

    def forward(self, x: torch.Tensor, x0: torch.Tensor) -> torch.Tensor:
        x = x + x0 * self.cross(x)
        return x + self.down(F.relu(self.up(self.norm(x))))


class TowerLayer(nn.Module):
    """A layer that changes width: ``skip(x) + down(relu(up(norm(x))))``, ``w_in -> w_out``
    (``skip`` is a projection when the widths differ). Its ``x0`` input is ignored."""

    def __init__(self, w_in: int, w_out: int):
        super().__init__()
        self.norm = nn.LayerNorm(w_in)
        self.up = nn.Linear(w_in, MLP_MULT * w_out)
        self.down = nn.Linear(MLP_MULT * w_out, w_out)
        self.skip = nn.Linear(w_in, w_out, bias=False) if w_in != w_out else nn.Identity()

    def forward(self, x: torch.Tensor, x0: torch.Tensor) -> torch.Tensor:
        return self.skip(x) + self.down(F.relu(self.up(self.norm(x))))


class AdsModel(nn.Module):
    """Embeddings and projections, then one interaction layer per entry of ``widths``: all equal
    (the v1 model, :class:`InteractionLayer`), or a tower of differing widths (:class:`TowerLayer`)."""

    def __init__(self, widths: list[int], width: int, n_tables: int, rows_per_table: int, emb_dim: int):
        super().__init__()
        self.tables = nn.ModuleList(nn.EmbeddingBag(rows_per_table, emb_dim, mode="sum")
                                    for _ in range(n_tables))
        self.dense = nn.Linear(N_DENSE, emb_dim)
        self.proj = nn.Linear((n_tables + 1) * emb_dim, width)
        if all(w == width for w in widths):
            self.layers = nn.ModuleList(InteractionLayer(width) for _ in widths)
        else:
            self.layers = nn.ModuleList(TowerLayer(a, b) for a, b in zip([width, *widths[:-1]], widths))
        self.ctr = nn.Linear(widths[-1], 1)
        self.cvr = nn.Linear(widths[-1], 1)

    def forward(self, dense: torch.Tensor, sparse: torch.Tensor):
        pooled = [t(sparse[:, i]) for i, t in enumerate(self.tables)]
        x0 = self.proj(torch.cat(pooled + [self.dense(dense)], dim=1))
        x = x0
        for layer in self.layers:
            x = layer(x, x0)
        return self.ctr(x), self.cvr(x)  # (batch, 1) each; views would defeat FSDP2's hooks


def layer_strategies(config: dict) -> list[str]:
    n = int(config["n_layers"])
    out = []
    for i in range(n):
        s = config.get(f"shard_{i:02d}", "FULL_SHARD")
        if s not in STRATEGIES:
            raise ValueError(f"knob 'shard_{i:02d}' = {s!r}: allowed values are {list(STRATEGIES)}")
        out.append(s)
    return out


def dense_params(model: AdsModel) -> int:
    return sum(p.numel() for n, p in model.named_parameters() if not n.startswith("tables."))


def _apply_fsdp2(model: AdsModel, strategies: list[str], ctx: RunContext, precision: str) -> None:
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) \
        if precision == "bf16" else MixedPrecisionPolicy()
    for layer, s in zip(model.layers, strategies):
        if s == "NO_SHARD":
            fully_shard(layer, mesh=ctx.replicate_mesh(), reshard_after_forward=False, mp_policy=mp)
        else:
            fully_shard(layer, mesh=ctx.mesh, reshard_after_forward=(s == "FULL_SHARD"), mp_policy=mp)
    fully_shard(model, mesh=ctx.mesh, mp_policy=mp)


def _apply_fsdp1(model: AdsModel, strategies: list[str], ctx: RunContext, precision: str) -> nn.Module:
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import MixedPrecision, ShardingStrategy

    mp = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32,
                        buffer_dtype=torch.bfloat16) if precision == "bf16" else None
    kw = dict(mixed_precision=mp, use_orig_params=True, device_id=ctx.device)
    for i, s in enumerate(strategies):
        model.layers[i] = FSDP(model.layers[i], sharding_strategy=ShardingStrategy[s], **kw)
    return FSDP(model, sharding_strategy=ShardingStrategy.FULL_SHARD, **kw)


def build(config: dict, ctx: RunContext) -> Built:
    width = int(config["width"])
    n_tables, rows, emb_dim = int(config["n_tables"]), int(config["rows_per_table"]), int(config["emb_dim"])
    batch = int(config["local_batch"])
    precision = config.get("precision", "fp32")
    api = config.get("fsdp_api", "fsdp2")
    strategies = layer_strategies(config)

    torch.manual_seed(0)  # same init on every rank, like a checkpoint load
    with torch.device(ctx.device):
        model = AdsModel(layer_widths(config), width, n_tables, rows, emb_dim)
    n_dense = dense_params(model)
    n_total = sum(p.numel() for p in model.parameters())
    if api == "fsdp2":
        _apply_fsdp2(model, strategies, ctx, precision)
        net: nn.Module = model
    elif api == "fsdp1":
        net = _apply_fsdp1(model, strategies, ctx, precision)
    else:
        raise ValueError(f"knob 'fsdp_api' = {api!r}: allowed values are ['fsdp1', 'fsdp2']")
    opt = torch.optim.Adam(net.parameters(), lr=1e-4, foreach=True)

    g = torch.Generator(device="cpu").manual_seed(1000 + ctx.rank)
    batches = []
    for _ in range(4):  # a few fixed batches, cycled: the data pipeline is not what we measure
        dense = torch.randn(batch, N_DENSE, generator=g).to(ctx.device)
        sparse = torch.randint(0, rows, (batch, n_tables, POOLING), generator=g).to(ctx.device)
        labels = torch.randint(0, 2, (2, batch, 1), generator=g).float().to(ctx.device)
        batches.append((dense, sparse, labels))
    counter = [0]

    def step() -> None:
        dense, sparse, labels = batches[counter[0] % len(batches)]
        counter[0] += 1
        opt.zero_grad(set_to_none=True)
        ctr, cvr = net(dense, sparse)
        loss = (F.binary_cross_entropy_with_logits(ctr.float(), labels[0])
                + F.binary_cross_entropy_with_logits(cvr.float(), labels[1]))
        loss.backward()
        opt.step()

    return Built(step=step, items_per_step=batch, flops_per_step=6.0 * n_dense * batch,
                 info={"n_params": n_total, "n_dense_params": n_dense,
                       "n_no_shard": strategies.count("NO_SHARD"),
                       "n_shard_grad_op": strategies.count("SHARD_GRAD_OP"),
                       "n_full_shard": strategies.count("FULL_SHARD")})
