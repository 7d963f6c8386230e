"""The rank-side entry point: runs one job per process group and reports through files.

Under torchrun (one fresh ``torchrun --standalone`` per job)::

    python -m torch.distributed.run --standalone --nproc-per-node 2 -m harness.worker JOB_DIR/job.json

In-process batch mode (many world-size-1 jobs in one process, see
:class:`harness.launchers.InProcessBatchLauncher`)::

    python -m harness.worker --batch BATCH.json

Warm torchrun mode (a fresh torchrun-standalone process group per job whose ranks are
forked from one warm process, see :class:`harness.launchers.WarmTorchrunLauncher`)::

    python -m harness.worker --batch-torchrun BATCH.json

Every rank writes ``<job dir>/results/rank<r>.json`` with its status (``ok`` / ``oom`` /
``failed``), its per-step times (warm-up excluded), items and FLOPs per step, memory
figures and phase timings. A rank that fails lifts its memory budget, writes its report and
exits non-zero at once (``os._exit``), so torchrun tears the other ranks down instead of
leaving them waiting in a collective.

Test-only knobs (never part of a config, so never part of a job id): the job's ``debug``
field (``{"hang": true}``, ``{"crash": "message"}``) or the environment variables
``PERFZOO_TEST_HANG=1`` / ``PERFZOO_TEST_CRASH=message``.
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()  # before torch is imported: phase timings start here

import contextlib  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from datetime import timedelta  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Iterator, Optional  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402

from harness import memory, protocol  # noqa: E402
from harness.environment import peak_bf16_flops, relevant_env  # noqa: E402
from harness.jobs import JobSpec, tail, write_json_atomic  # noqa: E402
from harness.live_tensors import LiveTensorBytes  # noqa: E402
from harness.timing import StepTimer  # noqa: E402
from harness.workloads import RunContext, load  # noqa: E402

EXIT_FAILED = 3
PG_TIMEOUT_S = float(os.environ.get("PERFZOO_PG_TIMEOUT_S", "300"))


def _reset_peak_rss() -> None:
    try:  # Linux: writing 5 to clear_refs resets the peak RSS (VmHWM) of this process
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _classify(exc: BaseException) -> str:
    if memory.is_oom(exc):
        return "oom"
    text = str(exc)
    if text.startswith("unsupported"):
        return "unsupported"
    if text.startswith("noisy machine"):
        return "noisy_machine"
    if isinstance(exc, ValueError) and "knob" in text:
        return "invalid_config"
    low = text.lower()
    if "nccl" in low:
        return "nccl"
    if "gloo" in low or "connection" in low:
        return "collective"
    return "crash"


@contextlib.contextmanager
def _tensor_budget(spec: JobSpec) -> Iterator[Optional[LiveTensorBytes]]:
    """Step 3 of :mod:`harness.protocol` for ``tensor_budget_mib`` configs: count the rank's live
    tensors over build and warm-up (:mod:`harness.live_tensors`); yields None for other configs."""
    budget = spec.config.get("tensor_budget_mib")
    if budget is None:
        yield None
        return
    if spec.warmup < 2:
        raise ValueError(f"knob 'tensor_budget_mib' is checked over the warm-up steps, where the optimizer state and the "
                         f"gradients first coexist: give 2 or more (--warmup {spec.warmup} given)")
    gc.collect()  # no garbage left from before, and the collector's counts start at zero: the same peak every repeat
    with LiveTensorBytes(int(float(budget) * memory.MIB)) as live:
        yield live


def _debug_actions(spec: JobSpec) -> dict:
    dbg = dict(spec.debug or {})
    if os.environ.get("PERFZOO_TEST_HANG") not in (None, "", "0"):
        dbg["hang"] = True
    if os.environ.get("PERFZOO_TEST_CRASH"):
        dbg["crash"] = os.environ["PERFZOO_TEST_CRASH"]
    return dbg


def run_job(spec: JobSpec, results_dir: Path, rank: int, world_size: int, local_rank: int,
            in_process: bool = False, forked: bool = False) -> dict:
    """Run one job on this rank; returns (and writes) the rank report. Never raises."""
    timings = {"import_s": time.perf_counter() - _T0} if not (in_process or forked) else {}
    t = time.perf_counter()
    report: dict = {"rank": rank, "world_size": world_size, "status": "failed", "pid": os.getpid()}
    device = spec.device
    built = None
    try:
        if device == "cuda":
            if not torch.cuda.is_available():
                raise RuntimeError("unsupported: --device cuda but torch sees no CUDA GPU here")
            torch.cuda.set_device(local_rank)
            torch.cuda.reset_peak_memory_stats()
            report["device_name"] = torch.cuda.get_device_name(local_rank)
            report["peak_flops"] = peak_bf16_flops(report["device_name"])  # for MFU; None if unknown
            tdev = torch.device("cuda", local_rank)
            backend = "nccl"
        else:
            tdev = torch.device("cpu")
            backend = "gloo"
        kw = {"timeout": timedelta(seconds=PG_TIMEOUT_S)}
        if device == "cuda":
            kw["device_id"] = tdev
        if in_process:
            dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1, **kw)
        else:
            dist.init_process_group(backend, **kw)
        mesh = init_device_mesh(device, (world_size,))
        ctx = RunContext(rank=rank, world_size=world_size, local_rank=local_rank, device=tdev, mesh=mesh)
        timings["init_s"] = time.perf_counter() - t

        t = time.perf_counter()
        if device == "cpu":
            report["protocol"] = protocol.pin_cpu_rank(local_rank, world_size)
        torch.ones(64, 64, device=tdev) @ torch.ones(64, 64, device=tdev)  # thread pools up before the footprint
        _reset_peak_rss()
        footprint = (torch.cuda.memory_reserved() / memory.GIB) if device == "cuda" else memory.data_gib()
        report["footprint_rss_gib"] = memory.figures(device).get("rss_gib")
        report["budget"] = protocol.apply_headroom(spec.config.get("memory_headroom_gib"),
                                                   spec.config.get("memory_budget_gib"), device, footprint)
        dbg = _debug_actions(spec)
        if dbg.get("crash"):
            raise RuntimeError(str(dbg["crash"]))
        workload = load(spec.module)
        with _tensor_budget(spec) as live:  # build and warm-up: where a step's memory peaks
            built = workload.build(spec.config, ctx)
            report["info"] = built.info
            report["items_per_step"] = built.items_per_step
            report["flops_per_step"] = built.flops_per_step
            timings["build_s"] = time.perf_counter() - t
            if dbg.get("hang"):
                while True:  # a job that never finishes: the launcher's timeout must end it
                    time.sleep(1)

            t = time.perf_counter()
            data_peak = memory.data_gib() or 0.0
            for _ in range(spec.warmup):
                built.step()
                data_peak = max(data_peak, memory.data_gib() or 0.0)
            if device == "cuda":
                torch.cuda.synchronize()
            timings["warmup_s"] = time.perf_counter() - t
        if live is not None:
            report["tensor_peak_mib"] = round(live.peak / memory.MIB, 4)

        report["loadavg_1m"] = os.getloadavg()[0]  # how busy the machine was as timing began
        if device == "cpu":
            _quiet_check(spec, report, world_size)
        t = time.perf_counter()
        timer = StepTimer(device)
        for _ in range(spec.steps):
            timer.start()
            built.step()
            timer.stop()
            data_peak = max(data_peak, memory.data_gib() or 0.0)
        report["peak_data_gib"] = round(data_peak, 4)
        report["step_times"] = timer.times()
        timings["measure_s"] = time.perf_counter() - t
        report["status"] = "ok"
    except BaseException as exc:  # noqa: BLE001 - failures are data
        memory.lift_budget(device)
        kind = _classify(exc)
        report["status"] = "oom" if kind == "oom" else "failed"
        report["error"] = {"kind": kind, "type": type(exc).__name__,
                           "message": tail(f"{type(exc).__name__}: {exc}\n" + traceback.format_exc())}
        if isinstance(exc, KeyboardInterrupt):
            report["error"]["kind"] = "interrupted"
    report["memory"] = memory.figures(device)
    report["peak_memory_gib"] = memory.peak_gib(report["memory"], device)
    report["memory"]["limit_gib"] = spec.config.get("memory_budget_gib")
    report["timings"] = timings
    report["env"] = relevant_env()
    memory.lift_budget(device)
    results_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(results_dir / f"rank{rank}.json", report)
    del built
    return report


def _quiet_check(spec: JobSpec, report: dict, world_size: int) -> None:
    """Step 2 of :mod:`harness.protocol`: rank 0 probes the machine while every rank idles."""
    import torch.distributed as dist

    pids: list = [None] * world_size
    dist.all_gather_object(pids, os.getpid())
    result = [None]
    if dist.get_rank() == 0:
        result[0] = protocol.wait_for_quiet(lambda: protocol.external_load(set(pids)), spec.quiet_wait_s)
    dist.broadcast_object_list(result, src=0)
    load, waited = result[0]
    report["external_load_cores"], report["quiet_wait_s"] = round(load, 3), round(waited, 2)
    if load > protocol.QUIET_CORES and spec.require_quiet:
        raise RuntimeError(f"noisy machine: {load:.2f} cores busy outside the job after waiting "
                           f"{waited:.0f} s for quiet (at most {protocol.QUIET_CORES} allowed); "
                           "stop what else runs, or collect without --require-quiet")


def _teardown(in_process: bool) -> None:
    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        if not in_process:
            try:
                dist.barrier()
            except Exception:
                pass
        dist.destroy_process_group()
    if in_process:
        try:
            torch._dynamo.reset()
        except Exception:
            pass
    gc.collect()


def main_torchrun(job_file: str, forked: bool = False) -> int:
    job_path = Path(job_file)
    spec = JobSpec.from_dict(json.loads(job_path.read_text()))
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    local = int(os.environ.get("LOCAL_RANK", 0))
    report = run_job(spec, job_path.parent / "results", rank, world, local, forked=forked)
    if report["status"] != "ok":
        sys.stderr.write(report.get("error", {}).get("message", "")[-2000:] + "\n")
        sys.stderr.flush()
        os._exit(EXIT_FAILED)  # do not wait in a collective for ranks that are still running
    _teardown(in_process=False)
    return 0


def main_batch(batch_file: str) -> int:
    """Run the listed jobs one after another in this process (world size 1 each).

    The batch file is ``{"jobs": [{"spec": {...}, "dir": "<job dir>"}, ...]}``. Before a job
    starts, ``<job dir>/started.json`` is written (the launcher's timeout clock); after it,
    ``<job dir>/results/rank0.json``. After a job that did not end ``ok`` this process exits
    (code 3) so that the launcher starts a fresh one for the rest: nothing an OOM or a crash
    left behind can touch later jobs.
    """
    import torch

    batch = json.loads(Path(batch_file).read_text())
    threads = int(batch.get("threads") or 0)
    if threads:
        torch.set_num_threads(threads)
    write_json_atomic(Path(batch_file).with_suffix(".ready"), {"import_s": time.perf_counter() - _T0})
    for item in batch["jobs"]:
        spec = JobSpec.from_dict(item["spec"])
        job_dir = Path(item["dir"])
        if (job_dir / "results" / "rank0.json").exists():
            continue
        write_json_atomic(job_dir / "started.json", {"t": time.time(), "pid": os.getpid()})
        t0 = time.perf_counter()
        report = run_job(spec, job_dir / "results", 0, 1, 0, in_process=True)
        _teardown(in_process=True)
        write_json_atomic(job_dir / "done.json", {"wall_s": time.perf_counter() - t0})
        if report["status"] != "ok":
            return EXIT_FAILED
    return 0


def _forked_rank(job_file: str) -> int:
    """A rank forked by the elastic agent of :func:`main_batch_torchrun`."""
    return main_torchrun(job_file, forked=True)


def _prewarm() -> None:
    """Run one tiny FSDP2 training step on a private 1-rank gloo group, then tear it down.

    What torch initialises lazily on first use (DTensor dispatch, FSDP's hooks, the
    optimizer's foreach kernels) is then inherited by every forked rank. CPU only.
    """
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        mesh = init_device_mesh("cpu", (1,))
        model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16))
        fully_shard(model[0], mesh=mesh)
        fully_shard(model, mesh=mesh)
        opt = torch.optim.Adam(model.parameters(), foreach=True)
        for _ in range(2):
            model(torch.randn(4, 16)).sum().backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        del model, opt, mesh
    finally:
        dist.destroy_process_group()
        gc.collect()


def main_batch_torchrun(batch_file: str) -> int:
    """Run the listed jobs one after another, each as a fresh torchrun-standalone process group.

    This process imports torch, FSDP and the workloads once; then for every job it starts a
    new elastic agent exactly as ``torchrun --standalone --nproc-per-node N`` does (c10d
    rendezvous on a free localhost port, a new run id, no restarts), whose ranks are
    *forked* from this warm process instead of starting a fresh interpreter that imports
    torch again. Each job still gets new rank processes, a new rendezvous and a new process
    group; the ranks report through files as usual. CPU only: CUDA must not be initialised
    before a fork, and this process never touches it (ranks do, after the fork).
    """
    import uuid

    import torch.distributed.fsdp  # noqa: F401  - imported once (torch too, above), inherited by every forked rank
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    batch = json.loads(Path(batch_file).read_text())
    if any(item["spec"].get("device", "cpu") != "cpu" for item in batch["jobs"]):
        sys.stderr.write("warm torchrun mode is CPU-only (CUDA must not be set up before a fork)\n")
        return 2
    for module in sorted({item["spec"]["module"] for item in batch["jobs"]}):
        load(module)  # imported once, like torch, and inherited by every forked rank
    _prewarm()
    write_json_atomic(Path(batch_file).with_suffix(".ready"), {"import_s": time.perf_counter() - _T0})
    for item in batch["jobs"]:
        spec = JobSpec.from_dict(item["spec"])
        job_dir = Path(item["dir"])
        if (job_dir / "done.json").exists():
            continue
        write_json_atomic(job_dir / "started.json", {"t": time.time(), "pid": os.getpid()})
        t0 = time.perf_counter()
        # Numeric addresses only: a forked rank that resolves a host name can deadlock on the
        # glibc resolver lock another thread of this process held at fork time.
        config = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=spec.nproc, run_id=str(uuid.uuid4()),
                              rdzv_backend="c10d", rdzv_endpoint="127.0.0.1:0", local_addr="127.0.0.1",
                              max_restarts=0, monitor_interval=0.1, start_method="fork")
        try:
            elastic_launch(config, _forked_rank)(str(job_dir / "job.json"))
            code = 0
        except SignalException:  # the launcher is stopping this worker (a timeout): run no further job
            raise
        except ChildFailedError as exc:  # a rank failed: its report (if any) says why
            code = EXIT_FAILED
            sys.stderr.write(f"job {spec.job_id}: {exc}\n"[-3000:])
        except Exception as exc:  # noqa: BLE001 - the agent itself failed (rendezvous, ...)
            code = EXIT_FAILED
            sys.stderr.write(f"job {spec.job_id}: agent error {type(exc).__name__}: {exc}\n")
        sys.stderr.flush()
        write_json_atomic(job_dir / "done.json", {"wall_s": time.perf_counter() - t0, "exit_code": code})
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--batch":
        return main_batch(argv[1])
    if len(argv) == 2 and argv[0] == "--batch-torchrun":
        return main_batch_torchrun(argv[1])
    if len(argv) == 1:
        return main_torchrun(argv[0])
    sys.stderr.write("usage: python -m harness.worker JOB.json | --batch BATCH.json | --batch-torchrun BATCH.json\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
