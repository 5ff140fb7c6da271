"""Inputs from outside, each refused in one line `error: ...` with exit status 2 and no
traceback (the same contract as tests/test_cli_fuzz.py's table, for the cases found by its adversarial pass).

Classes: model folders from outside (weights in another format, missing/unexpected/mis-shaped weights, damaged
safetensors, bad config fields, an unproven tokenizer, a malformed run record), validation at the boundary
(file names, the same file twice, batch sizes, optimizer numbers, JSON strings, run.json), and Ctrl-C.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from albert_mini.cli import INTERRUPTED_LINE
from albert_mini.paths import PRETRAINED_MODEL
from cli_helpers import REPO
from test_cli_fuzz import NANO, SQUAD, SST, SST2, TOKENIZER, Files, run_case

RACE = REPO / "tests" / "tasks" / "fixtures" / "tasks" / "race"


class Inputs(Files):
    """Files's bad inputs, and those of this file's cases."""

    def hf_model(self, change_config=None, change_weights=None, spiece: bool = True, weights: str | None = None,
                 name: str = "hf") -> Path:
        """A tiny save_pretrained folder for the 8,000-piece Austen tokenizer (its spiece.model beside it, as HF
        tokenizers save it), changed as asked."""
        transformers = pytest.importorskip("transformers")
        from safetensors.torch import load_file, save_file

        from albert_mini import AlbertConfig
        from albert_mini.model.hf import config_to_hf

        config = AlbertConfig(vocab_size=8000, embedding_size=8, hidden_size=16, num_hidden_layers=1,
                              num_attention_heads=2, intermediate_size=32, max_position_embeddings=128)
        folder = self.root / name
        torch.manual_seed(0)
        model = transformers.AlbertForPreTraining(config_to_hf(config))
        model.save_pretrained(folder)
        if spiece:
            shutil.copyfile(TOKENIZER, folder / "spiece.model")
        if change_config:
            fields = json.loads((folder / "config.json").read_text())
            fields.update(change_config)
            (folder / "config.json").write_text(json.dumps(fields))
        # Copies: load_file maps the file, which is rewritten below (a tensor backed by it would crash the process).
        tensors = {k: v.clone() for k, v in load_file(folder / "model.safetensors").items()}
        if change_weights:
            change_weights(tensors)
            save_file(tensors, folder / "model.safetensors")
        if weights == "pickle-only":
            (folder / "model.safetensors").unlink()
            torch.save(tensors, folder / "pytorch_model.bin")
        elif weights == "decoy":
            (folder / "model.safetensors").rename(folder / "decoy.safetensors")
            torch.save(tensors, folder / "pytorch_model.bin")
        elif weights == "truncated":
            data = (folder / "model.safetensors").read_bytes()
            (folder / "model.safetensors").write_bytes(data[:len(data) // 2])
        elif weights == "pickled-safetensors":
            torch.save(tensors, folder / "model.safetensors")
        return folder

    def shipped_copy(self, run_json=..., spiece: bytes | None = None, manifest: dict | None = None) -> Path:
        """The shipped model, with its run.json replaced (None: removed), a spiece.model added, its manifest
        replaced."""
        folder = self.root / "model"
        if not folder.exists():
            shutil.copytree(PRETRAINED_MODEL, folder)
        if manifest is not None:
            (folder / "manifest.json").write_text(json.dumps(manifest))
        if run_json is None:
            (folder / "run.json").unlink()
        elif run_json is not ...:
            (folder / "run.json").write_text(run_json if isinstance(run_json, str) else json.dumps(run_json))
        if spiece is not None:
            (folder / "spiece.model").write_bytes(spiece)
        return folder

    def docs(self, name: str = "docs.txt", seed: int = 0, count: int = 300) -> Path:
        """`count` one-sentence documents separated by blank lines (about 15 pieces each)."""
        words = "emma woodhouse handsome clever and rich with a comfortable home happy disposition seemed to unite " \
                "some of the best blessings of existence she had lived nearly twenty one years in world".split()
        lines = [" ".join(words[(7 * i + j + seed) % len(words)] for j in range(12)) + "." for i in range(count)]
        return self._write(name, "\n\n".join(lines) + "\n")

    def hard_link(self, path: Path, name: str) -> Path:
        link = self.root / name
        if not link.exists():
            os.link(path, link)
        return link

    def latin1_name(self) -> Path:
        path = self.root / os.fsdecode(b"caf\xe9.txt")
        if not path.exists():
            shutil.copyfile(self.text, path)
        return path

    def squad_surrogate(self) -> Path:
        return self._write("surrogate.json", '{"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": '
                           '"ab cd", "qas": [{"id": "q1", "question": "what \\ud800?", "answers": [{"text": "ab", '
                           '"answer_start": 0}]}]}]}]}')

    def race_surrogate(self) -> Path:
        folder = self.root / "race"
        folder.mkdir(exist_ok=True)
        record = {"id": "r1", "article": "A \\udfff tale.", "questions": ["What?"], "answers": ["A"],
                  "options": [["a", "b", "c", "d"]]}
        (folder / "1.json").write_text(json.dumps(record).replace("\\\\udfff", "\\udfff"))
        return folder

    def run_dir(self, record: dict | str) -> Path:
        folder = self.root / "run"
        (folder / "checkpoints").mkdir(parents=True, exist_ok=True)
        (folder / "run.json").write_text(record if isinstance(record, str) else json.dumps(record))
        return folder


def INIT(f: Inputs, **hf) -> list:
    return SST + ["--init", f.hf_model(**hf)]


OWN = ["--tokenizer", TOKENIZER, "--steps", "10", "--preset", "albert-nano", "--quiet", "--eval-batches", "1"]

# (id, command, argv as a function of Inputs, a phrase the error line must hold)
CASES = [
    # model folders from outside: only safetensors, every weight, float32, the config's fields checked
    ("hf-decoy-safetensors-beside-a-pickle", "finetune", lambda f: INIT(f, weights="decoy"),
     "convert them to safetensors"),
    ("hf-pickle-only", "finetune", lambda f: INIT(f, weights="pickle-only"),
     "no .safetensors weights (model.safetensors), only pytorch_model.bin"),
    ("hf-missing-weight", "finetune", lambda f: INIT(f, change_weights=lambda w: w.pop("albert.pooler.weight")),
     "missing: albert.pooler.weight"),
    ("hf-unexpected-weight", "finetune", lambda f: INIT(f, change_weights=lambda w: w.update(stray=torch.ones(2))),
     "unexpected: stray"),
    ("hf-misshaped-weight", "finetune",
     lambda f: INIT(f, change_weights=lambda w: w.update({"albert.pooler.bias": torch.zeros(3)})),
     "mis-shaped: albert.pooler.bias (3,) where the config needs (16,)"),
    ("hf-nan-weights", "finetune",
     lambda f: INIT(f, change_weights=lambda w: w["albert.pooler.weight"].view(-1)[:4].fill_(float("nan"))),
     "holds weights that are not finite numbers (in float32): albert.pooler.weight (4 NaN)"),
    ("hf-infinite-weights", "finetune",
     lambda f: INIT(f, change_weights=lambda w: w["albert.embeddings.LayerNorm.weight"].fill_(float("inf"))),
     "albert.embeddings.LayerNorm.weight (8 inf)"),
    ("hf-truncated-safetensors", "finetune", lambda f: INIT(f, weights="truncated"),
     "is not a readable safetensors file"),
    ("hf-pickled-safetensors", "finetune", lambda f: INIT(f, weights="pickled-safetensors"),
     "is not a readable safetensors file"),
    ("hf-unsupported-activation", "finetune", lambda f: INIT(f, change_config={"hidden_act": "swish"}),
     "HF hidden_act 'swish' has no albert_mini equivalent"),
    ("hf-string-dropout", "finetune", lambda f: INIT(f, change_config={"hidden_dropout_prob": "0.1"}),
     "hidden_dropout_prob must be in [0, 1) (a finite number), got '0.1'"),
    ("hf-negative-initializer-range", "finetune", lambda f: INIT(f, change_config={"initializer_range": -0.02}),
     "initializer_range must be in (0, 1)"),
    ("hf-nan-layer-norm-eps", "finetune", lambda f: INIT(f, change_config={"layer_norm_eps": float("nan")}),
     "layer_norm_eps must be in (0, 1)"),
    ("hf-without-spiece-model", "finetune", lambda f: INIT(f, spiece=False),
     "no spiece.model; copy the model's own SentencePiece model"),
    # the tokenizer must be shown to be the model's
    ("model-without-run-record", "finetune", lambda f: SST + ["--init", f.shipped_copy(run_json=None)],
     "--tokenizer"),
    ("model-other-spiece-model", "finetune",
     lambda f: SST + ["--init", f.shipped_copy(run_json=None, spiece=TOKENIZER.read_bytes() + b"\n")],
     "is not the model's own"),
    ("model-tokenizer-record-malformed", "finetune",
     lambda f: SST + ["--init", f.shipped_copy(run_json={"kind": "pretrain", "tokenizer": "spiece.model"})],
     "its tokenizer record 'spiece.model' is not an object"),
    ("model-manifest-malformed", "finetune",
     lambda f: SST + ["--init", f.shipped_copy(manifest={"format": 1, "sha256": ["model.safetensors"]})],
     "manifest.json is missing or unreadable"),
    # validation at the boundary: names, the same file twice, sizes, optimizer numbers
    ("corpus-name-not-utf8", "pretrain",
     lambda f: ["--corpus", f.latin1_name(), "--out", f.root / "o"] + OWN, "is not UTF-8"),
    ("validation-hard-link-of-corpus", "pretrain",
     lambda f: ["--corpus", f.docs(), "--validation", f.hard_link(f.docs(), "held.txt"), "--out", f.root / "o"] + OWN,
     "the same file as"),
    ("short-phase-cannot-fill-its-batch", "pretrain",
     lambda f: ["--corpus", f.docs(), "--validation", f.docs("held.txt", seed=3), "--split-by", "blank-line",
                "--task", "none", "--seq-len", "32", "--short-seq-len", "8", "--batch-size", "250",
                "--out", f.root / "o"] + OWN, "--short-seq-len 8 with --task none"),
    ("weight-decay-1e308", "pretrain", lambda f: NANO + ["--steps", "1", "--weight-decay", "1e308", "--out",
                                                         f.root / "o"], "--weight-decay 1e+308 does not fit"),
    ("lr-beyond-float32", "pretrain", lambda f: NANO + ["--steps", "1", "--lr", "1e39", "--out", f.root / "o"],
     "--lr 1e+39 does not fit in float32"),
    ("adamw-decay-past-one", "pretrain",
     lambda f: NANO + ["--steps", "1", "--optimizer", "adamw", "--weight-decay", "600", "--out", f.root / "o"],
     "AdamW multiplies every weight"),
    ("config-nan-layer-norm-eps", "pretrain",
     lambda f: NANO + ["--steps", "1", "--config", "initializer_range=-1", "--out", f.root / "o"],
     "initializer_range must be in (0, 1)"),
    # JSON strings that are not text
    ("squad-lone-surrogate", "finetune",
     lambda f: ["--format", "squad", "--train-file", f.squad_surrogate(), "--test-file", SQUAD, "--init", "random",
                "--preset", "albert-nano"], "holds a lone UTF-16 surrogate (\\ud800"),
    ("race-lone-surrogate", "finetune",
     lambda f: ["--format", "race", "--train-file", f.race_surrogate(), "--test-file", RACE, "--init", "random",
                "--preset", "albert-nano"], "holds a lone UTF-16 surrogate (\\udfff"),
    # malformed run.json fields in --out
    ("run-json-settings-a-list", "pretrain",
     lambda f: NANO + ["--steps", "1", "--out", f.run_dir({"kind": "pretrain", "settings": [1]})],
     "is damaged (not valid JSON) or holds parts runs do not write"),
    ("run-json-model-a-string", "pretrain",
     lambda f: NANO + ["--steps", "1", "--out", f.run_dir({"kind": "pretrain", "settings": {}, "model": "x"})],
     "is damaged"),
    ("run-json-corpus-files-a-list", "pretrain",
     lambda f: NANO + ["--steps", "1", "--out", f.run_dir({"kind": "pretrain", "settings": {},
                                                           "corpus": {"files": [1]}})], "is damaged"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_bad_input_is_one_error_line(case, tmp_path, capsys, monkeypatch):
    name, command, argv, phrase = case
    monkeypatch.chdir(tmp_path)
    shipped = {p: p.read_bytes() for p in PRETRAINED_MODEL.iterdir()}
    code, _, err = run_case(command, argv(Inputs(tmp_path)), capsys)
    assert code == 2, (name, code, err[-2000:])
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert phrase in err, err
    assert {p: p.read_bytes() for p in PRETRAINED_MODEL.iterdir()} == shipped


def test_ctrl_c_is_one_line_and_status_130(tmp_path, capsys, monkeypatch):
    """KeyboardInterrupt anywhere in a command: `error: interrupted ...`, exit status 130 (128 + SIGINT)."""
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("albert_mini.commands.finetune._finetune", interrupted)
    code, _, err = run_case("finetune", SST, capsys)
    assert code == 130 and err.count("\n") == 1 and err.startswith("error: interrupted (Ctrl-C)"), err
    with pytest.raises(KeyboardInterrupt):  # --debug keeps the traceback
        run_case("finetune", SST + ["--debug"], capsys)


@pytest.mark.parametrize("argv,orig_argv,held", [
    (["-m", "pretrain"], ["python", "-m", "albert_mini", "pretrain"], True),
    (["-m"], ["python", "-u", "-W", "error", "-m", "albert_mini"], True),  # torchrun's workers, run_command
    (["/venv/bin/albert-mini", "pretrain"], ["/venv/bin/python", "/venv/bin/albert-mini", "pretrain"], True),
    (["/venv/bin/albert-mini", "pretrain", "--debug"], ["python", "/venv/bin/albert-mini", "--debug"], False),
    (["-m", "x"], ["python", "-m", "albert_mini.harness.experiments"], False),  # not the command line
    (["/venv/lib/ipykernel_launcher.py", "-f", "k.json"], ["python", "-m", "ipykernel_launcher"], False),
    (["/venv/bin/pytest", "tests"], ["python", "/venv/bin/pytest", "tests"], False),
    (["-c"], ["python", "-c", "import albert_mini"], False),
])
def test_only_the_command_line_holds_ctrl_c_while_it_starts(monkeypatch, argv, orig_argv, held):
    """A notebook's Ctrl-C must stop a cell, not end the kernel: only the command line's start-up is held."""
    from albert_mini import cli

    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setattr(sys, "orig_argv", orig_argv)
    before = signal.getsignal(signal.SIGINT)
    try:
        cli.hold_interrupts()
        assert (signal.getsignal(signal.SIGINT) is not before) == held
        cli.release_interrupts()
        released = signal.getsignal(signal.SIGINT)
        assert released is (cli._interrupted_unless_importing if held else before)
        with pytest.raises(KeyboardInterrupt):  # outside an import: Python's own KeyboardInterrupt
            released(signal.SIGINT, sys._getframe())
    finally:
        signal.signal(signal.SIGINT, before)


def started(process: subprocess.Popen, marker: str = "/torch/lib/", timeout: float = 120) -> bool:
    """Wait until `process` has mapped a file whose path holds `marker` (torch's libraries: the package's own
    code has run, and torch's import has begun); False if it ended first."""
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        try:
            if marker in Path(f"/proc/{process.pid}/maps").read_text():
                return True
        except OSError:
            pass
        time.sleep(0.002)
    return False


@pytest.mark.slow  # a subprocess or a retrain: make test runs it, test-fast does not
@pytest.mark.skipif(not Path("/proc/self/maps").is_file(), reason="watches the start-up through Linux's /proc")
@pytest.mark.parametrize("launcher", ["python-m", "console-script"])
def test_ctrl_c_while_the_command_line_starts_is_one_line_and_status_130(launcher):
    """Ctrl-C in the first seconds, while Python imports torch, was once a traceback. SIGINT at several
    moments from the start of torch's import on (`experiments tables` imports it inside `cli.run`, as every
    command does once its flags are read, then prints the committed results): one line, status 130 and nothing
    else; or, when it comes after the command is done, its own output and status, never a traceback."""
    script = Path(sys.executable).with_name("albert-mini")
    if launcher == "console-script" and not script.is_file():
        pytest.skip("no albert-mini console script beside this python")
    command = [sys.executable, "-m", "albert_mini"] if launcher == "python-m" else [str(script)]
    interrupted = 0
    for delay in (0.0, 0.02, 0.1, 0.3, 0.8):
        process = subprocess.Popen([*command, "experiments", "tables"], cwd=REPO, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        try:
            assert started(process), process.communicate()
            time.sleep(delay)
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=120)
        finally:
            process.kill()
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, (delay, err)
        if out:  # the tables were printed: the signal came after the command's work
            assert process.returncode in (0, 130, -signal.SIGINT) and err.count("\n") <= 1, (delay, err)
        else:
            assert process.returncode == 130 and err == INTERRUPTED_LINE + "\n", (delay, process.returncode, err)
            interrupted += 1
    assert interrupted >= 1  # at least the signal sent as torch began to load landed while starting


def test_a_crlf_corpus_gives_the_documents_of_its_lf_twin(tmp_path):
    """A CRLF corpus of 24 blank-line documents gives 24, not 4."""
    from albert_mini.text.corpus import load_text_files

    text = "".join(f"Line one of document {i}.\nLine two of it.\n\n" for i in range(24))
    (tmp_path / "lf.txt").write_text(text, newline="\n")
    (tmp_path / "crlf.txt").write_text(text, newline="\r\n")
    (tmp_path / "cr.txt").write_text(text, newline="\r")
    lf, crlf, cr = (load_text_files(tmp_path / f"{n}.txt", mode="blank_line") for n in ("lf", "crlf", "cr"))
    assert len(lf) == len(crlf) == len(cr) == 24
    assert [d.paragraphs for d in lf] == [d.paragraphs for d in crlf] == [d.paragraphs for d in cr]
    assert [d.paragraphs for d in load_text_files(tmp_path / "crlf.txt")] == \
        [d.paragraphs for d in load_text_files(tmp_path / "lf.txt")]
    assert SST2.is_file()
