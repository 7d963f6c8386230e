#!/usr/bin/env bash
# The GPU runs behind datasets/llm-h100 and the CUDA-path checks of the harness, one phase per
# call so that a lent GPU's few minutes go to measuring (see datasets/llm-h100/README.md).
#
#   bash scripts/gpu_session.sh smoke WORK RET     # env, CUDA path (inprocess, torchrun, OOM, timeout), MFU
#   bash scripts/gpu_session.sh sweep WORK RET N SEED COMPILE SECONDS   # N random llm-gpu jobs
#
# Every record is fsynced into a store under WORK as its job ends; at the end of the phase each
# store's records.jsonl is copied flat into RET (a folder that comes back with few files).
# Missing Python packages (pydantic) travel as wheels in .whl/ (see scripts/gpu_wheels.sh).
set -u
phase=$1; out=$2; ret=$3; shift 3
mkdir -p "$out" "$ret"
finish() { for s in "$out"/*/records.jsonl; do [ -f "$s" ] && cp "$s" "$ret/$(basename "$(dirname "$s")")-records.jsonl"; done; }
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD/src
else
  export PYTHONPATH=$PWD/src
fi
export PYTHONUNBUFFERED=1
collect() { python3 -m perfzoo.collect --device cuda --space llm-gpu "$@"; }
summary() { python3 scripts/gpu_summary.py "$@"; }

case "$phase" in
smoke)
  { nvidia-smi; python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), torch.cuda.get_device_name(0))"; } > "$out/env.txt" 2>&1
  cat "$out/env.txt" | tail -4
  # the MFU check: a ~1B Llama-style model (20 x 2048), 16k tokens a step, compile + flash SDPA
  python3 - "$out/mfu.jsonl" <<'PY'
import json, sys
base = {"n_layers": 20, "hidden_dim": 2048, "seq_len": 4096, "micro_batch_size": 4, "precision": "bf16",
        "activation_checkpointing": "none", "compile": True}
variants = [{}, {"precision": "fp8"}, {"compile": False}, {"seq_len": 2048, "micro_batch_size": 8},
            {"activation_checkpointing": "selective"}, {"seq_len": 8192}]
with open(sys.argv[1], "w") as f:
    for v in variants:
        f.write(json.dumps({**base, **v}) + "\n")
PY
  collect --configs "$out/mfu.jsonl" --steps 10 --warmup 3 --timeout 300 --out "$out/mfu" --sweep-id gpu-mfu
  summary "$out/mfu"; finish
  # the CUDA path: torchrun (NCCL), an OOM in the middle of an in-process sweep, a timeout
  python3 - "$out/path.jsonl" <<'PY'
import json, sys
small = {"n_layers": 8, "hidden_dim": 1024, "seq_len": 1024, "micro_batch_size": 2, "precision": "bf16",
         "activation_checkpointing": "none", "compile": False}
oom = dict(small, n_layers=28, hidden_dim=3072, seq_len=2048, micro_batch_size=16)
with open(sys.argv[1], "w") as f:
    for c in (small, oom, dict(small, micro_batch_size=4)):
        f.write(json.dumps(c) + "\n")
PY
  collect --configs "$out/path.jsonl" --steps 6 --warmup 2 --timeout 120 --out "$out/path-inprocess" --sweep-id gpu-path
  head -1 "$out/path.jsonl" > "$out/one.jsonl"
  collect --configs "$out/one.jsonl" --mode torchrun --steps 6 --warmup 2 --timeout 120 --out "$out/path-torchrun" --sweep-id gpu-path
  PERFZOO_TEST_HANG=1 collect --configs "$out/one.jsonl" --mode torchrun --timeout 25 --out "$out/path-timeout" --sweep-id gpu-path
  sleep 2; echo "after the timeout, GPU processes left:"; nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader
  ps -eo pid,cmd | grep -c "[h]arness.worker" | sed 's/^/harness.worker processes left: /'
  # repeatability: 3 configs x 3 repeats
  python3 - "$out/repeat.jsonl" <<'PY'
import json, sys
cs = [{"n_layers": 12, "hidden_dim": 1536, "seq_len": 2048, "micro_batch_size": 4, "precision": "bf16",
       "activation_checkpointing": "none", "compile": False},
      {"n_layers": 16, "hidden_dim": 2048, "seq_len": 4096, "micro_batch_size": 2, "precision": "fp8",
       "activation_checkpointing": "full", "compile": False},
      {"n_layers": 24, "hidden_dim": 2560, "seq_len": 1024, "micro_batch_size": 8, "precision": "bf16",
       "activation_checkpointing": "selective", "compile": False}]
with open(sys.argv[1], "w") as f:
    for c in cs:
        f.write(json.dumps(c) + "\n")
PY
  collect --configs "$out/repeat.jsonl" --repeat 3 --steps 6 --warmup 2 --timeout 120 --out "$out/repeat" --sweep-id gpu-repeat
  summary "$out/path-inprocess" "$out/path-torchrun" "$out/path-timeout" "$out/repeat"
  cp "$out/env.txt" "$ret/"; finish
  ;;
sweep)
  n=$1; seed=$2; compile=$3; seconds=$4
  python3 - "$out/sweep.jsonl" "$n" "$seed" "$compile" <<'PY'
import json, sys
from perfzoo import spaces
path, n, seed, compile_ = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
space = spaces.get("llm-gpu")
configs = [c for c in space.sample(4 * n, seed=seed) if c["compile"] == compile_][:n]
with open(path, "w") as f:
    for c in configs:
        f.write(json.dumps({d.name: c[d.name] for d in space.dimensions}) + "\n")
PY
  timeout --signal=TERM "$seconds" python3 -m perfzoo.collect --device cuda --space llm-gpu \
    --configs "$out/sweep.jsonl" --steps 6 --warmup 2 --timeout 150 --out "$out/store" --sweep-id "gpu-sweep-s$seed"
  summary "$out/store" --brief
  finish
  ;;
esac
exit 0
