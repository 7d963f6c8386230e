"""Where an llm-gpu step's time goes, kernel class by kernel class, and what bandwidth the card
reaches at each tensor size: the measurements behind docs/studies/eager-step-1128.

    python docs/studies/eager-step-1128/kernel_profile.py --configs FILE --out OUT.jsonl [--device cuda] [--steps 3]

For each config of FILE (JSONL, full ``llm-gpu`` configs as ``datasets/llm-h100`` records hold
them), the harness's own ``build`` (one rank, FSDP2 as the harness runs it), warm-up steps, timed
steps (the median) and two steps under ``torch.profiler``: the device time of every kernel, summed
per class (:data:`CLASSES`, first match on the kernel's name wins) and per step, with the ATen
operators called and the kernels launched per step (what the host does). Then, with
``--bandwidth``, the achieved bandwidth of a bf16 -> fp32 cast and of a copy from 1 MiB to 4 GiB
moved (a tensor an L2 cache holds reads faster than HBM). One JSON line per config and one for the
bandwidth curve, written as each is done.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from functools import partial
from pathlib import Path

# kernel classes by name, first match wins
CLASSES = (
    ("attention", r"flash|fmha|sdpa|attention"),
    ("gemm", r"gemm|cutlass|xmma|nvjet|cublas|matmul|sm90_|sm80_|::mm\b|::bmm|addmm|_scaled_mm"),
    ("optimizer", r"multi_tensor|foreach|adam"),
    ("loss", r"log_softmax|softmax|nll_loss|cross_entropy"),
    ("fsdp_copy", r"split_with_sizes|chunk_cat|all_gather|reduce_scatter|nccl"),
    ("reduce", r"reduce_kernel|reduction"),
    ("elementwise", r"."),
)


def kernel_class(name: str) -> str:
    low = name.lower()
    return next(cls for cls, pattern in CLASSES if re.search(pattern, low))


def profile_config(config: dict, device: str, steps: int) -> dict:
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    from harness.workloads import RunContext, load

    tdev = torch.device(device, 0) if device == "cuda" else torch.device("cpu")
    if not dist.is_initialized():
        kw = {"device_id": tdev} if device == "cuda" else {}
        dist.init_process_group("nccl" if device == "cuda" else "gloo", store=dist.HashStore(), rank=0,
                                world_size=1, **kw)
    ctx = RunContext(rank=0, world_size=1, local_rank=0, device=tdev, mesh=init_device_mesh(device, (1,)))
    built = load("harness.workloads.llm").build(config, ctx)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    for _ in range(2):
        built.step()
    sync()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        built.step()
        sync()
        times.append(time.perf_counter() - t)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(2):
            built.step()
        sync()
    per_class: dict[str, float] = {}
    calls: dict[str, int] = {}
    top = []
    host = {"aten_ops": 0, "launches": 0}  # per step: ATen operators called, kernels launched
    for ev in prof.key_averages():
        if ev.key.startswith("aten::"):
            host["aten_ops"] += ev.count // 2
        if re.search(r"LaunchKernel|cuLaunch", ev.key):
            host["launches"] += ev.count // 2
        us = ev.self_device_time_total if device == "cuda" else ev.self_cpu_time_total
        if us <= 0 or (device == "cuda" and ev.device_type != DeviceType.CUDA):  # kernels only, not the ops launching them
            continue
        cls = kernel_class(ev.key)
        per_class[cls] = per_class.get(cls, 0.0) + us / 2 / 1e3  # ms per step
        calls[cls] = calls.get(cls, 0) + ev.count // 2
        top.append((us / 2 / 1e3, cls, ev.key[:90], ev.count // 2))
    top.sort(reverse=True)
    del built
    if device == "cuda":
        torch.cuda.empty_cache()
    return {"config": config, "step_s": statistics.median(times), "step_times": times, **host,
            "class_ms": {k: round(v, 3) for k, v in sorted(per_class.items())}, "class_calls": calls,
            "top": [{"ms": round(ms, 3), "class": c, "kernel": k, "calls": n} for ms, c, k, n in top[:25]]}


def bandwidth_curve(device: str, max_log2: int = 32) -> dict:
    """GB/s of ``x.float()`` (bf16 in, fp32 out: 6 bytes per element) and of ``y.copy_(x)`` (bf16,
    4 bytes per element), by bytes moved, each the median of 20 runs after 3 warm-ups."""
    import torch

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    rows = []
    for log2 in range(20, max_log2 + 1):
        moved = 2 ** log2
        for op, per_el in (("cast_bf16_fp32", 6), ("copy_bf16", 4)):
            n = moved // per_el
            src = torch.randn(n, device=device, dtype=torch.bfloat16)
            dst = torch.empty_like(src)
            fn = src.float if op.startswith("cast") else partial(dst.copy_, src)
            for _ in range(3):
                fn()
            sync()
            ts = []
            for _ in range(20):
                t = time.perf_counter()
                fn()
                sync()
                ts.append(time.perf_counter() - t)
            rows.append({"op": op, "bytes": n * per_el, "gb_s": round(n * per_el / statistics.median(ts) / 1e9, 1)})
            del src, dst, fn
    return {"bandwidth": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--bandwidth", action="store_true")
    ap.add_argument("--max-log2", type=int, default=32, help="the bandwidth curve's largest size, 2**N bytes moved")
    args = ap.parse_args()
    import torch

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    head = {"device": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu", "torch": torch.__version__}
    with out.open("a") as f:
        if args.bandwidth:
            f.write(json.dumps({**head, **bandwidth_curve(args.device, args.max_log2)}) + "\n")
            f.flush()
        for line in Path(args.configs).read_text().splitlines():
            if not line.strip():
                continue
            try:
                row = profile_config(json.loads(line), args.device, args.steps)
            except Exception as exc:  # noqa: BLE001 - one config's failure is a result, the rest still run
                row = {"config": json.loads(line), "error": f"{type(exc).__name__}: {exc}"[:500]}
            f.write(json.dumps({**head, **row}) + "\n")
            f.flush()
            print(json.dumps({k: row.get(k) for k in ("step_s", "aten_ops", "launches", "class_ms", "error")}), flush=True)


if __name__ == "__main__":
    main()
