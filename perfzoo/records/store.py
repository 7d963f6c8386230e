"""The record store: a directory of job records that survives crashes and concurrent writers.

Layout of a store directory::

    records.jsonl     one JSON job record per line, append-only
    torn-lines.jsonl  where a crashed writer left a partial line (append-only, written by us)
    .lock             the lock file several writer processes take turns on

Guarantees:

- ``append`` validates the record, takes the lock, writes one line with ``O_APPEND`` and
  fsyncs before returning: a record that was appended is on disk.
- A writer killed mid-line leaves a *torn* last line. Readers report it (``TornLineWarning``
  with the line number and byte offset) and skip it; the next ``append`` notes its position
  in ``torn-lines.jsonl`` and starts on a fresh line. Nothing already written is rewritten.
- A job id is stored once: ``append`` of a known ``job_id`` writes nothing and returns False,
  so a resumed sweep skips finished jobs.

Example
-------
>>> import tempfile
>>> from perfzoo.records import JobRecord, Hardware
>>> store = RecordStore(tempfile.mkdtemp())
>>> rec = JobRecord(job_id="j1", source="measured", provenance="doc",
...                 started_at="2026-11-21T10:00:00Z", status="ok", workload="llm",
...                 config={"seq_len": 128}, hardware=Hardware(accelerator="cpu", accelerator_count=1))
>>> store.append(rec), store.append(rec)
(True, False)
>>> store.to_frame()["config.seq_len"].tolist()
[128]
"""

from __future__ import annotations

import errno
import json
import os
import warnings
from pathlib import Path
from typing import Any, Iterable, Iterator, Union

import pandas as pd
from filelock import FileLock

from perfzoo.console import InputError
from perfzoo.records import JobRecord, RecordError, parse_record, utc_now

RECORDS_FILE = "records.jsonl"
TORN_FILE = "torn-lines.jsonl"
LOCK_FILE = ".lock"


def _record_start(raw: bytes, partial: bool) -> bool:
    """Whether ``raw`` could be a line a writer of records began: UTF-8 text (a partial line may end
    inside a character) opening a JSON object. Random bytes, a binary file or another format cannot.

    >>> _record_start(b'{"job_id": "a', partial=True), _record_start(b"\\x89PNG\\r", partial=True)
    (True, False)
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not (partial and exc.reason == "unexpected end of data"):
            return False
        text = raw[:exc.start].decode("utf-8")
    return text.lstrip().startswith("{") or (partial and not text.strip())


class StoreError(RecordError):
    """The store holds a line that is not a valid record and was not left by a crash."""


class TornLineWarning(UserWarning):
    """A partial line left by a crashed writer was skipped."""


class DuplicateJobWarning(UserWarning):
    """A second record of a job already in the store (written there by something else) was skipped."""


_WARNED: set[tuple[str, int]] = set()


def _warn_once(file: Path, offset: int, message: str, category: type = TornLineWarning) -> None:
    """A warning about the line at ``offset`` of ``file``, once per process, on one line (no source line)."""
    key = (str(Path(file).resolve()), offset)
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn_explicit(message, category, filename="perfzoo.records.store", lineno=0)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def append_line(path: Union[str, Path], text: str) -> None:
    """Append one line to a side file (``O_APPEND``, then fsync): on disk when this returns."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        _write_all(fd, (text + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


class RecordStore:
    """A directory of job records; see the module docstring.

    Parameters
    ----------
    path : the store directory (created unless ``create=False``).
    """

    def __init__(self, path: Union[str, Path], create: bool = True):
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise NotADirectoryError(
                f"record store {self.path} is a file; a store is a directory holding {RECORDS_FILE}"
            )
        if not self.path.exists():
            if not create:
                raise FileNotFoundError(f"no record store at {self.path}: the directory does not exist")
            self.path.mkdir(parents=True, exist_ok=True)  # another collect may create it between check and mkdir
        self.file = self.path / RECORDS_FILE
        self._lock = FileLock(str(self.path / LOCK_FILE))
        self._offset = 0  # bytes of records.jsonl already parsed (whole lines only)
        self._lines = 0  # lines already parsed
        self._records: list[JobRecord] = []
        self._ids: set[str] = set()

    def __repr__(self) -> str:
        return f"RecordStore({str(self.path)!r})"

    # reading -------------------------------------------------------------------------------

    def _torn_offsets(self) -> set[int]:
        torn = self.path / TORN_FILE
        if not torn.exists():
            return set()
        offsets = set()
        for line in torn.read_text().splitlines():
            try:
                offsets.add(int(json.loads(line)["offset"]))
            except (ValueError, KeyError, TypeError):
                continue  # a torn line in the torn log itself: only its own last line can be
        return offsets

    def _foreign(self, line_no: int, offset: int) -> str:
        return (f"{self.file}: not a perfzoo record file: line {line_no} (byte {offset}) is no JSON record, whole or "
                "torn; give a record store collect wrote (or its records.jsonl), or a runs CSV")

    def _refresh(self) -> tuple[int, int] | None:
        """Parse lines appended since the last call. Returns (line, offset) of a torn tail."""
        if not self.file.exists():
            return None
        with open(self.file, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        torn_offsets = None
        pos = 0
        while pos < len(data):
            end = data.find(b"\n", pos)
            if end < 0:  # a partial last line: a writer crashed, or is mid-write without the lock
                line_no, offset = self._lines + 1, self._offset + pos
                if not _record_start(data[pos:], partial=True):
                    raise StoreError(self._foreign(line_no, offset))
                _warn_once(self.file, offset, f"{self.file}: line {line_no} (byte {offset}) is a torn "
                           "partial record left by an interrupted writer; skipped")
                self._offset += pos
                return line_no, offset
            raw, offset = data[pos:end], self._offset + pos
            pos = end + 1
            self._lines += 1
            if not raw.strip():
                continue
            where = f"{self.file} line {self._lines}: "
            try:
                record = parse_record(raw, where=where)
            except RecordError as exc:
                if torn_offsets is None:
                    torn_offsets = self._torn_offsets()
                if offset in torn_offsets:
                    _warn_once(self.file, offset, f"{where}(byte {offset}) torn partial record left "
                               "by an interrupted writer; skipped")
                    continue
                if "newer perfzoo" in str(exc):
                    raise StoreError(f"{exc} to read this store") from None
                if offset == 0 and not _record_start(raw, partial=False):
                    raise StoreError(self._foreign(self._lines, offset)) from None  # its first line: no store at all
                raise StoreError(
                    f"{exc} -- the store is damaged at this line; perfzoo never edits stored "
                    "records: move the line out by hand (or restore the file) and read again"
                ) from None
            if record.job_id in self._ids:  # written outside this class: the first one is read
                _warn_once(self.file, offset, f"{where}(byte {offset}) a second record of job {record.job_id} "
                           f"(record {record.record_id}) was skipped: a store reads one record per job, the "
                           "first; move this one to a store of its own to keep both", DuplicateJobWarning)
                continue
            self._ids.add(record.job_id)
            self._records.append(record)
        self._offset += pos
        return None

    def records(self) -> list[JobRecord]:
        """Every stored record, oldest first (torn lines skipped with a ``TornLineWarning``)."""
        self._refresh()
        return list(self._records)

    def __iter__(self) -> Iterator[JobRecord]:
        return iter(self.records())

    def __len__(self) -> int:
        self._refresh()
        return len(self._records)

    def job_ids(self) -> set[str]:
        """The job ids already stored: what a resumed sweep skips."""
        self._refresh()
        return set(self._ids)

    def __contains__(self, job_id: str) -> bool:
        self._refresh()
        return job_id in self._ids

    # writing -------------------------------------------------------------------------------

    def append(self, record: Union[JobRecord, dict[str, Any]]) -> bool:
        """Validate and durably append one record. Returns False if its job id is stored."""
        # a JobRecord is re-validated too: its fields may have been mutated
        record = parse_record(record.to_dict() if isinstance(record, JobRecord) else record)
        with self._lock:
            torn = self._refresh()  # warns about a torn tail, which is noted below
            if record.job_id in self._ids:
                return False
            if torn is not None:
                self._note_torn(*torn)
            # a torn line is ended, never rewritten
            append_line(self.file, ("\n" if torn is not None else "") + record.to_json())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TornLineWarning)
                self._refresh()
        return True

    def extend(self, records: Iterable[Union[JobRecord, dict[str, Any]]]) -> int:
        """Append many records; returns how many were new."""
        return sum(self.append(r) for r in records)

    def _note_torn(self, line_no: int, offset: int) -> None:
        append_line(self.path / TORN_FILE, json.dumps({"line": line_no, "offset": offset,
                                                       "noted_at": utc_now().isoformat()}))

    # export --------------------------------------------------------------------------------

    def to_frame(self) -> pd.DataFrame:
        """One flat row per record (see :func:`records_to_frame`)."""
        return records_to_frame(self.records())

    def to_parquet(self, path: Union[str, Path]) -> Path:
        """Write the flat frame to a Parquet file; returns its path."""
        return export_frame(self.to_frame(), path, "parquet")

    def to_hf_dataset(self):
        """The flat frame as a Hugging Face ``datasets.Dataset``."""
        return hf_dataset(self.to_frame())


EXPORT_FORMATS = ("parquet", "csv", "hf")  # what export_frame writes (perfzoo datasets export --format)


def hf_dataset(frame: pd.DataFrame):
    """A flat frame as a Hugging Face ``datasets.Dataset`` (its columns unchanged)."""
    import datasets

    return datasets.Dataset.from_pandas(frame, preserve_index=False)


def export_frame(frame: pd.DataFrame, path: Union[str, Path], format: str) -> Path:
    """Write a flat frame (:func:`records_to_frame`, a ``Dataset``'s ``frame``) to ``path``: a Parquet
    or CSV file, or (``hf``) a Hugging Face dataset folder that ``datasets.load_from_disk`` reads.
    A path that exists is refused (``FileExistsError``): nothing is overwritten.

    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "runs.csv"
    >>> export_frame(pd.DataFrame({"config.tp": [1, 2]}), out, "csv").read_text().splitlines()
    ['config.tp', '1', '2']
    """
    path = Path(path)
    if format not in EXPORT_FORMATS:
        raise InputError(f"export format {format!r}: choose one of {', '.join(EXPORT_FORMATS)}")
    if path.exists():
        raise FileExistsError(errno.EEXIST, "exists already; give a new path (nothing is overwritten)", str(path))
    if format == "parquet":
        frame.to_parquet(path, index=False)
    elif format == "csv":
        frame.to_csv(path, index=False)
    else:
        import datasets

        datasets.disable_progress_bars()
        hf_dataset(frame).save_to_disk(str(path))
    return path


def records_to_frame(records: Iterable[JobRecord]) -> pd.DataFrame:
    """Flatten records into a DataFrame, one row per record: the columns ``record_id, job_id,
    sweep_id, source, provenance, started_at, ended_at, status, workload, config.*, hardware.*,
    software.*, metrics.*, annotations.*, failure.*`` (a record's config is flat by construction, so
    the frame exports to Parquet and Hugging Face ``datasets`` unchanged).

    Timestamps become tz-aware (UTC) datetime columns. Every record gives one row, failures
    included; a field a record does not have is missing (NaN/None) in its row. A
    :class:`~perfzoo.datasets.dataset.Dataset`'s ``frame`` is this plus ``config_key`` (equal for every
    copy of one configuration, so that splits keep copies on one side).
    """
    rows = []
    for record in records:
        row = record.model_dump()
        row["failure"] = row.pop("failure") or {"kind": None}  # always a failure.kind column, and last
        rows.append(row)
    frame = pd.json_normalize(rows) if rows else pd.DataFrame()
    for column in ("started_at", "ended_at"):
        if column in frame:
            frame[column] = pd.to_datetime(frame[column], utc=True)
    return frame
