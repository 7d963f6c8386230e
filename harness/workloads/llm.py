"""``llm``: a Llama-style decoder (RMSNorm, rotary embeddings, SwiGLU, grouped-query attention
through ``scaled_dot_product_attention``), trained with FSDP2, torchtitan-style.

Parallelism and the training knobs are applied in one function, :func:`parallelize`, in the
order torchtitan uses: fp8 linears -> activation checkpointing -> ``torch.compile`` per block
-> ``fully_shard`` per block and on the root.

Knobs (the shared LLM config vocabulary of ``docs/architecture.md``): ``n_layers``,
``hidden_dim``, ``n_heads``, ``n_kv_heads``, ``ffn_dim``, ``vocab_size``, ``seq_len``,
``micro_batch_size``, ``global_batch_size`` (= micro x dp x grad_accum), ``grad_accum``,
``n_gpus`` (ranks), ``dp``, ``fsdp`` (``full_shard`` = reshard after forward,
``shard_grad_op`` = keep unsharded until backward, ``no_shard`` = replicate, ``none`` = no
FSDP, one rank only), ``precision`` (``fp32``; ``bf16`` = FSDP2 mixed precision, bf16 params
for compute and fp32 gradient reduction; ``fp8`` = bf16 plus fp8 forward matmuls with
tensor-wise dynamic scaling, GPUs with sm_89+ only), ``activation_checkpointing`` (``none``,
``full`` = recompute each block, ``selective`` = per-op: keep matmul and attention outputs,
recompute the rest), ``compile``.

Throughput is tokens/s; FLOPs per token come from :mod:`harness.workloads.llm_shapes`.
"""

from __future__ import annotations

from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F

from harness.environment import gpu_supports_fp8
from harness.workloads import Built, RunContext
from harness.workloads.llm_shapes import flops_per_token

NAME = "llm"


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rotary_tables(head_dim: int, seq_len: int, theta: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), freqs)  # (s, hd/2)
    return angles.cos(), angles.sin()


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    # x: (b, h, s, hd); rotate pairs (x0, x1) -> (x0 cos - x1 sin, x0 sin + x1 cos)
    x1, x2 = x.float().unflatten(-1, (-1, 2)).unbind(-1)
    cos, sin = cos[: x.shape[-2]], sin[: x.shape[-2]]
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
    return out.type_as(x)


class Attention(nn.Module):
    def __init__(self, dim: int, n_heads: int, n_kv_heads: int):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, dim // n_heads
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, s, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, s, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        if self.n_kv_heads != self.n_heads:  # grouped-query attention: share each kv head
            rep = self.n_heads // self.n_kv_heads
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(out.transpose(1, 2).reshape(b, s, -1))


class FeedForward(nn.Module):
    def __init__(self, dim: int, ffn_dim: int):
        super().__init__()
        self.w1 = nn.Linear(dim, ffn_dim, bias=False)
        self.w3 = nn.Linear(dim, ffn_dim, bias=False)
        self.w2 = nn.Linear(ffn_dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, dim: int, n_heads: int, n_kv_heads: int, ffn_dim: int):
        super().__init__()
        self.attn_norm, self.ffn_norm = RMSNorm(dim), RMSNorm(dim)
        self.attn = Attention(dim, n_heads, n_kv_heads)
        self.ffn = FeedForward(dim, ffn_dim)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.ffn(self.ffn_norm(x))


class Llama(nn.Module):
    def __init__(self, vocab: int, dim: int, n_layers: int, n_heads: int, n_kv_heads: int,
                 ffn_dim: int, seq_len: int):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(Block(dim, n_heads, n_kv_heads, ffn_dim) for _ in range(n_layers))
        self.norm = RMSNorm(dim)
        self.out = nn.Linear(dim, vocab, bias=False)
        cos, sin = rotary_tables(dim // n_heads, seq_len)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.tok(tokens)
        for layer in self.layers:
            h = layer(h, self.cos, self.sin)
        return self.out(self.norm(h))


# fp8 -------------------------------------------------------------------------------------

E4M3_MAX = 448.0


def _to_fp8(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    amax = t.detach().abs().amax().float().clamp(min=1e-12)
    scale = E4M3_MAX / amax
    return (t.float() * scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn), scale.reciprocal()


class _Fp8Matmul(torch.autograd.Function):
    """y = x @ w.T with both operands cast to e4m3 (tensor-wise dynamic scales); bf16 backward."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        x2 = x.reshape(-1, x.shape[-1])
        xq, xs = _to_fp8(x2)
        wq, ws = _to_fp8(w)
        y = torch._scaled_mm(xq, wq.t(), scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16)
        return y.reshape(*x.shape[:-1], w.shape[0])

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        x, w = ctx.saved_tensors
        g = grad.to(torch.bfloat16)
        gx = g @ w.to(torch.bfloat16)
        gw = g.reshape(-1, g.shape[-1]).t() @ x.reshape(-1, x.shape[-1]).to(torch.bfloat16)
        return gx.to(x.dtype), gw.to(w.dtype)


class Fp8Linear(nn.Linear):
    """A bias-free ``nn.Linear`` whose forward matmul runs in fp8 (``torch._scaled_mm``)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _Fp8Matmul.apply(x, self.weight)


def convert_to_fp8(model: Llama) -> int:
    """Swap the blocks' linears (dims divisible by 16) for :class:`Fp8Linear`; returns how many."""
    n = 0
    for block in model.layers:
        for parent in (block.attn, block.ffn):
            for name, child in list(parent.named_children()):
                if type(child) is nn.Linear and child.in_features % 16 == 0 and child.out_features % 16 == 0:
                    child.__class__ = Fp8Linear
                    n += 1
    return n


# parallelism -----------------------------------------------------------------------------

def _selective_policy():
    from torch.utils.checkpoint import CheckpointPolicy

    names = ("mm", "addmm", "bmm", "_scaled_mm", "_scaled_dot_product_flash_attention",
             "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
             "_scaled_dot_product_flash_attention_for_cpu")
    save = {getattr(torch.ops.aten, n).default for n in names if hasattr(torch.ops.aten, n)}

    def policy(ctx, op, *args, **kwargs):
        return CheckpointPolicy.MUST_SAVE if op in save else CheckpointPolicy.PREFER_RECOMPUTE

    return policy


class Checkpointed(nn.Module):
    """Wraps a block: its activations are recomputed in backward (``full``) or only the
    cheap ones are (``selective``: matmul and attention outputs are kept)."""

    def __init__(self, block: nn.Module, mode: str):
        from torch.utils.checkpoint import create_selective_checkpoint_contexts

        super().__init__()
        self.block, self.mode = block, mode
        # built once, not on every forward of every block
        self._context_fn = (partial(create_selective_checkpoint_contexts, _selective_policy())
                            if mode == "selective" else None)

    def forward(self, *args):
        from torch.utils.checkpoint import checkpoint

        if self._context_fn is not None:
            return checkpoint(self.block, *args, use_reentrant=False, context_fn=self._context_fn)
        return checkpoint(self.block, *args, use_reentrant=False)


def parallelize(model: Llama, config: dict, ctx: RunContext) -> dict:
    """Apply fp8, activation checkpointing, compile and FSDP2 to ``model`` in place."""
    applied = {}
    precision = config.get("precision", "fp32")
    if precision == "fp8":
        if ctx.device_type != "cuda" or not gpu_supports_fp8():
            raise RuntimeError("unsupported: precision 'fp8' needs a CUDA GPU with fp8 tensor cores "
                               "(sm_89+: Ada, Hopper, Blackwell); use 'bf16' here")
        applied["fp8_linears"] = convert_to_fp8(model)
    ac = config.get("activation_checkpointing", "none")
    if ac in ("full", "selective"):
        for i, block in enumerate(model.layers):
            model.layers[i] = Checkpointed(block, ac)
    elif ac != "none":
        raise ValueError(f"knob 'activation_checkpointing' = {ac!r}: allowed values are ['none', 'selective', 'full']")
    if config.get("compile"):
        for block in model.layers:
            block.compile()
    fsdp = config.get("fsdp", "full_shard")
    if fsdp == "none":
        if ctx.world_size != 1:
            raise ValueError("knob 'fsdp' = 'none' needs n_gpus = 1 (no data parallelism without FSDP here)")
        applied["autocast"] = precision in ("bf16", "fp8")
        return applied
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) \
        if precision in ("bf16", "fp8") else MixedPrecisionPolicy()
    if fsdp == "no_shard":
        mesh, reshard = ctx.replicate_mesh(), False
    elif fsdp in ("full_shard", "shard_grad_op"):
        mesh, reshard = ctx.mesh, fsdp == "full_shard"
    else:
        raise ValueError(f"knob 'fsdp' = {fsdp!r}: allowed values are "
                         "['full_shard', 'shard_grad_op', 'no_shard', 'none']")
    for block in model.layers:
        fully_shard(block, mesh=mesh, reshard_after_forward=reshard, mp_policy=mp)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard, mp_policy=mp)
    return applied


def build(config: dict, ctx: RunContext) -> Built:
    vocab, seq = int(config["vocab_size"]), int(config["seq_len"])
    micro = int(config["micro_batch_size"])
    accum = int(config.get("grad_accum", 1) or 1)
    torch.manual_seed(0)
    with torch.device(ctx.device):
        model = Llama(vocab, int(config["hidden_dim"]), int(config["n_layers"]), int(config["n_heads"]),
                      int(config["n_kv_heads"]), int(config["ffn_dim"]), seq)
    n_params = sum(p.numel() for p in model.parameters())
    applied = parallelize(model, config, ctx)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, foreach=True)
    autocast = applied.get("autocast", False)

    g = torch.Generator(device="cpu").manual_seed(2000 + ctx.rank)
    data = [torch.randint(0, vocab, (micro, seq + 1), generator=g).to(ctx.device) for _ in range(2)]
    counter = [0]

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        for _ in range(accum):
            tokens = data[counter[0] % len(data)]
            counter[0] += 1
            with torch.autocast(ctx.device_type, dtype=torch.bfloat16, enabled=autocast):
                logits = model(tokens[:, :-1])
            loss = F.cross_entropy(logits.float().flatten(0, 1), tokens[:, 1:].flatten()) / accum
            loss.backward()
        opt.step()

    tokens_per_step = micro * seq * accum
    return Built(step=step, items_per_step=tokens_per_step,
                 flops_per_step=flops_per_token(config) * tokens_per_step,
                 info={"n_params": n_params, **applied})
