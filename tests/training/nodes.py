"""Two torchrun agents on localhost standing for two nodes (gloo, one process each): the flags and helpers of the
real two-node test (test_two_nodes.py); test_node_agreement.py runs the same flags in a fake world."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

FLAGS = ["--preset", "albert-nano", "--corpus", "synthetic", "--seq-len", "32", "--batch-size", "2", "--steps", "8",
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
