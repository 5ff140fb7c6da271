"""A fake world: the ranks of a run as threads of the test's process, taking turns, for testing what the ranks
decide together without torchrun.

Every collective of the package goes through training/distributed.py's module `dist` with a DistInfo saying which
rank calls it; `FakeWorld.install` puts itself there (and hands each rank its DistInfo from `init_distributed`).
One rank runs at a time: it runs until its next collective, where it leaves its part and waits until every rank
has left theirs, so a run is deterministic and the ranks' lines never interleave. A rank that ends (returns or
raises) while another waits at a collective makes that one raise what gloo raises for a peer gone ("Connection
closed by peer"), so a rank left waiting fails the test instead of hanging it.

`FakeDDP` stands for DistributedDataParallel in such a world: rank 0's weights at the start, gradients averaged
over the ranks on the backward pass that is not under `no_sync()`.
"""

from __future__ import annotations

import contextlib
import pickle
import threading

import torch
import torch.distributed
from torch import nn

from albert_mini.training import distributed, trainer

WAIT_S = 60  # a rank waiting longer at a collective fails the test (a bug in the world, not a slow test)


class PeerGone(RuntimeError):
    """What a rank's collective raises when another rank ended without reaching it (gloo's words)."""


class Killed(BaseException):
    """A rank ended by `FakeWorld.kill` (as kill -9 ends a process): it reaches no collective again."""


class FakeWorld:
    """`size` ranks as threads; `run(fn)` calls fn(info) on each and returns their results (or raised errors)."""

    def __init__(self, size: int = 2, local_world_size: int = 1):
        self.size, self.local_world_size = size, local_world_size
        self._turn = threading.Condition()
        self._local = threading.local()
        self._parts: dict[int, object] = {}
        self._rounds: list[list] = []
        self._ended: set[int] = set()
        self._killed: set[int] = set()
        self.collectives: list[str] = []  # the name of each collective, once per round (for tests that count them)

    # ------------------------------------------------------------------ running the ranks
    def info(self, rank: int) -> distributed.DistInfo:
        return distributed.DistInfo(rank, self.size, rank % self.local_world_size, torch.device("cpu"))

    def install(self, monkeypatch) -> FakeWorld:
        """Route training/distributed.py's collectives here; `init_distributed` hands each rank its DistInfo; a
        node holds `local_world_size` processes (LOCAL_WORLD_SIZE, as torchrun sets it)."""
        monkeypatch.setattr(distributed, "dist", self)
        monkeypatch.setattr(distributed, "init_distributed", lambda device=None: self.info(self.rank))
        monkeypatch.setattr(trainer, "wrap_model", lambda model, info: FakeDDP(model, self) if info.is_distributed
                            else model)
        monkeypatch.setenv("LOCAL_WORLD_SIZE", str(self.local_world_size))
        return self

    def run(self, fn) -> list:
        """fn(info) on every rank, one at a time between collectives; each rank's result, or the exception
        (BaseException: SystemExit too) it raised."""
        results: list = [None] * self.size
        threads = [threading.Thread(target=self._rank_main, args=(rank, fn, results), name=f"rank-{rank}")
                   for rank in range(self.size)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10 * WAIT_S)
            assert not thread.is_alive(), f"{thread.name} never ended"
        return results

    def _rank_main(self, rank: int, fn, results: list) -> None:
        self._local.rank = rank
        with self._turn:
            while not self._started(rank):
                assert self._turn.wait(WAIT_S), f"rank {rank} never got its turn"
            try:
                results[rank] = fn(self.info(rank))
            except BaseException as error:  # SystemExit from a command's one-line error, too
                results[rank] = error
            finally:
                self._ended.add(rank)
                self._parts.pop(rank, None)
                self._turn.notify_all()

    def _started(self, rank: int) -> bool:
        """Rank 0 starts; each other rank starts once every rank before it waits at a collective or ended."""
        return all(r in self._parts or r in self._ended for r in range(rank))

    @property
    def rank(self) -> int:
        return self._local.rank

    def kill(self) -> None:
        """End the calling rank here, as kill -9 ends a process: whatever it runs on the way out (a `finally`'s
        barrier) reaches no other rank."""
        self._killed.add(self.rank)
        raise Killed

    def _exchange(self, name: str, part) -> list:
        """Leave this rank's part of a collective; every rank's part, in rank order, once all have left theirs.
        Ranks that call different collectives at the same point fail (gloo would hang or mix their bytes)."""
        rank, round_ = self.rank, len(self._rounds)
        if rank in self._killed:
            raise Killed
        self._parts[rank] = (name, part)
        if len(self._parts) == self.size:
            names = [self._parts[r][0] for r in range(self.size)]
            self._rounds.append([self._parts[r][1] for r in range(self.size)] if len(set(names)) == 1 else
                                AssertionError(f"the ranks called different collectives: {names}"))
            self._parts.clear()
            self.collectives.append(name)
            self._turn.notify_all()
        while len(self._rounds) <= round_:
            gone = (self._ended | self._killed) - set(self._parts)
            if gone:
                self._parts.pop(rank, None)
                raise PeerGone(f"[127.0.0.1]:29500: Connection closed by peer (fake world: rank {min(gone)} ended "
                               f"before {name})")
            self._turn.notify_all()
            if not self._turn.wait(WAIT_S):
                raise TimeoutError(f"rank {rank} waited {WAIT_S} s at {name}")
        if isinstance(self._rounds[round_], AssertionError):
            raise self._rounds[round_]
        return self._rounds[round_]

    # ------------------------------------------------------------------ torch.distributed's calls the package makes
    ReduceOp = torch.distributed.ReduceOp
    DistError = torch.distributed.DistError

    def is_initialized(self) -> bool:
        return True

    def destroy_process_group(self) -> None:
        pass

    def barrier(self) -> None:
        self._exchange("barrier", None)

    def broadcast(self, tensor: torch.Tensor, src: int) -> None:
        tensor.copy_(self._exchange("broadcast", tensor.clone())[src])

    def all_reduce(self, tensor: torch.Tensor, op=torch.distributed.ReduceOp.SUM) -> None:
        assert op == torch.distributed.ReduceOp.SUM, op
        parts = self._exchange("all_reduce", tensor.clone())
        tensor.copy_(torch.stack(parts).sum(0))

    def all_gather(self, tensors: list[torch.Tensor], tensor: torch.Tensor) -> None:
        for out, part in zip(tensors, self._exchange("all_gather", tensor.clone()), strict=True):
            out.copy_(part)

    def broadcast_object_list(self, objects: list, src: int = 0, device=None) -> None:
        objects[:] = pickle.loads(self._exchange("broadcast_object_list", pickle.dumps(objects))[src])

    def all_gather_object(self, out: list, obj) -> None:
        out[:] = [pickle.loads(part) for part in self._exchange("all_gather_object", pickle.dumps(obj))]


class FakeDDP(nn.Module):
    """DistributedDataParallel's contract in a fake world: rank 0's weights everywhere at the start, and after a
    backward pass outside `no_sync()` every gradient the mean over the ranks (of what each rank accumulated)."""

    def __init__(self, module: nn.Module, world: FakeWorld):
        super().__init__()
        self.module, self.world, self._sync = module, world, True
        with torch.no_grad():
            for tensor in module.state_dict().values():
                world.broadcast(tensor, src=0)
        for param in module.parameters():
            if param.requires_grad:
                param.register_post_accumulate_grad_hook(self._average)

    def _average(self, param: nn.Parameter) -> None:
        if self._sync:
            self.world.all_reduce(param.grad)
            param.grad /= self.world.size

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        self._sync = False
        try:
            yield
        finally:
            self._sync = True
