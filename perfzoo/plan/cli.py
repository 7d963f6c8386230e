"""``python -m perfzoo.plan``: the fastest layout of a model on a cluster, before anyone pays for it.

Examples
--------
Llama 3 70B on 64 H100s, FP8, 8k sequences, 256 a step::

    python -m perfzoo.plan --model llama3-70b --gpus 64 --accelerator H100-SXM-80GB --seq-len 8192 \\
        --global-batch 256 --precision fp8

Your own shape, bf16 or fp8, compared with your current layout, the top 5 written for collect::

    python -m perfzoo.plan --set n_layers=40 hidden_dim=5120 n_heads=40 vocab_size=32000 --gpus 32 \\
        --accelerator H100 --seq-len 4096 --global-batch 512 --precision bf16,fp8 --baseline tp=4 pp=2 \\
        --top-k 5 --out plan.jsonl --plot plan.png

The validation benchmark: ``python -m perfzoo.plan benchmark`` (:mod:`perfzoo.plan.benchmark`).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Optional, Sequence

from perfzoo import frameworks, llmconfig
from perfzoo.console import check_options, config_from_args, field_defaults, guarded
from perfzoo.llmconfig import catalog
from perfzoo.plan import report
from perfzoo.plan.command import PlanConfig, run
from perfzoo.plan.layouts import LAYOUT_KNOBS


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m perfzoo.plan", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="exit status: 0 done, 1 a problem with the data, 2 usage or input error\n\n"
                                       + llmconfig.help_text())
    p.add_argument("--model", metavar="NAME_OR_CONFIG",
                   help="a catalog model (--list-models) or a Hugging Face config.json on disk")
    p.add_argument("--set", dest="knobs", nargs="+", action="extend", metavar="KEY=VALUE",
                   help="model keys (see below), over --model's or instead of it: n_layers=... hidden_dim=...")
    p.add_argument("--gpus", type=int, help="GPUs in the cluster")
    p.add_argument("--accelerator", help="the GPU, a row of the accelerator table (e.g. H100-SXM-80GB, B200, A100-80GB)")
    p.add_argument("--seq-len", type=int, help="tokens per sequence")
    p.add_argument("--global-batch", type=int, help="sequences per optimizer step")
    p.add_argument("--precision", help="comma-separated precisions to consider (default bf16; e.g. bf16,fp8)")
    p.add_argument("--nodes-of", type=int, metavar="K",
                   help="GPUs per node and NVLink domain (default: the accelerator table's host; tensor "
                        "parallelism spans its NVLink domain, 72 GPUs on an NVL72 rack)")
    p.add_argument("--top-k", type=int, help="layouts shown and written (default 10)")
    p.add_argument("--propose", type=int, metavar="K",
                   help="pick K layouts worth measuring (--proposer), each a different job for the launch command "
                        "and none already measured; --out and --export write these; run them with collect, then "
                        "re-plan with --calibrate on what ran (and --propose K again for the next K)")
    p.add_argument("--proposer", choices=("ei", "thompson", "topk"),
                   help="how --propose picks: ei (default: expected improvement over the best measured, the batch one at "
                        "a time, each run's neighbours' uncertainty spent), thompson (posterior draws) or topk")
    p.add_argument("--stop-margin", type=float, metavar="X",
                   help="after --calibrate, plan says stop once no unmeasured layout's 80%% upper bound exceeds the best "
                        "measured by more than X (default 0.02: 2%%), else which to measure next")
    p.add_argument("--baseline", nargs="+", action="extend", metavar="KNOB=VALUE",
                   help=f"your layout to compare with ({', '.join(LAYOUT_KNOBS)}; e.g. tp=4 pp=8)")
    p.add_argument("--predictor", help="'best' (the leaderboard's for --dataset), a zoo member fitted on --dataset, "
                                       "or a saved predictor folder")
    p.add_argument("--dataset", help="the predictor's training data (default published-llm)")
    p.add_argument("--calibrate", metavar="RUNS",
                   help="your measured runs (a CSV of config keys + tokens_per_s_per_device, a published-table CSV "
                        "or a record store): their offset against the predictor moves every layout of their "
                        "model and cluster (one run is enough), and the predictor is refitted with them")
    p.add_argument("--memory-margin", type=float,
                   help="fraction of device memory kept free of the whole memory estimate, instead of the rule derived "
                        "from measured peaks (the peak allocated x its error at 5%% risk + overheads within the device)")
    p.add_argument("--exhaustive-limit", type=int,
                   help="the most valid layouts scored one by one; past it REINFORCE samples the space (default "
                        "250000)")
    p.add_argument("--tp-beyond-node", action="store_true", help="let tensor parallelism span NVLink domains")
    p.add_argument("--allow-token-drop", action="store_true",
                   help="let an MoE model's layouts drop tokens over an expert's capacity (it changes the model's "
                        "maths; default: dropless)")
    p.add_argument("--seed", type=int, help="the searcher's seed (default 0)")
    p.add_argument("--framework", choices=sorted(frameworks.FRAMEWORKS),
                   help="price every layout as this framework runs it and keep to the layouts it runs "
                        "(default: none, unless --set framework=... or --baseline-from says)")
    p.add_argument("--export", metavar="DIR",
                   help="write the top k as the framework's launch scripts, DIR/rank01.sh ... (needs --framework)")
    p.add_argument("--baseline-from", metavar="FILE",
                   help="your torchtitan or Megatron-LM launch line (a script or argument file) or torchtitan TOML "
                        "as the baseline; it also gives the framework, model, GPUs, sequence and batch you leave out")
    p.add_argument("--json", action="store_true", help="one JSON object per layout (top k, then baselines)")
    p.add_argument("--out", metavar="FILE.jsonl", help="write the top k as collect configs (and the space, .toml)")
    p.add_argument("--plot", metavar="FILE.png", help="predicted tokens/s per GPU against memory per GPU")
    p.add_argument("--external-dir", metavar="DIR", help="the external-data directory (published tables)")
    p.add_argument("--list-models", action="store_true", help="list the catalog's models and exit")
    p.set_defaults(**field_defaults(PlanConfig))  # every default lives once, in PlanConfig
    p.set_defaults(knobs=[], baseline=[])
    return p


def list_models() -> str:
    """The catalog, one model a line: name, kind, parameters, layers x width, experts."""
    lines = [f"{'model':<18} {'kind':<6} {'params':>8}  {'layers x width':<15} experts"]
    for row in catalog.catalog().to_dict("records"):
        experts = (f"{int(row['n_experts'])} ({int(row['experts_per_token'])} active)"
                   if row.get("n_experts") == row.get("n_experts") and row.get("n_experts") else "")
        params = f"{row['n_params'] / 1e9:,.1f}B" if row["n_params"] == row["n_params"] else "?"
        lines.append(f"{row['name']:<18} {row['arch']:<6} {params:>8}  "
                     f"{int(row['n_layers'])} x {int(row['hidden_dim']):<8} {experts}")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit status (0 ok, 1 a problem with the data, 2 usage or input error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["benchmark"]:  # its own command: imported only when it runs (evaluation loads scipy.stats)
        loop = any(a == "--loop" or a.startswith("--loop=") for a in argv)  # the loop's replay (plan.loop_benchmark)
        return importlib.import_module(f"perfzoo.plan.{'loop_benchmark' if loop else 'benchmark'}").main(argv[1:])
    parser = build_parser()
    check_options(parser, argv)
    args = parser.parse_args(argv)
    if args.list_models:
        print(list_models())
        return 0

    def body() -> int:
        config = config_from_args(PlanConfig, args)
        result = run(config)
        if args.json:
            if result.unseen_hardware:
                print(f"perfzoo.plan: unseen hardware: {result.unseen_hardware}", file=sys.stderr)
            for rec in report.records(result.plan, config.top_k):
                print(json.dumps(rec))
        else:
            if result.unseen_hardware:
                print(f"unseen hardware: {result.unseen_hardware}")
            print(report.table(result.plan, config.top_k))
            print(f"\n({result.seconds:.1f} s)")
        return 0

    return guarded("perfzoo.plan", body)


__all__ = ["build_parser", "list_models", "main"]
