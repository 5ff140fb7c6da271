"""The plain pretraining loop gives exactly the numbers of the Trainer on one process."""

import pytest
import torch

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.text.synthetic import SyntheticBatches
from albert_mini.training.loop import pretraining_loop
from albert_mini.training.objectives import PretrainingObjective
from albert_mini.training.optim import WarmupPolyDecay, build_optimizer
from albert_mini.training.trainer import TrainConfig, train

# Dropout on, so that the loop must also draw the same random numbers as the Trainer.
CONFIG = AlbertConfig.from_preset("albert-nano", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
STEPS, LR, WARMUP = 6, 2e-3, 2

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


class RecordingObjective(PretrainingObjective):
    """Pretraining's objective, keeping the loss of every micro-batch."""

    def __init__(self):
        self.losses = []

    def __call__(self, out, batch, denominators):
        loss, stats = super().__call__(out, batch, denominators)
        self.losses.append(loss.item())
        return loss, stats


def fresh_model():
    torch.manual_seed(0)
    return AlbertForPreTraining(CONFIG)


@pytest.mark.parametrize("optimizer,clip_norm", [("lamb", 1.0), ("adamw", 0.05), ("lamb", None)])
def test_loop_gives_the_losses_and_weights_of_the_trainer(optimizer, clip_norm):
    source = dict(vocab_size=CONFIG.vocab_size, batch_size=4, seq_len=32, seed=5)
    model = fresh_model()
    torch.manual_seed(1)  # dropout
    losses = pretraining_loop(model, SyntheticBatches(**source), build_optimizer(model, optimizer, lr=LR),
                              WarmupPolyDecay(LR, STEPS, WARMUP), STEPS, clip_norm)

    reference, objective = fresh_model(), RecordingObjective()
    torch.manual_seed(1)
    result = train(reference, SyntheticBatches(**source), TrainConfig(max_steps=STEPS, clip_norm=clip_norm,
                                                                      progress=False),
                   optimizer=optimizer, lr=LR, warmup_steps=WARMUP, objective=objective)

    assert result.step == STEPS and len(losses) == STEPS
    assert losses == objective.losses  # bit for bit
    assert len(set(losses)) == STEPS  # the weights moved every step
    for (name, ours), theirs in zip(model.state_dict().items(), reference.state_dict().values()):
        assert torch.equal(ours, theirs), name
