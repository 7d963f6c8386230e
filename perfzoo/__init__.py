"""perfzoo: predict and search distributed-training performance from real job records.

The pieces, one module each: ``records`` (the job-record schema), ``store`` (the crash-safe
record store), ``datasets`` (the dataset registry and loaders), ``spaces`` (search spaces),
``analytic`` and ``features`` (what predictors see), ``zoo`` (the predictors),
``evaluation`` (splits, metrics, leaderboard), ``search`` (REINFORCE and baselines) and the
``python -m perfzoo.<command>`` entry points ``collect``, ``bench``, ``search``, ``tune``.
"""

__version__ = "0.1.0"
