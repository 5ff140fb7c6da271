"""The attention mask becomes a bias without reading the mask on the host, and outputs stay as they were."""

import pytest
import torch

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.model import albert


def previous_extended_attention_mask(attention_mask, dtype):
    """The mask handling this replaced: an all-ones mask was dropped after asking the host whether it was."""
    if attention_mask is None or bool(attention_mask.all()):
        return None
    keep = attention_mask[:, None, None, :].to(torch.bool)
    return torch.zeros(keep.shape, dtype=dtype, device=keep.device).masked_fill(~keep, torch.finfo(dtype).min)


def bias_always(attention_mask, dtype):
    """What a GPU does: every mask becomes a bias, without asking whether it keeps everything."""
    keep = attention_mask[:, None, None, :].to(torch.bool)
    return torch.zeros(keep.shape, dtype=dtype, device=keep.device).masked_fill(~keep, torch.finfo(dtype).min)


def batch(padded: bool):
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(5, 8000, (3, 37), generator=g)
    mask = torch.ones_like(ids)
    if padded:
        mask[1, 20:] = mask[2, 9:] = 0
        ids[mask == 0] = 0
    labels = torch.full_like(ids, -100)
    labels[:, 4] = ids[:, 4]
    return ids, mask, labels


def outputs(model, ids, mask, labels):
    torch.manual_seed(11)  # the same dropout draws in both runs
    out = model(ids, attention_mask=mask, labels=labels, sentence_order_label=torch.tensor([0, 1, 0]))
    return out.loss, out.mlm_logits, out.sentence_logits


@pytest.mark.parametrize("other", [previous_extended_attention_mask, bias_always], ids=["previous", "gpu-path"])
@pytest.mark.parametrize("padded", [False, True], ids=["no-padding", "padding"])
@pytest.mark.parametrize("train", [False, True], ids=["eval", "train-dropout"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_outputs_match_the_previous_mask_handling_exactly(monkeypatch, other, padded, train, dtype):
    config = AlbertConfig.from_preset("albert-nano", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    torch.manual_seed(0)
    model = AlbertForPreTraining(config).to(dtype).train(train)
    ids, mask, labels = batch(padded)
    now = outputs(model, ids, mask, labels)
    monkeypatch.setattr(albert, "extended_attention_mask", other)
    before = outputs(model, ids, mask, labels)
    assert all(torch.equal(a, b) for a, b in zip(now, before))


def test_mask_becomes_a_bias_without_reading_its_values():
    # Meta tensors have no values: any host read (bool, item) of the mask would raise here.
    bias = albert.extended_attention_mask(torch.ones(2, 5, device="meta"), torch.float32)
    assert bias.shape == (2, 1, 1, 5) and bias.device.type == "meta"
    with torch.device("meta"):
        model = AlbertForPreTraining(AlbertConfig.from_preset("albert-nano"))
        ids = torch.zeros(2, 9, dtype=torch.long)
        out = model(ids, attention_mask=torch.ones(2, 9))
    assert out.mlm_logits.shape == (2, 9, 8000)


def test_only_a_mask_that_hides_something_gives_a_bias_on_the_cpu():
    assert albert.extended_attention_mask(None, torch.float32) is None
    assert albert.extended_attention_mask(torch.ones(2, 5), torch.float32) is None  # SDPA's unmasked path
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    bias = albert.extended_attention_mask(mask, torch.float32)
    assert bias.shape == (2, 1, 1, 5) and (bias[0, 0, 0, 3:] == torch.finfo(torch.float32).min).all()
    assert not bias[0, 0, 0, :3].any() and not bias[1].any()
