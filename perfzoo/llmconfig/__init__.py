"""The front door for LLM configs: what a user may say about a model and a layout, read, checked and
completed before anything prices it.

The keys' checks are this package's own names (``llmconfig.check``, ``llmconfig.KEYS``,
``llmconfig.ConfigError``: :mod:`.keys`).

===================  =============================================================================
``keys``             every key ``predict``, ``plan`` and ``search`` accept, with its unit and range,
                     and the checks that refuse a config perfzoo cannot price
``catalog``          the model catalog (``models.csv``): public architectures by name, as keys
``huggingface``      a Hugging Face ``config.json`` read as ``transformers`` reads it, each field
                     left out taking its architecture's documented default
``layout_defaults``  what a layout runs where a config leaves a knob out (``predict`` and ``plan`` alike)
``shape_report``     the model line a command prints: the shape priced and where each value came from
===================  =============================================================================
"""

from perfzoo.llmconfig.keys import (DEGREES, FAMILIES, HARDWARE_KEYS, KEYS, MAX_DEVICES, MAX_SEQUENCES, MAX_TOKENS,
                                    PARTIAL_MICROBATCH_FRAMEWORKS, REQUIRED, ZERO_STAGES, ConfigError, Key,
                                    accelerator_spec, applies, as_columns, check, check_precision, cp_splits,
                                    help_text, known_accelerator, preset, unknown_key_error)

__all__ = ["DEGREES", "FAMILIES", "HARDWARE_KEYS", "KEYS", "MAX_DEVICES", "MAX_SEQUENCES", "MAX_TOKENS",
           "PARTIAL_MICROBATCH_FRAMEWORKS", "REQUIRED", "ZERO_STAGES", "ConfigError", "Key", "accelerator_spec",
           "applies", "as_columns", "check", "check_precision", "cp_splits", "help_text", "known_accelerator", "preset",
           "unknown_key_error"]
