"""Pretraining on your own text: the two-step flow, held-out text, fingerprints, and clear errors."""

import json

import pytest

from albert_mini.commands.pretrain import main as pretrain
from albert_mini.text.corpus import CorpusError, Document, load_text_files
from albert_mini.text.tokenizer import Tokenizer
from albert_mini.training.run_data import hold_out
from cli_helpers import cli_error
from user_text import PRETRAIN_FLAGS as FLAGS
from user_text import write_texts

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture
def texts(tmp_path):
    return write_texts(tmp_path / "texts")


def test_the_two_step_flow_pretrains_on_your_files(texts, model_file, tmp_path):
    out = tmp_path / "run"
    result = pretrain(FLAGS + ["--corpus", str(texts), "--tokenizer", str(model_file), "--out", str(out)])
    assert result.step == 2 and result.eval["mlm_acc"] is not None
    record = json.loads((out / "run.json").read_text())
    assert record["kind"] == "pretrain" and record["settings"]["corpus"] == [str(texts)]
    assert sorted(record["corpus"]["files"]) == sorted(str(p) for p in texts.glob("*.txt"))
    assert len(record["corpus"]["sha256"]) == 64
    assert record["tokenizer"]["path"] == str(model_file)
    # The model's vocabulary is the tokenizer's, not the preset's 8000.
    assert json.loads((out / "config.json").read_text())["vocab_size"] == Tokenizer.from_file(model_file).vocab_size
    # A glob pattern and the list of files name the same text: the same fingerprint.
    for corpus in ([str(texts / "*.txt")], sorted(str(p) for p in texts.glob("*.txt"))):
        other = tmp_path / f"run-{len(corpus)}"
        pretrain(FLAGS + ["--steps", "1", "--corpus", *corpus, "--tokenizer", str(model_file), "--out", str(other)])
        assert json.loads((other / "run.json").read_text())["corpus"] == record["corpus"]


def test_a_run_records_files_inside_the_repository_relative_to_its_root(texts, model_file, tmp_path, monkeypatch,
                                                                        capsys):
    import shutil

    from albert_mini import paths

    monkeypatch.setattr(paths, "REPO_ROOT", tmp_path)  # the checkout, as far as the run's record is concerned
    shutil.copy(model_file, tmp_path / "tok.model")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    flags = FLAGS + ["--corpus", str(texts), "--tokenizer", "tok.model", "--out", str(out)]
    pretrain(flags)
    record = json.loads((out / "run.json").read_text())
    assert record["tokenizer"]["path"] == "tok.model"
    assert sorted(record["corpus"]["files"]) == [f"texts/doc{i:02d}.txt" for i in range(12)]
    assert str(tmp_path) not in json.dumps({key: record[key] for key in ("tokenizer", "corpus")})
    assert pretrain(flags).step == 2  # the same command resumes the finished run
    with open(texts / "doc03.txt", "a") as f:
        f.write("An added sentence. And one more.\n")
    error = cli_error(pretrain, flags, capsys)
    assert "changed since the run in" in error and ": texts/doc03.txt (modified). Resuming" in error


def test_the_recorded_command_names_the_script_inside_the_repository_relative_to_it():
    from albert_mini.paths import REPO_ROOT
    from albert_mini.text.tokenizer import Tokenizer
    from albert_mini.training.run import recorded_command

    script = str(REPO_ROOT / "albert_mini" / "training" / "run.py")
    assert recorded_command([script, "--out", "/elsewhere/run"]) == \
        "albert_mini/training/run.py --out /elsewhere/run"  # arguments as the user gave them
    assert recorded_command(["-c", "--steps", "2"]) == "-c --steps 2"
    assert Tokenizer.default().file_reference()["path"] == "data/austen/spiece.model"


def test_a_resume_on_changed_text_is_refused_naming_the_files(texts, model_file, tmp_path, capsys):
    out = tmp_path / "run"
    flags = FLAGS + ["--corpus", str(texts), "--tokenizer", str(model_file), "--out", str(out)]
    pretrain(flags)
    assert pretrain(flags).step == 2  # unchanged text: the same command resumes
    with open(texts / "doc03.txt", "a") as f:
        f.write("An added sentence. And one more.\n")
    (texts / "doc12.txt").write_text("A new file. With two sentences.\n")
    error = cli_error(pretrain, flags, capsys)
    assert f"the text of --corpus changed since the run in {out} started: {texts / 'doc03.txt'} (modified), " \
           f"{texts / 'doc12.txt'} (new)" in error
    (texts / "doc05.txt").unlink()
    assert f"{texts / 'doc05.txt'} (missing)" in cli_error(pretrain, flags, capsys)
    assert pretrain(flags + ["--overwrite"]).step == 2  # start over on the new text


def test_held_out_documents_depend_on_the_text_only():
    documents = [Document(f"d{i}", "t", [f"Sentence number {i}. And another."]) for i in range(40)]
    train, held = hold_out(documents, 0.05)
    assert len(held) == 2 and len(train) == 38 and not {d.id for d in held} & {d.id for d in train}
    _, held_reversed = hold_out(documents[::-1], 0.05)
    assert {d.id for d in held_reversed} == {d.id for d in held}
    assert len(hold_out(documents, 0.5)[1]) == 20 and len(hold_out(documents[:2], 0.01)[1]) == 1


def test_validation_files_are_the_held_out_text(texts, model_file, tmp_path, capsys):
    held = write_texts(tmp_path / "held", files=3, seed=7)
    out = tmp_path / "run"
    flags = FLAGS + ["--corpus", str(texts), "--tokenizer", str(model_file)]
    pretrain(flags + ["--validation", str(held), "--out", str(out)])
    assert len(json.loads((out / "run.json").read_text())["corpus"]["files"]) == 15
    error = cli_error(pretrain, flags + ["--validation", str(texts / "doc01.txt"), "--out", str(tmp_path / "x")],
                      capsys)
    assert f"{texts / 'doc01.txt'} is in both --corpus and --validation" in error
    error = cli_error(pretrain, flags + ["--validation", str(held), "--holdout-fraction", "0.1", "--out", "x"], capsys)
    assert "give either --validation PATH... (held-out files) or --holdout-fraction" in error


def test_one_file_of_documents_separated_by_blank_lines(texts, model_file, tmp_path, capsys):
    single = tmp_path / "all.txt"
    single.write_text("\n\n".join(p.read_text().replace("\n\n", "\n") for p in sorted(texts.glob("*.txt"))))
    flags = FLAGS + ["--corpus", str(single), "--tokenizer", str(model_file)]
    error = cli_error(pretrain, flags + ["--out", str(tmp_path / "a")], capsys)
    assert "--corpus gives 1 document (with --split-by file), so none can be held out" in error
    assert "--split-by blank-line" in error
    assert pretrain(flags + ["--split-by", "blank-line", "--out", str(tmp_path / "b")]).step == 2


@pytest.mark.parametrize("extra,expected", [
    ([], "--corpus PATH... needs --tokenizer, a SentencePiece model trained on that text: first `albert-mini "
         "tokenizer train --text PATH..."),
    (["austen", "--tokenizer", "t.model"], "--corpus takes one named corpus (austen or synthetic) or your own text "
                                           "paths, not both"),
    (["--tokenizer", "t.model", "--holdout-fraction", "1.5"], "--holdout-fraction must be in (0, 1)"),
])
def test_corpus_flag_errors(texts, extra, expected, capsys, tmp_path):
    assert expected in cli_error(pretrain, FLAGS + ["--corpus", str(texts), *extra, "--out", str(tmp_path / "o")],
                                 capsys)


def test_paths_that_name_no_text_are_one_line_errors(texts, model_file, tmp_path, capsys):
    flags = FLAGS + ["--tokenizer", str(model_file), "--out", str(tmp_path / "o"), "--corpus"]
    assert f"text file {tmp_path / 'absent.txt'} does not exist" in cli_error(
        pretrain, flags + [str(tmp_path / "absent.txt")], capsys)
    assert "matches no file" in cli_error(pretrain, flags + [str(tmp_path / "*.md")], capsys)


def test_decode_errors_name_the_file_the_offset_and_iconv(texts, model_file, tmp_path, capsys):
    latin = texts / "latin.txt"
    latin.write_bytes(b"A line.\nCaf\xe9 noir. Tr\xe8s bien.\n")
    with pytest.raises(CorpusError) as error:
        load_text_files(texts)
    assert str(error.value).startswith(f"{latin} is not UTF-8 text: byte 0xe9 at byte offset 11 (line 2)")
    assert f"`iconv -f latin1 -t utf-8 {latin} > {texts / 'latin.utf8.txt'}`" in str(error.value)
    message = cli_error(pretrain, FLAGS + ["--corpus", str(texts), "--tokenizer", str(model_file), "--out",
                                           str(tmp_path / "o")], capsys)
    assert f"{latin} is not UTF-8 text: byte 0xe9 at byte offset 11" in message
    latin.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")  # a binary file passed as text
    with pytest.raises(CorpusError, match=r"latin.txt is not UTF-8 text: byte 0x89 at byte offset 0"):
        load_text_files(latin)
    latin.write_bytes("Two sentences. In UTF-16.".encode("utf-16-le"))
    with pytest.raises(CorpusError, match=r"holds a NUL byte at byte offset 1 .*iconv -f utf-16"):
        load_text_files(latin)


def test_a_sentence_task_needs_documents_of_two_sentences(model_file, tmp_path, capsys):
    folder = tmp_path / "lines"
    folder.mkdir()
    (folder / "all.txt").write_text("\n\n".join(f"Line number {i} of the text" for i in range(40)))
    flags = FLAGS + ["--corpus", str(folder), "--tokenizer", str(model_file), "--split-by", "blank-line"]
    error = cli_error(pretrain, flags + ["--out", str(tmp_path / "a")], capsys)
    assert "--task sop pairs consecutive sentences of a document, but no document of the training text has two " \
           "sentences; use --task none (MLM only), or --split-by file" in error
    assert pretrain(flags + ["--task", "none", "--holdout-fraction", "0.2", "--out", str(tmp_path / "b")]).step == 2


def test_a_second_run_on_the_same_text_maps_the_token_cache(texts, model_file, tmp_path, monkeypatch):
    from albert_mini.text import token_cache

    monkeypatch.setenv("ALBERT_MINI_CACHE", str(tmp_path / "token-cache"))
    prepared = []
    write = token_cache._write
    monkeypatch.setattr(token_cache, "_write", lambda *args, **kwargs: prepared.append(write(*args, **kwargs)))
    flags = FLAGS + ["--steps", "1", "--corpus", str(texts), "--tokenizer", str(model_file)]
    first = pretrain(flags + ["--out", str(tmp_path / "first")])
    folders = [p for p in (tmp_path / "token-cache").iterdir() if p.is_dir()]
    assert len(prepared) == 1 and len(folders) == 1 and (folders[0] / "manifest.json").is_file()
    second = pretrain(flags + ["--out", str(tmp_path / "second")])
    assert len(prepared) == 1  # mapped, not prepared again
    same = [key for key in first.eval if key != "elapsed_s"]
    assert [second.eval[k] for k in same] == [first.eval[k] for k in same]  # the same batches, the same model
    records = [json.loads((tmp_path / run / "run.json").read_text()) for run in ("first", "second")]
    assert records[0]["corpus"] == records[1]["corpus"]


def test_the_prepare_command_prepares_what_pretrain_then_maps(texts, model_file, tmp_path, monkeypatch, capsys):
    from albert_mini.commands.prepare import main as prepare_command
    from albert_mini.text import token_cache

    monkeypatch.setenv("ALBERT_MINI_CACHE", str(tmp_path / "token-cache"))
    prepare_command(["--corpus", str(texts), "--tokenizer", str(model_file), "--workers", "2", "--quiet"])
    assert "12 documents" in capsys.readouterr().out  # one per file, as pretrain's default --split-by file

    def never(*args, **kwargs):
        raise AssertionError("the text was prepared again")

    monkeypatch.setattr(token_cache, "_write", never)
    pretrain(FLAGS + ["--steps", "1", "--corpus", str(texts), "--tokenizer", str(model_file), "--out",
                      str(tmp_path / "run")])
    assert cli_error(prepare_command, ["--corpus", str(texts), "--tokenizer", str(tmp_path / "none.model")],
                     capsys).startswith("error: tokenizer model")


def test_a_run_on_your_text_resumes_from_the_cache_bit_identically(texts, model_file, tmp_path):
    import shutil

    flags = FLAGS + ["--steps", "3", "--save-every", "1", "--keep", "3", "--corpus", str(texts), "--tokenizer",
                     str(model_file), "--split-by", "file"]
    for run in ("straight", "resumed"):
        pretrain(flags + ["--out", str(tmp_path / run)])
    shutil.rmtree(tmp_path / "resumed" / "checkpoints" / "step-0000003")  # as if killed before saving step 3
    pretrain(flags + ["--out", str(tmp_path / "resumed")])
    files = sorted(p.name for p in (tmp_path / "straight" / "checkpoints" / "step-0000003").iterdir())
    assert files and files == sorted(p.name for p in (tmp_path / "resumed" / "checkpoints" / "step-0000003").iterdir())
    # Weights and optimizer state byte for byte; the trainer state differs only in timings and its folder.
    weights = [name for name in files if name.endswith(".safetensors")]
    assert weights
    for name in weights:
        assert ((tmp_path / "straight" / "checkpoints" / "step-0000003" / name).read_bytes()
                == (tmp_path / "resumed" / "checkpoints" / "step-0000003" / name).read_bytes()), name


def test_a_utf16_file_with_its_byte_order_mark_gets_utf16_advice(texts):
    wide = texts / "wide.txt"
    wide.write_bytes("A line.\nCafé noir.\n".encode("utf-16"))  # Python writes the BOM first
    with pytest.raises(CorpusError) as error:
        load_text_files(wide)
    message = str(error.value)
    assert message.startswith(f"{wide} is UTF-16 text (it starts with a UTF-16 byte-order mark)")
    assert f"`iconv -f utf-16 -t utf-8 {wide} > {texts / 'wide.utf8.txt'}`" in message and "latin1" not in message
