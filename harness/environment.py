"""Environment capture: what hardware and software a job ran on.

:func:`capture` returns ``(hardware, software)`` dicts shaped like
:class:`perfzoo.records.Hardware` and :class:`perfzoo.records.Software`;
:func:`hardware_key` is the stable subset that goes into a job id (so the same config on a
different machine kind is a different job, and a resumed sweep on the same kind is not).
GPU facts come from ``torch.cuda`` (and ``nvidia-smi`` for the driver, the clocks and the power
limit) only when asked for ``device='cuda'``; CPU facts from ``/proc/cpuinfo`` (:func:`cpu_facts`:
vendor, family, model, stepping and the speed-deciding flags), torch's dispatch level and
``psutil``. For CPU jobs a probe times a bf16 and an fp32 matmul once per process
(:func:`matmul_rates`, about 0.1 s on an AVX2 CPU that emulates bf16, a few ms elsewhere). What
cannot be read stays unknown (None); :mod:`perfzoo.hardware.capability` names and compares the facts.

    python -m harness.environment          # this machine's facts as JSON (--cuda: the GPU's too)
"""

from __future__ import annotations

import functools
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import perfzoo
from perfzoo.hardware.accelerators import spec as accelerator_spec
from perfzoo.hardware.capability import CPU_FLAGS, cpu_capability

ENV_PREFIXES = ("OMP_", "MKL_", "CUDA_", "NCCL_", "TORCH_", "PYTORCH_", "GLOO_", "PERFZOO_",
                "SLURM_JOB_ID", "SLURM_NNODES", "TORCHINDUCTOR_", "KMP_", "MALLOC_", "GLIBC_TUNABLES", "LD_PRELOAD",
                "ATEN_CPU_CAPABILITY", "ONEDNN_", "DNNL_")  # the last three cap the instruction set kernels use
ENV_SKIP = ("TOKEN", "KEY", "SECRET", "PASSWORD")

FP8_CAPABLE_MIN_SM = (8, 9)  # Ada / Hopper and newer have fp8 tensor cores
CPUINFO = Path("/proc/cpuinfo")
PROBE_SIZE = 256  # the probe's square matmul: 33.5 MFLOP, 0.5 ms in fp32 on one AVX2 core
PROBE_BUDGET_S = 0.05  # timed runs per dtype stop once they took this long (at least one, at most 3)
# the GPU limits nvidia-smi reports, in the order of GPU_QUERY, as Hardware fields
GPU_QUERY = ("clocks.max.sm", "clocks.max.mem", "enforced.power.limit")
GPU_LIMIT_FIELDS = ("accelerator_clock_max_mhz", "accelerator_memory_clock_max_mhz", "accelerator_power_limit_w")


def peak_bf16_flops(device_name: Optional[str]) -> Optional[float]:
    """The dense bf16 peak FLOP/s of a device (the accelerator table, :mod:`perfzoo.hardware.accelerators`),
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


def cpu_facts(text: str) -> dict:
    """The first processor's vendor, family, model, stepping and speed-deciding flags
    (:data:`perfzoo.hardware.capability.CPU_FLAGS`, space-separated, '' for none) in ``/proc/cpuinfo`` text,
    as :class:`perfzoo.records.Hardware` fields; what the text lacks is None.

    >>> facts = cpu_facts("vendor_id\\t: AuthenticAMD\\ncpu family\\t: 25\\nmodel\\t\\t: 1\\n"
    ...                   "model name\\t: AMD EPYC\\nstepping\\t: 1\\nflags\\t\\t: fpu sse2 avx fma avx2\\n\\n")
    >>> facts["cpu_family"], facts["cpu_model_number"], facts["cpu_flags"]
    (25, 1, 'avx2 fma')
    """
    first = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            first.setdefault(key.strip().lower(), value.strip())

    def number(key: str) -> Optional[int]:
        value = first.get(key, "")
        return int(value, 0) if re.fullmatch(r"\d+|0x[0-9a-f]+", value) else None

    flags = first.get("flags", first.get("features"))  # x86, Arm
    return {"cpu_vendor": first.get("vendor_id") or None, "cpu_family": number("cpu family"),
            "cpu_model_number": number("model"), "cpu_stepping": number("stepping"),
            "cpu_flags": None if flags is None else " ".join(sorted(set(flags.split()) & set(CPU_FLAGS)))}


@functools.lru_cache(maxsize=None)
def this_cpu() -> dict:
    """:func:`cpu_facts` of this machine, its capability (:func:`perfzoo.hardware.capability.cpu_capability`)
    and torch's dispatch level (``torch.backends.cpu.get_cpu_capability()``); None where unreadable."""
    try:
        facts = cpu_facts(CPUINFO.read_text())
    except OSError:  # not Linux
        facts = dict.fromkeys(("cpu_vendor", "cpu_family", "cpu_model_number", "cpu_stepping", "cpu_flags"))
    try:
        import torch

        dispatch = torch.backends.cpu.get_cpu_capability()
    except Exception:  # no torch, or one too old to say
        dispatch = None
    flags = None if facts["cpu_flags"] is None else facts["cpu_flags"].split()
    return {**facts, "cpu_capability": cpu_capability(flags, dispatch), "torch_cpu_capability": dispatch}


def _rate(torch, dtype, n: int = PROBE_SIZE) -> float:
    """GFLOP/s of an ``n``-cubed matmul in ``dtype``: the fastest of up to 3 timed runs after one warm-up."""
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    torch.mm(a, b)
    best, spent = float("inf"), 0.0
    for _ in range(3):
        t0 = time.perf_counter()
        torch.mm(a, b)
        took = time.perf_counter() - t0
        best, spent = min(best, took), spent + took
        if spent > PROBE_BUDGET_S:
            break
    return round(2 * n ** 3 / best / 1e9, 3)


@functools.lru_cache(maxsize=None)
def matmul_rates() -> dict:
    """``matmul_fp32_gflops`` and ``matmul_bf16_gflops`` of this CPU on one thread (what a CPU rank
    runs with): evidence of the bf16 path :func:`this_cpu` names (emulated on AVX2: 1.1 against 73
    GFLOP/s on an EPYC VM). Timed once per process; None where it cannot run. Under load the rates
    drop, their ratio much less.
    """
    try:
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return {"matmul_fp32_gflops": _rate(torch, torch.float32), "matmul_bf16_gflops": _rate(torch, torch.bfloat16)}
        finally:
            torch.set_num_threads(threads)
    except Exception:  # a torch without bf16 matmuls on this CPU
        return {"matmul_fp32_gflops": None, "matmul_bf16_gflops": None}


def gpu_limits(text: str) -> dict:
    """The first GPU's max SM and memory clocks (MHz) and enforced power limit (W) from
    ``nvidia-smi --query-gpu=<GPU_QUERY> --format=csv,noheader,nounits`` output; what it does not
    report (``[N/A]``, ``[Not Supported]``) is None.

    >>> gpu_limits("1980, 2619, 700.00\\n1980, 2619, 700.00\\n")
    {'accelerator_clock_max_mhz': 1980.0, 'accelerator_memory_clock_max_mhz': 2619.0, 'accelerator_power_limit_w': 700.0}
    >>> gpu_limits("1410, [N/A], [Not Supported]")["accelerator_power_limit_w"] is None
    True
    """
    lines = text.strip().splitlines()
    values = [v.strip() for v in lines[0].split(",")] if lines else []
    values += [""] * (len(GPU_LIMIT_FIELDS) - len(values))

    def number(value: str) -> Optional[float]:
        return float(value) if re.fullmatch(r"\d+(\.\d+)?", value) else None

    return {name: number(value) for name, value in zip(GPU_LIMIT_FIELDS, values)}


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
             "capability": (props.major, props.minor), "driver": None, "interconnect": None, "limits": {}}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        facts["driver"] = out.stdout.strip().splitlines()[0] if out.returncode == 0 else None
        limits = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(GPU_QUERY)}", "--format=csv,noheader,nounits"],
                                capture_output=True, text=True, timeout=10)
        facts["limits"] = gpu_limits(limits.stdout) if limits.returncode == 0 else {}
        topo = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=10)
        if topo.returncode == 0 and "NV" in topo.stdout:
            facts["interconnect"] = "nvlink"
        elif topo.returncode == 0:
            facts["interconnect"] = "pcie"
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return facts


def capture_hardware(device: str, n_devices: int, nodes: int = 1) -> dict:
    """Hardware facts for a job on ``n_devices`` of ``device`` ('cpu' or 'cuda'): the host CPU's
    (:func:`this_cpu`), the matmul probe's for CPU jobs (:func:`matmul_rates`), the GPU's for CUDA jobs."""
    hw = {"accelerator": "cpu", "accelerator_count": n_devices, "accelerator_memory_gib": None,
          "nodes": nodes, "cpu": cpu_model(), "cpu_cores": cpu_cores(), "ram_gib": ram_gib(),
          "interconnect": "loopback (gloo)" if device == "cpu" else None, "driver": None, **this_cpu()}
    if device == "cpu":
        hw.update(matmul_rates())
    if device == "cuda":
        g = _gpu_facts()
        if g:
            hw.update(accelerator=g["short"], accelerator_memory_gib=g["memory_gib"],
                      driver=g["driver"], interconnect=g["interconnect"], **g["limits"])
    return hw


def capture_software() -> dict:
    import torch  # the parent captures software too, and a dry run imports no torch

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
    """The part of the hardware that identifies a job (goes into ``job_id_for``): for CPU jobs the
    CPU's name and, where known, its capability, so that a store's job measured on an AVX-512 BF16
    machine is not taken for the same job on an AVX2 one of the same name (jobs stored before
    perfzoo captured it run again once, beside their records)."""
    key = {"accelerator": hardware["accelerator"], "accelerator_count": hardware["accelerator_count"],
           "nodes": hardware.get("nodes", 1)}
    if hardware["accelerator"] == "cpu":
        key["cpu"] = hardware.get("cpu")
        if hardware.get("cpu_capability") is not None:
            key["cpu_capability"] = hardware["cpu_capability"]
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
