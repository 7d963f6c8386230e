#!/usr/bin/env bash
# A/B: glibc malloc defaults (A) vs a fixed mmap threshold and no trimming (B), alternated.
cd /work/main && . .venv/bin/activate
for run in a1 b1 a2 b2; do
  if [[ $run == b* ]]; then export GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296; else unset GLIBC_TUNABLES; fi
  echo "$(date -u +%T) $run start $(cat /proc/loadavg)" >> /work/study/de-load.txt
  /usr/bin/time -f "$run %U user %S sys %e wall" -a -o /work/study/de-time.txt \
    python -m perfzoo.collect --space fsdp-ads-v3 --warm --configs /tmp/de.jsonl --repeat 5 --out /work/study/de-$run > /work/study/de-$run.log 2>&1
  echo "$(date -u +%T) $run end $(cat /proc/loadavg)" >> /work/study/de-load.txt
done
