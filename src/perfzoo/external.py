"""The rules that map published free text to the config vocabulary of ``docs/architecture.md``
(precision, FSDP sharding, activation checkpointing, compile): :func:`phrase_rules` and
:data:`CATEGORICAL_RULES`, used by the CSV readers of :mod:`perfzoo.sources`
(:meth:`perfzoo.sources._csv.Row.category`). The readers themselves live in :mod:`perfzoo.sources`.
"""

from __future__ import annotations

import re


def phrase_rules(text: str, rules: tuple[tuple[object, tuple[str, ...]], ...]) -> object:
    """The value of the first rule one of whose phrases occurs, as whole words, in ``text``.

    Case, punctuation and underscores are ignored; None when no rule matches.

    >>> phrase_rules("FP8 (Float8 linears) + BF16", PRECISION_RULES), phrase_rules("amp_bf16", PRECISION_RULES)
    ('fp8', 'bf16')
    """
    words = " " + " ".join(re.findall(r"[a-z0-9]+", text.lower())) + " "
    for value, phrases in rules:
        if any(f" {p} " in words for p in phrases):
            return value
    return None


PRECISION_RULES = (
    ("nvfp4", ("nvfp4",)), ("mxfp8", ("mxfp8",)), ("fp8", ("fp8", "float8")),
    ("bf16", ("bf16", "bfloat16")), ("fp16", ("fp16", "float16")), ("fp32", ("fp32", "float32")),
)
FSDP_RULES = (
    ("shard_grad_op", ("shard grad op", "zero2")), ("no_shard", ("no shard",)),
    ("hybrid_shard", ("hybrid shard", "hsdp")),
    ("full_shard", ("full shard", "fsdp", "fsdp2", "dp shard", "zero3")), ("none", ("none", "ddp")),
)
CHECKPOINTING_RULES = (
    ("selective", ("selective",)), ("full", ("full", "true")), ("none", ("none", "false", "off")),
)
COMPILE_RULES = ((True, ("true", "yes", "on")), (False, ("false", "no", "off")))
CATEGORICAL_RULES = {"precision": PRECISION_RULES, "fsdp": FSDP_RULES,
                     "activation_checkpointing": CHECKPOINTING_RULES, "compile": COMPILE_RULES}
