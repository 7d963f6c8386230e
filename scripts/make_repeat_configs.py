"""Write the fixed config lists of a protocol collection (deterministic).

* ``repeat-configs.jsonl``: 5 random configs of the space (seed 2026), measured 5 times each:
  the repeat CV and OOM determinism of the dataset card. On a space with a memory knob
  (``tensor_budget_mib``), 5 random configs at its largest level (the repeat CV needs configs
  that run) and 2 at its smallest (OOM determinism);
* ``baseline-configs.jsonl`` (fsdp spaces): the two baselines, fixed before any search ran:
  the FSDP default ladder (:func:`perfzoo.workloads.fsdp_ads.hand_tuned_ladder`) and the expert
  heuristic ladder (:func:`perfzoo.workloads.fsdp_ads.expert_ladder`).

    python scripts/make_repeat_configs.py fsdp-ads-v3 datasets/fsdp-cpu
"""

import json
import sys
from pathlib import Path

from perfzoo import spaces
from perfzoo.workloads.fsdp_ads import expert_ladder, hand_tuned_ladder


def write(path: Path, configs: list[dict]) -> None:
    path.write_text("".join(json.dumps(c) + "\n" for c in configs))
    print(f"wrote {len(configs)} configs to {path}")


def main(space_name: str, folder: str) -> None:
    space, out = spaces.get(space_name), Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    sample = [c for c in space.sample(40, seed=2026) if not c.get("compile")][:7]
    if any(d.name == "tensor_budget_mib" for d in space.dimensions):
        levels = space.dimension("tensor_budget_mib").values
        sample = [space.validate({**c, "tensor_budget_mib": max(levels) if i < 5 else min(levels)})
                  for i, c in enumerate(sample)]
    else:
        sample = sample[:5]
    write(out / "repeat-configs.jsonl", sample)
    if space.workload == "fsdp":
        write(out / "baseline-configs.jsonl", hand_tuned_ladder(space) + expert_ladder(space))


if __name__ == "__main__":
    main(*sys.argv[1:3])
