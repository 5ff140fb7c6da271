"""Nodes agree before the first step: two torchrun agents on localhost whose flags differ stop on both nodes with
one line naming each flag and both values (the worker's exit status 2), before any step or file of the run."""

import re

import pytest
from nodes import error_lines, finish, start_nodes

from albert_mini.training.checkpoint import list_checkpoints


@pytest.mark.slow
@pytest.mark.parametrize("node_1, named", [
    (["--seq-len", "16"], "node 1 has --seq-len 16, node 0 has --seq-len 32"),
    (["--seed", "7"], "node 1 has --seed 7, node 0 has --seed 0"),
    (["--config", "num_hidden_layers=4"], "node 1 has --config num_hidden_layers=4, node 0 has no --config"),
    (["--steps", "9", "--lr", "1e-3"], "node 1 has --lr 0.001, node 0 has --lr 0.002; node 1 has --steps 9, "
                                        "node 0 has --steps 6"),
], ids=["seq-len", "seed", "config", "steps-and-lr"])
def test_nodes_started_with_different_flags_stop_in_one_line_naming_them(node_1, named, tmp_path):
    out = tmp_path / "run"
    done = finish(start_nodes(out, tmp_path, [[], node_1]))
    for node, result in enumerate(done):
        assert result.returncode != 0, f"node {node} trained: {result.stderr[-2000:]}"
        ours = error_lines(result.stderr)
        assert len(ours) == 1, result.stderr[-3000:]
        assert named in ours[0] and "start every node with the same flags" in ours[0], ours[0]
        assert re.search(r"exitcode\s*: 2\b", result.stderr), result.stderr[-2000:]  # the worker's status
    assert not out.exists() or not list_checkpoints(out)  # nothing trained, nothing written as a run
