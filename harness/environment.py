"""Environment capture: what hardware and software a job ran on.

:func:`capture` returns ``(hardware, software)`` dicts shaped like
:class:`perfzoo.records.Hardware` and :class:`perfzoo.records.Software`;
:func:`hardware_key` is the stable subset that goes into a job id (so the same config on a
different machine kind is a different job, and a resumed sweep on the same kind is not).
GPU facts come from ``torch.cuda`` (and ``nvidia-smi`` for the driver) only when asked for
``device='cuda'``; CPU facts from ``/proc`` and ``psutil``.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Optional

from perfzoo.accelerators import spec as accelerator_spec

ENV_PREFIXES = ("OMP_", "MKL_", "CUDA_", "NCCL_", "TORCH_", "PYTORCH_", "GLOO_", "PERFZOO_",
                "SLURM_JOB_ID", "SLURM_NNODES", "TORCHINDUCTOR_", "KMP_", "MALLOC_", "GLIBC_TUNABLES", "LD_PRELOAD")
ENV_SKIP = ("TOKEN", "KEY", "SECRET", "PASSWORD")

FP8_CAPABLE_MIN_SM = (8, 9)  # Ada / Hopper and newer have fp8 tensor cores


def peak_bf16_flops(device_name: Optional[str]) -> Optional[float]:
    """The dense bf16 peak FLOP/s of a device (the accelerator table, :mod:`perfzoo.accelerators`),
    or ``None`` for CPUs and devices the table does not know.

    >>> peak_bf16_flops("NVIDIA H100 80GB HBM3")
    989000000000000.0
    >>> peak_bf16_flops("cpu") is None
    True
    """
    found = accelerator_spec(device_name) if device_name else None
    return None if found is None or found.name == "cpu" else found.flops("bf16")


def short_gpu_name(device_name: str, total_memory_bytes: Optional[int] = None) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'H100-80GB' (the accelerator spelling of the records).

    >>> short_gpu_name("NVIDIA A100-SXM4-80GB")
    'A100-80GB'
    >>> short_gpu_name("NVIDIA H200", 150_000_000_000)
    'H200-141GB'
    """
    m = re.search(r"\b([A-Z]{1,3}\d{1,4}[A-Z]?)\b", device_name.replace("NVIDIA", ""))
    model = m.group(1) if m else device_name.strip()
    g = re.search(r"(\d+)\s*GB", device_name)
    if g:
        gb = int(g.group(1))
    elif total_memory_bytes:
        gb = round(total_memory_bytes / 1e9)
        gb = 141 if model == "H200" else gb  # H200 reports 150 GB total, sold as 141 GB
    else:
        return model
    return f"{model}-{gb}GB"


@functools.lru_cache(maxsize=None)
def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def ram_gib() -> float:
    import psutil

    return round(psutil.virtual_memory().total / 2**30, 2)


@functools.lru_cache(maxsize=None)
def git_commit() -> Optional[str]:
    """The commit of the perfzoo checkout (suffixed ``-dirty`` with local changes), or None."""
    root = Path(__file__).resolve().parents[1]
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5)
        if out.returncode != 0:
            return None
        commit = out.stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
        return commit + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


LIBRARIES = ("numpy", "pandas", "sklearn", "lightgbm", "catboost", "torch")


def library_versions(modules: tuple[str, ...] = LIBRARIES) -> dict[str, Optional[str]]:
    """The version of each library in ``modules`` (None where it is missing or fails to import).

    >>> library_versions(("numpy",))["numpy"] is not None
    True
    """
    versions: dict[str, Optional[str]] = {}
    for mod in modules:
        try:
            versions[mod] = __import__(mod).__version__
        except Exception:  # not installed, or broken (a CUDA library torch cannot load)
            versions[mod] = None
    return versions


def relevant_env(environ: Optional[dict] = None) -> dict[str, str]:
    environ = os.environ if environ is None else environ
    return {k: v for k, v in sorted(environ.items())
            if k.startswith(ENV_PREFIXES) and not any(s in k.upper() for s in ENV_SKIP)}


@functools.lru_cache(maxsize=None)
def _gpu_facts() -> dict:
    import torch

    if not torch.cuda.is_available():
        return {}
    props = torch.cuda.get_device_properties(0)
    facts = {"name": props.name, "short": short_gpu_name(props.name, props.total_memory),
             "memory_gib": round(props.total_memory / 2**30, 2), "count": torch.cuda.device_count(),
             "capability": (props.major, props.minor), "driver": None, "interconnect": None}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        facts["driver"] = out.stdout.strip().splitlines()[0] if out.returncode == 0 else None
        topo = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=10)
        if topo.returncode == 0 and "NV" in topo.stdout:
            facts["interconnect"] = "nvlink"
        elif topo.returncode == 0:
            facts["interconnect"] = "pcie"
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return facts


def capture_hardware(device: str, n_devices: int, nodes: int = 1) -> dict:
    """Hardware facts for a job on ``n_devices`` of ``device`` ('cpu' or 'cuda')."""
    hw = {"accelerator": "cpu", "accelerator_count": n_devices, "accelerator_memory_gib": None,
          "nodes": nodes, "cpu": cpu_model(), "cpu_cores": cpu_cores(), "ram_gib": ram_gib(),
          "interconnect": "loopback (gloo)" if device == "cpu" else None, "driver": None}
    if device == "cuda":
        g = _gpu_facts()
        if g:
            hw.update(accelerator=g["short"], accelerator_memory_gib=g["memory_gib"],
                      driver=g["driver"], interconnect=g["interconnect"])
    return hw


def capture_software() -> dict:
    import torch

    import perfzoo

    nccl = None
    cuda = getattr(torch.version, "cuda", None)
    if cuda and torch.cuda.is_available():
        try:
            nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
        except Exception:
            nccl = None
    return {"python": platform.python_version(), "torch": torch.__version__, "cuda": cuda,
            "nccl": nccl, "perfzoo": getattr(perfzoo, "__version__", None), "git_commit": git_commit(),
            "env": relevant_env()}


def capture(device: str, n_devices: int, nodes: int = 1) -> tuple[dict, dict]:
    """``(hardware, software)`` for a job."""
    return capture_hardware(device, n_devices, nodes), capture_software()


def hardware_key(hardware: dict) -> dict:
    """The part of the hardware that identifies a job (goes into ``job_id_for``)."""
    key = {"accelerator": hardware["accelerator"], "accelerator_count": hardware["accelerator_count"],
           "nodes": hardware.get("nodes", 1)}
    if hardware["accelerator"] == "cpu":
        key["cpu"] = hardware.get("cpu")
    return key


def gpu_supports_fp8() -> bool:
    """True where the visible GPU has fp8 tensor cores (sm_89+) and torch has float8 types."""
    try:
        import torch

        return (torch.cuda.is_available() and hasattr(torch, "float8_e4m3fn")
                and torch.cuda.get_device_capability(0) >= FP8_CAPABLE_MIN_SM)
    except Exception:
        return False


if __name__ == "__main__":  # pragma: no cover - a quick look at this machine
    import json

    dev = "cuda" if "--cuda" in sys.argv else "cpu"
    hw, sw = capture(dev, 1)
    print(json.dumps({"hardware": hw, "software": sw}, indent=2))
