"""The library layer under the commands: the predictor a command asks for, and configs priced.

Every command that prices a config goes through here, so they agree: ``predict``, ``plan``,
``search`` and ``tune`` resolve ``--predictor`` / ``--dataset`` / ``--calibrate`` with
:func:`resolve` (one rule, one error wording) and price configs with :func:`price` (shape ->
layout checks -> predictor -> extrapolation and interval -> anchoring).

=================  =================================================================================
:mod:`.predictors` :func:`resolve`: ``best`` / a zoo member / a saved folder, anchored on ``--calibrate`` runs
:mod:`.pipeline`   :func:`price`: configs checked, predicted, their interval widened beyond the data, explained
=================  =================================================================================
"""

from perfzoo.pricing.pipeline import as_frame, check_stated, completed_configs, interval, is_llm, price, screen
from perfzoo.pricing.predictors import (FALLBACK, PUBLISHED, Resolved, check_dataset, check_spec, refit_without,
                                        resolve, shipped_member)

__all__ = ["FALLBACK", "PUBLISHED", "Resolved", "as_frame", "check_dataset", "check_spec", "check_stated", "completed_configs", "interval",
           "is_llm", "price", "refit_without", "resolve", "screen", "shipped_member"]
