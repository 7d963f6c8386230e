"""The FLOP rates a GPU's training kernels reach, each alone: dense GEMMs (BF16, FP8), the attention
core (PyTorch's scaled-dot-product attention on each backend, causal, forward and forward + backward,
and the non-causal blocks a context-parallel ring computes) and the grouped GEMMs of MoE experts at
the expert shapes of the published models: what the analytic model's attention and expert pricing
is checked against (docs/studies/kernel-rates-1128).

    python docs/studies/kernel-rates-1128/kernel_rates.py --out OUT.jsonl [--smoke]

One JSON line per measurement, written as each is done: the kernel, its shape, the median seconds
over the timed repeats and the TFLOP/s (attention FLOPs: ``4 * b * h * sq * skv * d``, half of
it under a causal mask; backward 2.5x the forward). ``--smoke`` runs tiny shapes on the CPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

ATTENTION_SEQS = (2048, 4096, 8192, 16384, 32768, 65536)
RING_BLOCKS = (2048, 8192, 32768)
EXPERT_SHAPES = {"deepseek-v3": (7168, 2048), "qwen3-235b": (4096, 1536), "gpt-oss-120b": (2880, 2880),
                 "qwen3-30b": (2048, 768)}
TOKENS_PER_EXPERT = (128, 512, 1024, 2048, 4096, 8192)
LOCAL_EXPERTS = (4, 16, 32)


def timed(fn, device: str, repeats: int) -> float:
    """Median seconds of ``fn`` over ``repeats`` calls after three warm-up calls."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def gemms(device: str, smoke: bool):
    shapes = [(256, 256, 256)] if smoke else [(8192, 8192, 8192), (16384, 4096, 14336), (16384, 14336, 4096),
                                              (16384, 8192, 28672), (16384, 28672, 8192), (16384, 4096, 6144)]
    for m, k, n in shapes:
        a = torch.randn(m, k, device=device, dtype=torch.bfloat16)
        b = torch.randn(n, k, device=device, dtype=torch.bfloat16)
        yield {"kernel": "gemm", "dtype": "bf16", "m": m, "k": k, "n": n}, lambda: a @ b.t(), 2 * m * k * n
        if device == "cuda":
            a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
            one = torch.ones((), device=device)
            rows, cols = torch.ones(m, 1, device=device), torch.ones(1, n, device=device)
            yield ({"kernel": "gemm", "dtype": "fp8", "m": m, "k": k, "n": n},
                   lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                   2 * m * k * n)
            # per-row scales (torchao's Float8 "rowwise" recipe): one scale per row of A and column of B
            yield ({"kernel": "gemm", "dtype": "fp8", "scaling": "rowwise", "m": m, "k": k, "n": n},
                   lambda: torch._scaled_mm(a8, b8.t(), scale_a=rows, scale_b=cols, out_dtype=torch.bfloat16),
                   2 * m * k * n)


# the linear layers (K, N) of Llama 3 8B and 70B whole and sharded 8 ways (TP), torchtitan's
# separate w1 / w3: what an FP8 recipe's three GEMMs per linear run at
LINEARS = {"8b.qkv": (4096, 6144), "8b.o": (4096, 4096), "8b.w1": (4096, 14336), "8b.w2": (14336, 4096),
           "70b.qkv": (8192, 10240), "70b.o": (8192, 8192), "70b.w1": (8192, 28672), "70b.w2": (28672, 8192),
           "70b-tp8.qkv": (8192, 1280), "70b-tp8.o": (1024, 8192), "70b-tp8.w1": (8192, 3584),
           "70b-tp8.w2": (3584, 8192)}


def recipes(device: str, smoke: bool):
    """Each linear's forward, data-gradient and weight-gradient GEMM (``m x k @ k x n``:
    ``(T, K, N)``, ``(T, N, K)``, ``(N, T, K)`` for ``T`` tokens) in BF16 and in FP8 with per-tensor,
    per-row and 128-blockwise scales (1 x 128 on the left operand, 128 x 128 on the right; torch
    2.11's ``_scaled_mm`` refused these blockwise scale shapes on an H200: each is written as an error)."""
    tokens = (256,) if smoke else (8192, 16384)
    linears = {"tiny": (256, 256)} if smoke else LINEARS
    for t in tokens:
        for name, (k_in, n_out) in linears.items():
            for gemm, (m, k, n) in {"fprop": (t, k_in, n_out), "dgrad": (t, n_out, k_in),
                                     "wgrad": (n_out, t, k_in)}.items():
                rec = {"kernel": "gemm", "linear": name, "gemm": gemm, "m": m, "k": k, "n": n}
                a = torch.randn(m, k, device=device, dtype=torch.bfloat16)
                b = torch.randn(n, k, device=device, dtype=torch.bfloat16)
                yield rec | {"dtype": "bf16"}, lambda a=a, b=b: a @ b.t(), 2 * m * k * n
                if device != "cuda":
                    continue
                a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
                scales = {"tensorwise": (torch.ones((), device=device), torch.ones((), device=device)),
                          "rowwise": (torch.ones(m, 1, device=device), torch.ones(1, n, device=device)),
                          "blockwise": (torch.ones(m, k // 128, device=device),
                                        torch.ones(k // 128, n // 128, device=device))}
                for scaling, (sa, sb) in scales.items():
                    yield (rec | {"dtype": "fp8", "scaling": scaling},
                           lambda a8=a8, b8=b8, sa=sa, sb=sb: torch._scaled_mm(a8, b8.t(), scale_a=sa, scale_b=sb,
                                                                              out_dtype=torch.bfloat16),
                           2 * m * k * n)


def attention(device: str, smoke: bool):
    backends = {"cudnn": "CUDNN_ATTENTION", "flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION"}
    if device != "cuda":
        backends = {"math": "MATH"}
    heads = [(4, 32)] if smoke else [(32, 128), (64, 64)]
    seqs = (128, 256) if smoke else ATTENTION_SEQS
    tokens = 512 if smoke else 65536
    for name, attr in backends.items():
        backend = getattr(torch.nn.attention.SDPBackend, attr)
        for h, d in heads:
            for s in seqs:
                b = max(1, tokens // s)
                shape = {"kernel": "attention", "backend": name, "batch": b, "heads": h, "head_dim": d}
                q, k, v = (torch.randn(b, h, s, d, device=device, dtype=torch.bfloat16, requires_grad=True)
                           for _ in range(3))
                flops = 4 * b * h * s * s * d / 2
                for causal in (True, False):
                    if not causal and not smoke and s not in RING_BLOCKS:
                        continue

                    def fwd(q=q, k=k, v=v, causal=causal, backend=backend):
                        with torch.nn.attention.sdpa_kernel(backend):
                            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                    def fwd_bwd(fwd=fwd, q=q):
                        fwd().backward(torch.ones_like(q))
                        q.grad = None

                    rec = {**shape, "seq": s, "causal": causal}
                    f = flops * (1 if causal else 2)
                    yield {**rec, "pass": "forward"}, fwd, f
                    yield {**rec, "pass": "forward+backward"}, fwd_bwd, 3.5 * f


def grouped(device: str, smoke: bool):
    if device != "cuda" or not hasattr(torch, "_grouped_mm"):
        return
    for model, (k, n) in EXPERT_SHAPES.items():
        for g in LOCAL_EXPERTS:
            for m in TOKENS_PER_EXPERT:
                if g * m * max(k, n) * 2 > 2**31:
                    continue
                a = torch.randn(g * m, k, device=device, dtype=torch.bfloat16)
                w = torch.randn(g, n, k, device=device, dtype=torch.bfloat16).transpose(-2, -1)
                offs = torch.arange(1, g + 1, device=device, dtype=torch.int32) * m
                yield ({"kernel": "grouped_gemm", "dtype": "bf16", "model": model, "experts": g, "tokens_per_expert": m,
                        "k": k, "n": n}, lambda a=a, w=w, offs=offs: torch._grouped_mm(a, w, offs=offs),
                       2 * g * m * k * n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--families", default="gemms,attention,grouped", help="which kernels (comma-separated; "
                    "also recipes: each linear's three GEMMs under each FP8 scaling)")
    args = ap.parse_args()
    device = "cpu" if args.smoke else "cuda"
    with open(args.out, "w") as out:
        head = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
                "cudnn": torch.backends.cudnn.version()}
        out.write(json.dumps({"kernel": "environment", **head}) + "\n")
        for family in (f for f in (gemms, recipes, attention, grouped) if f.__name__ in args.families.split(",")):
            for rec, fn, flops in family(device, args.smoke):
                try:
                    seconds = timed(fn, device, args.repeats)
                    rec |= {"seconds": seconds, "tflops": flops / seconds / 1e12}
                except (RuntimeError, ValueError, NotImplementedError) as err:
                    rec |= {"error": str(err).splitlines()[0][:200]}
                out.write(json.dumps(rec) + "\n")
                out.flush()
                print(json.dumps(rec), flush=True)
                if device == "cuda":
                    torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
