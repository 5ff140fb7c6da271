"""Data-parallel pretraining with DistributedDataParallel, launched by torchrun.

    torchrun --standalone --nproc_per_node 2 -m albert_mini pretrain --preset albert-nano --corpus synthetic ...

runs the same command in 2 processes: nccl on CUDA GPUs (--device auto finds them; rank r then uses GPU r of its
node, so on an 8-GPU node `--nproc_per_node 8` is all it takes; across nodes add `--nnodes N --node_rank i
--master_addr host --master_port port` and give every node the same --out on a shared file system: rank 0 decides
and writes, every rank checks it sees that folder, training/run.py), gloo on the CPU otherwise (never MPS: one
Apple GPU cannot serve several processes; albert_mini.devices says which device a process takes). Each rank reads
its own shard of the data; rank 0 alone writes files and shows progress. torchrun gives every process
OMP_NUM_THREADS=1, so on a 2-core machine 2 ranks use both cores.

Effective batch per optimizer step = per-rank batch size x world size x accumulation steps.

Loss weighting. Each rank's MLM loss is a sum over its masked tokens divided by the number of masked tokens in
the WHOLE effective batch (all ranks, all accumulation steps; one all-reduce of two counts per step), and the
sentence loss likewise over sequences. DDP averages gradients over ranks, so the trainer multiplies each rank's
loss by the world size. The gradient of a step is then exactly that of the per-token mean over the effective
batch in one process, however the batch is split; a per-rank mean would instead weight a token on a rank with
few masked tokens more than one on a busy rank (that is what the reference's TPU code does, with its fixed 20
predictions per sequence making the two nearly the same).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch import nn

from ..devices import resolve_device


@dataclass(frozen=True)
class DistInfo:
    """Where this process sits: rank r of world_size processes, on `device`."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    # Derived once (plain fields, read at every log line and save): whether this is rank 0, and whether there are
    # several processes.
    is_main: bool = field(init=False)
    is_distributed: bool = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "is_main", self.rank == 0)
        object.__setattr__(self, "is_distributed", self.world_size > 1)

    @property
    def reduce_device(self) -> torch.device:
        """Where tensors go for a collective: the GPU under nccl, else the CPU (gloo reduces CPU tensors, and one
        process reduces nothing), so float64 sums never need the model's device (MPS has no float64)."""
        return self.device if self.is_distributed and self.device.type == "cuda" else torch.device("cpu")


def launched_by_torchrun() -> bool:
    """True when the launcher set the env:// rendezvous variables (RANK, WORLD_SIZE, MASTER_ADDR/PORT)."""
    return all(k in os.environ for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


def init_distributed(device: str | None = "auto") -> DistInfo:
    """Join the process group when launched by torchrun; else a single process on `device`.

    `device` is the --device flag (auto, cpu, cuda, mps; None: auto), resolved by albert_mini.devices: under
    torchrun a CUDA device means nccl and GPU LOCAL_RANK for each process, anything else gloo on the CPU.
    """
    if not launched_by_torchrun() or int(os.environ["WORLD_SIZE"]) == 1:
        return DistInfo(device=resolve_device(device or "auto"))
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    where = resolve_device(device or "auto", local_rank)
    if where.type == "cuda":
        torch.cuda.set_device(where)
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if where.type == "cuda" else "gloo")
    return DistInfo(rank, world, local_rank, where)


def cleanup(info: DistInfo) -> None:
    """Leave the process group (after a barrier, so no rank exits while another still writes)."""
    if info.is_distributed and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def wrap_model(model: nn.Module, info: DistInfo) -> nn.Module:
    """DDP around the model when there are several ranks (it broadcasts rank 0's weights); else the model.

    DDP expects a gradient for every parameter that requires one, so freeze what the loss ignores (the pooler
    and sentence head in MLM-only training). Its find_unused_parameters would not help: the unused head still
    produces an output (sentence_logits), so DDP would count it as used and wait for its gradient.
    """
    if not info.is_distributed:
        return model
    device_ids = [info.device.index] if info.device.type == "cuda" else None
    return nn.parallel.DistributedDataParallel(model, device_ids=device_ids)


def barrier(info: DistInfo) -> None:
    """Wait until every rank gets here (a no-op in one process)."""
    if info.is_distributed:
        dist.barrier()


def all_reduce_sum(tensor: torch.Tensor, info: DistInfo) -> torch.Tensor:
    """Sum `tensor` over ranks in place (a no-op in one process); returns it."""
    if info.is_distributed:
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


def broadcast_flag(flag: bool, info: DistInfo) -> bool:
    """Rank 0's value of `flag` on every rank, so that all ranks stop at the same step."""
    if not info.is_distributed:
        return flag
    t = torch.tensor([int(flag)], device=info.reduce_device)
    dist.broadcast(t, src=0)
    return bool(t.item())


def stop_votes(rank0_flag: bool, any_flag: bool, info: DistInfo) -> tuple[bool, bool]:
    """(rank 0's `rank0_flag`, whether any rank's `any_flag` is set) on every rank, in one all-reduce and one host
    read: the time budget (rank 0's clock decides) and a stop asked by a signal on any rank (training/preemption.py)."""
    if not info.is_distributed:
        return rank0_flag, any_flag
    t = torch.tensor([float(rank0_flag and info.is_main), float(any_flag)], device=info.reduce_device)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    first, anyone = t.tolist()
    return first > 0, anyone > 0


def broadcast_object(obj, info: DistInfo):
    """Rank 0's `obj` on every rank (small plain data: a decision, a name)."""
    if not info.is_distributed:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0, device=info.reduce_device)
    return box[0]


def gather_objects(obj, info: DistInfo) -> list:
    """[obj of rank 0, obj of rank 1, ...] on every rank, for small states such as RNGs and data positions."""
    if not info.is_distributed:
        return [obj]
    # all_gather_object cannot unpickle tensors nested in objects (torch 2.13), so ship torch.save bytes.
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    out = [None] * info.world_size
    dist.all_gather_object(out, buffer.getvalue())
    return [torch.load(io.BytesIO(data), weights_only=True) for data in out]


@torch.no_grad()
def assert_replicas_identical(model: nn.Module, info: DistInfo) -> None:
    """Raise if any rank's parameters differ from rank 0's (compares per-tensor float64 sums and norms)."""
    if not info.is_distributed:
        return
    names, params = zip(*model.named_parameters())
    mine = torch.stack([torch.stack([p.to(info.reduce_device, torch.float64).sum(),
                                     p.to(info.reduce_device, torch.float64).norm()]) for p in params])
    everyone = [torch.empty_like(mine) for _ in range(info.world_size)]
    dist.all_gather(everyone, mine)
    for rank, theirs in enumerate(everyone):
        differ = [n for n, a, b in zip(names, theirs, everyone[0]) if not torch.equal(a, b)]
        if differ:
            raise RuntimeError(f"rank {rank}'s parameters differ from rank 0's ({', '.join(differ[:5])}"
                               f"{', ...' if len(differ) > 5 else ''}): the replicas diverged")
