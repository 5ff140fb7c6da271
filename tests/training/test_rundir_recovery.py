"""Run directories that always recover: every state that kills can leave resumes or restarts.

A kill before the first checkpoint, then a second one just after the resume emptied the log, leaves an empty
metrics.jsonl: still the run's. A log torn anywhere in its first line is the run's too. A symlinked
checkpoints/ is refused in one line naming the fix. A finished run rerun appends nothing. A step cut short by
the time budget between its micro-batches is undone, and the resumed run is bit-identical to one never stopped.
Globs end on folders with symbolic-link loops.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.commands.pretrain import main as pretrain
from albert_mini.text.corpus import CorpusError, expand_text_paths
from albert_mini.text.synthetic import SyntheticBatches
from albert_mini.training.checkpoint import latest_checkpoint, list_checkpoints
from albert_mini.training.optim import WarmupPolyDecay, build_optimizer
from albert_mini.training.rundir import RUN, inspect, read_metrics
from albert_mini.training.trainer import TrainConfig, Trainer
from cli_helpers import REPO, cli_error

FLAGS = ["--preset", "albert-nano", "--corpus", "synthetic", "--seq-len", "16", "--batch-size", "2",
         "--eval-batches", "1", "--keep", "2", "--quiet"]

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def log_of(run: Path) -> list[dict]:
    """The train and eval lines of a run, without their timings."""
    timing = {"elapsed_s", "tokens_per_s"}
    return [{k: v for k, v in r.items() if k not in timing} for r in read_metrics(run / "metrics.jsonl")[0]
            if r["type"] != "resume"]


def final_weights(run: Path) -> dict:
    return load_file(latest_checkpoint(run) / "model.safetensors")


def assert_same_weights(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name


# ---------------------------------------------------------------------- two kills in a row, for real
DRIVER = """
import os, signal, sys
from albert_mini.commands.pretrain import main
from albert_mini.training.trainer import Trainer

where = sys.argv.pop(1)
original = getattr(Trainer, where)

def killed(self, *args, **kwargs):  # SIGKILL at the first call: no cleanup code runs at all
    os.kill(os.getpid(), signal.SIGKILL)

setattr(Trainer, where, killed)
main(sys.argv[1:])
"""


def killed_at(where: str, argv: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", DRIVER, where, *map(str, argv)], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]


@pytest.mark.slow
def test_a_kill_before_the_first_checkpoint_then_one_right_after_resuming_still_resumes(tmp_path, capsys):
    flags = FLAGS + ["--steps", "4", "--save-every", "2", "--eval-every", "3", "--log-every", "1"]
    run, straight = tmp_path / "run", tmp_path / "straight"
    killed_at("save", flags + ["--out", run])  # the first kill: lines logged, no checkpoint
    assert read_metrics(run / "metrics.jsonl")[0] and not list_checkpoints(run)
    killed_at("_record", flags + ["--out", run])  # the second: the resume emptied the log, then the kill
    assert (run / "metrics.jsonl").read_bytes() == b"" and inspect(run, RUN).foreign == []
    wedged = shutil.copytree(run, tmp_path / "with-overwrite")
    assert pretrain(flags + ["--out", str(run)]).step == 4  # the same command resumes it (from nothing)
    assert pretrain(flags + ["--out", str(wedged), "--overwrite"]).step == 4  # and --overwrite restarts it
    pretrain(flags + ["--out", str(straight)])
    for folder in (run, wedged):
        assert_same_weights(final_weights(folder), final_weights(straight))
        assert log_of(folder) == log_of(straight)


# ---------------------------------------------------------------------- logs a kill can leave
@pytest.fixture(scope="module")
def killed_before_saving(tmp_path_factory):
    """A run directory as a kill before the first checkpoint leaves it (run.json, config.json, no checkpoint)."""
    run = tmp_path_factory.mktemp("killed") / "run"
    pretrain(FLAGS + ["--steps", "2", "--save-every", "0", "--eval-every", "0", "--log-every", "1", "--out", str(run)])
    shutil.rmtree(run / "checkpoints")
    return run


@pytest.mark.parametrize("log", [b"", b"\n", b"{", b'{"ty', b'{"type": "tr', b'{"type": "train", "step": 1, "l',
                                 b"\0" * 300, b'\0\0\0{"type": "train"'],
                         ids=["empty", "blank", "brace", "torn-key", "torn-value", "torn-late", "zeros",
                              "zeros-then-text"])
def test_an_empty_or_torn_log_is_the_runs_and_the_same_command_resumes_it(log, killed_before_saving, tmp_path,
                                                                            capsys):
    run = shutil.copytree(killed_before_saving, tmp_path / "run")
    (run / "metrics.jsonl").write_bytes(log)
    assert inspect(run, RUN).foreign == []
    flags = ["--steps", "2", "--save-every", "0", "--eval-every", "0", "--log-every", "1", "--out", str(run)]
    assert pretrain(FLAGS + flags).step == 2
    assert [r["step"] for r in read_metrics(run / "metrics.jsonl")[0] if r["type"] == "train"] == [1, 2]
    assert read_metrics(run / "metrics.jsonl")[1] == 0  # the torn bytes are gone


def test_a_log_of_someone_elses_is_still_foreign(tmp_path, capsys):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "metrics.jsonl").write_text("step,loss\n1,2.5\n")
    error = cli_error(pretrain, FLAGS + ["--steps", "1", "--out", str(folder), "--overwrite"], capsys)
    assert "holds files that no run wrote: metrics.jsonl" in error


# ---------------------------------------------------------------------- a symlinked checkpoints/
@pytest.mark.parametrize("dangling", [False, True], ids=["to-a-folder", "dangling"])
def test_a_symlinked_checkpoints_folder_is_refused_in_one_line_and_nothing_is_deleted(dangling, tmp_path, capsys):
    run, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    pretrain(FLAGS + ["--steps", "1", "--out", str(run)])
    shutil.move(run / "checkpoints", elsewhere)
    (run / "checkpoints").symlink_to(tmp_path / "nowhere" if dangling else elsewhere, target_is_directory=True)
    before = snapshot(elsewhere)
    for extra in ([], ["--overwrite"]):
        error = cli_error(pretrain, FLAGS + ["--steps", "1", "--out", str(run), *extra], capsys)
        assert f"{run / 'checkpoints'} is a symbolic link (to " in error and "Replace the link by a folder" in error
    assert snapshot(elsewhere) == before and (run / "checkpoints").is_symlink() and (run / "run.json").is_file()


# ---------------------------------------------------------------------- a finished run rerun
@pytest.mark.parametrize("flags", [["--steps", "5", "--eval-every", "2", "--save-every", "5", "--log-every", "2"],
                                   ["--steps", "7", "--eval-every", "3", "--save-every", "2", "--log-every", "4"],
                                   ["--steps", "1000", "--minutes", "0.0005", "--eval-every", "3", "--save-every",
                                    "1", "--log-every", "2"]],
                         ids=["save-every-divides", "none-divides", "time-budget"])
def test_a_finished_run_rerun_appends_nothing(flags, tmp_path, capsys):
    run = tmp_path / "run"
    first = pretrain(FLAGS + flags + ["--out", str(run)])
    before = snapshot(run)
    again = pretrain(FLAGS + flags + ["--out", str(run)])
    assert again.step == first.step and again.history == []
    assert {k: v for k, v in snapshot(run).items() if k != "run.json"} == \
        {k: v for k, v in before.items() if k != "run.json"}
    steps = [(r["type"], r["step"]) for r in read_metrics(run / "metrics.jsonl")[0]]
    assert len(steps) == len(set(steps))  # no line twice


# ---------------------------------------------------------------------- the time budget between micro-batches
CONFIG = AlbertConfig.from_preset("albert-nano", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
ACCUMULATE, STEPS = 3, 5


class BudgetSpentAt(Trainer):
    """A trainer whose clock says the budget is spent at its `at`-th look (None: never)."""

    at: int | None = None
    looks = 0

    def _out_of_time(self, run_start):
        self.looks += 1
        return self.at is not None and self.looks >= self.at


class Watched(BudgetSpentAt):
    """Also a watch inside the passes whose clock says the budget is spent at the `cut_look`-th tensor
    autograd saves or reads back during step `cut_step` (None: never); it counts its looks per step."""

    cut_step: int | None = None
    cut_look = 1

    def _past(self, deadline):
        step = self.step + 1
        self.looks_per_step[step] = self.looks_per_step.get(step, 0) + 1
        return step == self.cut_step and self.looks_per_step[step] >= self.cut_look


def budget_trainer(out, minutes, at=None, cls=BudgetSpentAt):
    torch.manual_seed(0)
    model = AlbertForPreTraining(CONFIG)
    # Train lines every 3 steps, checkpoints every 2, dropout on: a step undone must give back its data, its RNG
    # draws and its metric sums.
    config = TrainConfig(max_steps=STEPS, max_minutes=minutes, accumulate=ACCUMULATE, log_every=3, eval_every=0,
                         save_every=2, keep_checkpoints=2, out_dir=str(out), progress=False)
    trainer = cls(model, build_optimizer(model, "lamb", lr=2e-3), WarmupPolyDecay(2e-3, STEPS, 1),
                  SyntheticBatches(CONFIG.vocab_size, 2, 16, seed=5), config,
                  val_batches=SyntheticBatches(CONFIG.vocab_size, 2, 16, seed=6).take(1))
    trainer.at = at
    trainer.looks_per_step = {}
    return trainer


# Looks at the clock: 1 before the first step, then 5 per step: 2 while drawing its 3 micro-batches (before the
# 2nd and the 3rd), 2 while computing them (the same), 1 after the step. Step k's looks are 5k-3 .. 5k+1.
@pytest.mark.parametrize("at,phase", [(12, "drawing step 3"), (14, "computing step 3"), (17, "drawing step 4"),
                                      (18, "drawing step 4"), (19, "computing step 4"), (20, "computing step 4"),
                                      (21, "after step 4")])
def test_a_step_cut_short_by_the_budget_is_undone_and_the_resumed_run_is_bit_identical(at, phase, tmp_path):
    straight = budget_trainer(tmp_path / "straight", None)
    straight.train()
    stopped = budget_trainer(tmp_path / "run", 1.0, at)
    result = stopped.train()
    done = int(phase[-1]) - (0 if phase.startswith("after") else 1)
    assert (result.step, result.stop_reason) == (done, "max_minutes")
    assert stopped.source.index == done * ACCUMULATE  # the micro-batches of the undone step went back
    assert latest_checkpoint(tmp_path / "run").name == f"step-{done:07d}"
    resumed = budget_trainer(tmp_path / "run", 10.0)  # more minutes: it goes on
    assert resumed.resume() == done
    resumed.train()
    for (name, a), b in zip(straight.model.state_dict().items(), resumed.model.state_dict().values()):
        assert torch.equal(a, b), name
    if done == 2:
        # Stopped after the checkpoint of step 2, the run logged steps 1-2 and evaluated after it: the
        # resumption drops both lines, and the log is the straight run's.
        assert log_of(tmp_path / "run") == log_of(tmp_path / "straight")
    elif done == 3:
        # Its checkpoint came after its last evaluation, which stays (it did stop there); the train line of
        # steps 4-5 shows that the undone step left nothing in the metric sums.
        log = [r for r in log_of(tmp_path / "run") if (r["type"], r["step"]) != ("eval", 3)]
        assert log == log_of(tmp_path / "straight")


def weights_of(trainer) -> dict:
    return {name: tensor.clone() for name, tensor in trainer.model.state_dict().items()}


@pytest.mark.parametrize("where", ["first-forward", "middle", "last-backward"])
def test_a_step_cut_inside_a_pass_is_undone_and_the_resumed_run_is_bit_identical(where, tmp_path):
    """One long step (thousands of layers) once ran far past --minutes. The budget is watched inside every
    forward and backward pass; a step cut there is undone like one cut between micro-batches."""
    straight = budget_trainer(tmp_path / "straight", None)
    straight.train()
    probe = budget_trainer(tmp_path / "probe", 1.0, cls=Watched)  # watched, never cut: the hooks change no number
    probe.train()
    assert all(torch.equal(a, b) for a, b in zip(weights_of(straight).values(), weights_of(probe).values()))
    looks = probe.looks_per_step[3]  # the tensors step 3 saves and reads back, over its 3 micro-batches
    assert looks > 6 * ACCUMULATE
    stopped = budget_trainer(tmp_path / "run", 1.0, cls=Watched)
    stopped.cut_step, stopped.cut_look = 3, {"first-forward": 1, "middle": looks // 2, "last-backward": looks}[where]
    result = stopped.train()
    assert (result.step, result.stop_reason) == (2, "max_minutes") and not stopped.first_step_too_long
    assert stopped.source.index == 2 * ACCUMULATE  # the micro-batches of the undone step went back
    assert all(p.grad is None for p in stopped.model.parameters())
    assert latest_checkpoint(tmp_path / "run").name == "step-0000002"
    resumed = budget_trainer(tmp_path / "run", 10.0)  # more minutes: it goes on
    assert resumed.resume() == 2
    resumed.train()
    for (name, a), b in zip(weights_of(straight).items(), weights_of(resumed).values()):
        assert torch.equal(a, b), name
    assert log_of(tmp_path / "run") == log_of(tmp_path / "straight")


def test_a_budget_spent_inside_the_first_step_stops_there_without_the_final_evaluation(tmp_path):
    """Not one step fits in the budget: the step is undone, and the evaluation (a pass as long) is not run."""
    trainer = budget_trainer(tmp_path / "run", 1.0, cls=Watched)
    trainer.cut_step = 1
    result = trainer.train()
    assert (result.step, result.stop_reason, result.eval, result.history) == (0, "max_minutes", None, [])
    assert trainer.first_step_too_long and trainer.source.index == 0
    assert [p.name for p in list_checkpoints(tmp_path / "run")] == ["step-0000000"]


def test_a_rerun_after_a_budget_spent_inside_the_step_after_a_checkpoint_trains_nothing(tmp_path, capsys):
    """The budget ran out inside step 3, just after the checkpoint of step 2: the end lines at step 2 hold the
    run's clock past the budget, so the same command finds the run finished (its checkpoint's clock says less)."""
    run = tmp_path / "run"
    flags = FLAGS + ["--steps", "1000", "--save-every", "1", "--log-every", "2", "--eval-every", "0", "--out",
                     str(run)]
    first = pretrain(flags + ["--minutes", "0.0001"])  # 6 ms: the first step or one soon after is cut
    before = snapshot(run)
    again = pretrain(flags + ["--minutes", "0.0001"])
    assert (again.step, again.history) == (first.step, [])
    assert {k: v for k, v in snapshot(run).items() if k != "run.json"} == \
        {k: v for k, v in before.items() if k != "run.json"}


def test_the_clock_is_read_between_micro_batches_only_with_a_budget(tmp_path):
    trainer = budget_trainer(tmp_path / "run", None)
    trainer.train()
    assert trainer.looks == STEPS  # before the first step and after each but the last: between steps only


@pytest.mark.slow  # a subprocess or a retrain: make test runs it, test-fast does not
def test_a_cli_step_of_100000_micro_batches_stops_within_the_minutes(tmp_path):
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "albert_mini", "pretrain", *FLAGS, "--steps", "3", "--accumulate",
                           "100000", "--minutes", "0.02", "--out", str(tmp_path / "run")], cwd=REPO,
                          capture_output=True, text=True, timeout=240, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert time.monotonic() - started < 120
    assert [p.name for p in list_checkpoints(tmp_path / "run")] == ["step-0000000"]
    assert [r["type"] for r in read_metrics(tmp_path / "run" / "metrics.jsonl")[0]] == ["eval"]


# ---------------------------------------------------------------------- globs over symbolic-link loops
@pytest.fixture
def alarm():
    """Fail, not hang, when the code under test loops: SIGALRM after 30 s raises in the main thread."""
    def ring(*_):
        raise TimeoutError("still running after 30 s")
    before = signal.signal(signal.SIGALRM, ring)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, before)


def looped_texts(root: Path) -> Path:
    """texts/ with a.txt, sub/b.txt, .hidden/c.txt and two links back to texts/ (loop1, sub/loop2)."""
    texts = root / "texts"
    for name in ("a.txt", "sub/b.txt", ".hidden/c.txt", "sub/deeper/d.txt", "notes.md"):
        (texts / name).parent.mkdir(parents=True, exist_ok=True)
        (texts / name).write_text(name)
    (texts / "loop1").symlink_to(texts, target_is_directory=True)
    (texts / "sub" / "loop2").symlink_to(texts, target_is_directory=True)
    return texts


def test_a_recursive_glob_over_two_symlink_loops_ends_with_each_file_once(tmp_path, alarm):
    texts = looped_texts(tmp_path)
    found = expand_text_paths(str(texts / "**" / "*.txt"))
    assert found == [texts / "a.txt", texts / "sub" / "b.txt", texts / "sub" / "deeper" / "d.txt"]
    assert expand_text_paths(str(texts / "*" / "**" / "*.txt")) == found  # through loop1, which is texts/ again
    assert expand_text_paths(str(texts / "**" / "**")) == [texts / "a.txt", texts / "notes.md", *found[1:]]
    with pytest.raises(CorpusError, match="matches no file"):
        expand_text_paths(str(texts / "**" / "*.rst"))


def test_a_glob_keeps_globs_order_and_matches_on_ordinary_folders(tmp_path, monkeypatch):
    import glob as glob_module

    root = tmp_path / "t"
    for name in ("b.txt", "a.txt", ".h.txt", "x/c.txt", "x/y/d.txt", "x/.h/e.txt", "z/f.txt", "z/g.md", "xa/h.txt"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    monkeypatch.chdir(tmp_path)
    for pattern in ("t/*.txt", "t/**/*.txt", "t/**", "t/x*/**/*.txt", "t/?/*.txt", "t/[xz]/*", "t/.*",
                    "t/**/y/*.txt", "./t/**/*.txt", str(root / "**" / "*.txt"), "t/nothing/**"):
        expected = [Path(p).resolve() for p in sorted(set(Path(p) for p in glob_module.glob(pattern, recursive=True)
                                                          if Path(p).is_file()))]
        if expected:
            assert expand_text_paths(pattern) == list(dict.fromkeys(expected)), pattern
        else:
            with pytest.raises(CorpusError):
                expand_text_paths(pattern)
