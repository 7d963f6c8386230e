"""Software generations as data (perfzoo.datasets.drift): the release-to-release speed-up read off re-measured
slots, and what predict says about the software it prices."""

from __future__ import annotations

import pandas as pd
import pytest

from perfzoo.datasets.drift import release_drift, software_note
from perfzoo.llmconfig import ConfigError, check


def frame(dates, values, framework="nemo"):
    return pd.DataFrame({"annotations.file": "t.csv", "config.model_name": "m", "config.n_gpus": 8,
                         "config.framework": framework, "started_at": pd.to_datetime(dates, utc=True),
                         "metrics.throughput_per_device": values})


def test_a_slot_re_measured_within_a_month_is_one_release():
    assert release_drift(frame(["2025-01-01", "2025-01-10"], [100.0, 130.0]), "metrics.throughput_per_device") is None
    two_years = release_drift(frame(["2024-01-01", "2026-01-01"], [100.0, 121.0]), "metrics.throughput_per_device")
    assert two_years.slots == 1 and two_years.per_year == pytest.approx(1.1, rel=1e-3)


def test_the_software_note_says_as_of_when_and_how_much_newer():
    f = frame(["2024-01-01", "2025-01-01"], [100.0, 110.0])
    plain = software_note(f, "metrics.throughput_per_device", "NeMo", None, "lab")
    assert plain == "priced as nemo ran as of 2025-01 (the newest such rows in lab)"
    newer = software_note(f, "metrics.throughput_per_device", "nemo", "26.01", "lab")
    assert "your release (26.01) is 12 months newer" in newer and "+10% a year (1 slots)" in newer
    assert "about +10% from this" in newer
    older = software_note(f, "metrics.throughput_per_device", "nemo", "2024-06", "lab")
    assert older == plain  # a release the data already covers: nothing to add
    assert software_note(f, "metrics.throughput_per_device", "torchtitan", None, "lab") == ""  # never seen


def test_release_is_a_key_predict_accepts():
    cfg = check({"model": "llama3-8b", "seq_len": 8192, "n_gpus": 8, "accelerator": "H100", "release": "25.04"})
    assert cfg["release"] == "25.04"
    with pytest.raises(ConfigError, match="did you mean release"):
        check({"model": "llama3-8b", "releas": "25.04"})
