"""Job records and their forms: the record itself, where records live, and the columns they become.

================  ================================================================================
``schema``        the job record (schema v1): one per job, failures included, validated on every
                  build, write and read; its names are this package's own (``perfzoo.records.JobRecord``)
``store``         ``RecordStore``: a folder of ``records.jsonl``, locked and fsynced appends,
                  torn-line recovery; a record list as a flat frame (``records_to_frame``) and its exports
``columns``       ``Columns``: configs as columns of arrays, the light frame cost models,
                  features and searches read
``vocabulary``    the config vocabulary's categorical values, read leniently (``amp_bf16`` is ``bf16``)
================  ================================================================================
"""

from perfzoo.records.schema import (SCHEMA_VERSION, STATUSES, Failure, Hardware, JobRecord, Metrics, RecordError,
                                    Software, canonical_json, job_id_for, migration, parse_record, utc_now)

__all__ = ["SCHEMA_VERSION", "STATUSES", "Failure", "Hardware", "JobRecord", "Metrics", "RecordError", "Software",
           "canonical_json", "job_id_for", "migration", "parse_record", "utc_now"]
