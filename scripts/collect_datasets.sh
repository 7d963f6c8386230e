#!/usr/bin/env bash
# Collect the bundled CPU datasets under the measurement protocol (harness/protocol.py and
# collect's defaults). Nothing else may run on the machine meanwhile: the load before and after
# each stage goes to OUT/load.log. Resumable: run it again and finished job ids are skipped.
#
#   bash scripts/collect_datasets.sh            # both; or name one: fsdp | llm
set -u
cd "$(dirname "$0")/.."
load() { echo "$(date -u +%FT%TZ) $1 $(cat /proc/loadavg)" >> "$2/load.log"; }
fsdp() { python -m perfzoo.collect --space fsdp-ads-v3 --warm --out datasets/fsdp-cpu "$@"; }
llm() { python -m perfzoo.collect --space llm-small --warm --timeout 300 --out datasets/llm-cpu "$@"; }

stages=("$@")

if [ ${#stages[@]} -eq 0 ] || [[ " ${stages[*]} " == *" fsdp "* ]]; then
python scripts/make_repeat_configs.py fsdp-ads-v3 datasets/fsdp-cpu || exit $?
load start datasets/fsdp-cpu
fsdp --configs datasets/fsdp-cpu/repeat-configs.jsonl --repeat 5 --sweep-id fsdp-cpu-v3-repeat || exit $?
fsdp --configs datasets/fsdp-cpu/baseline-configs.jsonl --repeat 3 --sweep-id fsdp-cpu-v3-baselines || exit $?
fsdp --n 540 --seed 0 --sweep-id fsdp-cpu-v3 || exit $?
load end datasets/fsdp-cpu
fi

if [ ${#stages[@]} -eq 0 ] || [[ " ${stages[*]} " == *" llm "* ]]; then
python scripts/make_repeat_configs.py llm-small datasets/llm-cpu || exit $?
python scripts/make_llm_configs.py --compiled 4 --out datasets/llm-cpu/configs.jsonl || exit $?
load start datasets/llm-cpu
llm --configs datasets/llm-cpu/repeat-configs.jsonl --repeat 5 --sweep-id llm-cpu-v2-repeat || exit $?
llm --configs datasets/llm-cpu/configs.jsonl --sweep-id llm-cpu-v2 || exit $?
load end datasets/llm-cpu
fi
