"""Where the trainer shows its progress bar: a Jupyter kernel gets tqdm.auto's widget, CI and `make book` none."""

import pytest
import torch

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.settings import STATIC_ENV
from albert_mini.text.synthetic import SyntheticBatches
from albert_mini.training.shell import console as trainer_module
from albert_mini.training.trainer import TrainConfig, train


def bar_shown(monkeypatch, in_kernel: bool, ci: bool, static: bool) -> bool:
    """Train one step of albert-nano and say whether the trainer enabled its bar."""
    made = []
    real = trainer_module.tqdm

    def recording(*args, **kwargs):
        made.append(not kwargs.get("disable", False))
        kwargs["disable"] = True  # record the decision, draw nothing in the test's output
        return real(*args, **kwargs)

    monkeypatch.setattr(trainer_module, "tqdm", recording)
    monkeypatch.setattr(trainer_module, "_in_kernel", lambda: in_kernel)
    monkeypatch.setenv("CI", "true" if ci else "")
    monkeypatch.setenv(STATIC_ENV, "1" if static else "0")
    torch.manual_seed(0)
    config = AlbertConfig.from_preset("albert-nano")
    train(AlbertForPreTraining(config), SyntheticBatches(config.vocab_size, 2, 16),
          TrainConfig(max_steps=1, progress=True))
    return made == [True]


@pytest.mark.parametrize(("ci", "static", "shown"), [
    (False, False, True),  # JupyterLab: a widget bar
    (True, False, False),  # CI executes the chapters: no bar
    (False, True, False),  # make book: committed outputs hold no bar
])
def test_bar_in_a_kernel_only_outside_ci_and_the_book(monkeypatch, ci, static, shown):
    assert bar_shown(monkeypatch, True, ci, static) is shown


def test_tqdm_auto_picks_the_bar():
    assert trainer_module.tqdm.__module__ in ("tqdm.auto", "tqdm.asyncio", "tqdm.notebook", "tqdm.std")
    import tqdm.auto

    assert trainer_module.tqdm is tqdm.auto.tqdm
