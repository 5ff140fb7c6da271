"""The fine-tuning heads compute what HF's AlbertFor{SequenceClassification,MultipleChoice,QuestionAnswering} do."""

import pytest
import torch

transformers = pytest.importorskip("transformers")  # a test/interop dependency, installed by `make test`

from test_hf_parity import CONFIGS, random_batch  # noqa: E402

import albert_mini  # noqa: E402
from albert_mini import AlbertConfig  # noqa: E402
from albert_mini.model.hf import config_to_hf, from_hf, to_hf  # noqa: E402

TOL = 1e-5
HEADS = ["AlbertForSequenceClassification", "AlbertForMultipleChoice", "AlbertForQuestionAnswering"]


def hf_head(kind, config, seed, num_labels=3):
    """An HF head model with random, non-default weights, including LayerNorms and biases."""
    torch.manual_seed(seed)
    extra = {"num_labels": num_labels} if kind == "AlbertForSequenceClassification" else {}
    hf = getattr(transformers, kind)(config_to_hf(config, **extra)).eval()
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                p.add_(0.1 * torch.randn_like(p))
    return hf


def inputs_and_targets(kind, config, seed):
    ids, types, mask = random_batch(config, batch=4 if kind == "AlbertForMultipleChoice" else 3, seed=seed)
    if kind == "AlbertForMultipleChoice":  # 2 questions x 2 options each
        ids, types, mask = (x.view(2, 2, -1) for x in (ids, types, mask))
        return (ids, types, mask), {"labels": torch.tensor([1, 0])}
    if kind == "AlbertForQuestionAnswering":  # the third start lies beyond the sequence: ignored by both
        return (ids, types, mask), {"start_positions": torch.tensor([1, 3, 40]),
                                    "end_positions": torch.tensor([2, 6, 40])}
    return (ids, types, mask), {"labels": torch.tensor([2, 0, 1])}


def logits_of(kind, out):
    if kind == "AlbertForQuestionAnswering":
        return torch.stack([out.start_logits, out.end_logits], dim=-1)
    return out.logits


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("kind", HEADS)
def test_head_parity_hf_to_ours(kind, name):
    config = AlbertConfig(**CONFIGS[name])
    hf = hf_head(kind, config, seed=4)
    ours = from_hf(hf).eval()
    assert type(ours) is getattr(albert_mini, kind)
    (ids, types, mask), targets = inputs_and_targets(kind, config, seed=5)
    with torch.no_grad():
        ref = hf(input_ids=ids, token_type_ids=types, attention_mask=mask, **targets)
        out = ours(ids, mask, types, **targets)
    assert out.logits.shape == logits_of(kind, ref).shape
    assert (logits_of(kind, out) - logits_of(kind, ref)).abs().max() < TOL
    assert abs(out.loss.item() - ref.loss.item()) < TOL


@pytest.mark.parametrize("kind", HEADS)
def test_head_round_trip_and_gradients(kind):
    config = AlbertConfig(**CONFIGS["groups-inner-gelu"])
    torch.manual_seed(6)
    extra = {"num_labels": 3} if kind == "AlbertForSequenceClassification" else {}
    ours = getattr(albert_mini, kind)(config, **extra).eval()
    hf = to_hf(ours).eval()
    back = from_hf(hf)
    for key, value in ours.state_dict().items():
        assert torch.equal(value, back.state_dict()[key]), key
    (ids, types, mask), targets = inputs_and_targets(kind, config, seed=7)
    ours(ids, mask, types, **targets).loss.backward()
    hf(input_ids=ids, token_type_ids=types, attention_mask=mask, **targets).loss.backward()
    hf_grads = dict(hf.named_parameters())
    for key, p in ours.named_parameters():
        assert (p.grad - hf_grads[key].grad).abs().max() < TOL, key


def test_classifier_label_count_survives_conversion(tmp_path):
    config = AlbertConfig(**CONFIGS["shared-gelu_new"])
    ours = albert_mini.AlbertForSequenceClassification(config, num_labels=5)
    to_hf(ours).save_pretrained(tmp_path)
    back = from_hf(tmp_path)  # the directory's config names the architecture
    assert type(back) is albert_mini.AlbertForSequenceClassification
    assert back.num_labels == 5 and back.classifier.weight.shape == (5, config.hidden_size)


def test_regression_and_multi_label_losses_match_hf():
    config = AlbertConfig(**CONFIGS["shared-gelu_new"])
    ids, types, mask = random_batch(config, seed=8)
    for num_labels, labels in ((1, torch.tensor([0.5, -1.0, 2.0])),
                               (3, torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0]]))):
        hf = hf_head("AlbertForSequenceClassification", config, seed=9, num_labels=num_labels)
        ours = from_hf(hf).eval()
        with torch.no_grad():
            ref = hf(input_ids=ids, token_type_ids=types, attention_mask=mask, labels=labels).loss
            got = ours(ids, mask, types, labels=labels).loss
        assert abs(got.item() - ref.item()) < TOL


def test_heads_build_on_the_pretrained_encoder_names():
    """A pretraining checkpoint's `albert.*` weights load into every head unchanged (only the head is new)."""
    config = AlbertConfig.from_preset("albert-nano")
    pretrained = albert_mini.AlbertForPreTraining(config)
    encoder = {k: v for k, v in pretrained.state_dict().items() if k.startswith("albert.")}
    for kind in HEADS:
        head = getattr(albert_mini, kind)(config)
        missing, unexpected = head.load_state_dict(encoder, strict=False)
        assert all(k.startswith("albert.pooler.") for k in unexpected)  # span extraction has no pooler, as in HF
        assert all(not k.startswith("albert.") for k in missing), missing


def test_bad_shapes_and_label_counts_are_explained():
    config = AlbertConfig.from_preset("albert-nano")
    with pytest.raises(ValueError, match="num_labels must be >= 1"):
        albert_mini.AlbertForSequenceClassification(config, num_labels=0)
    with pytest.raises(ValueError, match=r"\(batch, choices, length\)"):
        albert_mini.AlbertForMultipleChoice(config)(torch.ones(2, 5, dtype=torch.long))
