"""Nodes agree before the first step: ranks whose flags differ stop on every node with one line naming each flag and
both values (exit status 2), before any step or file of the run; ranks that do not see the same --out stop in one
line each. The ranks are threads of one process (fake_world.py) going through the command as torchrun's workers
would; the real two-node run is test_two_nodes.py."""

import pytest
from fake_world import FakeWorld
from nodes import FLAGS

from albert_mini.commands.pretrain import main as pretrain
from albert_mini.training.checkpoint import list_checkpoints

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def error_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]


def assert_every_rank_exited(results, status=2) -> None:
    assert all(isinstance(r, SystemExit) and r.code == status for r in results), results


@pytest.mark.parametrize("node_1, named", [
    (["--seq-len", "16"], "node 1 has --seq-len 16, node 0 has --seq-len 32"),
    (["--seed", "7"], "node 1 has --seed 7, node 0 has --seed 0"),
    (["--config", "num_hidden_layers=4"], "node 1 has --config num_hidden_layers=4, node 0 has no --config"),
    (["--steps", "9", "--lr", "1e-3"], "node 1 has --lr 0.001, node 0 has --lr 0.002; node 1 has --steps 9, "
                                        "node 0 has --steps 8"),
], ids=["seq-len", "seed", "config", "steps-and-lr"])
def test_nodes_started_with_different_flags_stop_in_one_line_naming_them(node_1, named, tmp_path, monkeypatch,
                                                                        capsys):
    world = FakeWorld(2).install(monkeypatch)  # two nodes of one process each
    out = tmp_path / "run"
    results = world.run(lambda info: pretrain([*FLAGS, *(node_1 if info.rank == 1 else []), "--out", str(out)]))
    assert_every_rank_exited(results)
    ours = error_lines(capsys)
    assert len(ours) == 2, ours  # one line a node
    for line in ours:
        assert named in line and "start every node with the same flags" in line, line
    assert world.collectives[:2] == ["all_gather_object", "all_gather_object"]  # the digests, then the values
    assert not out.exists() or not list_checkpoints(out)  # nothing trained, nothing written as a run


def test_two_processes_of_one_node_that_differ_say_it_once_naming_the_rank(tmp_path, monkeypatch, capsys):
    world = FakeWorld(2, local_world_size=2).install(monkeypatch)
    results = world.run(lambda info: pretrain([*FLAGS, "--seed", str(info.rank), "--out", str(tmp_path / "run")]))
    assert_every_rank_exited(results)
    assert error_lines(capsys) == ["error: the processes of this run do not agree: rank 1 (node 0) has --seed 1, "
                                   "rank 0 (node 0) has --seed 0; start every node with the same flags (only --out, "
                                   "--device, --quiet and the logging and saving flags may differ)"]


def test_nodes_with_separate_outs_stop_in_one_line_each(tmp_path, monkeypatch, capsys):
    world = FakeWorld(2).install(monkeypatch)
    outs = [tmp_path / "node0", tmp_path / "node1"]
    results = world.run(lambda info: pretrain([*FLAGS, "--out", str(outs[info.rank])]))
    assert_every_rank_exited(results)
    ours = error_lines(capsys)
    assert len(ours) == 2, ours
    for line in ours:
        assert "rank 1 (--out" in line and "does not see the run.json rank 0 wrote" in line, line
        assert "every process of a run must see the same --out" in line
    # Rank 0 wrote its run's record; nothing was trained, and rank 1 wrote nothing anywhere.
    assert (outs[0] / "run.json").is_file() and not list_checkpoints(outs[0])
    assert not outs[1].exists() or not any(outs[1].iterdir())
