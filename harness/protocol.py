"""The measurement protocol every job follows, whatever launched it (see ``docs/architecture.md``).

1. **Threads and cores**: a CPU rank gets ``cores // ranks`` intra-op threads (at least 1; or
   ``OMP_NUM_THREADS`` when set) and is pinned to its own cores where the platform allows
   (``os.sched_setaffinity``), so ranks never oversubscribe the machine.
2. **A quiet machine**: after warm-up, with every rank of the job idle, the ranks measure the
   CPU the rest of the machine uses (:func:`external_load`). Above :data:`QUIET_CORES` busy cores
   they wait and measure again, for at most ``quiet_wait_s`` seconds; a job still measured under
   load is flagged ``noisy`` in its record with the figure, and a sweep that must be quiet
   (``--require-quiet``) records it as ``failed`` (kind ``noisy_machine``) instead of timing it.
3. **Memory relative to the job's own footprint**: the ``memory_headroom_gib`` knob limits a rank
   to its footprint right after the runtime and the process group started, plus the headroom
   (:func:`apply_headroom`), so an out-of-memory is caused by the configuration and happens on
   every repeat, whatever the torch or gloo runtime itself takes. Under such a limit glibc's
   malloc returns every freed buffer of 64 KiB or more to the system (so the data segment follows
   the tensors), set in the ranks' environment before they start; other jobs keep malloc's
   defaults, because that setting costs a page fault per large allocation
   (:data:`harness.memory.RLIMIT_MALLOC_ENV`). The boundaries still move with
   the CPU (its kernels and malloc), so the ``tensor_budget_mib`` knob (``fsdp-ads-v3``) budgets
   the bytes of the tensors a rank holds live instead, counted over build and warm-up as a GPU
   allocator counts them (:mod:`harness.live_tensors`): the same peak and status on every repeat
   and every machine.

>>> rank_threads(cores=2, world_size=2), rank_threads(cores=16, world_size=4)
(1, 4)
"""

from __future__ import annotations

import os
import time
from typing import Mapping, Optional

from harness import memory
from harness.environment import cpu_cores

QUIET_CORES = 0.25  # busy cores outside the job above which the machine is not quiet
PROBE_S = 0.4  # how long one probe of the machine's load lasts
QUIET_WAIT_S = 30.0  # default wait for quiet before timing anyway (flagged noisy)
# another default, for a machine shared on purpose (a test suite running in parallel): seconds
QUIET_WAIT_ENV = "PERFZOO_QUIET_WAIT_S"


def default_quiet_wait(environ: Mapping[str, str] = os.environ) -> float:
    """The seconds a job waits for a quiet machine unless told: ``$PERFZOO_QUIET_WAIT_S``, else
    :data:`QUIET_WAIT_S`; a value that is not seconds >= 0 is refused, naming the variable.

    >>> default_quiet_wait({}), default_quiet_wait({QUIET_WAIT_ENV: "0"})
    (30.0, 0.0)
    >>> default_quiet_wait({QUIET_WAIT_ENV: "soon"})
    Traceback (most recent call last):
    ...
    ValueError: $PERFZOO_QUIET_WAIT_S='soon': give the seconds a job waits for a quiet machine (>= 0), or unset it for 30
    """
    text = environ.get(QUIET_WAIT_ENV, "").strip()
    if not text:
        return QUIET_WAIT_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not seconds >= 0:
        raise ValueError(f"${QUIET_WAIT_ENV}={text!r}: give the seconds a job waits for a quiet machine (>= 0), or "
                         f"unset it for {QUIET_WAIT_S:g}")
    return seconds


def rank_threads(cores: int, world_size: int) -> int:
    """Intra-op threads per CPU rank: an equal share of the cores, at least one."""
    return max(1, cores // max(1, world_size))


def pin_cpu_rank(local_rank: int, world_size: int) -> dict:
    """Set this CPU rank's torch threads and pin it to its share of the cores; returns what was done."""
    import torch

    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    env_threads = os.environ.get("OMP_NUM_THREADS")
    threads = int(env_threads) if env_threads else rank_threads(len(cores) or cpu_cores(), world_size)
    torch.set_num_threads(threads)
    applied: dict = {"threads": threads, "affinity": None}
    if cores and world_size * threads <= len(cores):
        mine = cores[local_rank * threads:(local_rank + 1) * threads]
        os.sched_setaffinity(0, mine)
        applied["affinity"] = ",".join(map(str, mine))
    return applied


def external_load(job_pids: set[int], probe_s: float = PROBE_S) -> float:
    """Busy cores of every process except ``job_pids`` over ``probe_s`` seconds.

    Measured from the whole machine's CPU time (``/proc/stat`` through psutil) minus the CPU
    time of the job's own processes, while the job idles.
    """
    import psutil

    def own() -> float:
        total = 0.0
        for pid in job_pids:
            try:
                t = psutil.Process(pid).cpu_times()
                total += t.user + t.system
            except psutil.Error:
                pass
        return total

    def busy() -> float:
        t = psutil.cpu_times()
        return t.user + t.nice + t.system + t.irq + t.softirq + getattr(t, "steal", 0.0)

    b0, o0, w0 = busy(), own(), time.perf_counter()
    time.sleep(probe_s)
    b1, o1, w1 = busy(), own(), time.perf_counter()
    return max(0.0, ((b1 - b0) - (o1 - o0)) / (w1 - w0))


def wait_for_quiet(measure, wait_s: float) -> tuple[float, float]:
    """Probe with ``measure()`` until the load is at most :data:`QUIET_CORES` or ``wait_s`` ran
    out; returns (the last load in busy cores, seconds waited)."""
    start = time.perf_counter()
    load = measure()
    while load > QUIET_CORES and time.perf_counter() - start < wait_s:
        time.sleep(1.0)
        load = measure()
    return load, time.perf_counter() - start


def apply_headroom(headroom_gib: Optional[float], budget_gib: Optional[float], device: str,
                   footprint_gib: Optional[float]) -> dict:
    """The memory limit of a rank: ``footprint + headroom`` when ``memory_headroom_gib`` is set,
    else the absolute ``memory_budget_gib`` (older spaces), else none."""
    if headroom_gib is None:
        return memory.apply_budget(budget_gib, device)
    if footprint_gib is None:
        raise RuntimeError("unsupported: memory_headroom_gib needs the process's footprint (Linux /proc)")
    applied = memory.apply_budget(footprint_gib + headroom_gib, device)
    return {**applied, "footprint_gib": round(footprint_gib, 4), "headroom_gib": headroom_gib}
