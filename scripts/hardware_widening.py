"""How much wider an interval must get on an accelerator the training data has no row of: the
leave-one-accelerator-out replay of the published tables, which sets
:data:`perfzoo.zoo.extrapolation.UNSEEN_ACCELERATOR_WIDENING` and ``UNSEEN_FAMILY_WIDENING``.

    python scripts/hardware_widening.py                  # the shipped member of published-llm
    python scripts/hardware_widening.py --member ridge

Each accelerator of ``published-llm`` with at least 20 ok jobs is left out in turn, then each
family (NVIDIA Ampere, Hopper, Blackwell): the member (the leaderboard's best, with its
parameters) is fitted with its 80% interval on the rest, as the shipped artifact is on all the
data, and scored on the held-out jobs (:func:`perfzoo.evaluation.hardware.held_out`). A group's
``widening`` is the log throughput each end of the interval must move out to cover 80% of its
jobs; the stored widening is the largest over the groups, so every NVIDIA accelerator (family)
held out would have had 80% coverage. The tables hold NVIDIA accelerators only: the figures say
nothing measured about AMD, Google or Intel hardware. Printed: one table per level, then the two
widenings.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from perfzoo import zoo
from perfzoo.datasets import load_dataset
from perfzoo.evaluation.hardware import held_out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--member", help="a zoo member (default: the leaderboard's best for published-llm)")
    args = parser.parse_args(argv)
    member, params = (args.member, {}) if args.member else zoo.best_member("published-llm")
    ds = load_dataset("published-llm")
    for by, name in (("accelerator", "UNSEEN_ACCELERATOR_WIDENING"), ("family", "UNSEEN_FAMILY_WIDENING")):
        table = held_out(ds, member, params, by)
        print(f"{member}, one {by} of published-llm held out at a time:")
        print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        w = float(table["widening"].max())
        print(f"{name} = {w:.3f} (x{np.exp(w):.3f} at each end)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
