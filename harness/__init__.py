"""What runs on the accelerators: the rank-side worker, the workloads, launchers, environment capture.

Modules: ``worker`` (the torchrun / batch entry point), ``workloads`` (``fsdp``: the ads model,
``llm``: a Llama-style decoder), ``launchers`` (local torchrun, warm torchrun, in-process batch),
``jobs`` (job specs, rank reports -> outcome -> job record), ``timing`` (step statistics),
``memory`` (per-rank memory budgets, OOM detection), ``environment`` (hardware/software capture).
"""
