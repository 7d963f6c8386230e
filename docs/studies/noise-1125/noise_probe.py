"""How steady is this machine? Times fixed work repeatedly, one rank and two ranks, so a card
can say whether a dataset's repeat spread comes from the machine or from the workload.

    python docs/studies/noise-1125/noise_probe.py --repeats 5 --seconds 3

Prints, per probe, the median and the CV over repeats of: one process doing 1-thread matmuls
(the CPU alone), two processes pinned to cores 0 and 1 doing the same at once (the two cores
together), one process copying a tensor larger than its cache (the memory bus), and two gloo
ranks all-reducing a 4 MiB tensor (the collectives). Run it on a quiet machine, nothing else
running, like every measurement.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _matmul_rate(seconds: float) -> float:
    torch.set_num_threads(1)
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a @ b
        n += 1
    return n / (time.perf_counter() - t0)


def _copy_rate(seconds: float) -> float:
    """GB/s moved by one thread copying a 32 MiB tensor, larger than its share of the cache."""
    torch.set_num_threads(1)
    src = torch.ones(8 << 20)
    dst = torch.empty_like(src)
    dst.copy_(src)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        dst.copy_(src)
        n += 1
    return n * 2 * src.numel() * src.element_size() / (time.perf_counter() - t0) / 1e9


def _pinned(rank: int, seconds: float, out) -> None:
    os.sched_setaffinity(0, {rank % os.cpu_count()})
    out[rank] = _matmul_rate(seconds)


def _allreduce(rank: int, seconds: float, port: int, out) -> None:
    os.sched_setaffinity(0, {rank % os.cpu_count()})
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    x = torch.ones(1 << 20)
    for _ in range(5):
        dist.all_reduce(x)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        dist.all_reduce(x)
        n += 1
    dist.barrier()
    out[rank] = n / (time.perf_counter() - t0)
    dist.destroy_process_group()


def _two(target, seconds: float, *extra) -> float:
    with mp.Manager() as manager:
        out = manager.dict()
        mp.spawn(target, args=(seconds, *extra, out), nprocs=2, join=True)
        return sum(out.values())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--seconds", type=float, default=3.0)
    args = p.parse_args()
    probes = {"one process, 1-thread matmul (matmuls/s)": lambda: _matmul_rate(args.seconds),
              "two pinned processes at once (matmuls/s, both)": lambda: _two(_pinned, args.seconds),
              "one process, 32 MiB tensor copies (GB/s read + written)": lambda: _copy_rate(args.seconds),
              "two gloo ranks, 4 MiB all-reduce (all-reduces/s, both)":
                  lambda: _two(_allreduce, args.seconds, 29600 + os.getpid() % 1000)}
    print(f"load before: {open('/proc/loadavg').read().split()[0]}")
    for name, probe in probes.items():
        values = [probe() for _ in range(args.repeats)]
        med = statistics.median(values)
        cv = statistics.stdev(values) / statistics.mean(values) * 100
        print(f"{name}: median {med:,.1f}, CV {cv:.1f}% over {args.repeats} ({', '.join(f'{v:,.0f}' for v in values)})")
    print(f"load after: {open('/proc/loadavg').read().split()[0]}")


if __name__ == "__main__":
    main()
