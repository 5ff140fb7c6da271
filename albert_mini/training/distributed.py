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

import hashlib
import io
import json
import os
import re
import signal
from dataclasses import dataclass, field
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn

from ..devices import resolve_device
from ..errors import UserError
from ..parent_watch import end_with_parent


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
    end_with_agent()
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if where.type == "cuda" else "gloo", timeout=group_timeout())
    return DistInfo(rank, world, local_rank, where)


TIMEOUT_VARIABLE = "ALBERT_MINI_DIST_TIMEOUT"
DEFAULT_TIMEOUT_S = 600  # a collective that waits longer ends the run (a peer hung or cut off without a word)


def group_timeout() -> timedelta:
    """How long a collective waits for a rank that neither answers nor closes its connection (a hung process, a
    machine cut off): $ALBERT_MINI_DIST_TIMEOUT seconds, else 10 minutes, long enough for rank 0's saves and a
    node preparing its text while the others wait. A rank that dies closes its connections: that is seen at
    once, whatever the timeout."""
    text = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if not text:
        return timedelta(seconds=DEFAULT_TIMEOUT_S)
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not (seconds > 0 and seconds < 10**7):
        from ..errors import UsageError

        raise UsageError(f"{TIMEOUT_VARIABLE}={text!r} is not a number of seconds > 0; give e.g. "
                         f"{TIMEOUT_VARIABLE}={DEFAULT_TIMEOUT_S}, or unset it")
    return timedelta(seconds=seconds)


def end_with_agent() -> None:
    """A worker ends with its torchrun agent, however the agent ends (kill -9 runs no cleanup in it): it gets
    SIGTERM then (Linux: prctl PR_SET_PDEATHSIG; elsewhere a thread watches the parent), which stops a training
    run after its step with a checkpoint (training/preemption.py), and anything before that at once."""
    end_with_parent(os.getppid(), signal.SIGTERM)


def cleanup(info: DistInfo, peers_alive: bool = True) -> None:
    """Leave the process group (after a barrier, so no rank exits while another still writes; none when a peer
    is lost, as nobody would come to it)."""
    if info.is_distributed and dist.is_initialized():
        if peers_alive:
            dist.barrier()
        dist.destroy_process_group()


# What the backends' errors say when a peer died, hung past the timeout or could not be reached.
PEER_LOSS_MARKS = ("gloo/transport", "Connection reset by peer", "Connection closed by peer", "Broken pipe",
                   "Timed out", "timed out", "Timeout", "NCCL", "ProcessGroup", "c10d")


class PeerLost(UserError):
    """A rank of the run died or stopped answering: this rank ends too (exit status 2) instead of waiting."""


def is_peer_loss(error: BaseException, info: DistInfo) -> bool:
    """Whether `error` is what a collective raises when another rank is gone (several processes only)."""
    if not info.is_distributed or not isinstance(error, RuntimeError):
        return False
    return isinstance(error, dist.DistError) or any(mark in str(error) for mark in PEER_LOSS_MARKS)


def peer_lost(error: BaseException, info: DistInfo, step: int | None, newest) -> PeerLost:
    """The one line of a rank whose peer is gone: which rank (the other one of two; else where the backend says),
    at which step, the newest checkpoint, and how to go on."""
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    address = re.search(r"\[([^\]]+)\]:(\d+)", first)
    if info.world_size == 2:
        who = node_of(1 - info.rank, info)
    else:
        who = f"the rank at {address.group(1)}:{address.group(2)}" if address else "another rank"
    said = "connection reset" if "reset" in first else "timed out" if "imed out" in first or "imeout" in first \
        else "connection closed" if "closed" in first else first[:80]
    when = f"at step {step}" if step is not None else "before the first step"
    kept = f"the newest checkpoint is {newest}" if newest is not None else "no checkpoint had been written yet"
    return PeerLost(f"{who} of the run was lost {when} ({said}); {kept}; start every node again to resume")


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


def node_of(rank: int, info: DistInfo) -> str:
    """How a line names a process of the run: "node i" when each node runs one, else "rank r (node i)"."""
    per_node = int(os.environ.get("LOCAL_WORLD_SIZE", info.world_size))  # torchrun's processes per node
    node = rank // per_node if per_node > 0 else 0
    return f"node {node}" if per_node == 1 else f"rank {rank} (node {node})"


def digest(value) -> str:
    """A short sha256 of plain data (a file's record, a model config), to compare it between ranks."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:16]


def _shown(key: str, value) -> str:
    """A setting as its flag writes it: --seq-len 32, --config num_hidden_layers=4, --bf16."""
    name = "--" + key.replace("_", "-")
    if value is True:
        return name
    if value is False or value is None or value == []:
        return f"no {name}"
    return f"{name} {' '.join(map(str, value)) if isinstance(value, (list, tuple)) else value}"


def check_ranks_agree(settings: dict, info: DistInfo, shown=_shown, fix: str | None = None) -> None:
    """Every rank's `settings` (plain values: the flags that decide the numbers) equal to rank 0's, else a
    UsageError on every rank naming each flag and value that differs (one line a node: local rank 0 says it;
    `shown(key, value)` writes one, `fix` says what to do). One all-gather of a digest when they agree.

    Called right after the process group starts, before any text is read: ranks that differ in --seq-len, --seed,
    --config or --steps would otherwise train different models side by side, or wait on each other forever."""
    if not info.is_distributed:
        return
    from ..errors import UsageError

    digests = [None] * info.world_size
    dist.all_gather_object(digests, digest(settings))
    if len(set(digests)) == 1:
        return
    everyone = [None] * info.world_size
    dist.all_gather_object(everyone, settings)  # only when they differ: the values, to name them
    first, differences = everyone[0], []
    for rank, theirs in enumerate(everyone[1:], start=1):
        for key in sorted(set(first) | set(theirs)):
            if first.get(key) != theirs.get(key):
                differences.append(f"{node_of(rank, info)} has {shown(key, theirs.get(key))}, "
                                   f"{node_of(0, info)} has {shown(key, first.get(key))}")
    fix = fix or ("start every node with the same flags (only --out, --device, --quiet and the logging and saving "
                  "flags may differ)")
    message = ("the processes of this run do not agree: " + "; ".join(differences[:8])
               + ("; ..." if len(differences) > 8 else "") + f"; {fix}")
    raise UsageError(message if info.local_rank == 0 else "")


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
