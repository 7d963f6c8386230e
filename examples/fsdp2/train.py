"""A plain PyTorch FSDP2 training script: the job perfzoo tunes in this example.

Nothing here knows about perfzoo except one line of contract: when ``$PERFZOO_METRICS_FILE``
is set, rank 0 appends one JSON object per step to it (step, step time, samples per step,
loss, and on CUDA the peak allocated memory). Run it by hand on 2 CPU ranks (gloo) or on the
GPUs of one node (NCCL)::

    torchrun --standalone --nproc-per-node 2 examples/fsdp2/train.py --batch 32 --width 512
    torchrun --standalone --nproc-per-node 8 examples/fsdp2/train.py --device cuda --dtype bf16 --batch 4096 --width 4096

The model is an MLP of ``--depth`` blocks of ``--width``; each block is its own FSDP2 unit
(``fully_shard``), resharded after forward or not (``--reshard``: ZeRO-3 vs ZeRO-2 style).
``--dtype bf16`` computes in bf16 (FSDP2's ``MixedPrecisionPolicy``) over fp32 parameters.
"""

import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="gloo on CPU, NCCL on one GPU per rank")
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32", help="compute dtype (parameters stay fp32)")
    p.add_argument("--batch", type=int, default=32, help="samples per rank per step")
    p.add_argument("--width", type=int, default=512, help="hidden width of each block")
    p.add_argument("--depth", type=int, default=4, help="blocks")
    p.add_argument("--reshard", choices=["true", "false"], default="true",
                   help="free the gathered parameters after forward (true) or keep them until backward")
    p.add_argument("--steps", type=int, default=12, help="training steps to run")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    cuda = args.device == "cuda"
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    # torchrun's key-value store, held here so that the ranks can also meet outside the backend (finish)
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world, is_master=False)
    dist.init_process_group("nccl" if cuda else "gloo", store=store, rank=rank, world_size=world)
    device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    if not cuda:
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(0)
    mesh = init_device_mesh(device.type, (world,))
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16 if args.dtype == "bf16" else None)
    blocks = [torch.nn.Sequential(torch.nn.Linear(args.width, args.width), torch.nn.GELU())
              for _ in range(args.depth)]
    model = torch.nn.Sequential(torch.nn.Linear(64, args.width), *blocks, torch.nn.Linear(args.width, 1)).to(device)
    for block in blocks:
        fully_shard(block, mesh=mesh, reshard_after_forward=args.reshard == "true", mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(args.batch, 64, device=device), torch.randn(args.batch, 1, device=device)
    out = os.environ.get("PERFZOO_METRICS_FILE")
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        loss = torch.nn.functional.mse_loss(model(x).float(), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.synchronize()  # the host clock then covers the GPU's work of this step
        elapsed = torch.tensor([time.perf_counter() - t0], device=device)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
        if rank == 0:
            row = {"step": step, "step_time_s": elapsed.item(), "samples_per_step": args.batch * world,
                   "loss": loss.item()}
            if cuda:
                row["peak_memory_gib"] = torch.cuda.max_memory_allocated() / 2**30
            if out:
                with open(out, "a") as f:
                    f.write(json.dumps(row) + "\n")
            else:
                print(row, flush=True)
    finish(store, rank, world)


def finish(store: dist.Store, rank: int, world: int) -> None:
    """Tear the process group down once every rank is out of its last collective.

    A gloo rank that closes its connections while a peer is still finishing the last collective
    can fail that peer ("Connection closed by peer": pytorch/gloo#155, open), and a barrier
    cannot prevent it, being one more collective. The store can: each rank marks itself done
    there, after its last collective, and waits for every other rank's mark.
    """
    store.set(f"finished/{rank}", "1")
    store.wait([f"finished/{r}" for r in range(world)])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
