#!/usr/bin/env bash
# The GPU runs behind datasets/llm-h100 and the CUDA-path checks of the harness, one phase per
# call so that a lent GPU's few minutes go to measuring (see datasets/llm-h100/README.md).
#
#   bash scripts/gpu_session.sh smoke WORK RET     # env, CUDA path (inprocess, torchrun, OOM, timeout), MFU
#   bash scripts/gpu_session.sh sweep WORK RET N SEED COMPILE SECONDS   # N random llm-gpu jobs
#   bash scripts/gpu_session.sh capacity WORK RET SECONDS   # a larger card: beyond 80 GB, repeats, sweep
#   bash scripts/gpu_session.sh titan WORK RET SECONDS      # torchtitan's debug model through collect (exit 1
#                                                           # when its first job does not run: the log says why)
#   bash scripts/gpu_session.sh example WORK RET SECONDS    # examples/fsdp2/cuda.toml, 24 random configs
#
# Every record is fsynced into a store under WORK as its job ends; at the end of the phase each
# store's records.jsonl is copied flat into RET (a folder that comes back with few files).
# Missing Python packages (pydantic) travel as wheels in .whl/, torchtitan's in .tt/ (scripts/gpu_wheels.sh
# fetches them).
set -u
phase=$1; out=$2; ret=$3; shift 3
mkdir -p "$out" "$ret"
finish() { for s in "$out"/*/records.jsonl; do [ -f "$s" ] && cp "$s" "$ret/$(basename "$(dirname "$s")")-records.jsonl"; done; }
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1
collect() { python3 -m perfzoo.collect --device cuda --space llm-gpu "$@"; }
summary() { python3 scripts/gpu_summary.py "$@"; }
environment() {
  { nvidia-smi; python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), torch.cuda.get_device_name(0))"; } > "$1" 2>&1
  tail -4 "$1"
}
# draw N SEED COMPILE PATH: N configs of llm-gpu drawn with SEED whose compile is COMPILE (0/1)
draw() {
  python3 - "$@" <<'PY'
import json, sys
from perfzoo import spaces
n, seed, compile_, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
space = spaces.get("llm-gpu")
configs = [c for c in space.sample(4 * n, seed=seed) if c["compile"] == compile_][:n]
with open(path, "w") as f:
    for c in configs:
        f.write(json.dumps({d.name: c[d.name] for d in space.dimensions}) + "\n")
PY
}

case "$phase" in
smoke)
  environment "$out/env.txt"
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
  collect --configs scripts/configs/gpu-repeat.jsonl --repeat 3 --steps 6 --warmup 2 --timeout 120 --out "$out/repeat" --sweep-id gpu-repeat
  summary "$out/path-inprocess" "$out/path-torchrun" "$out/path-timeout" "$out/repeat"
  cp "$out/env.txt" "$ret/"; finish
  ;;
sweep)
  n=$1; seed=$2; compile=$3; seconds=$4
  draw "$n" "$seed" "$compile" "$out/sweep.jsonl"
  timeout --signal=TERM "$seconds" python3 -m perfzoo.collect --device cuda --space llm-gpu --configs "$out/sweep.jsonl" --steps 6 --warmup 2 --timeout 150 \
    --out "$out/store" --sweep-id "gpu-sweep-s$seed"
  summary "$out/store" --brief
  finish
  ;;
capacity)
  # a larger card's dataset (datasets/llm-h200): configs an 80 GB card cannot hold (and two just
  # over this card's memory), the repeat check, then the H100's first sweep (seed 0, compile off,
  # so the same configs in the same order) until SECONDS have passed since the phase began
  seconds=$1; t0=$SECONDS
  environment "$out/env.txt"
  timeout --signal=TERM 200 python3 -m perfzoo.collect --device cuda --space llm-gpu --configs datasets/llm-h200/beyond-80gb-configs.jsonl --steps 6 --warmup 2 \
    --timeout 150 --out "$out/beyond" --sweep-id gpu-beyond-80gb
  finish
  timeout --signal=TERM 90 python3 -m perfzoo.collect --device cuda --space llm-gpu --configs scripts/configs/gpu-repeat.jsonl --repeat 3 --steps 6 --warmup 2 \
    --timeout 120 --out "$out/repeat" --sweep-id gpu-repeat
  finish
  draw 400 0 0 "$out/sweep.jsonl"
  timeout --signal=TERM $((seconds - (SECONDS - t0))) python3 -m perfzoo.collect --device cuda --space llm-gpu --configs "$out/sweep.jsonl" --steps 6 --warmup 2 \
    --timeout 150 --out "$out/store" --sweep-id gpu-sweep-s0
  summary "$out/beyond" "$out/repeat" "$out/store" --brief
  cp "$out/env.txt" "$ret/"; finish
  ;;
titan)
  # torchtitan 0.3.0 from the wheels in .tt/, run from a folder laid out as its checkout: the test
  # tokenizer from .tt/ and, for its offline c4_test data set, synthetic text (what the words are
  # does not change a step's time: every sample is packed to seq_len tokens)
  seconds=$1; t0=$SECONDS; repo=$PWD; run="$out/titan-run"
  environment "$out/env.txt"; cp "$out/env.txt" "$ret/"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/titan .tt/wheels/*.whl
  mkdir -p "$run/tests/assets/c4_test" && cp -r .tt/tokenizer "$run/tests/assets/"
  python3 - "$run/tests/assets/c4_test/data.json" "$out/titan.jsonl" <<'PY'
import json, random, sys
from perfzoo.spaces import file
rng = random.Random(0)
words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(5000)]
with open(sys.argv[1], "w") as f:
    for _ in range(2000):
        f.write(json.dumps({"text": " ".join(rng.choice(words) for _ in range(400))}) + "\n")
# one GPU: nproc = tp = 1; bf16 (float8 needs torchao, not on the image); uncompiled jobs first
space = file.load("examples/torchtitan/space.toml")
one = [c for c in space.sample(2000, seed=0) if c["nproc"] == 1 and c["tp"] == 1 and c["model_config"] == "llama3_debugmodel"]
one.sort(key=lambda c: c["compile"] == "enable")
with open(sys.argv[2], "w") as f:
    for c in one[:40]:
        f.write(json.dumps(c) + "\n")
PY
  titan() { (cd "$run" && HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 PYTHONPATH="/tmp/titan:$PYTHONPATH" timeout --signal=TERM "$1" python3 -m perfzoo.collect \
    --space "$repo/examples/torchtitan/space.toml" --metric-parser torchtitan --device cuda --configs "$2" \
    --steps 6 --warmup 2 --timeout 100 --out "$out/titan" --sweep-id gpu-titan); }
  head -1 "$out/titan.jsonl" > "$out/titan-first.jsonl"
  titan 120 "$out/titan-first.jsonl"
  summary "$out/titan"; finish
  if ! grep -q '"status":"ok"' "$out/titan/records.jsonl" 2>/dev/null; then
    python3 -c "import json, sys; [print(json.loads(l).get('failure')) for l in open(sys.argv[1])]" "$out/titan/records.jsonl"
    exit 1
  fi
  titan $((seconds - (SECONDS - t0))) "$out/titan.jsonl"
  summary "$out/titan"; finish
  ;;
example)
  seconds=$1
  timeout --signal=TERM "$seconds" python3 -m perfzoo.collect --space examples/fsdp2/cuda.toml --device cuda --n 24 --seed 0 \
    --steps 6 --warmup 2 --timeout 90 --out "$out/fsdp2-cuda" --sweep-id gpu-fsdp2-cuda
  summary "$out/fsdp2-cuda"; finish
  ;;
esac
exit 0
