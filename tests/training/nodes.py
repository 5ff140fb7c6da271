"""Two torchrun agents on localhost standing for two nodes (gloo, one process each), for the multi-node tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

FLAGS = ["--preset", "albert-nano", "--corpus", "synthetic", "--seq-len", "32", "--batch-size", "2", "--steps", "6",
         "--lr", "2e-3", "--save-every", "3", "--keep", "2", "--eval-every", "0", "--eval-batches", "1",
         "--log-every", "1", "--quiet"]
TIMEOUT = 240  # seconds: a hang fails the test instead of holding CI


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def agent_env(cwd) -> dict:
    """One thread a process; torchrun's agent writes its log folders (torchelastic_*) in the test's folder, not /tmp,
    where it leaves them."""
    return {**os.environ, "OMP_NUM_THREADS": "1", "TMPDIR": str(cwd)}


def node_command(rank: int, nodes: int, port: str, out, extra=(), launcher=()) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes", str(nodes), "--node_rank", str(rank),
            "--nproc_per_node", "1", "--master_addr", "127.0.0.1", "--master_port", port, *launcher,
            "-m", "albert_mini", "pretrain", *FLAGS, *extra, "--out", str(out)]


def start_nodes(out, cwd, extra: list[list[str]], launcher=()) -> list[subprocess.Popen]:
    """One agent a node (node i gets the flags extra[i] after the common ones), meeting at a fresh port; each in a
    session of its own, so that a test can signal one node's agent and workers together."""
    port = str(free_port())
    return [subprocess.Popen(node_command(rank, len(extra), port, out, flags, launcher), env=agent_env(cwd),
                             cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
            for rank, flags in enumerate(extra)]


def finish(agents: list[subprocess.Popen], timeout: float = TIMEOUT) -> list[subprocess.CompletedProcess]:
    done = []
    for agent in agents:
        try:
            stdout, stderr = agent.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for other in agents:
                os.killpg(other.pid, 9)
            pytest.fail("a node hung instead of ending")
        done.append(subprocess.CompletedProcess(agent.args, agent.returncode, stdout, stderr))
    return done


def error_lines(stderr: str) -> list[str]:
    """Our one-line errors (torchrun's agent adds its own report of a failed worker after them)."""
    return [line for line in stderr.splitlines() if line.startswith("error: ")]
