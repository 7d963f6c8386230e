#!/usr/bin/env bash
# Collect the bundled CPU datasets (resumable: run it again to continue where it stopped).
# Each stage stops the script if it was interrupted, so a re-run continues in order.
set -u
cd "$(dirname "$0")/.."
python -m perfzoo.collect --workload fsdp --space fsdp-ads --n 620 --seed 0 --nproc 2 --warm \
  --steps 6 --warmup 2 --timeout 180 --sweep-id fsdp-cpu-v1 --out datasets/fsdp-cpu || exit $?
python scripts/make_llm_configs.py --out datasets/llm-cpu/configs.jsonl || exit $?
python -m perfzoo.collect --workload llm --space llm-small --configs datasets/llm-cpu/configs.jsonl --warm \
  --steps 6 --warmup 2 --timeout 300 --sweep-id llm-cpu-v1 --out datasets/llm-cpu || exit $?
python scripts/dataset_cards.py fsdp-cpu llm-cpu
