"""How much wider an interval must get on an accelerator the training data has no row of: the
leave-one-accelerator-out replay of the published tables, which sets
:data:`perfzoo.zoo.extrapolation.UNSEEN_ACCELERATOR_WIDENING` and ``UNSEEN_FAMILY_WIDENING``; and the
leave-one-stack-out replay, which sets ``UNSEEN_STACK_WIDENING`` (a vendor no row measured).

    python scripts/hardware_widening.py                  # the shipped member of published-llm
    python scripts/hardware_widening.py --member ridge

Each accelerator of ``published-llm`` with at least 20 ok jobs is left out in turn, then each
family (NVIDIA Ampere, Hopper, Blackwell): the member (the leaderboard's best, with its
parameters) is fitted with its 80% interval on the rest, as the shipped artifact is on all the
data, and scored on the held-out jobs (:func:`perfzoo.evaluation.hardware.held_out`). A group's
``widening`` is the log throughput each end of the interval must move out to cover 80% of its
jobs; the stored widening is the largest over the groups, so every NVIDIA accelerator (family)
held out would have had 80% coverage (a family's is at least an accelerator's: an accelerator of an
unseen family is unseen too). The tables hold NVIDIA accelerators only: the figures say
nothing measured about AMD, Google or Intel hardware. What another vendor changes is its software
stack (compiler, kernels, collectives library) as much as its chip, so the last replay leaves one
software stack out at a time: each framework of the tables (llm-foundry, NeMo, Megatron-Bridge,
torchtitan, Megatron-LM), then each year's release generation; ``UNSEEN_STACK_WIDENING`` is the
largest widening over both, what a stack no row measured costs. Printed: one table per level, then
the three widenings.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from perfzoo import zoo
from perfzoo.datasets import load_dataset
from perfzoo.evaluation.hardware import STACKS, held_out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--member", help="a zoo member (default: the leaderboard's best for published-llm)")
    args = parser.parse_args(argv)
    member, params = (args.member, {}) if args.member else zoo.best_member("published-llm")
    ds = load_dataset("published-llm")
    widest = 0.0
    for levels, name in ((("accelerator",), "UNSEEN_ACCELERATOR_WIDENING"), (("family",), "UNSEEN_FAMILY_WIDENING"),
                         (STACKS, "UNSEEN_STACK_WIDENING")):
        widest = widest if name == "UNSEEN_FAMILY_WIDENING" else 0.0  # a family unseen: its accelerators are too
        for by in levels:
            table = held_out(ds, member, params, by)
            print(f"{member}, one {by} of published-llm held out at a time:")
            print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
            widest = max(widest, float(table["widening"].max()))
        print(f"{name} = {widest:.3f} (x{np.exp(widest):.3f} at each end)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
