"""What the ranks of a data-parallel run decide together, in one process with a fake world (fake_world.py: the ranks
as threads, DDP's contract by FakeDDP): two ranks train as one process on the global batch does; rank 0's clock
decides the time budget (a fake clock); a run of two processes resumes every rank bit-identically; a signal to one
rank stops every rank after the same step; a lost rank ends the others with one line. The real two-node run
(torchrun, gloo) is test_two_nodes.py."""

import shutil
import signal

import pytest
import torch
from fake_world import FakeWorld, Killed, PeerGone
from safetensors.torch import load_file
from same_run import assert_same_run

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.commands.pretrain import main as pretrain_cli
from albert_mini.text.synthetic import SyntheticBatches
from albert_mini.training import preemption
from albert_mini.training import trainer as trainer_module
from albert_mini.training.checkpoint import list_checkpoints
from albert_mini.training.optim import WarmupPolyDecay, build_optimizer
from albert_mini.training.trainer import TrainConfig, Trainer

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

CONFIG = AlbertConfig.from_preset("albert-nano")
WORLD, B, T, STEPS, ACCUMULATE = 2, 3, 32, 3, 2
FLAGS = ["--preset", "albert-nano", "--corpus", "synthetic", "--seq-len", "32", "--batch-size", "2", "--steps", "8",
         "--lr", "2e-3", "--save-every", "3", "--keep", "3", "--eval-every", "0", "--eval-batches", "1",
         "--log-every", "2", "--quiet"]


def run_training(batch_size: int, rank: int, world: int, init_seed: int, dist=None) -> AlbertForPreTraining:
    torch.manual_seed(init_seed)
    model = AlbertForPreTraining(CONFIG)
    optimizer = build_optimizer(model, "lamb", lr=2e-3)
    source = SyntheticBatches(CONFIG.vocab_size, batch_size, T, seed=7).shard(rank, world)
    config = TrainConfig(max_steps=STEPS, accumulate=ACCUMULATE, log_every=1, progress=False)
    Trainer(model, optimizer, WarmupPolyDecay(2e-3, STEPS, 1), source, config, dist=dist).train()
    return model


def test_two_ranks_equal_one_process_on_the_global_batch(monkeypatch):
    # Ranks hold different numbers of masked tokens, so a per-rank mean would not match; a global one does.
    big = SyntheticBatches(CONFIG.vocab_size, WORLD * B, T, seed=7).batch(0, 0)
    counts = [(big["labels"][r * B:(r + 1) * B] != -100).sum().item() for r in range(WORLD)]
    assert counts[0] != counts[1]

    world = FakeWorld(WORLD).install(monkeypatch)
    # Each rank starts from different weights: the wrapper must hand every rank rank 0's before the first step.
    ranks = [m.state_dict() for m in world.run(lambda info: run_training(B, info.rank, WORLD, info.rank, info))]
    assert "all_reduce" in world.collectives and "all_gather" in world.collectives  # the counts; the replica check
    single = run_training(WORLD * B, 0, 1, init_seed=0).state_dict()
    for name, tensor in ranks[0].items():
        assert torch.equal(tensor, ranks[1][name]), f"ranks differ on {name}"
        assert torch.allclose(tensor, single[name], rtol=0, atol=1e-6), name
    moved = [n for n, t in ranks[0].items() if not torch.equal(t, AlbertForPreTraining(CONFIG).state_dict()[n])]
    assert moved  # the steps did change the weights


class StepClock:
    """A fake clock that moves only when a step is trained: each optimizer step takes `seconds`."""

    def __init__(self, seconds: float):
        self.now, self.seconds = 1000.0, seconds

    def __call__(self) -> float:
        return self.now


class Clocked(Trainer):
    def train_step(self, *args, **kwargs):
        try:
            return super().train_step(*args, **kwargs)
        finally:
            self.clock.now += self.clock.seconds


# A 1-minute budget, 5 steps: 25 s steps spend it in step 3, 70 s steps in step 1, 1 s steps never.
@pytest.mark.parametrize("seconds, done", [((25.0, 70.0), 3), ((1.0, 70.0), 5), ((70.0, 1.0), 1)],
                         ids=["rank-0-stops-rank-1-sooner", "rank-1-alone-spent", "rank-0-alone-spent"])
def test_rank_0s_clock_decides_the_time_budget_for_every_rank(seconds, done, monkeypatch):
    world = FakeWorld(WORLD).install(monkeypatch)

    def train(info):
        torch.manual_seed(0)
        model = AlbertForPreTraining(CONFIG)
        trainer = Clocked(model, build_optimizer(model, "lamb", lr=2e-3), WarmupPolyDecay(2e-3, 5, 1),
                          SyntheticBatches(CONFIG.vocab_size, 2, 16, seed=5).shard(info.rank, WORLD),
                          TrainConfig(max_steps=5, max_minutes=1.0, log_every=10, progress=False), dist=info)
        trainer.clock = StepClock(seconds[info.rank])
        return trainer.train()

    results = world.run(train)
    assert [(r.step, r.stop_reason) for r in results] == [(done, "max_minutes" if done < 5 else "max_steps")] * 2


# ---------------------------------------------------------------------- the command, on two processes of one node
def two_processes(monkeypatch, out, extra=()) -> list:
    """`albert-mini pretrain FLAGS --out out` on two ranks of one node: each rank's result (or SystemExit)."""
    world = FakeWorld(WORLD, local_world_size=WORLD).install(monkeypatch)
    return world.run(lambda info: pretrain_cli([*FLAGS, *extra, "--out", str(out)]))


def weights(out) -> dict:
    return load_file(list_checkpoints(out)[-1] / "model.safetensors")


@pytest.fixture
def straight(tmp_path, monkeypatch):
    out = tmp_path / "straight"
    results = two_processes(monkeypatch, out)
    assert [r.step for r in results] == [8, 8], results
    return out


def test_a_two_process_run_resumes_every_rank_bit_identically(straight, tmp_path, monkeypatch):
    out = tmp_path / "run"
    shutil.copytree(straight, out)
    shutil.rmtree(out / "checkpoints" / "step-0000008")  # as a kill between the step-6 and step-8 checkpoints
    results = two_processes(monkeypatch, out)
    assert [r.step for r in results] == [8, 8], results
    assert '"type": "resume", "step": 6' in (out / "metrics.jsonl").read_text()
    assert_same_run(out, straight)


def test_a_signal_to_one_rank_stops_every_rank_after_the_same_step_and_the_resume_is_bit_identical(
        straight, tmp_path, monkeypatch, capsys):
    out, world = tmp_path / "run", FakeWorld(WORLD, local_world_size=WORLD).install(monkeypatch)
    signalled = set()  # the ranks a SIGTERM reached (signals are per process; here, per rank)
    real = trainer_module.Trainer.train_step

    def train_step(self, *args, **kwargs):
        if self.dist.rank == 1 and self.step + 1 == 5:
            signalled.add(1)  # inside step 5, as the signal's handler would note it
        return real(self, *args, **kwargs)

    monkeypatch.setattr(trainer_module.Trainer, "train_step", train_step)
    monkeypatch.setattr(preemption, "requested", lambda: signal.SIGTERM if world.rank in signalled else None)
    results = world.run(lambda info: pretrain_cli([*FLAGS, "--out", str(out)]))
    assert all(isinstance(r, SystemExit) and r.code == 128 + signal.SIGTERM for r in results), results
    ours = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(ours) == 1 and ours[0].startswith("error: stopped by a signal to another rank after step 5"), ours
    assert "step-0000005" in ours[0]  # one line on the node, rank 0's; rank 1 saved the same step
    assert [p.name for p in list_checkpoints(out)] == ["step-0000003", "step-0000005"]
    monkeypatch.setattr(preemption, "requested", lambda: None)
    results = two_processes(monkeypatch, out)
    assert [r.step for r in results] == [8, 8], results
    assert '"type": "resume", "step": 5' in (out / "metrics.jsonl").read_text()
    assert_same_run(out, straight)


def test_a_lost_rank_ends_the_others_with_one_line_naming_it_the_step_and_the_checkpoint(tmp_path, monkeypatch,
                                                                                           capsys):
    out = tmp_path / "run"
    world = FakeWorld(WORLD).install(monkeypatch)  # two nodes of one process each
    real = trainer_module.Trainer.train_step

    def train_step(self, *args, **kwargs):
        if self.dist.rank == 1 and self.step + 1 == 5:
            world.kill()  # inside step 5, after the step's first all-reduce (the counts)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(trainer_module.Trainer, "train_step", train_step)
    results = world.run(lambda info: pretrain_cli([*FLAGS, "--out", str(out)]))
    assert isinstance(results[1], Killed)
    assert isinstance(results[0], SystemExit) and results[0].code == 2, results
    assert isinstance(results[0].__context__.__cause__, PeerGone)  # what the backend raised, turned into the line
    newest = list_checkpoints(out)[-1]
    assert newest.name == "step-0000003"
    assert capsys.readouterr().err == (f"error: node 1 of the run was lost at step 4 (connection closed); the newest "
                                       f"checkpoint is {newest}; start every node again to resume\n")
