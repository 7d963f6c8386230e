"""The front door for LLM configs: what a user may say about a model and a layout, read, checked and
completed before anything prices it.

The keys and their checks are this package's own names (``llmconfig.check``, ``llmconfig.KEYS``,
``llmconfig.ConfigError``: :mod:`.keys`, :mod:`.checks`).

===================  =============================================================================
``keys``             every key ``predict``, ``plan`` and ``search`` accept, with its unit and range
``checks``           the checks that refuse a config perfzoo cannot price, and model presets
``catalog``          the model catalog (``models.csv``): public architectures by name, as keys
``huggingface``      a Hugging Face ``config.json`` read as ``transformers`` reads it, each field
                     left out taking its architecture's documented default
``layout_defaults``  what a layout runs where a config leaves a knob out (``predict`` and ``plan`` alike)
``shape_report``     the model line a command prints: the shape priced and where each value came from
===================  =============================================================================
"""

from perfzoo.llmconfig.checks import (ZERO_STAGES, accelerator_spec, check, check_precision, cp_splits,
                                      known_accelerator, preset)
from perfzoo.llmconfig.keys import (DEGREES, FAMILIES, HARDWARE_KEYS, KEYS, MAX_DEVICES, MAX_SEQUENCES, MAX_TOKENS,
                                    REQUIRED, ConfigError, Key, applies, as_columns, help_text, unknown_key_error)

__all__ = ["DEGREES", "FAMILIES", "HARDWARE_KEYS", "KEYS", "MAX_DEVICES", "MAX_SEQUENCES", "MAX_TOKENS", "REQUIRED",
           "ZERO_STAGES", "ConfigError", "Key", "accelerator_spec", "applies", "as_columns", "check", "check_precision",
           "cp_splits", "help_text", "known_accelerator", "preset", "unknown_key_error"]
