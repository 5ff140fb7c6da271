"""Every command line against a table of bad values: exactly one `error:` line, no traceback, exit status 2.

Each case runs in-process and fails before any training starts; `files` builds the bad inputs (a file where a
folder should be, malformed task files, Hugging Face folders that are not ALBERT, ...). Where a case could destroy
data, the test also checks that the file is untouched.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from albert_mini.commands import COMMANDS
from albert_mini.commands import main as albert_mini_main
from albert_mini.paths import PRETRAINED_MODEL
from cli_helpers import REPO, run_command

SST2 = REPO / "tests" / "tasks" / "fixtures" / "tasks" / "sst2.tsv"
SQUAD = REPO / "tests" / "tasks" / "fixtures" / "tasks" / "squad.json"
TOKENIZER = REPO / "data" / "austen" / "spiece.model"
NANO = ["--preset", "albert-nano", "--corpus", "synthetic", "--seq-len", "16", "--batch-size", "2", "--quiet"]
SST = ["--format", "sst2", "--train-file", str(SST2), "--test-file", str(SST2), "--steps", "1", "--batch-size", "2"]


@dataclass
class Files:
    """Bad inputs for the table, built in a fresh temporary folder."""

    root: Path

    @property
    def a_file(self) -> Path:
        return self._write("a_file.txt", "I am a file, not a folder.\n")

    @property
    def text(self) -> Path:
        """Enough text for a 50-piece tokenizer, so that only the flag under test can fail."""
        words = "emma woodhouse handsome clever and rich with a comfortable home happy disposition seemed to unite " \
                "some of the best blessings of existence she had lived nearly twenty one years in world".split()
        lines = [" ".join(words[(7 * i + j) % len(words)] for j in range(12)) + "." for i in range(200)]
        return self._write("texts/a.txt", "\n\n".join(lines) + "\n")

    def squad(self, data) -> Path:
        return self._write(f"squad-{abs(hash(json.dumps(data)))}.json", json.dumps({"version": "1.1", "data": data}))

    @property
    def unlabelled(self) -> Path:
        return self._write("unlabelled.tsv", "index\tsentence\n0\ta fine film .\n1\ta dull film .\n")

    def hf_dir(self, config, weights: str | None = "model.safetensors") -> Path:
        folder = self.root / f"hf-{abs(hash(str(config)))}-{weights}"
        folder.mkdir(exist_ok=True)
        (folder / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
        if weights:
            (folder / weights).write_bytes(b"\0" * 16)
        return folder

    @property
    def busy_port(self) -> int:
        """A port a server listens on for as long as the test runs."""
        if not hasattr(self, "_server"):
            self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._server.bind(("127.0.0.1", 0))
            self._server.listen()
        return self._server.getsockname()[1]

    @property
    def results(self) -> Path:
        folder = self.root / "results"
        folder.mkdir(exist_ok=True)
        (folder / "sharing.json").write_text('{"rows": 3}')
        return folder

    def _write(self, name: str, text: str) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text(text)
        return path


ALBERT_HF = {"architectures": ["AlbertForPreTraining"], "model_type": "albert", "vocab_size": 8000,
             "embedding_size": 16, "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
             "intermediate_size": 64}

def TOK(f: Files) -> list:
    return ["train", "--text", f.text, "--vocab-size", "50"]


# (id, command, argv as a function of Files, a phrase the error line must hold)
CASES = [
    # pretraining: numbers at the boundary
    ("pretrain-lr-nan", "pretrain", lambda f: NANO + ["--steps", "1", "--lr", "nan", "--out", f.root / "o"],
     "--lr: 'nan' is not a finite number"),
    ("pretrain-lr-inf", "pretrain", lambda f: NANO + ["--steps", "1", "--lr", "inf", "--out", f.root / "o"],
     "not a finite number"),
    ("pretrain-lr-zero", "pretrain", lambda f: NANO + ["--steps", "1", "--lr", "0", "--out", f.root / "o"],
     "--lr: must be > 0"),
    ("pretrain-clip-inf", "pretrain",
     lambda f: NANO + ["--steps", "1", "--clip-norm", "inf", "--out", f.root / "o"], "--clip-norm"),
    ("pretrain-minutes-nan", "pretrain",
     lambda f: NANO + ["--steps", "1", "--minutes", "nan", "--out", f.root / "o"], "--minutes"),
    ("pretrain-weight-decay-nan", "pretrain",
     lambda f: NANO + ["--steps", "1", "--weight-decay", "nan", "--out", f.root / "o"], "--weight-decay"),
    ("pretrain-weight-decay-negative", "pretrain",
     lambda f: NANO + ["--steps", "1", "--weight-decay", "-1", "--out", f.root / "o"], "must be >= 0"),
    ("pretrain-seed-negative", "pretrain",
     lambda f: NANO + ["--steps", "1", "--seed", "-1", "--out", f.root / "o"], "--seed: must be in [0, 4294967295]"),
    ("pretrain-seed-huge", "pretrain",
     lambda f: NANO + ["--steps", "1", "--seed", str(2**32), "--out", f.root / "o"], "--seed"),
    ("pretrain-short-fraction-nan", "pretrain",
     lambda f: NANO + ["--steps", "1", "--short-fraction", "nan", "--out", f.root / "o"], "--short-fraction"),
    ("pretrain-steps-zero", "pretrain", lambda f: NANO + ["--steps", "0", "--out", f.root / "o"],
     "--steps must be >= 1"),
    # pretraining: --config values the model cannot use: sizes that cannot fit, refused before any
    # allocation with the estimate; values the data cannot feed
    ("pretrain-config-hidden-size-beyond-memory", "pretrain",
     lambda f: NANO + ["--steps", "1", "--config", "hidden_size=100000000", "--out", f.root / "o"],
     "albert-nano with --config hidden_size=100000000 at --batch-size 2 x --seq-len 16 needs about"),
    ("pretrain-config-positions-beyond-memory", "pretrain",
     lambda f: NANO + ["--steps", "1", "--config", "max_position_embeddings=10000000000", "--out", f.root / "o"],
     "TiB to train (weights, gradients and lamb's states"),
    ("pretrain-batch-beyond-memory", "pretrain",
     lambda f: ["--preset", "albert-base", "--corpus", "synthetic", "--seq-len", "128", "--batch-size", "500000",
                "--steps", "1", "--out", f.root / "o"], "TiB), more than"),
    ("pretrain-config-vocab-size-5", "pretrain",
     lambda f: NANO + ["--steps", "1", "--config", "vocab_size=5", "--out", f.root / "o"],
     "--config vocab_size=5: ids 0-4 are the special tokens"),
    ("pretrain-config-type-vocab-size-1-sop", "pretrain",
     lambda f: NANO + ["--steps", "1", "--config", "type_vocab_size=1", "--out", f.root / "o"],
     "--task sop pairs two segments, whose tokens have token types 0 and 1"),
    ("pretrain-config-type-vocab-size-1-synthetic", "pretrain",
     lambda f: NANO + ["--steps", "1", "--task", "none", "--config", "type_vocab_size=1", "--out", f.root / "o"],
     "the synthetic corpus has two segments"),
    ("pretrain-config-pad-token-id", "pretrain",
     lambda f: NANO + ["--steps", "1", "--config", "pad_token_id=5", "--out", f.root / "o"],
     "the data pads with id 0 ([PAD]), so the model's pad_token_id must be 0"),
    # pretraining: paths
    ("pretrain-out-below-a-file", "pretrain",
     lambda f: NANO + ["--steps", "1", "--out", f.a_file / "run"], "is a file, not a folder"),
    ("pretrain-out-unwritable", "pretrain", lambda f: NANO + ["--steps", "1", "--out", "/proc/albert-run"],
     "/proc"),
    ("pretrain-corpus-device", "pretrain",
     lambda f: ["--corpus", "/dev/null", "--tokenizer", REPO / "data" / "austen" / "spiece.model", "--steps", "1",
                "--out", f.root / "o"], "is not a regular file"),
    ("pretrain-tokenizer-folder", "pretrain",
     lambda f: ["--corpus", f.text, "--tokenizer", f.root, "--steps", "1", "--out", f.root / "o"], "is a folder"),
    # preparing your text (nothing is tokenized: each case fails first)
    ("prepare-workers-zero", "prepare", lambda f: ["--corpus", f.text, "--tokenizer", TOKENIZER, "--workers", "0"],
     "--workers: must be >= 1"),
    ("prepare-tokenizer-folder", "prepare", lambda f: ["--corpus", f.text, "--tokenizer", f.root], "is a folder"),
    ("prepare-text-missing", "prepare", lambda f: ["--corpus", f.root / "absent.txt", "--tokenizer", TOKENIZER],
     "absent.txt"),
    # fine-tuning
    ("finetune-lr-nan", "finetune", lambda f: SST + ["--lr", "nan"], "--lr"),
    ("finetune-lr-zero", "finetune", lambda f: SST + ["--lr", "0"], "--lr: must be > 0"),
    ("finetune-seed-negative", "finetune", lambda f: SST + ["--seed", "-3"], "--seed"),
    ("finetune-max-train-negative", "finetune", lambda f: SST + ["--max-train-examples", "-1"],
     "--max-train-examples: must be >= 1"),
    ("finetune-max-eval-zero", "finetune", lambda f: SST + ["--max-eval-examples", "0"],
     "--max-eval-examples: must be >= 1"),
    ("finetune-save-unwritable", "finetune", lambda f: SST + ["--save", "/proc/albert/model.safetensors"],
     "--save"),
    ("finetune-save-below-a-file", "finetune", lambda f: SST + ["--save", f.a_file / "m.safetensors"],
     "is a file, not a folder"),
    ("finetune-save-existing", "finetune", lambda f: SST + ["--save", f.a_file],
     "already exists and this command did not create it"),
    ("finetune-save-over-its-input", "finetune",
     lambda f: SST + ["--save", SST2, "--overwrite"], "is one of this command's input files"),
    ("finetune-out-below-a-file", "finetune", lambda f: SST + ["--out", f.a_file / "run"],
     "is a file, not a folder"),
    ("finetune-train-file-folder", "finetune",
     lambda f: ["--format", "sst2", "--train-file", f.root, "--test-file", SST2], "is a folder"),
    ("finetune-train-file-device", "finetune",
     lambda f: ["--format", "sst2", "--train-file", "/dev/null", "--test-file", SST2], "not a regular file"),
    ("finetune-squad-data-not-objects", "finetune",
     lambda f: ["--format", "squad", "--train-file", f.squad([1]), "--test-file", SQUAD], "data[0] is int"),
    ("finetune-squad-qas-not-objects", "finetune",
     lambda f: ["--format", "squad", "--train-file", f.squad([{"paragraphs": [{"context": "c", "qas": ["q"]}]}]),
                "--test-file", SQUAD], "question 0 of paragraph 0 of article 0 is str"),
    ("finetune-squad-answers-not-objects", "finetune",
     lambda f: ["--format", "squad", "--train-file", f.squad([{"paragraphs": [{"context": "c x", "qas": [
         {"id": "q1", "question": "what?", "answers": ["x"]}]}]}]), "--test-file", SQUAD], "is not an object"),
    ("finetune-unlabelled-train-file", "finetune",
     lambda f: ["--format", "sst2", "--train-file", f.unlabelled, "--test-file", SST2, "--steps", "1",
                "--batch-size", "2"], "without a label"),
    ("finetune-hf-bad-config", "finetune", lambda f: SST + ["--init", f.hf_dir("{not json")],
     "config.json is not valid JSON"),
    ("finetune-hf-not-albert", "finetune",
     lambda f: SST + ["--init", f.hf_dir({"architectures": ["BertModel"], "model_type": "bert"})], "not ALBERT"),
    ("finetune-hf-pickled-weights", "finetune",
     lambda f: SST + ["--init", f.hf_dir(ALBERT_HF, weights="pytorch_model.bin")], "no .safetensors weights"),
    # the tokenizer (50 pieces: a size the little text can fill, so only the flag under test is wrong)
    ("tokenizer-no-out", "tokenizer", lambda f: TOK(f), "the following arguments are required: --out"),
    ("tokenizer-out-is-an-input", "tokenizer", lambda f: TOK(f) + ["--out", f.text, "--overwrite"],
     "is one of this command's input files"),
    ("tokenizer-out-exists", "tokenizer", lambda f: TOK(f) + ["--out", f.a_file],
     "pass --overwrite to replace it"),
    ("tokenizer-shipped-model", "tokenizer",
     lambda f: TOK(f) + ["--out", REPO / "data" / "austen" / "spiece.model"], "already exists"),
    ("tokenizer-out-below-a-file", "tokenizer", lambda f: TOK(f) + ["--out", f.a_file / "t.model"],
     "is a file, not a folder"),
    ("tokenizer-out-unwritable", "tokenizer", lambda f: TOK(f) + ["--out", "/proc/t.model"], "/proc"),
    ("tokenizer-vocab-zero", "tokenizer", lambda f: TOK(f) + ["--vocab-size", "0", "--out", f.root / "t.model"],
     "--vocab-size"),
    ("tokenizer-seed-negative", "tokenizer", lambda f: TOK(f) + ["--seed", "-1", "--out", f.root / "t.model"],
     "--seed"),
    ("tokenizer-text-missing", "tokenizer",
     lambda f: ["train", "--text", f.root / "absent.txt", "--vocab-size", "50", "--out", f.root / "t.model"],
     "absent.txt"),
    # experiments, lab, student notebooks, Austen tasks, polarity
    ("experiments-tables-missing-folder", "experiments", lambda f: ["tables", "--out", "/nonexistent"],
     "is not a folder of results"),
    ("experiments-tables-malformed", "experiments", lambda f: ["tables", "--out", f.results],
     "sharing.json is not a result of the sharing experiment"),
    ("experiments-out-is-a-file", "experiments", lambda f: ["sharing", "--out", f.a_file, "--estimate"],
     "is a file, not a folder"),
    ("experiments-seed-negative", "experiments", lambda f: ["sharing", "--seeds", "-1", "--estimate"],
     "--seeds"),
    ("lab-port-too-big", "lab", lambda f: ["--port", "99999", "--no-browser"], "--port: must be a TCP port"),
    ("lab-port-negative", "lab", lambda f: ["--port", "-1", "--no-browser"], "--port"),
    ("lab-port-busy", "lab", lambda f: ["--port", str(f.busy_port), "--no-browser"],
     "is already in use by another program"),
    ("student-out-below-a-file", "exercises",
     lambda f: [REPO / "chapters" / "00_setup.py", "--out", f.a_file / "student"], "is a file, not a folder"),
    ("student-out-chapters", "exercises",
     lambda f: [REPO / "chapters" / "00_setup.py", "--out", REPO / "chapters"], "is the folder of the chapters"),
    ("student-missing-chapter", "exercises", lambda f: [f.root / "absent.py", "--out", f.root / "s"],
     "absent.py is not a file"),
    ("austen-tasks-out-is-a-file", "austen-tasks", lambda f: ["--out", f.a_file], "is a file, not a folder"),
    ("austen-tasks-out-holds-other-files", "austen-tasks", lambda f: ["--out", f.a_file.parent],
     "holds files this command does not write"),
    ("austen-tasks-seed-negative", "austen-tasks", lambda f: ["--seed", "-2", "--out", f.root / "t"], "--seed"),
    ("polarity-cache-dir-is-a-file", "polarity", lambda f: ["--cache-dir", f.a_file], "is a file, not a folder"),
]


def run_case(command: str, argv: list, capsys) -> tuple[int | None, str, str]:
    """(exit status, stdout, stderr) of `albert-mini <command> argv`, run in-process."""
    capsys.readouterr()
    try:
        code = albert_mini_main([command, *map(str, argv)])
    except SystemExit as done:
        code = done.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_bad_value_is_one_error_line(case, tmp_path, capsys, monkeypatch):
    name, command, argv, phrase = case
    monkeypatch.chdir(tmp_path)
    files = Files(tmp_path)
    shipped = {p: p.read_bytes() for p in (REPO / "data" / "austen").iterdir()}
    args = argv(files)
    inputs = {Path(a): Path(a).read_bytes() for a in args if Path(str(a)).is_file()}
    code, _, err = run_case(command, args, capsys)
    assert code == 2, (name, code, err[-2000:])
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert phrase in err, err
    assert {p: p.read_bytes() for p in (REPO / "data" / "austen").iterdir()} == shipped
    assert {p: p.read_bytes() for p in inputs} == inputs  # no input file was written over


def test_the_table_covers_every_command_that_takes_paths_or_numbers_from_a_user():
    covered = {command for _, command, _, _ in CASES}
    assert covered <= set(COMMANDS)
    assert set(COMMANDS) - covered <= {"corpus", "book", "html", "grade", "numerics", "recipe-search", "leak-control",
                                       "lexical-sop", "time-to-quality", "model-card", "env"}


def test_a_diverged_loss_is_one_line_naming_the_step(capsys, tmp_path):
    code, _, err = run_case("pretrain", NANO + ["--steps", "3", "--lr", "1e30", "--warmup", "0",
                                                          "--out", tmp_path / "run"], capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    # Step 1's gradients are finite; its update at lr 1e30 makes step 2's infinite.
    assert "the loss diverged at step 2 (gradient norm is nan)" in err and "lower --lr" in err


def test_the_shipped_model_refuses_another_tokenizer(model_file, capsys):
    """A 100-piece tokenizer on the 8,000-piece classroom model: refused before training, naming the right one."""
    code, _, err = run_case("finetune", ["--task", "austen-mc", "--tokenizer", model_file, "--steps", "1",
                                               "--batch-size", "2", "--max-train-examples", "2"], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "has 100 pieces but the model" in err and "was pretrained with 8000" in err
    assert "--tokenizer " in err and "spiece.model" in err


def test_a_tokenizer_of_the_same_size_but_other_pieces_is_refused(tmp_path, capsys):
    """Same vocabulary size, other file: the sha256 recorded in the model's run.json tells them apart."""
    model = shutil.copytree(PRETRAINED_MODEL, tmp_path / "model")
    record = json.loads((model / "run.json").read_text())
    record["tokenizer"]["sha256"] = "0" * 64
    (model / "run.json").write_text(json.dumps(record, indent=2) + "\n")
    code, _, err = run_case("finetune", ["--task", "austen-mc", "--init", model, "--steps", "1",
                                               "--batch-size", "2", "--max-train-examples", "2"], capsys)
    assert code == 2 and "is not the one the model" in err and "sha256" in err, err


# ---------------------------------------------------------------------- run directories and bounds
def test_a_symlinked_checkpoints_folder_is_one_error_line_and_nothing_is_deleted(tmp_path, capsys):
    out, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "weights.bin").write_bytes(b"precious")
    out.mkdir()
    (out / "checkpoints").symlink_to(elsewhere, target_is_directory=True)
    for extra in ([], ["--overwrite"]):
        code, _, err = run_case("pretrain", NANO + ["--steps", "1", "--out", out, *extra], capsys)
        assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
        assert "is a symbolic link" in err and "Replace the link by a folder" in err
    assert (elsewhere / "weights.bin").read_bytes() == b"precious" and (out / "checkpoints").is_symlink()


def test_more_eval_batches_than_the_synthetic_corpus_keeps_is_one_error_line_before_any_work(tmp_path, capsys):
    started = time.monotonic()
    code, _, err = run_case("pretrain", NANO + ["--steps", "1", "--eval-batches", "100000000", "--out",
                                                tmp_path / "run"], capsys)
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert "--eval-batches 100000000" in err and "use --eval-batches 8 (at most 131,072)" in err
    assert time.monotonic() - started < 30 and not (tmp_path / "run").exists()


@pytest.mark.slow  # a subprocess or a retrain: make test runs it, test-fast does not
def test_a_glob_over_two_symlink_loops_is_one_error_line_not_a_hang(tmp_path):
    texts = tmp_path / "texts"
    (texts / "sub").mkdir(parents=True)
    (texts / "loop1").symlink_to(texts, target_is_directory=True)
    (texts / "sub" / "loop2").symlink_to(texts, target_is_directory=True)
    done = run_command("pretrain", "--corpus", texts / "**" / "*.txt", "--tokenizer", TOKENIZER, "--steps", "1",
                       "--out", tmp_path / "run", timeout=120)  # TimeoutExpired, not a hang, if it loops
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"the pattern {str(texts / '**' / '*.txt')!r} matches no file" in done.stderr


@pytest.mark.slow  # a subprocess or a retrain: make test runs it, test-fast does not
def test_a_step_longer_than_the_minutes_runs_whole_then_the_run_stops_and_a_rerun_appends_nothing(tmp_path):
    """--minutes is checked between steps: a step longer than the whole budget (20 micro-batches against 6 ms) is
    trained whole, never cut, and the run stops after it as a finished run (its last lines, its checkpoint); the
    same command then finds it finished and appends nothing."""
    command = ["pretrain", *NANO, "--steps", "3", "--accumulate", "20", "--minutes", "0.0001", "--eval-batches", "1",
               "--out", tmp_path / "run"]
    done = run_command(*command, timeout=240)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert [p.name for p in (tmp_path / "run" / "checkpoints").iterdir()] == ["step-0000001"]  # one whole step
    log = (tmp_path / "run" / "metrics.jsonl").read_text()
    assert [(json.loads(line)["type"], json.loads(line)["step"]) for line in log.splitlines()] == [("train", 1),
                                                                                                ("eval", 1)]
    again = run_command(*command, timeout=240)
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")  # finished: nothing to say (--quiet)
    assert (tmp_path / "run" / "metrics.jsonl").read_text() == log


def test_synthetic_data_with_a_vocab_size_of_its_own_trains(tmp_path, capsys):
    """--config vocab_size on synthetic data was a traceback once it differed from the preset's (the start-up line
    named the tokenizer's file, and there is no tokenizer)."""
    code, out, err = run_case("pretrain", NANO + ["--steps", "1", "--config", "vocab_size=6", "--out",
                                                  tmp_path / "run"], capsys)
    assert code == 0 and err == "", err
    assert json.loads((tmp_path / "run" / "config.json").read_text())["vocab_size"] == 6


def test_a_step_too_large_to_hold_in_memory_is_refused_before_any_work(tmp_path, capsys):
    code, _, err = run_case("pretrain", NANO + ["--steps", "1", "--accumulate", "10000000", "--out",
                                                str(tmp_path / "run")], capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "--accumulate 10000000 x 32 tokens per micro-batch" in err and "use --accumulate 2097152 or less" in err
    assert not (tmp_path / "run").exists()


# ---------------------------------------------------------------------- a token cache that proves what it maps
def _manifest(folder: Path, **changes) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    for name, value in changes.items():
        manifest.pop(name) if value is None else manifest.__setitem__(name, value)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _all_ids_replaced(folder: Path) -> None:  # the right size, a valid id, and not a word of the text
    dtype = json.loads((folder / "manifest.json").read_text())["dtype"]
    size = (folder / "tokens.bin").stat().st_size // np.dtype(dtype).itemsize
    np.full(size, 5, dtype).tofile(folder / "tokens.bin")


def _another_texts_tokens(folder: Path) -> None:
    other = folder.parent / "other"
    (other / "text.txt").parent.mkdir(parents=True)
    (other / "text.txt").write_text("Another text entirely. It has two sentences.\n\nAnd a second document.\n")
    os.environ["ALBERT_MINI_CACHE"], before = str(other / "cache"), os.environ["ALBERT_MINI_CACHE"]
    try:
        assert albert_mini_main(["prepare", "--corpus", str(other / "text.txt"), "--tokenizer", str(TOKENIZER),
                                 "--split-by", "blank-line", "--quiet"]) in (None, 0)
    finally:
        os.environ["ALBERT_MINI_CACHE"] = before
    shutil.rmtree(folder)
    shutil.copytree(next(p for p in (other / "cache").iterdir() if p.is_dir()), folder)


DAMAGED_CACHES = [  # (id, damage to the folder of a prepared text, a phrase of the one error line)
    ("ids-all-replaced", _all_ids_replaced, "has a tokens.bin whose bytes changed since they were written"),
    ("another-texts-tokens", _another_texts_tokens, "the folder holds another text's tokens"),
    ("manifest-shards-string", lambda f: _manifest(f, shards="602"), "field shards is unknown"),
    ("manifest-bogus-dtype", lambda f: _manifest(f, dtype="bogus"), 'dtype is "bogus"'),
    ("manifest-missing-key", lambda f: _manifest(f, key=None), "field key is missing"),
    ("garbage-sentences", lambda f: (f / "sentences.npy").write_bytes(b"\x93NUMPY garbage" * 100),
     "has a sentences.npy of 1,400 bytes"),
    ("unigram-longer-than-the-vocabulary",
     lambda f: np.save(f / "unigram.npy", np.concatenate([np.load(f / "unigram.npy"), [1]])), "has a unigram.npy of"),
    ("negative-unigram-count",
     lambda f: np.save(f / "unigram.npy", np.load(f / "unigram.npy") * np.where(np.arange(8000) == 9, -1, 1)),
     "has a unigram.npy whose bytes changed"),
]


@pytest.mark.parametrize("command", ["prepare", "pretrain"])
@pytest.mark.parametrize("damage", DAMAGED_CACHES, ids=[d[0] for d in DAMAGED_CACHES])
def test_a_damaged_token_cache_is_one_error_line_naming_the_folder_to_delete(damage, command, tmp_path, capsys,
                                                                            monkeypatch):
    _, damaged, phrase = damage
    monkeypatch.setenv("ALBERT_MINI_CACHE", str(tmp_path / "cache"))
    text = Files(tmp_path).text
    flags = ["--corpus", text, "--tokenizer", TOKENIZER, "--split-by", "blank-line", "--quiet"]
    assert run_case("prepare", flags, capsys)[0] in (None, 0)
    folder = next(p for p in (tmp_path / "cache").iterdir() if p.is_dir())
    damaged(folder)
    argv = flags if command == "prepare" else [*flags, "--preset", "albert-nano", "--steps", "1", "--seq-len", "16",
                                               "--batch-size", "2", "--eval-batches", "1", "--out", tmp_path / "run"]
    code, _, err = run_case(command, argv, capsys)
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert phrase in err and f"delete {folder} and rerun" in err, err
    assert not (tmp_path / "run" / "checkpoints").exists()  # refused before any training


@pytest.mark.parametrize("command", ["prepare", "pretrain"])
def test_a_token_cache_root_that_is_a_symlink_loop_is_one_error_line(command, tmp_path, capsys, monkeypatch):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    monkeypatch.setenv("ALBERT_MINI_CACHE", str(loop))
    flags = ["--corpus", Files(tmp_path).text, "--tokenizer", TOKENIZER, "--split-by", "blank-line", "--quiet"]
    code, _, err = run_case(command, flags + ([] if command == "prepare" else
                                              ["--preset", "albert-nano", "--steps", "1", "--out", tmp_path / "r"]),
                            capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"the token cache folder {loop} ($ALBERT_MINI_CACHE) is a loop of symbolic links" in err, err
