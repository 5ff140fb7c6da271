"""Silent corners of the library refused where they enter it: non-finite or negative rates and norms, fractional
step counts, a batch of no example given labels, masks on another device or of the wrong shape."""

import math

import pytest
import torch

from albert_mini import AlbertConfig
from albert_mini.model.albert import AlbertModel
from albert_mini.model.heads import (
    AlbertForMultipleChoice,
    AlbertForQuestionAnswering,
    AlbertForSequenceClassification,
)
from albert_mini.tasks.finetuning import FinetuneSettings
from albert_mini.training.optim import Lamb, WarmupPolyDecay, build_optimizer, clip_grad_global_norm
from albert_mini.training.trainer import TrainConfig, _to_device

CONFIG = AlbertConfig.from_preset("albert-nano")
BAD_RATES = [math.nan, math.inf, -math.inf, -1.0]


@pytest.mark.parametrize("lr", BAD_RATES)
def test_a_rate_that_is_not_a_finite_number_at_least_0_is_refused_where_it_enters(lr):
    weights = [torch.nn.Parameter(torch.zeros(2))]
    with pytest.raises(ValueError, match="learning rate must be a finite number >= 0"):
        Lamb(weights, lr=lr)
    for name in ("lamb", "adamw"):
        with pytest.raises(ValueError, match="learning rate must be a finite number >= 0"):
            build_optimizer(torch.nn.Linear(2, 2), name, lr=lr)
    with pytest.raises(ValueError, match="peak_lr must be a finite number >= 0"):
        WarmupPolyDecay(lr, 10)
    with pytest.raises(ValueError, match="lr must be a finite number >= 0"):
        FinetuneSettings(steps=2, batch_size=2, lr=lr)


@pytest.mark.parametrize("max_norm", [math.nan, -1.0, 0.0])
def test_a_clipping_limit_that_could_not_clip_is_refused(max_norm):
    weight = torch.nn.Parameter(torch.ones(3))
    weight.grad = torch.full((3,), 10.0)
    with pytest.raises(ValueError, match="max_norm must be > 0"):
        clip_grad_global_norm([weight], max_norm)
    assert torch.equal(weight.grad, torch.full((3,), 10.0))  # untouched
    assert clip_grad_global_norm([weight], math.inf) == pytest.approx(math.sqrt(300))  # no clipping: allowed


def test_a_fractional_step_count_is_refused_and_a_whole_float_is_not():
    for make in (lambda n: TrainConfig(max_steps=n), lambda n: WarmupPolyDecay(1e-3, n),
                 lambda n: FinetuneSettings(steps=n, batch_size=2)):
        with pytest.raises(ValueError, match="must be a whole number, got 5.5"):
            make(5.5)
        make(6.0)
        make(6)


def labelled_heads():
    torch.manual_seed(0)
    ids = torch.zeros(0, 8, dtype=torch.long)
    return [(AlbertForSequenceClassification(CONFIG, 2), dict(input_ids=ids, labels=torch.zeros(0, dtype=torch.long))),
            (AlbertForMultipleChoice(CONFIG), dict(input_ids=torch.zeros(0, 3, 8, dtype=torch.long),
                                                   labels=torch.zeros(0, dtype=torch.long))),
            (AlbertForQuestionAnswering(CONFIG), dict(input_ids=ids, start_positions=torch.zeros(0, dtype=torch.long),
                                                      end_positions=torch.zeros(0, dtype=torch.long)))]


def test_an_empty_batch_with_labels_is_refused_by_every_head_and_the_trainer():
    for model, batch in labelled_heads():
        with pytest.raises(ValueError, match="hold no example"):
            model(**batch)
    empty = {k: torch.zeros(0, 8, dtype=torch.long) for k in ("input_ids", "attention_mask", "token_type_ids",
                                                               "labels")}
    with pytest.raises(ValueError, match="a batch holds no sequence"):
        _to_device(empty, torch.device("cpu"))
    from albert_mini.model.albert import AlbertForPreTraining

    pretraining = AlbertForPreTraining(CONFIG)
    for labels in ({"labels": empty["labels"]}, {"sentence_order_label": torch.zeros(0, dtype=torch.long)}):
        with pytest.raises(ValueError, match="an empty batch"):
            pretraining(empty["input_ids"], **labels)
    assert pretraining(empty["input_ids"]).mlm_logits.shape[0] == 0  # without labels there is no loss to average


def test_a_mask_on_another_device_is_refused_naming_both_devices():
    torch.manual_seed(0)
    model = AlbertModel(CONFIG).eval()
    ids = torch.randint(5, CONFIG.vocab_size, (2, 8))
    with pytest.raises(ValueError, match="attention_mask is on meta and input_ids on cpu"):
        model(ids, torch.ones(2, 8, dtype=torch.long, device="meta"))
    head = AlbertForSequenceClassification(CONFIG, 2).eval()
    with pytest.raises(ValueError, match="attention_mask is on meta"):
        head(ids, torch.ones(2, 8, dtype=torch.long, device="meta"))


def test_the_multiple_choice_head_names_a_mask_of_the_wrong_shape():
    torch.manual_seed(0)
    model = AlbertForMultipleChoice(CONFIG).eval()
    ids = torch.randint(5, CONFIG.vocab_size, (2, 3, 8))
    with pytest.raises(ValueError, match=r"attention_mask of the shape of input_ids, \(2, 3, 8\), got \(6, 8\)"):
        model(ids, torch.ones(6, 8, dtype=torch.long))
    assert model(ids, torch.ones(2, 3, 8, dtype=torch.long)).logits.shape == (2, 3)
