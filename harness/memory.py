"""Per-rank memory budgets that cause *real* out-of-memory errors, and memory figures.

CPU: the budget is the soft ``RLIMIT_DATA`` of the rank's process (Linux >= 4.7 counts every
private writable mapping, i.e. the heap and anonymous mmaps where torch's CPU allocator puts
tensors). An allocation past it fails inside torch with ``DefaultCPUAllocator: can't allocate
memory``, a ``RuntimeError`` the worker catches and reports as ``oom``. The budget is the
process's whole private data, the torch runtime included (about 0.2 GiB after ``import torch``
and a gloo process group), so budgets below that fail at once. The hard limit is left
unlimited so that a rank which hit the budget can lift it again to write its report.

GPU: the budget becomes ``torch.cuda.set_per_process_memory_fraction(budget / total)``; the
caching allocator then raises ``torch.OutOfMemoryError`` past it (the CUDA context itself is
outside the fraction).
"""

from __future__ import annotations

import gc
import resource
from typing import Optional

GIB = 2**30
MIB = 2**20


def _status_kib(field: str) -> Optional[int]:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def data_gib() -> Optional[float]:
    """The process's private data (VmData, what RLIMIT_DATA limits) in GiB."""
    kib = _status_kib("VmData")
    return kib / 2**20 if kib is not None else None


def figures(device: str = "cpu") -> dict[str, Optional[float]]:
    """Memory figures of this process in GiB: data segment, RSS and peak RSS (and CUDA peaks)."""
    out: dict[str, Optional[float]] = {}
    for key, field in (("data_gib", "VmData"), ("rss_gib", "VmRSS"), ("peak_rss_gib", "VmHWM")):
        kib = _status_kib(field)
        out[key] = round(kib / 2**20, 4) if kib is not None else None
    soft, _ = resource.getrlimit(resource.RLIMIT_DATA)
    out["rlimit_data_gib"] = None if soft == resource.RLIM_INFINITY else round(soft / GIB, 4)
    if device == "cuda":
        import torch

        if torch.cuda.is_available():
            out["cuda_peak_allocated_gib"] = round(torch.cuda.max_memory_allocated() / GIB, 4)
            out["cuda_peak_reserved_gib"] = round(torch.cuda.max_memory_reserved() / GIB, 4)
            out["cuda_total_gib"] = round(torch.cuda.get_device_properties(
                torch.cuda.current_device()).total_memory / GIB, 4)
    return out


def peak_gib(figs: dict[str, Optional[float]], device: str = "cpu") -> Optional[float]:
    """The peak memory a record reports, from :func:`figures`: peak RSS on CPU, peak allocated on GPU."""
    return figs.get("cuda_peak_allocated_gib") if device == "cuda" else figs.get("peak_rss_gib")


RLIMIT_MALLOC_ENV = {"MALLOC_ARENA_MAX": "1", "MALLOC_MMAP_THRESHOLD_": str(64 * 1024)}
"""glibc's malloc for ranks under an ``RLIMIT_DATA`` budget, set in their environment from the start
(:func:`harness.launchers.worker_env`): one arena (no per-thread reserves) and every buffer of 64 KiB
or more its own mapping, returned to the system when freed, so the data segment (what the limit
counts) follows the live tensors. It costs a page fault per large allocation (about half the system
time of a CPU FSDP step, and 38-78% of its throughput), so other jobs keep malloc's defaults."""


def apply_budget(budget_gib: Optional[float], device: str = "cpu") -> dict:
    """Impose the per-rank memory budget (``None``: unlimited). Returns what was applied."""
    if budget_gib is None:
        return {"limit_gib": None, "mechanism": None}
    if device == "cuda":
        import torch

        total = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
        fraction = min(1.0, budget_gib * GIB / total)
        torch.cuda.set_per_process_memory_fraction(fraction)
        return {"limit_gib": budget_gib, "mechanism": f"cuda memory fraction {fraction:.4f}"}
    limit = int(budget_gib * GIB)
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    return {"limit_gib": budget_gib, "mechanism": "RLIMIT_DATA"}


def lift_budget(device: str = "cpu") -> None:
    """Remove a CPU budget (back to the hard limit) / reset the GPU fraction; frees caches."""
    gc.collect()
    if device == "cuda":
        import torch

        if torch.cuda.is_available():
            torch.cuda.set_per_process_memory_fraction(1.0)
            torch.cuda.empty_cache()
        return
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    resource.setrlimit(resource.RLIMIT_DATA, (hard, hard))


OOM_MARKERS = ("can't allocate memory", "cannot allocate memory", "out of memory", "std::bad_alloc",
               "memoryerror", "outofmemoryerror", "cuda error: out of memory", "error code 12")


def is_oom(exc: BaseException) -> bool:
    """True if an exception is an out-of-memory error (torch CPU/GPU, Python, C++)."""
    if isinstance(exc, MemoryError):
        return True
    try:
        import torch

        if isinstance(exc, torch.OutOfMemoryError):
            return True
    except (ImportError, AttributeError):
        pass
    text = f"{type(exc).__name__}: {exc}".lower()
    return any(m in text for m in OOM_MARKERS)


def text_mentions_oom(text: str) -> bool:
    """True if a log tail reads like an out-of-memory death (for ranks that died without a report)."""
    low = text.lower()
    return any(m in low for m in OOM_MARKERS)
