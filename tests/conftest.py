"""Every test starts from the same random state, so no result depends on test order; shared fixtures."""

import os
import random

import numpy as np
import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def _token_cache_in_a_temp_folder(tmp_path_factory):
    """Texts prepared by tests go to a folder of the session, never the checkout's cache/ (commands that tests
    run in subprocesses inherit the variable)."""
    before = os.environ.get("ALBERT_MINI_CACHE")
    os.environ["ALBERT_MINI_CACHE"] = str(tmp_path_factory.mktemp("token-cache"))
    yield
    if before is None:
        os.environ.pop("ALBERT_MINI_CACHE", None)
    else:
        os.environ["ALBERT_MINI_CACHE"] = before


@pytest.fixture(autouse=True)
def _seed_everything():
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    yield


@pytest.fixture(scope="session")
def model_file(tmp_path_factory):
    """A SentencePiece model trained on generated texts with the tokenizer CLI (step one of the two-step flow)."""
    from albert_mini.commands.tokenizer import main as tokenizer_cli
    from user_text import write_texts

    folder = write_texts(tmp_path_factory.mktemp("user-text") / "texts")
    out = folder.parent / "texts.model"
    tokenizer_cli(["train", "--text", str(folder), "--vocab-size", "100", "--out", str(out)])
    return out


@pytest.fixture
def one_thread():
    """Small models run fastest, and steadiest on a shared machine, on one thread; modules opt in with pytestmark."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def polarity_data():
    """Pang & Lee's sentences in cache/polarity; absent, the test skips naming the command (under CI it fails)."""
    from albert_mini.tasks.polarity import CACHE_DIR, SENTENCES_FILE

    path = CACHE_DIR / SENTENCES_FILE
    if not path.is_file():
        message = (f"needs the polarity sentences in {path}: run `make polarity` once "
                   "(or albert-mini polarity; make test does it first)")
        if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
            pytest.fail(message)
        pytest.skip(message)
    return path
