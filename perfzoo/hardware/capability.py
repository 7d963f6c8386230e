"""What decides a machine's speed, as data: the CPU's instruction-set capability and the GPU's
clocks and power limit, named from a record's hardware, and whether two records' machines compare.

The same software on another machine is another stack: a bf16 matmul runs on AMX tiles or with
AVX-512 BF16 instructions natively and is emulated on an AVX2-only CPU (an AVX2 EPYC VM does
1.1 GFLOP/s in bf16 against 73 in fp32), so a bf16 config re-measured there runs at a tenth of its
record, which is no drift. The harness records these facts (``hardware.cpu_capability``,
``hardware.cpu_flags``, the GPU's ``accelerator_*_mhz`` and ``accelerator_power_limit_w``,
:mod:`harness.environment`); a record made before it did has them unknown, and so do
published tables.

>>> cpu_capability({"avx2", "avx512f", "avx512_bf16"}, "AVX512")
'AVX-512 BF16'
>>> describe({"accelerator": "cpu", "cpu_capability": "AVX2"})
'AVX2 (bf16 matmul emulated)'
>>> print(difference({"accelerator": "cpu", "cpu_capability": "AVX2"},
...                  {"accelerator": "cpu", "cpu_capability": "AVX-512 BF16"}))
measured on AVX2 (bf16 matmul emulated), the record on AVX-512 BF16 (native bf16): not comparable
>>> print(difference({"accelerator": "cpu", "cpu_capability": "AVX2"}, {"accelerator": "cpu"}))
the record's CPU capability is unknown (not recorded): the machines may differ (this one: AVX2 (bf16 matmul emulated))
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Optional

# the /proc/cpuinfo flags a record keeps: the ones that decide matmul speed
CPU_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16",
             "amx_int8", "amx_fp16")
# the capability classes, the fastest bf16 path first: (label, the flag that makes it, what bf16 does there)
CPU_CLASSES = (("AMX", "amx_bf16", "bf16 matmul on AMX tiles"),
               ("AVX-512 BF16", "avx512_bf16", "native bf16"),
               ("AVX-512", "avx512f", "no native bf16"),
               ("AVX2", "avx2", "bf16 matmul emulated"))
# the GPU facts that decide speed, as (field, unit, what it is)
GPU_FIELDS = (("accelerator_power_limit_w", "W", "power limit"),
              ("accelerator_clock_max_mhz", "MHz", "max SM clock"),
              ("accelerator_memory_clock_max_mhz", "MHz", "max memory clock"))
CPU_IDENTITY = ("cpu", "cpu_vendor", "cpu_family", "cpu_model_number")  # which CPU it is (its name: 'AMD EPYC')
SAME_SETTING = 0.03  # GPU limits within 3% of each other are one setting
# the frame columns that tell machines of one accelerator apart (:mod:`perfzoo.datasets.dataset` makes them group
# columns and features where they vary)
CPU_COLUMN = "hardware.cpu_capability"
ENVIRONMENT_COLUMNS = (CPU_COLUMN, *(f"hardware.{name}" for name, _, _ in GPU_FIELDS))


def cpu_capability(flags: Optional[Iterable[str]], torch_capability: Optional[str] = None) -> Optional[str]:
    """The class of a CPU's fastest bf16 matmul path (:data:`CPU_CLASSES`) from its flags; where the
    flags name none of them (or are unknown), torch's dispatch level
    (``torch.backends.cpu.get_cpu_capability()``: ``DEFAULT``, ``SVE256``, ...); None if both are unknown.

    >>> cpu_capability("fma avx2".split()), cpu_capability(None, "AVX512"), cpu_capability(None)
    ('AVX2', 'AVX512', None)
    """
    present = set(flags or ())
    for label, flag, _ in CPU_CLASSES:
        if flag in present:
            return label
    return torch_capability or None


def known(value: Any) -> bool:
    """False for None and NaN (a frame's missing value), True for anything else."""
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def gpu_facts(hardware: Mapping[str, Any]) -> str:
    """The GPU limits a record knows, in words ('' for none).

    >>> gpu_facts({"accelerator_power_limit_w": 700.0, "accelerator_clock_max_mhz": 1980.0})
    '700 W power limit, 1980 MHz max SM clock'
    """
    parts = [f"{hardware[name]:g} {unit} {what}" for name, unit, what in GPU_FIELDS if known(hardware.get(name))]
    return ", ".join(parts)


def describe(hardware: Mapping[str, Any], probe: bool = True) -> str:
    """The speed-deciding facts of one record's hardware (a :class:`~perfzoo.records.Hardware` dump, or a
    frame row's ``hardware.*`` values without the prefix), in words; with ``probe``, the probe's matmul
    rates where the harness measured them.

    >>> describe({"accelerator": "cpu", "cpu_capability": "AVX2", "matmul_bf16_gflops": 1.1, "matmul_fp32_gflops": 73.0})
    'AVX2 (bf16 matmul 1.1 GFLOP/s against 73 in fp32)'
    >>> describe({"accelerator": "H100-80GB", "accelerator_power_limit_w": 700.0})
    'H100-80GB (700 W power limit)'
    >>> describe({"accelerator": "cpu"}), describe({"accelerator": "H100-80GB"})
    ('unknown CPU capability', 'H100-80GB (clocks and power limit unknown)')
    """
    if hardware.get("accelerator") != "cpu":
        facts = gpu_facts(hardware)
        return f"{hardware.get('accelerator')} ({facts or 'clocks and power limit unknown'})"
    label = hardware.get("cpu_capability")
    if not known(label):
        return "unknown CPU capability"
    bf16, fp32 = hardware.get("matmul_bf16_gflops"), hardware.get("matmul_fp32_gflops")
    if probe and known(bf16) and known(fp32):
        return f"{label} (bf16 matmul {bf16:.2g} GFLOP/s against {fp32:.2g} in fp32)"
    note = next((what for name, _, what in CPU_CLASSES if name == label), None)
    return f"{label} ({note})" if note else str(label)


def kind(hardware: Mapping[str, Any]) -> str:
    """A machine kind in a few words, what datasets count and comparisons group by: for CPU jobs the
    CPU (its name, family and model where known) and its capability (:func:`describe`, no probe
    figures), for GPU jobs the GPU with the limits a record knows.

    >>> kind({"accelerator": "cpu", "cpu": "AMD EPYC", "cpu_family": 25, "cpu_model_number": 1, "cpu_capability": "AVX2"})
    'AMD EPYC family 25 model 1: AVX2 (bf16 matmul emulated)'
    >>> kind({"accelerator": "cpu", "cpu": "AMD EPYC"}), kind({"accelerator": "H100-80GB"})
    ('AMD EPYC: unknown CPU capability', 'H100-80GB')
    """
    if hardware.get("accelerator") != "cpu":
        return describe(hardware) if gpu_facts(hardware) else str(hardware.get("accelerator"))
    name = " ".join([str(hardware.get("cpu") or "CPU"),
                     *(f"{what} {hardware[f]}" for f, what in (("cpu_family", "family"), ("cpu_model_number", "model"))
                       if known(hardware.get(f)))])
    return f"{name}: {describe(hardware, probe=False)}"


def _same_gpu_setting(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(abs(a[name] - b[name]) <= SAME_SETTING * max(abs(a[name]), abs(b[name]))
               for name, _, _ in GPU_FIELDS if known(a.get(name)) and known(b.get(name)))


def difference(measured: Mapping[str, Any], recorded: Mapping[str, Any], recorded_as: str = "the record") -> Optional[str]:
    """Why a throughput measured on ``measured`` does not compare with one recorded on ``recorded``
    (both hardware facts as :func:`describe` reads them), in a sentence; None when they compare: the
    same accelerator, and the same CPU capability (CPU jobs; and no CPU fact known on both sides that
    differs: name, vendor, family, model) or the same GPU limits, known on both sides. A fact unknown
    on one side says so: the machines may differ.

    >>> print(difference({"accelerator": "H100-80GB", "accelerator_power_limit_w": 500.0},
    ...                  {"accelerator": "H100-80GB", "accelerator_power_limit_w": 700.0}))
    measured on H100-80GB (500 W power limit), the record on H100-80GB (700 W power limit): not comparable
    >>> difference({"accelerator": "cpu", "cpu_capability": "AMX"}, {"accelerator": "cpu", "cpu_capability": "AMX"}) is None
    True
    >>> print(difference({"accelerator": "cpu", "cpu": "AMD EPYC", "cpu_capability": "AVX2"},
    ...                  {"accelerator": "cpu", "cpu": "Intel(R) Xeon(R) CPU @ 2.20GHz"}))
    measured on AMD EPYC, AVX2 (bf16 matmul emulated), the record on Intel(R) Xeon(R) CPU @ 2.20GHz, unknown CPU capability: other CPUs, not comparable
    """
    mine, theirs = measured.get("accelerator"), recorded.get("accelerator")
    both = f"measured on {describe(measured)}, {recorded_as} on {describe(recorded)}: not comparable"
    if mine != theirs:
        return both
    if mine == "cpu":
        a, b = measured.get("cpu_capability"), recorded.get("cpu_capability")
        if (not known(a) or not known(b) or a == b) and any(
                known(measured.get(f)) and known(recorded.get(f)) and measured[f] != recorded[f] for f in CPU_IDENTITY):
            return (f"measured on {measured.get('cpu')}, {describe(measured)}, {recorded_as} on {recorded.get('cpu')}, "
                    f"{describe(recorded)}: other CPUs, not comparable")
        what = "CPU capability"
        mine_known, theirs_known, same = known(a), known(b), a == b
    else:
        what = "GPU clocks and power limit"
        mine_known = any(known(measured.get(name)) for name, _, _ in GPU_FIELDS)
        theirs_known = any(known(recorded.get(name)) for name, _, _ in GPU_FIELDS)
        same = _same_gpu_setting(measured, recorded)
    verb = "is" if mine == "cpu" else "are"
    whose = recorded_as + ("'" if recorded_as.endswith("s") else "'s")
    if mine_known and theirs_known:
        return None if same else both
    if mine_known:
        return f"{whose} {what} {verb} unknown (not recorded): the machines may differ (this one: {describe(measured)})"
    if theirs_known:
        return f"this machine's {what} {verb} unknown: the machines may differ ({recorded_as}: {describe(recorded)})"
    return f"the {what} of both machines {verb} unknown: they may differ"


def hardware_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """The ``hardware.*`` values of a frame row (a dict or a pandas Series), without the prefix.

    >>> hardware_of({"hardware.accelerator": "cpu", "config.n_layers": 2})
    {'accelerator': 'cpu'}
    """
    return {key[len("hardware."):]: value for key, value in row.items() if str(key).startswith("hardware.")}
