"""The tokenizer must be shown to be the model's: its sha256 in the run record, or the model
folder's own spiece.model; a folder with neither is refused, naming --tokenizer."""

from __future__ import annotations

import json
import shutil

import pytest

from albert_mini.paths import PRETRAINED_MODEL
from albert_mini.tasks.finetuning import TokenizerMismatch, check_tokenizer
from albert_mini.text.tokenizer import Tokenizer
from albert_mini.training.checkpoint import CheckpointError

AUSTEN = PRETRAINED_MODEL.parent.parent / "austen" / "spiece.model"


@pytest.fixture
def unrecorded(tmp_path):
    """The shipped model without its run.json: nothing records which tokenizer it was trained with."""
    model = shutil.copytree(PRETRAINED_MODEL, tmp_path / "model")
    (model / "run.json").unlink()
    return model


def test_the_shipped_model_and_its_tokenizer_match():
    check_tokenizer(PRETRAINED_MODEL, Tokenizer.default())


def test_a_folder_without_a_record_or_a_spiece_model_is_refused_naming_tokenizer(unrecorded):
    with pytest.raises(TokenizerMismatch) as err:
        check_tokenizer(unrecorded, Tokenizer.default())  # the right size, and even the right file: unproven
    message = str(err.value)
    assert "nothing shows" in message and f"--tokenizer {unrecorded / 'spiece.model'}" in message


def test_the_folders_own_spiece_model_is_the_proof(unrecorded, tmp_path):
    shutil.copyfile(AUSTEN, unrecorded / "spiece.model")
    check_tokenizer(unrecorded, Tokenizer.from_file(unrecorded / "spiece.model"))
    check_tokenizer(unrecorded, Tokenizer.default())  # the same bytes elsewhere
    check_tokenizer(unrecorded, Tokenizer.from_bytes(AUSTEN.read_bytes()))  # in memory: its proto's sha256


def test_another_file_than_the_folders_spiece_model_is_refused(unrecorded, tmp_path):
    data = bytearray(AUSTEN.read_bytes())
    (unrecorded / "spiece.model").write_bytes(bytes(data) + b"\n")  # other bytes, same pieces count
    with pytest.raises(TokenizerMismatch, match=f"pass --tokenizer {unrecorded / 'spiece.model'}"):
        check_tokenizer(unrecorded, Tokenizer.default())


@pytest.mark.parametrize("tokenizer", ["data/austen/spiece.model", ["a"], {"sha256": 5}, {"path": 3}])
def test_a_malformed_tokenizer_record_is_one_error(unrecorded, tokenizer):
    (unrecorded / "run.json").write_text(json.dumps({"kind": "pretrain", "tokenizer": tokenizer}))
    with pytest.raises(CheckpointError, match="is not an object with the tokenizer's path and sha256"):
        check_tokenizer(unrecorded, Tokenizer.default())


def test_a_run_json_that_is_not_an_object_is_no_record(unrecorded):
    (unrecorded / "run.json").write_text("[1, 2]")
    with pytest.raises(TokenizerMismatch, match="nothing shows"):
        check_tokenizer(unrecorded, Tokenizer.default())


def test_a_hugging_face_folder_needs_its_spiece_model(tmp_path):
    transformers = pytest.importorskip("transformers")
    from albert_mini import AlbertConfig
    from albert_mini.model.hf import config_to_hf

    config = AlbertConfig(vocab_size=8000, embedding_size=8, hidden_size=16, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=32, max_position_embeddings=32)
    folder = tmp_path / "hf"
    transformers.AlbertForPreTraining(config_to_hf(config)).save_pretrained(folder)
    with pytest.raises(TokenizerMismatch, match="nothing shows"):
        check_tokenizer(folder, Tokenizer.default())
    shutil.copyfile(AUSTEN, folder / "spiece.model")
    check_tokenizer(folder, Tokenizer.default())
