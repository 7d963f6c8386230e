"""The job record: one per profiling job, success or failure (schema v1).

A record is validated when it is built, when it is written and when it is read.
Every error names the field, the value and what was expected.

Example
-------
>>> rec = JobRecord(
...     job_id=job_id_for("fsdp", {"batch": 8}, {"accelerator": "cpu"}),
...     source="measured", provenance="python -m perfzoo.collect ...",
...     started_at="2026-11-21T10:00:00Z", status="ok", workload="fsdp",
...     config={"batch": 8}, hardware=Hardware(accelerator="cpu", accelerator_count=2),
...     metrics=Metrics(throughput=1200.0, throughput_unit="queries/s"))
>>> parse_record(rec.to_json()).metrics.throughput
1200.0

Older versions
--------------
``schema_version`` says which version a stored record was written in. Readers call
:func:`parse_record`, which upgrades an older record step by step through the
functions registered with :func:`migration` (``MIGRATIONS[v]`` turns a version-``v``
dict into a version-``v+1`` dict) before validating it against the current schema.
Stored files are never rewritten: the upgrade happens in memory on every read.

Optional facts added to v1 later (no new version: a record without them is the v1 record it was,
byte for byte, and so is its frame row, so datasets keep their content hash): the hardware facts
that decide speed (:class:`Hardware`'s ``cpu_vendor`` .. ``accelerator_power_limit_w``,
2026-11-28), left out of the JSON while unknown. Records made before have them unknown; a reader
older than a field rejects a record that carries it, naming the field.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import datetime, timezone
from typing import Any, Callable, Literal, Optional, Union, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from perfzoo.console import DataError

SCHEMA_VERSION = 1

Scalar = Union[bool, int, float, str, None]
Status = Literal["ok", "oom", "timeout", "failed"]
Source = Literal["measured", "published", "surrogate"]
STATUSES: tuple[str, ...] = get_args(Status)


class RecordError(DataError):
    """A record (or a line holding one) does not match the schema."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class Failure(_Strict):
    """Why a job did not finish: the failure kind, where and the last words it said."""

    kind: str = Field(description="oom | timeout | crash | nccl | invalid_config | ...")
    rank: Optional[int] = None
    exit_code: Optional[int] = None
    message: str = Field("", description="the tail of the error output (a few KiB at most)")
    memory: dict[str, Optional[float]] = Field(
        default_factory=dict, description="memory figures at failure, e.g. limit_gib, peak_gib"
    )


def _unknown(default=None, **kw):
    """An optional fact added after v1 was written: left out of the record's JSON while unknown (None)."""
    return Field(default, exclude_if=lambda v: v is None, **kw)


class Hardware(_Strict):
    """What the job ran on; from ``cpu_vendor`` on, what decides its speed (:mod:`perfzoo.hardware.capability`
    names and compares them), unknown in records made before perfzoo captured it."""

    accelerator: str = Field(description="e.g. 'cpu', 'NVIDIA H100 80GB HBM3', 'A100-SXM-80GB'")
    accelerator_count: int = Field(ge=1, description="devices (GPUs, or CPU ranks) in the job")
    accelerator_memory_gib: Optional[float] = None
    nodes: int = Field(1, ge=1)
    cpu: Optional[str] = None
    cpu_cores: Optional[int] = None
    ram_gib: Optional[float] = None
    interconnect: Optional[str] = None
    driver: Optional[str] = None
    cpu_vendor: Optional[str] = _unknown(description="/proc/cpuinfo vendor_id, e.g. 'AuthenticAMD'")
    cpu_family: Optional[int] = _unknown(description="/proc/cpuinfo 'cpu family', e.g. 25 (AMD Zen 3/4)")
    cpu_model_number: Optional[int] = _unknown(description="/proc/cpuinfo 'model'")
    cpu_stepping: Optional[int] = _unknown()
    cpu_flags: Optional[str] = _unknown(description="the speed-deciding flags the CPU has (perfzoo.hardware.capability."
                                                    "CPU_FLAGS), space-separated; '' for none of them")
    cpu_capability: Optional[str] = _unknown(description="the CPU's fastest bf16 matmul path: AMX, AVX-512 BF16, "
                                                         "AVX-512, AVX2 (perfzoo.hardware.capability.cpu_capability)")
    torch_cpu_capability: Optional[str] = _unknown(description="torch.backends.cpu.get_cpu_capability()")
    matmul_fp32_gflops: Optional[float] = _unknown(ge=0, description="probe: one thread, 256^3 fp32 matmul")
    matmul_bf16_gflops: Optional[float] = _unknown(ge=0, description="probe: the same in bf16")
    accelerator_clock_max_mhz: Optional[float] = _unknown(ge=0, description="nvidia-smi clocks.max.sm")
    accelerator_memory_clock_max_mhz: Optional[float] = _unknown(ge=0, description="nvidia-smi clocks.max.mem")
    accelerator_power_limit_w: Optional[float] = _unknown(ge=0, description="nvidia-smi enforced.power.limit")


class Software(_Strict):
    """The software stack the job ran with."""

    python: Optional[str] = None
    torch: Optional[str] = None
    cuda: Optional[str] = None
    nccl: Optional[str] = None
    perfzoo: Optional[str] = None
    git_commit: Optional[str] = None
    env: dict[str, str] = Field(default_factory=dict)


class Metrics(_Strict):
    """What was measured.

    ``throughput`` (global) and ``throughput_per_device`` are the headline figures:
    for measured jobs the p90 of per-step throughput (``throughput_stat='p90'``), for
    published rows the figure as reported (``throughput_stat='reported'``).
    """

    throughput: Optional[float] = Field(None, ge=0)
    throughput_per_device: Optional[float] = Field(None, ge=0)
    throughput_unit: Optional[str] = Field(None, pattern=r"^[A-Za-z][\w.-]*/s$",
                                           description="tokens/s, queries/s, samples/s, ...: what is counted per second")
    throughput_stat: Optional[Literal["p90", "p50", "mean", "reported"]] = None
    throughput_mean: Optional[float] = Field(None, ge=0)
    throughput_p50: Optional[float] = Field(None, ge=0)
    throughput_p90: Optional[float] = Field(None, ge=0)
    step_time_n: Optional[int] = Field(None, ge=0)
    step_time_mean_s: Optional[float] = Field(None, ge=0)
    step_time_p50_s: Optional[float] = Field(None, ge=0)
    step_time_p90_s: Optional[float] = Field(None, ge=0)
    step_time_p99_s: Optional[float] = Field(None, ge=0)
    noise_iqr_over_median: Optional[float] = Field(None, ge=0)
    noisy: Optional[bool] = None
    mfu: Optional[float] = Field(None, ge=0)
    tflops_per_device: Optional[float] = Field(None, ge=0)
    peak_memory_gib: Optional[float] = Field(None, ge=0)
    wall_time_s: Optional[float] = Field(None, ge=0, description="launch to exit, overhead included")


class JobRecord(_Strict):
    """One profiling job, success or not (schema v1). See the module docstring."""

    schema_version: Literal[1] = SCHEMA_VERSION
    record_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    job_id: str = Field(min_length=1)
    sweep_id: Optional[str] = None
    source: Source
    provenance: str = Field(description="the command line that made it, or a citation")
    # when the job started; a published row: its publication date, unknown (None) where the table gives none
    started_at: Optional[datetime] = None
    ended_at: Optional[datetime] = None
    status: Status
    failure: Optional[Failure] = None
    workload: str = Field(min_length=1, description="fsdp | llm | ...")
    config: dict[str, Scalar] = Field(description="every co-design knob as applied")
    hardware: Hardware
    software: Software = Field(default_factory=Software)
    metrics: Metrics = Field(default_factory=Metrics)
    annotations: dict[str, Scalar] = Field(
        default_factory=dict, description="source-specific notes: variant, raw text, ..."
    )

    @field_validator("started_at", "ended_at")
    @classmethod
    def _utc(cls, value: Optional[datetime]) -> Optional[datetime]:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("timestamps must carry a time zone, e.g. '2026-11-21T10:00:00Z'")
        return value.astimezone(timezone.utc)

    @model_validator(mode="after")
    def _ends_after_start(self) -> "JobRecord":
        if self.started_at is None:
            if self.source != "published":
                raise ValueError(f"a {self.source} record needs started_at (when the job started); only a row "
                                 "of a published table may leave it unknown")
            return self
        if self.ended_at is not None and self.ended_at < self.started_at:
            raise ValueError(f"ended_at {self.ended_at.isoformat()} is before started_at "
                             f"{self.started_at.isoformat()}; a job ends after it starts")
        return self

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (timestamps as ISO-8601 UTC strings)."""
        return self.model_dump(mode="json")

    def to_json(self) -> str:
        """One line of JSON, keys in schema order."""
        return json.dumps(self.to_dict(), separators=(",", ":"), allow_nan=False)


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def migration(from_version: int):
    """Register a function that upgrades a version-``from_version`` record dict by one version."""

    def register(fn: Callable[[dict[str, Any]], dict[str, Any]]):
        MIGRATIONS[from_version] = fn
        return fn

    return register


def _describe(error: ValidationError, where: str) -> str:
    parts = []
    for e in error.errors():
        field = ".".join(str(p) for p in e["loc"]) or "<record>"
        value = e.get("input")
        shown = json.dumps(value, default=str)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        newer = " (a field of a newer perfzoo? upgrade perfzoo)" if e["type"] == "extra_forbidden" else ""
        parts.append(f"field '{field}' = {shown}: {e['msg']}{newer}")
    return f"{where}invalid job record: " + "; ".join(parts)


def parse_record(data: Union[str, bytes, dict[str, Any]], where: str = "") -> JobRecord:
    """Validate a record given as a JSON string or a dict, upgrading older schema versions.

    ``where`` (e.g. ``"runs/records.jsonl line 12: "``) prefixes every error message.
    """
    if isinstance(data, (str, bytes)):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise RecordError(f"{where}not valid JSON ({exc.msg} at column {exc.colno})") from None
        except UnicodeDecodeError as exc:
            raise RecordError(f"{where}not text: byte {exc.start} is not UTF-8 ({exc.reason}); "
                              "a records file holds one JSON record per line") from None
    if not isinstance(data, dict):
        raise RecordError(f"{where}a job record must be a JSON object, got {type(data).__name__}")
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise RecordError(
            f"{where}field 'schema_version' = {version!r}: expected an integer "
            f"(this perfzoo writes version {SCHEMA_VERSION})"
        )
    if version > SCHEMA_VERSION:
        raise RecordError(
            f"{where}field 'schema_version' = {version}: written by a newer perfzoo "
            f"(this one reads up to {SCHEMA_VERSION}); upgrade perfzoo"
        )
    while version < SCHEMA_VERSION:
        if version not in MIGRATIONS:
            raise RecordError(f"{where}field 'schema_version' = {version}: no migration to {version + 1}")
        data = MIGRATIONS[version](dict(data))
        version = data["schema_version"] = version + 1
    try:
        return JobRecord.model_validate(data)
    except ValidationError as exc:
        raise RecordError(_describe(exc, where)) from None


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no spaces: equal values give equal strings."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def job_id_for(workload: str, config: dict[str, Any], hardware: dict[str, Any], repeat: int = 0) -> str:
    """The id of a job: a hash of the canonical (workload, config, hardware, repeat index).

    The same configuration on the same hardware and repeat index always gets the same id,
    so a resumed sweep can skip what is already recorded.

    >>> a = job_id_for("llm", {"a": 1, "b": 2}, {"accelerator": "cpu"})
    >>> a == job_id_for("llm", {"b": 2, "a": 1}, {"accelerator": "cpu"})
    True
    """
    key = canonical_json({"workload": workload, "config": config, "hardware": hardware, "repeat": repeat})
    return hashlib.sha256(key.encode()).hexdigest()[:20]


def utc_now() -> datetime:
    """The current time in UTC."""
    return datetime.now(timezone.utc)
