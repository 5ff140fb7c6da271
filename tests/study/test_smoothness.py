"""Smoothness (Figure 1) on hand-built models whose answer is known."""


import pytest
import torch
from torch import nn

from albert_mini import AlbertConfig, AlbertModel
from albert_mini.study.smoothness import layer_distances, layer_smoothness


class Scale(nn.Module):
    """A stand-in layer group: multiplies its input by a constant (or rotates it)."""

    def __init__(self, factor=1.0, rotate=False):
        super().__init__()
        self.factor, self.rotate = factor, rotate

    def forward(self, h, mask_bias=None, output_attentions=False):
        out = torch.stack([-h[..., 1], h[..., 0]], dim=-1) if self.rotate else h * self.factor
        return out, []


def model_with(groups, hidden=2, layers=None):
    config = AlbertConfig.from_preset("albert-nano", hidden_size=hidden, num_attention_heads=1,
                                      num_hidden_layers=layers or len(groups), num_hidden_groups=len(groups),
                                      sharing="none" if len(groups) > 1 else "all")
    torch.manual_seed(0)
    model = AlbertModel(config)
    model.encoder.albert_layer_groups = nn.ModuleList(groups)
    return model


def batch(pad_last=True):
    ids = torch.randint(5, 8000, (2, 6), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(ids)
    if pad_last:
        mask[1, 3:] = 0
    return {"input_ids": ids, "attention_mask": mask}


def test_identity_layers_give_zero():
    result = layer_smoothness(model_with([Scale(1.0)], layers=3), [batch()])
    assert result.l2 == [0.0, 0.0, 0.0]
    assert result.degrees == [0.0, 0.0, 0.0]
    assert result.tokens == 9


def test_scaling_gives_zero_angle_and_known_distance():
    model = model_with([Scale(2.0), Scale(1.0)], hidden=2)
    b = batch()
    with torch.no_grad():
        h0 = model(**b, output_hidden_states=True).hidden_states[0]
    keep = b["attention_mask"].bool()
    expected = h0.norm(dim=-1)[keep].mean().item()  # ||2h - h|| = ||h||
    result = layer_smoothness(model, [b])
    assert result.l2[0] == pytest.approx(expected, rel=1e-5) and result.l2[1] == 0.0
    assert result.degrees[0] < 1e-4


def test_rotation_by_ninety_degrees():
    result = layer_smoothness(model_with([Scale(rotate=True)], hidden=2, layers=2), [batch(pad_last=False)])
    assert result.degrees == pytest.approx([90.0, 90.0], abs=1e-3)


def test_pad_tokens_are_excluded():
    model = model_with([Scale(3.0)], hidden=2, layers=1)
    b = batch()
    with torch.no_grad():
        h0 = model(**b, output_hidden_states=True).hidden_states[0]
    expected = (2 * h0.norm(dim=-1))[b["attention_mask"].bool()].mean().item()
    assert layer_smoothness(model, [b]).l2[0] == pytest.approx(expected, rel=1e-5)


def test_helpers_and_errors():
    a, b = torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0])
    l2, deg = layer_distances(a[None], b[None])
    assert l2.item() == pytest.approx(1.0) and deg.item() == pytest.approx(45.0, abs=1e-4)
    with pytest.raises(ValueError, match="no tokens"):
        layer_smoothness(model_with([Scale()]), [])
    assert layer_distances(a[None], -a[None])[1].item() == pytest.approx(180.0)  # exact where arccos is not
