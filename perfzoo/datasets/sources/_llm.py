"""LLM job records from table rows: the config with every key of the LLM vocabulary, the key
shared by copies of one configuration, and distinct job ids for repeated configurations."""

from __future__ import annotations

from collections import Counter

from perfzoo.console import DataError
from perfzoo.datasets.sources._csv import Row
from perfzoo.records import SCHEMA_VERSION, JobRecord, job_id_for, parse_record

# The LLM config vocabulary (docs/architecture.md), plus ``vp`` (virtual pipeline stages):
# every LLM record carries every key, None where unknown, so frames line up across sources.
LLM_CONFIG_KEYS = (
    "model_name", "task", "n_layers", "hidden_dim", "ffn_dim", "n_heads", "n_kv_heads", "vocab_size",
    "n_params", "n_experts", "experts_per_token", "seq_len", "global_batch_size",
    "micro_batch_size", "grad_accum", "n_gpus", "tp", "pp", "cp", "dp", "ep", "vp", "fsdp",
    "precision", "activation_checkpointing", "compile", "framework",
)


def llm_config(**values) -> dict:
    """A config with every key of :data:`LLM_CONFIG_KEYS`, in that order (None where not given)."""
    unknown = set(values) - set(LLM_CONFIG_KEYS)
    if unknown:
        raise DataError(f"not LLM config keys: {sorted(unknown)}")
    return {key: values.get(key) for key in LLM_CONFIG_KEYS}


def config_key(workload: str, config: dict, accelerator: str, accelerator_count: int, repeat: int = 0) -> str:
    """The key equal for jobs that measure the same configuration on the same hardware.

    It is the job id of the configuration's first measurement (``repeat=0``); later copies of
    a published row get job ids with ``repeat=1, 2, ...`` and the same key.

    >>> config_key("llm", {"tp": 2}, "A100", 8) == config_key("llm", {"tp": 2}, "A100", 8)
    True
    """
    hardware = {"accelerator": accelerator, "accelerator_count": accelerator_count}
    return job_id_for(workload, config, hardware, repeat)


class RecordBuilder:
    """Turns rows into published LLM records; repeated configurations get distinct job ids."""

    def __init__(self):
        self.seen: Counter = Counter()

    def record(self, row: Row, config: dict, hardware: dict, **fields) -> JobRecord:
        key = config_key("llm", config, hardware["accelerator"], hardware["accelerator_count"])
        repeat, self.seen[key] = self.seen[key], self.seen[key] + 1
        job_id = key if repeat == 0 else config_key(
            "llm", config, hardware["accelerator"], hardware["accelerator_count"], repeat)
        data = {"schema_version": SCHEMA_VERSION, "record_id": job_id, "job_id": job_id,
                "source": "published", "workload": "llm", "config": config, "hardware": hardware,
                "software": {}, **fields}
        return parse_record(data, where=f"{row.where}: ")
