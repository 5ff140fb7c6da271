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
    before = (run / "metrics.jsonl").read_bytes()
    killed_at("log", flags + ["--out", run])  # the second: killed at the resume line, the first line it writes
    assert (run / "metrics.jsonl").read_bytes() == before and inspect(run, RUN).foreign == []
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
    torn = bool(log.strip(b"\0\n"))
    assert read_metrics(run / "metrics.jsonl")[1] == torn  # the torn bytes stay, ended by a line break, and are skipped
    assert (run / "metrics.jsonl").read_bytes().startswith(log)  # appended to, never rewritten


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


# ---------------------------------------------------------------------- the time budget, between steps
CONFIG = AlbertConfig.from_preset("albert-nano", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
ACCUMULATE, STEPS = 3, 5


class FakeClock:
    """A clock that moves only when a step is trained: each optimizer step takes `seconds`."""

    def __init__(self, seconds: float):
        self.now, self.seconds, self.in_step, self.reads_in_step = 1000.0, seconds, False, 0

    def __call__(self) -> float:
        self.reads_in_step += self.in_step
        return self.now


class Clocked(Trainer):
    """A trainer whose steps take the fake clock's time (and which counts any look at the clock inside a step)."""

    def train_step(self, *args, **kwargs):
        self.clock.in_step = True
        try:
            return super().train_step(*args, **kwargs)
        finally:
            self.clock.in_step = False
            self.clock.now += self.clock.seconds


def budget_trainer(out, minutes, seconds_per_step=10.0):
    torch.manual_seed(0)
    model = AlbertForPreTraining(CONFIG)
    # Train lines every 3 steps, checkpoints every 2, dropout on: the resumed run must continue data, RNG draws
    # and metric sums exactly.
    config = TrainConfig(max_steps=STEPS, max_minutes=minutes, accumulate=ACCUMULATE, log_every=3, eval_every=0,
                         save_every=2, keep_checkpoints=2, out_dir=str(out), progress=False)
    trainer = Clocked(model, build_optimizer(model, "lamb", lr=2e-3), WarmupPolyDecay(2e-3, STEPS, 1),
                      SyntheticBatches(CONFIG.vocab_size, 2, 16, seed=5), config,
                      val_batches=SyntheticBatches(CONFIG.vocab_size, 2, 16, seed=6).take(1))
    trainer.clock = FakeClock(seconds_per_step)
    return trainer


def weights_of(trainer) -> dict:
    return {name: tensor.clone() for name, tensor in trainer.model.state_dict().items()}


# With a 1-minute budget: 25 s steps spend it in step 3 (75 s), 20 s steps exactly at step 3 (60 s), 70 s steps
# in the first step, which is longer than the whole budget.
@pytest.mark.parametrize("seconds,done", [(25.0, 3), (20.0, 3), (70.0, 1)])
def test_the_budget_is_checked_between_steps_and_overrun_by_at_most_one_step(seconds, done, tmp_path):
    straight = budget_trainer(tmp_path / "straight", None)
    straight.train()
    stopped = budget_trainer(tmp_path / "run", 1.0, seconds)
    result = stopped.train()
    assert (result.step, result.stop_reason) == (done, "max_minutes")
    assert 60 <= stopped.elapsed < 60 + seconds  # the step under way when it ran out, and no more
    assert stopped.clock.reads_in_step == 0  # never looked at inside a step: a step is always whole
    assert stopped.source.index == done * ACCUMULATE
    assert latest_checkpoint(tmp_path / "run").name == f"step-{done:07d}"
    assert result.eval is not None and result.eval["step"] == done  # a finished run's last lines
    resumed = budget_trainer(tmp_path / "run", 10.0, seconds)  # more minutes: it goes on
    assert resumed.resume() == done
    resumed.train()
    for (name, a), b in zip(weights_of(straight).items(), weights_of(resumed).values()):
        assert torch.equal(a, b), name
    # The end lines of the stop stay in the log (they were written: a train line and an evaluation at `done`); the
    # last evaluation, of the same weights, is the straight run's.
    log = log_of(tmp_path / "run")
    assert ("eval", done) in [(r["type"], r["step"]) for r in log] and log[-1] == log_of(tmp_path / "straight")[-1]


def test_a_run_without_a_budget_never_stops_for_the_clock(tmp_path):
    trainer = budget_trainer(tmp_path / "run", None, seconds_per_step=1e9)
    assert (trainer.train().step, trainer.clock.reads_in_step) == (STEPS, 0)


def test_a_rerun_after_a_budget_spent_inside_the_step_after_a_checkpoint_trains_nothing(tmp_path, capsys):
    """The budget ran out within a step after a checkpoint: the run saves the step it stopped at after its end lines,
    so the same command finds the run finished and appends nothing."""
    run = tmp_path / "run"
    flags = FLAGS + ["--steps", "1000", "--save-every", "1", "--log-every", "2", "--eval-every", "0", "--out",
                     str(run)]
    first = pretrain(flags + ["--minutes", "0.0001"])  # 6 ms: the first step or one soon after is cut
    before = snapshot(run)
    again = pretrain(flags + ["--minutes", "0.0001"])
    assert (again.step, again.history) == (first.step, [])
    assert {k: v for k, v in snapshot(run).items() if k != "run.json"} == \
        {k: v for k, v in before.items() if k != "run.json"}


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
