#!/usr/bin/env bash
# The real closed loop on fsdp-ads-v3 (issue 12, item 5), one seed after another, nothing else
# running: 100 random jobs + 3 rounds x 20 + a 60-job random control (equal jobs) + the FSDP
# default and the expert heuristic, then each arm's 3 best configs raced: 4 more runs each
# (champion = best median of 5). Records, plans, summaries and the frontier figures go to
# datasets/fsdp-cpu-loop/fsdp-ads-v3-s<seed>/ ($TUNE_ROOT/fsdp-ads-v3-s<seed>/ when TUNE_ROOT is set);
# the load before and after each seed to load.txt there.
#
#   bash datasets/fsdp-cpu-loop/tune_seeds.sh 0 1 2
set -euo pipefail
cd "$(dirname "$0")/../.."
for seed in "$@"; do
  out=${TUNE_ROOT:-datasets/fsdp-cpu-loop}/fsdp-ads-v3-s$seed
  mkdir -p "$out"
  echo "before seed $seed: $(date -u +%FT%TZ) $(cat /proc/loadavg)" >> "$out/load.txt"
  python -m perfzoo.tune --space fsdp-ads-v3 --store "$out" --seed "$seed" --n-random 100 --rounds 3 --top-k 20 \
      --control 60 --hand-tuned --expert --confirm 6 --race 6 --warm --no-progress --plot "$out/frontier.png" \
      > "$out/tune.log" 2>&1
  echo "after seed $seed: $(date -u +%FT%TZ) $(cat /proc/loadavg)" >> "$out/load.txt"
done
