"""DDP on 2 CPU processes (gloo) equals one process on the concatenated global batch, and replicas agree."""

import json
import os
import socket
import subprocess
import sys

import pytest
import torch
import torch.multiprocessing as mp
from safetensors.torch import load_file, save_model

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.text.synthetic import SyntheticBatches
from albert_mini.training.checkpoint import latest_checkpoint
from albert_mini.training.distributed import cleanup, init_distributed
from albert_mini.training.optim import WarmupPolyDecay, build_optimizer
from albert_mini.training.trainer import TrainConfig, Trainer

CONFIG = AlbertConfig.from_preset("albert-nano")
WORLD, B, T, STEPS, ACCUMULATE = 2, 3, 32, 3, 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_training(batch_size: int, rank: int, world: int, init_seed: int, dist=None) -> AlbertForPreTraining:
    torch.manual_seed(init_seed)
    model = AlbertForPreTraining(CONFIG)
    optimizer = build_optimizer(model, "lamb", lr=2e-3)
    source = SyntheticBatches(CONFIG.vocab_size, batch_size, T, seed=7).shard(rank, world)
    config = TrainConfig(max_steps=STEPS, accumulate=ACCUMULATE, log_every=1, progress=False)
    Trainer(model, optimizer, WarmupPolyDecay(2e-3, STEPS, 1), source, config, dist=dist).train()
    return model


def ddp_worker(rank: int, port: int, out_dir: str) -> None:
    """One rank: join the group through the same env:// variables torchrun sets, train, save its weights."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(WORLD),
                      LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    info = init_distributed("cpu")
    # Each rank starts from different weights: DDP must broadcast rank 0's before the first step.
    model = run_training(B, rank, WORLD, init_seed=rank, dist=info)
    save_model(model, os.path.join(out_dir, f"rank{rank}.safetensors"))
    cleanup(info)


@pytest.mark.slow
def test_two_ranks_equal_one_process_on_the_global_batch(tmp_path, one_thread):
    # Ranks hold different numbers of masked tokens, so a per-rank mean would not match; a global one does.
    big = SyntheticBatches(CONFIG.vocab_size, WORLD * B, T, seed=7).batch(0, 0)
    counts = [(big["labels"][r * B:(r + 1) * B] != -100).sum().item() for r in range(WORLD)]
    assert counts[0] != counts[1]

    mp.spawn(ddp_worker, args=(free_port(), str(tmp_path)), nprocs=WORLD, join=True)
    ranks = [load_file(tmp_path / f"rank{r}.safetensors") for r in range(WORLD)]
    single = run_training(WORLD * B, 0, 1, init_seed=0).state_dict()
    for name, tensor in ranks[0].items():
        assert torch.equal(tensor, ranks[1][name]), f"ranks differ on {name}"
        assert torch.allclose(tensor, single[name], rtol=0, atol=1e-6), name
    moved = [n for n, t in ranks[0].items() if not torch.equal(t, AlbertForPreTraining(CONFIG).state_dict()[n])]
    assert moved  # the steps did change the weights


@pytest.mark.slow
def test_torchrun_cli_matches_the_single_process_cli(tmp_path):
    flags = ["--preset", "albert-nano", "--corpus", "synthetic", "--seq-len", "32", "--steps", "3", "--lr", "2e-3",
             "--eval-every", "0", "--eval-batches", "1", "--save-every", "0", "--log-every", "1", "--quiet"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TMPDIR": str(tmp_path)}  # (torchrun's log folders, left behind)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(WORLD),
               "-m", "albert_mini", "pretrain", *flags, "--batch-size", str(B), "--out", str(tmp_path / "ddp")]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]

    from albert_mini.commands.pretrain import main

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        main(flags + ["--batch-size", str(WORLD * B), "--out", str(tmp_path / "single")])
    finally:
        torch.set_num_threads(before)
    run = json.loads((tmp_path / "ddp" / "run.json").read_text())
    assert (run["world_size"], run["effective_batch"]) == (WORLD, WORLD * B)
    ddp = load_file(latest_checkpoint(tmp_path / "ddp") / "model.safetensors")
    one = load_file(latest_checkpoint(tmp_path / "single") / "model.safetensors")
    for name in one:
        assert torch.allclose(ddp[name], one[name], rtol=0, atol=1e-6), name
    lines = [json.loads(x) for x in (tmp_path / "ddp" / "metrics.jsonl").read_text().splitlines()]
    single_lines = [json.loads(x) for x in (tmp_path / "single" / "metrics.jsonl").read_text().splitlines()]
    # Rank 0 alone wrote the log: 3 train lines and the final evaluation, as in one process.
    assert [(m["type"], m["step"]) for m in lines] == [(m["type"], m["step"]) for m in single_lines]
    assert len(lines) == STEPS + 1
    for a, b in zip(lines, single_lines):
        assert a["loss"] == pytest.approx(b["loss"], abs=1e-5)
        assert a.get("tokens_seen") == b.get("tokens_seen")
