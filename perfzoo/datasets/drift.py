"""Software generations as data: as of when the training data knows a framework, and how much the
same layouts sped up from one release to the next.

Public tables re-measure one slot (a model, task, precision, GPU and GPU count of one publisher)
release after release: NVIDIA's DGX Cloud recipes 14 times from 24.11 to 25.05, Megatron-Bridge's
summary in every container. :func:`release_drift` reads the speed-up per year off those slots;
:func:`software_note` tells a user which software a prediction is priced as ("as of <date>,
<framework>") and, when their ``release`` is newer than anything the data holds for that framework,
how much faster the same layout has tended to run since.

>>> import pandas as pd
>>> frame = pd.DataFrame({"annotations.file": ["t.csv"] * 4, "config.model_name": ["a", "a", "b", "b"],
...     "config.n_gpus": [8] * 4, "started_at": pd.to_datetime(["2024-01-01", "2025-01-01"] * 2, utc=True),
...     "metrics.throughput_per_device": [100.0, 110.0, 200.0, 210.0]})
>>> drift = release_drift(frame, "metrics.throughput_per_device")
>>> drift.slots, round(drift.per_year, 3)
(2, 1.075)
>>> parse_release("25.04"), parse_release("2026-03")
(Timestamp('2025-04-01 00:00:00+0000', tz='UTC'), Timestamp('2026-03-01 00:00:00+0000', tz='UTC'))
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import pandas as pd

from perfzoo.console import InputError
from perfzoo.records.vocabulary import is_missing, normalize_framework

# what one slot is: the same publisher, model, task, precision, GPU, GPU count, sequence and batch (the layout
# may change between releases: a release's recipe is part of its software)
SLOT_COLUMNS = ("annotations.file", "config.model_name", "config.task", "config.precision", "hardware.accelerator",
                "config.n_gpus", "config.seq_len", "config.global_batch_size", "config.micro_batch_size",
                "config.activation_checkpointing")
MIN_DAYS = 28  # re-measurements closer than this are one release


@dataclass(frozen=True)
class Drift:
    """The median speed-up per year of slots measured at two or more dates (``per_year``: a factor,
    1.05 is 5% a year faster), over ``slots`` slots."""

    per_year: float
    slots: int


def release_drift(frame: pd.DataFrame, target: str) -> Optional[Drift]:
    """:class:`Drift` of the slots of ``frame`` (:data:`SLOT_COLUMNS`) measured on dates at least
    :data:`MIN_DAYS` apart: each slot's last over first ``target``, per year between them. None where
    no slot was re-measured."""
    if "started_at" not in frame.columns or target not in frame.columns:
        return None
    cols = [c for c in SLOT_COLUMNS if c in frame.columns]
    d = frame[cols].astype(object).fillna("?").astype(str).assign(when=pd.to_datetime(frame["started_at"], utc=True),
                                       y=pd.to_numeric(frame[target], errors="coerce"))
    d = d.dropna(subset=["when", "y"])
    d = d[d["y"] > 0]
    rates = []
    for _, slot in d.groupby(cols, sort=False, dropna=False):
        first, last = slot.loc[slot["when"].idxmin()], slot.loc[slot["when"].idxmax()]
        days = (last["when"] - first["when"]).days
        if days >= MIN_DAYS:
            rates.append(np.log(last["y"] / first["y"]) * 365.25 / days)
    if not rates:
        return None
    return Drift(float(np.exp(np.median(rates))), len(rates))


def parse_release(text: Any) -> Optional[pd.Timestamp]:
    """A release as a date: ``YYYY-MM[-DD]``, or a container's ``YY.MM`` (NeMo's 25.04); None where
    the text is neither."""
    if is_missing(text):
        return None
    s = str(text).strip()
    m = re.fullmatch(r"(\d{2})\.(\d{2})(?:\.\d+)*", s)
    if m:
        s = f"20{m.group(1)}-{m.group(2)}"
    try:
        return pd.Timestamp(s + "-01" if re.fullmatch(r"\d{4}-\d{2}", s) else s, tz="UTC")
    except ValueError:
        return None


def check_release(text: Any) -> None:
    """A ``ValueError`` naming a ``release`` that is given but no release: not ``YYYY-MM[-DD]`` or ``YY.MM``,
    no such month, or a date after today (a note on it would compare the data with a guess).

    >>> check_release("25.04"), check_release(None)
    (None, None)
    >>> check_release("25.13")
    Traceback (most recent call last):
    ...
    perfzoo.console.InputError: release=25.13: not a release; give its date as YYYY-MM (2026-06) or a container's YY.MM (25.04)
    """
    if is_missing(text):
        return
    when = parse_release(text)
    if when is None:
        raise InputError(f"release={text}: not a release; give its date as YYYY-MM (2026-06) or a container's YY.MM "
                         "(25.04)")
    if when > pd.Timestamp.now(tz="UTC"):
        raise InputError(f"release={text}: after today; give the release you run (YYYY-MM or YY.MM)")


def newest(frame: pd.DataFrame, framework: Optional[str]) -> Optional[pd.Timestamp]:
    """The newest date of ``frame``'s rows of ``framework`` (all rows where None)."""
    if "started_at" not in frame.columns:
        return None
    when = pd.to_datetime(frame["started_at"], utc=True)
    if framework is not None and "config.framework" in frame.columns:
        when = when[frame["config.framework"].map(normalize_framework) == normalize_framework(framework)]
    when = when.dropna()
    return None if when.empty else when.max()


def software_note(frame: pd.DataFrame, target: str, framework: Any, release: Any, dataset: str) -> str:
    """One line: the software a prediction is priced as, and where the user's ``release`` is newer
    than the training data's newest rows of that framework, the speed-up per year the data shows."""
    fw = None if is_missing(framework) else normalize_framework(framework)
    last = newest(frame, fw)
    if last is None:
        return ""
    known = fw or "every framework together (give framework=... for yours)"
    text = f"priced as {known} ran as of {last:%Y-%m} (the newest such rows in {dataset})"
    when = parse_release(release)
    if when is not None and when > last:
        months = (when - last).days / 30.4
        drift = release_drift(frame, target)
        text += f"; your release ({release}) is {months:.0f} months newer"
        if drift is not None:
            text += (f": the same layouts re-measured release after release in {dataset} ran a median "
                     f"{100 * (drift.per_year - 1):+.0f}% a year ({drift.slots} slots), so expect yours "
                     f"about {100 * (drift.per_year ** (months / 12) - 1):+.0f}% from this; one measured run "
                     "anchors it (--calibrate)")
    return text
