#!/usr/bin/env bash
# The successive-halving race (perfzoo.loop.race) re-run on the searched jobs of the closed loop's
# run 2 on fsdp-ads-v3 (commit 33a34ce, whose race was the old one: each arm's 3 best by one run,
# medians of 5 including that run). Per seed: run 2's records without its old race
# ("-confirm" sweep) and its plans go to $RERACE_ROOT/fsdp-ads-v3-s<seed>/ (default
# datasets/fsdp-cpu-loop/v3-rerace-run2), then the same tune command as tune_seeds.sh (beside it) finds
# every phase done and runs only the new race. Nothing else may run meanwhile.
#
#   bash datasets/fsdp-cpu-loop/rerace_run2.sh 0 1 2
set -euo pipefail
cd "$(dirname "$0")/../.."
for seed in "$@"; do
  out=${RERACE_ROOT:-datasets/fsdp-cpu-loop/v3-rerace-run2}/fsdp-ads-v3-s$seed
  run2=33a34ce:leaderboard/tune/fsdp-ads-v3-s$seed
  mkdir -p "$out/tune"
  git show "$run2/records.jsonl" | grep -v "\"sweep_id\":\"tune-fsdp-ads-v3-s$seed-confirm\"" > "$out/records.jsonl"
  for plan in $(git ls-tree --name-only "$run2/tune/" | grep -v -e confirm -e summary); do
    git show "$run2/tune/$plan" > "$out/tune/$plan"
  done
  echo "before race of seed $seed: $(date -u +%FT%TZ) $(cat /proc/loadavg)" >> "$out/load.txt"
  python -m perfzoo.tune --space fsdp-ads-v3 --store "$out" --seed "$seed" --n-random 100 --rounds 3 --top-k 20 \
      --control 60 --hand-tuned --expert --confirm 6 --race 6 --warm --no-progress > "$out/tune.log" 2>&1
  echo "after race of seed $seed: $(date -u +%FT%TZ) $(cat /proc/loadavg)" >> "$out/load.txt"
done
