"""Memory accounting: the closed form equals what autograd really keeps, and sharing saves what it should."""

import pytest
import torch

from albert_mini import AlbertConfig, AlbertForPreTraining, count_parameters
from albert_mini.study.memory import activation_bytes, measure_activation_bytes, training_memory


def batch_for(config, B, T, masked, padded=False, uneven=False):
    """`masked` tokens per sequence (`uneven`: the i-th sequence masks `masked` - i, at least 1)."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, config.vocab_size, (B, T), generator=g)
    labels = torch.full_like(ids, -100)
    for row in range(B):
        where = torch.randperm(T - 1, generator=g)[:max(masked - row, 1) if uneven else masked] + 1
        labels[row, where] = ids[row, where]
    mask = torch.ones_like(ids)
    if padded:
        mask[0, T // 2:] = 0
    return dict(input_ids=ids, token_type_ids=torch.zeros_like(ids), attention_mask=mask, labels=labels,
                sentence_order_label=torch.zeros(B, dtype=torch.long))


@pytest.mark.parametrize("preset,changes,B,T,masked,padded", [
    ("albert-nano", {}, 2, 16, 3, False),
    ("albert-nano", dict(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2), 3, 24, 4, False),
    ("albert-nano", {}, 2, 16, 3, True),
    ("albert-mini", {}, 4, 64, 10, False),
    ("bert-mini", {}, 2, 32, 5, False),
])
def test_closed_form_matches_measured(preset, changes, B, T, masked, padded):
    config = AlbertConfig.from_preset(preset, **changes)
    model = AlbertForPreTraining(config).train()
    measured = measure_activation_bytes(model, batch_for(config, B, T, masked, padded))
    assert activation_bytes(config, B, T, masked, padded=padded) == measured


@pytest.mark.parametrize("max_predictions,P", [(None, 4), (7, 7)])
def test_closed_form_counts_the_mlm_heads_padding_rows(max_predictions, P):
    """Sequences masking 4, 3, 2 and 1 tokens: the head runs at P positions of each (the largest count, or the
    cap given), padding included, and the closed form at P counts what autograd keeps."""
    config = AlbertConfig.from_preset("albert-nano")
    model = AlbertForPreTraining(config).train()
    batch = batch_for(config, 4, 16, 4, uneven=True)
    measured = measure_activation_bytes(model, {**batch, "max_predictions": max_predictions})
    assert activation_bytes(config, 4, 16, P) == measured
    assert activation_bytes(config, 4, 16, P - 1) < measured  # the padding rows are counted, not left out


def test_sharing_saves_parameters_not_activations():
    albert = AlbertConfig.from_preset("albert-mini")
    unshared = albert.replace(sharing="none", num_hidden_groups=albert.num_hidden_layers)
    a, b = training_memory(albert, 32, 128), training_memory(unshared, 32, 128)
    assert a.activations == b.activations
    assert a.parameters < b.parameters and a.optimizer_states == 2 * a.parameters
    assert a.parameters == 4 * count_parameters(albert, heads=True)


def test_bad_optimizer_name():
    with pytest.raises(ValueError, match="unknown optimizer 'adam'"):
        training_memory(AlbertConfig.from_preset("albert-nano"), 1, 8, optimizer="adam")


def test_parameter_bytes_count_weights_gradients_and_optimizer_states():
    from albert_mini.study.memory import OPTIMIZER_STATES, parameter_bytes

    assert [parameter_bytes(10, name) for name in ("sgd", "momentum", "adamw", "lamb")] == [80, 120, 160, 160]
    assert OPTIMIZER_STATES["lamb"] == 2  # m and v
    report = training_memory(AlbertConfig.from_preset("albert-nano"), 2, 16)
    n = count_parameters(AlbertConfig.from_preset("albert-nano"), heads=True)
    assert report.parameters + report.gradients + report.optimizer_states == parameter_bytes(n, "lamb")
    with pytest.raises(ValueError, match="unknown optimizer 'adam'"):
        parameter_bytes(10, "adam")

