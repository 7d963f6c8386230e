"""A plain PyTorch FSDP2 training script: the job perfzoo tunes in this example.

Nothing here knows about perfzoo except one line of contract: when ``$PERFZOO_METRICS_FILE``
is set, rank 0 appends one JSON object per step to it (step, step time, samples per step,
loss). Run it by hand on 2 CPU ranks::

    torchrun --standalone --nproc-per-node 2 examples/fsdp2-cpu/train.py --batch 32 --width 512

The model is an MLP of ``--depth`` blocks of ``--width``; each block is its own FSDP2 unit
(``fully_shard``), resharded after forward or not (``--reshard``: ZeRO-3 vs ZeRO-2 style).
"""

import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=32, help="samples per rank per step")
    p.add_argument("--width", type=int, default=512, help="hidden width of each block")
    p.add_argument("--depth", type=int, default=4, help="blocks")
    p.add_argument("--reshard", choices=["true", "false"], default="true",
                   help="free the gathered parameters after forward (true) or keep them until backward")
    p.add_argument("--steps", type=int, default=12, help="training steps to run")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(0)
    mesh = init_device_mesh("cpu", (world,))
    blocks = [torch.nn.Sequential(torch.nn.Linear(args.width, args.width), torch.nn.GELU())
              for _ in range(args.depth)]
    model = torch.nn.Sequential(torch.nn.Linear(64, args.width), *blocks, torch.nn.Linear(args.width, 1))
    for block in blocks:
        fully_shard(block, mesh=mesh, reshard_after_forward=args.reshard == "true")
    fully_shard(model, mesh=mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(args.batch, 64), torch.randn(args.batch, 1)
    out = os.environ.get("PERFZOO_METRICS_FILE")
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        elapsed = torch.tensor([time.perf_counter() - t0])
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
        if rank == 0:
            row = {"step": step, "step_time_s": elapsed.item(), "samples_per_step": args.batch * world,
                   "loss": loss.item()}
            if out:
                with open(out, "a") as f:
                    f.write(json.dumps(row) + "\n")
            else:
                print(row, flush=True)
    dist.barrier()  # no rank tears gloo down while another is still in a collective
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
