"""Runs of several processes under torchrun resume bit-identically, on one node and on two "nodes" (two torchrun
agents on localhost, gloo); two nodes that do not share --out stop in one line each instead of hanging."""

import os
import shutil
import subprocess
import sys

import pytest
from nodes import FLAGS, TIMEOUT, free_port
from safetensors.torch import load_file

from albert_mini.training.checkpoint import list_checkpoints


def torchrun(*launcher: str, out) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", *launcher, "-m", "albert_mini", "pretrain", *FLAGS,
            "--out", str(out)]


def agent_env(cwd) -> dict:
    """One thread a process; torchrun's agent writes its log folders (torchelastic_*) in the test's folder, not /tmp,
    where it leaves them."""
    return {**os.environ, "OMP_NUM_THREADS": "1", "TMPDIR": str(cwd)}


def run_nodes(outs: list, cwd) -> list[subprocess.CompletedProcess]:
    """Two torchrun agents, node ranks 0 and 1, one process each, meeting at a fresh localhost port."""
    port = str(free_port())
    env = agent_env(cwd)
    agents = [subprocess.Popen(torchrun("--nnodes", "2", "--node_rank", str(rank), "--nproc_per_node", "1",
                                        "--master_addr", "127.0.0.1", "--master_port", port, out=out),
                               env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for rank, out in enumerate(outs)]
    done = []
    for agent in agents:
        try:
            stdout, stderr = agent.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            for other in agents:
                other.kill()
            pytest.fail("a node hung instead of ending")
        done.append(subprocess.CompletedProcess(agent.args, agent.returncode, stdout, stderr))
    return done


def run_one_node(out, cwd) -> subprocess.CompletedProcess:
    env = agent_env(cwd)
    port = str(free_port())
    return subprocess.run(torchrun("--nnodes", "1", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
                                   "--master_port", port, out=out),
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)


def final_weights(out) -> dict:
    return load_file(list_checkpoints(out)[-1] / "model.safetensors")


def undo_last_checkpoint(out) -> None:
    """What a kill between the step-3 and step-6 checkpoints leaves: the run resumes from step 3."""
    *_, last = list_checkpoints(out)
    assert last.name == "step-0000006"
    shutil.rmtree(last)


def assert_resumed_bit_identically(out, finished: dict) -> None:
    again = final_weights(out)
    assert list_checkpoints(out)[-1].name == "step-0000006"
    assert finished.keys() == again.keys()
    for name, tensor in finished.items():
        assert tensor.equal(again[name]), f"{name} differs after the resume"
    log = (out / "metrics.jsonl").read_text()
    assert '"type": "resume", "step": 3' in log


@pytest.mark.slow
def test_a_ddp_run_on_one_node_resumes_bit_identically(tmp_path):
    out = tmp_path / "run"
    first = run_one_node(out, tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    finished = final_weights(out)
    undo_last_checkpoint(out)
    second = run_one_node(out, tmp_path)
    assert second.returncode == 0, second.stderr[-3000:]
    assert_resumed_bit_identically(out, finished)


@pytest.mark.slow
def test_two_nodes_sharing_out_resume_bit_identically(tmp_path):
    out = tmp_path / "shared"
    first = run_nodes([out, out], tmp_path)
    assert [r.returncode for r in first] == [0, 0], first[0].stderr[-3000:] + first[1].stderr[-3000:]
    finished = final_weights(out)
    undo_last_checkpoint(out)
    second = run_nodes([out, out], tmp_path)
    assert [r.returncode for r in second] == [0, 0], second[0].stderr[-3000:] + second[1].stderr[-3000:]
    assert_resumed_bit_identically(out, finished)


@pytest.mark.slow
def test_two_nodes_with_separate_outs_stop_in_one_line_each(tmp_path):
    outs = [tmp_path / "node0", tmp_path / "node1"]
    done = run_nodes(outs, tmp_path)
    assert all(r.returncode != 0 for r in done)
    for r in done:
        ours = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
        assert len(ours) == 1, r.stderr[-3000:]
        assert "rank 1 (--out" in ours[0] and "does not see the run.json rank 0 wrote" in ours[0]
        assert "every process of a run must see the same --out" in ours[0]
    # Rank 0 wrote its run's record; nothing was trained, and rank 1 wrote nothing anywhere.
    assert (outs[0] / "run.json").is_file() and not list_checkpoints(outs[0])
    assert not outs[1].exists() or not any(outs[1].iterdir())
