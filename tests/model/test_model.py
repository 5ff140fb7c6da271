"""Model behaviour that needs no reference implementation: sharing, shapes, teaching paths."""

import pytest
import torch

from albert_mini import (
    AlbertConfig,
    AlbertForMultipleChoice,
    AlbertForPreTraining,
    AlbertForSequenceClassification,
    AlbertModel,
    count_parameters,
)
from albert_mini.model.albert import attention_math


def nano(**changes):
    return AlbertConfig.from_preset("albert-nano", **changes)


def test_shapes_and_hidden_states():
    config = nano(num_hidden_layers=4)
    model = AlbertModel(config).eval()
    ids = torch.randint(5, config.vocab_size, (2, 9))
    out = model(ids, output_hidden_states=True)
    assert out.last_hidden_state.shape == (2, 9, config.hidden_size)
    assert out.pooler_output.shape == (2, config.hidden_size)
    assert len(out.hidden_states) == 5 and torch.equal(out.hidden_states[-1], out.last_hidden_state)


@pytest.mark.parametrize("sharing,groups", [("all", 1), ("attention", 1), ("ffn", 1), ("none", 4)])
def test_sharing_strategies_share_the_right_modules(sharing, groups):
    config = nano(num_hidden_layers=4, sharing=sharing, num_hidden_groups=groups)
    model = AlbertModel(config)
    layers = [model.encoder.albert_layer_groups[g].albert_layers[0] for g in model.encoder.layer_plan()]
    same_attention = all(layer.attention is layers[0].attention for layer in layers)
    same_ffn = all(layer.ffn is layers[0].ffn and layer.ffn_output is layers[0].ffn_output for layer in layers)
    assert same_attention == (sharing in ("all", "attention"))
    assert same_ffn == (sharing in ("all", "ffn"))


def test_shared_weights_get_gradient_from_every_layer():
    """The gradient of a shared weight is the sum of the gradients its L applications would get unshared."""
    shared = AlbertForPreTraining(nano(num_hidden_layers=3))
    unshared = AlbertForPreTraining(nano(num_hidden_layers=3, sharing="none", num_hidden_groups=3))
    prefix = "albert.encoder.albert_layer_groups."
    state = {}
    for name, tensor in shared.state_dict().items():  # the same weights, one copy per layer in the unshared model
        names = [name.replace(prefix + "0.", f"{prefix}{g}.") for g in range(3)] if name.startswith(prefix) else [name]
        state.update({n: tensor.clone() for n in names})
    unshared.load_state_dict(state)
    ids = torch.randint(5, 8000, (2, 8))
    for model in (shared, unshared):
        model(ids).sentence_logits.sum().backward()
    for param in ("ffn.weight", "attention.query.weight", "full_layer_layer_norm.weight"):
        per_layer = [unshared.get_parameter(f"{prefix}{g}.albert_layers.0.{param}").grad for g in range(3)]
        assert all(g.abs().sum() > 0 for g in per_layer) and not torch.allclose(per_layer[0], per_layer[1])
        summed = shared.get_parameter(f"{prefix}0.albert_layers.0.{param}").grad
        assert torch.allclose(summed, sum(per_layer), rtol=1e-4, atol=1e-7), param


def test_layer_plan_groups_and_inner_layers():
    config = nano(num_hidden_layers=6, num_hidden_groups=3, inner_group_num=2)
    model = AlbertModel(config)
    assert model.encoder.layer_plan() == [0, 0, 1, 1, 2, 2]
    assert all(len(g.albert_layers) == 2 for g in model.encoder.albert_layer_groups)


def test_explicit_attention_equals_sdpa():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 8, generator=g) for _ in range(3))
    bias = torch.zeros(2, 1, 1, 5)
    bias[1, ..., 3:] = torch.finfo(torch.float32).min
    context, weights = attention_math(q, k, v, bias)
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    assert torch.allclose(context, expected, atol=1e-6)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 3, 5))
    assert weights[1, :, :, 3:].abs().max() == 0


def test_output_attentions_does_not_change_outputs():
    model = AlbertModel(nano()).eval()
    ids = torch.randint(5, 8000, (2, 7))
    a = model(ids).last_hidden_state
    b = model(ids, output_attentions=True)
    assert torch.allclose(a, b.last_hidden_state, atol=1e-6) and len(b.attentions) == 2


def test_padding_does_not_change_real_tokens():
    model = AlbertModel(nano()).eval()
    ids = torch.randint(5, 8000, (1, 6))
    padded = torch.cat([ids, torch.zeros(1, 4, dtype=torch.long)], dim=1)
    mask = torch.cat([torch.ones(1, 6), torch.zeros(1, 4)], dim=1)
    short = model(ids).last_hidden_state
    long = model(padded, attention_mask=mask).last_hidden_state[:, :6]
    assert torch.allclose(short, long, atol=1e-5)


def test_mlm_logits_only_at_masked_positions_and_tied_decoder():
    model = AlbertForPreTraining(nano())
    assert model.predictions.decoder.weight is model.albert.embeddings.word_embeddings.weight
    ids = torch.randint(5, 8000, (2, 10))
    labels = torch.full_like(ids, -100)
    labels[0, 3] = 42
    out = model(ids, labels=labels, sentence_order_label=torch.tensor([0, 1]))
    assert out.mlm_logits.shape == (2, 1, 8000) and out.mlm_labels.tolist() == [[42], [-100]]
    assert torch.isclose(out.loss, out.mlm_loss + out.sentence_loss)
    full = model(ids).mlm_logits
    assert torch.allclose(full[0, 3], out.mlm_logits[0, 0], atol=1e-5)


@pytest.mark.parametrize("max_predictions", [None, 4])
def test_mlm_logits_are_b_p_v_with_the_masked_positions_first_in_order(max_predictions):
    """One shape in every call: (B, T, V) without labels; with them (B, P, V), each row's masked positions in
    order, then padding labelled IGNORE_INDEX, P being max_predictions or else the batch's largest count."""
    torch.manual_seed(0)
    model = AlbertForPreTraining(nano()).eval()
    ids = torch.randint(5, 8000, (3, 10))
    labels = torch.full_like(ids, -100)
    labels[0, 7], labels[0, 2], labels[2, 1], labels[2, 5], labels[2, 9] = 11, 12, 13, 14, 15
    with torch.no_grad():
        full = model(ids).mlm_logits
        out = model(ids, labels=labels, max_predictions=max_predictions)
    assert full.shape == (3, 10, 8000)
    assert out.mlm_logits.shape == (3, max_predictions or 3, 8000)
    pad = [-100] * ((max_predictions or 3) - 3)
    assert out.mlm_labels.tolist() == [[12, 11, -100] + pad, [-100] * 3 + pad, [13, 14, 15] + pad]
    scored = out.mlm_labels != -100
    torch.testing.assert_close(out.mlm_logits[scored], full[labels != -100], rtol=1e-5, atol=1e-5)
    assert int(out.mlm_count) == 5


def test_no_masked_tokens_gives_zero_mlm_loss():
    model = AlbertForPreTraining(nano())
    ids = torch.randint(5, 8000, (2, 10))
    out = model(ids, labels=torch.full_like(ids, -100))
    assert out.mlm_loss.item() == 0.0 and out.loss.requires_grad
    assert int(out.mlm_count) == 0 and out.mlm_loss_sum.item() == 0.0 and out.mlm_loss_sum.requires_grad
    assert out.mlm_logits.shape == (2, 0, 8000)


def test_losses_come_as_sums_and_counts_beside_the_means():
    model = AlbertForPreTraining(nano())
    ids = torch.randint(5, 8000, (3, 10))
    labels = torch.full_like(ids, -100)
    labels[0, 2], labels[1, 5], labels[2, 7], labels[2, 8] = 11, 12, 13, 14
    sentence = torch.tensor([0, 1, 1])
    out = model(ids, labels=labels, sentence_order_label=sentence)
    assert (int(out.mlm_count), out.sentence_count) == (4, 3)
    masked = out.mlm_logits[out.mlm_labels != -100]  # (4, V), row-major
    per_token = torch.nn.functional.cross_entropy(masked, labels[labels != -100], reduction="none")
    assert torch.allclose(out.mlm_loss_sum, per_token.sum()) and torch.allclose(out.mlm_loss, per_token.mean())
    per_sequence = torch.nn.functional.cross_entropy(out.sentence_logits, sentence, reduction="none")
    assert torch.allclose(out.sentence_loss_sum, per_sequence.sum())
    assert torch.allclose(out.sentence_loss, per_sequence.mean())


@pytest.mark.parametrize("head", [AlbertForPreTraining, AlbertForSequenceClassification, AlbertForMultipleChoice])
def test_every_tensor_is_initialised_once(head):
    """A head's encoder is exactly the AlbertModel the same seed gives: the head does not draw it again."""
    config = nano(num_hidden_layers=3)
    torch.manual_seed(7)
    encoder = AlbertModel(config)
    torch.manual_seed(7)
    model = head(config)
    assert model.albert.state_dict().keys() == encoder.state_dict().keys()
    assert all(torch.equal(t, model.albert.state_dict()[k]) for k, t in encoder.state_dict().items())
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.LayerNorm):
            assert torch.equal(module.weight, torch.ones_like(module.weight)), name
        if isinstance(module, torch.nn.Linear) and module.bias is not None:
            assert not module.bias.any(), name
    new = [p for n, p in model.named_parameters() if not n.startswith("albert.") and p.dim() == 2]
    assert new and all(0.015 < float(p.detach().std()) < 0.025 for p in new)  # Normal(0, 0.02), not torch's default


def test_too_long_input_is_a_clear_error():
    model = AlbertModel(nano())
    with pytest.raises(ValueError, match="exceeds max_position_embeddings 128"):
        model(torch.zeros(1, 129, dtype=torch.long))


def test_meta_device_builds_the_largest_config_without_memory():
    config = AlbertConfig.from_preset("bert-xlarge")
    with torch.device("meta"):
        model = AlbertModel(config)
    assert count_parameters(model) == count_parameters(config)
