"""The one real multi-node run: two torchrun agents on localhost standing for two nodes (gloo, one process each) that
share --out, through a run's life. It trains as one process on the global batch does; node 1's agent killed with
kill -9 stops both nodes after the same step with a checkpoint and leaves no process behind; node 1's worker
killed ends node 0 with one line naming the node, the step and the newest checkpoint; the same command then
finishes the run bit-identical to the run never stopped. What the ranks decide together (flags that differ,
folders not shared, a rank lost, a signal to one rank, resuming every rank's data and RNG) is tested in one
process with a fake world (test_node_agreement.py, test_ddp.py)."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from nodes import FLAGS, agent_env, error_lines, finish, free_port
from safetensors.torch import load_file
from same_run import assert_same_run, log_without_clocks

from albert_mini.commands.pretrain import main as pretrain
from albert_mini.training.checkpoint import list_checkpoints
from albert_mini.training.rundir import read_metrics

# The command under torchrun, where rank 1 kills its node's agent (kill -9) inside step `agent_at`, then waits for
# the SIGTERM the kernel sends an orphaned worker (so the step it stops after is that one, deterministically), or
# kills itself (kill -9) inside step `worker_at`; 0: never. Each worker writes its pid, to check none outlives the
# run.
WORKER = """
import os, signal, sys, time
from pathlib import Path
from albert_mini.training import preemption, trainer
pids, agent_at, worker_at = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
(pids / f"worker-{os.environ['RANK']}.pid").write_text(str(os.getpid()))
real = trainer.Trainer.train_step
def train_step(self, *args, **kwargs):
    if self.dist.rank == 1 and self.step + 1 == agent_at:
        os.kill(os.getppid(), signal.SIGKILL)
        deadline = time.monotonic() + 60
        while preemption.requested() is None and time.monotonic() < deadline:
            time.sleep(0.01)
    if self.dist.rank == 1 and self.step + 1 == worker_at:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(self, *args, **kwargs)
trainer.Trainer.train_step = train_step
from albert_mini.commands import main
main(sys.argv[4:])
"""


def two_nodes(out, cwd, agent_at=0, worker_at=0) -> list[subprocess.CompletedProcess]:
    """Both nodes' agents, once every process of both has ended (a hang or an orphan fails the test)."""
    script = cwd / "worker.py"
    script.write_text(WORKER)
    for old in cwd.glob("worker-*.pid"):
        old.unlink()
    port = str(free_port())
    command = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc_per_node", "1",
               "--master_addr", "127.0.0.1", "--master_port", port, "--node_rank"]
    program = [str(script), str(cwd), str(agent_at), str(worker_at), "pretrain", *FLAGS, "--out", str(out)]
    agents = [subprocess.Popen([*command, str(rank), *program], env=agent_env(cwd), cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
              for rank in range(2)]
    done = finish(agents)
    workers = [int(p.read_text()) for p in sorted(cwd.glob("worker-*.pid"))]
    assert len(workers) == 2, done[0].stderr[-3000:] + done[1].stderr[-3000:]
    deadline = time.monotonic() + 60  # not a speed goal: how long an orphan may take to show
    while any(running(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in workers if running(p)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"workers outlived the run: {left}"
    return done


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.slow  # torchrun: four runs of two agents
def test_two_nodes_train_as_one_process_survive_a_lost_agent_and_a_lost_worker_and_resume_bit_identically(
        tmp_path, one_thread):
    straight = tmp_path / "straight"
    done = two_nodes(straight, tmp_path)
    assert [r.returncode for r in done] == [0, 0], done[0].stderr[-3000:] + done[1].stderr[-3000:]

    # As one process on the global batch (each node's --batch-size 2, so 4): the same weights and log, written by
    # rank 0 alone.
    single = tmp_path / "single"
    batch = FLAGS.index("--batch-size") + 1
    pretrain([*FLAGS[:batch], "4", *FLAGS[batch + 1:], "--out", str(single)])
    run = json.loads((straight / "run.json").read_text())
    assert (run["world_size"], run["effective_batch"]) == (2, 4)
    two, one = (load_file(list_checkpoints(r)[-1] / "model.safetensors") for r in (straight, single))
    for name in one:
        assert torch.allclose(two[name], one[name], rtol=0, atol=1e-6), name
    lines, single_lines = log_without_clocks(straight), log_without_clocks(single)
    assert [(m["type"], m["step"]) for m in lines] == [(m["type"], m["step"]) for m in single_lines]
    assert len(lines) == 8 + 1  # a train line a step and the final evaluation, once
    for a, b in zip(lines, single_lines):
        assert a["loss"] == pytest.approx(b["loss"], abs=1e-5)
        assert a.get("tokens_seen") == b.get("tokens_seen")

    # Node 1's agent killed inside step 5: its worker gets SIGTERM from the kernel, finishes the step, the ranks
    # vote, both save step 5 and stop; no worker trains on as an orphan (two_nodes checks).
    out = tmp_path / "run"
    agent_lost = two_nodes(out, tmp_path, agent_at=5)
    assert agent_lost[1].returncode == -signal.SIGKILL and agent_lost[0].returncode != 0
    ours = error_lines(agent_lost[0].stderr)
    assert len(ours) == 1 and ours[0].startswith("error: stopped by a signal to another rank after step 5"), \
        agent_lost[0].stderr[-3000:]
    assert "step-0000005" in ours[0]
    assert [p.name for p in list_checkpoints(out)] == ["step-0000003", "step-0000005"]

    # The same command resumes at step 5; node 1's worker killed inside step 7: node 0 ends with one line naming
    # node 1, the step reached and the newest checkpoint, exit status 2 (its own traceback: none).
    worker_lost = two_nodes(out, tmp_path, worker_at=7)
    assert all(r.returncode != 0 for r in worker_lost)
    ours = error_lines(worker_lost[0].stderr)
    assert len(ours) == 1, worker_lost[0].stderr[-3000:]
    match = re.fullmatch(r"error: node 1 of the run was lost at step 6 \(.+\); the newest checkpoint is (\S+); "
                         r"start every node again to resume", ours[0])
    assert match, ours[0]
    assert Path(match.group(1)) == list_checkpoints(out)[-1] == out / "checkpoints" / "step-0000006"
    assert re.search(r"exitcode\s*: 2\b", worker_lost[0].stderr), worker_lost[0].stderr[-2000:]
    assert "Traceback" not in worker_lost[0].stderr[:worker_lost[0].stderr.index(ours[0])]

    # The same command finishes the run, bit-identical to the run never stopped.
    finished = two_nodes(out, tmp_path)
    assert [r.returncode for r in finished] == [0, 0], finished[0].stderr[-3000:] + finished[1].stderr[-3000:]
    resumes = [m["step"] for m in read_metrics(out / "metrics.jsonl")[0] if m["type"] == "resume"]
    assert resumes == [5, 6]
    assert_same_run(out, straight)
