"""Write the config list of the bundled ``llm-cpu`` dataset (deterministic).

``torch.compile`` costs 20-80 s per job on 2 shared CPU cores (compilation happens in the
warm-up), so the dataset holds fewer compiled jobs than a uniform draw would: the first
``--plain`` (300) configs of a seeded ``llm-small`` sample with ``compile=False`` and the first
``--compiled`` (12) with ``compile=True``, in sampled order.

    python scripts/make_llm_configs.py --out datasets/llm-cpu/configs.jsonl
"""

import argparse
import json

from perfzoo import spaces


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plain", type=int, default=300)
    p.add_argument("--compiled", type=int, default=12)
    a = p.parse_args()
    pool = spaces.get("llm-small").sample(4 * (a.plain + a.compiled), seed=a.seed)
    plain = [c for c in pool if not c["compile"]][: a.plain]
    compiled = [c for c in pool if c["compile"]][: a.compiled]
    keep = {id(c) for c in plain + compiled}
    chosen = [c for c in pool if id(c) in keep]
    with open(a.out, "w") as f:
        for c in chosen:
            f.write(json.dumps(c) + "\n")
    print(f"wrote {len(chosen)} configs ({len(plain)} plain, {len(compiled)} compiled) to {a.out}")


if __name__ == "__main__":
    main()
