"""The datasets predictors are fitted and scored on: where they come from and what they hold.

``load_dataset(name_or_path)`` and ``list_datasets()`` are the registry's (:mod:`.registry`), named
here too.

================  ================================================================================
``registry``      every dataset by name: the public tables read in place from the external-data
                  folder, the bundled record stores under ``datasets/``, any path a source reads
``sources/``      one ``Source`` per layout of files (record store, vTrain CSV, published-table CSV,
                  a user's runs CSV), each read with a report of what was done
``dataset``       the ``Dataset`` contract everything downstream reads: a flat frame of job records
                  and its target, time, scale and group columns
``drift``         software generations as data: as of when the data knows a framework, and how
                  much the same layouts sped up from one release to the next
================  ================================================================================
"""

from perfzoo.datasets.registry import (ENV_DATASETS, ENV_EXTERNAL, EXTERNAL, DataError, UnknownDatasetError,
                                       bundled_dir, external_data_dir, knows, list_datasets, load_dataset, load_path,
                                       published_tables)

__all__ = ["ENV_DATASETS", "ENV_EXTERNAL", "EXTERNAL", "DataError", "UnknownDatasetError", "bundled_dir",
           "knows", "external_data_dir", "list_datasets", "load_dataset", "load_path", "published_tables"]
