"""albert_mini computes what HF transformers computes, with the same weights, in both directions."""

import pytest
import torch

transformers = pytest.importorskip("transformers")  # a test/interop dependency, installed by `make test`

from albert_mini import AlbertConfig, AlbertForPreTraining, AlbertModel  # noqa: E402
from albert_mini.model.hf import config_to_hf, from_hf, to_hf  # noqa: E402

TOL = 1e-5

# Four small random configs covering groups > 1, inner groups > 1, both GELUs, and unshared layers.
CONFIGS = {
    "shared-gelu_new": dict(vocab_size=97, embedding_size=16, hidden_size=32, num_hidden_layers=3,
                            num_attention_heads=4, intermediate_size=64, hidden_act="gelu_new"),
    "groups-inner-gelu": dict(vocab_size=120, embedding_size=24, hidden_size=48, num_hidden_layers=4,
                              num_attention_heads=3, intermediate_size=80, num_hidden_groups=2, inner_group_num=2,
                              hidden_act="gelu"),
    "groups3-of-6-relu": dict(vocab_size=64, embedding_size=40, hidden_size=32, num_hidden_layers=6,
                              num_attention_heads=2, intermediate_size=48, num_hidden_groups=3, hidden_act="relu"),
    "unshared-E>H": dict(vocab_size=90, embedding_size=64, hidden_size=32, num_hidden_layers=3,
                         num_attention_heads=8, intermediate_size=40, num_hidden_groups=3, sharing="none",
                         hidden_act="gelu_new", type_vocab_size=3),
}


def random_batch(config, batch=3, length=11, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, config.vocab_size, (batch, length), generator=g)
    types = torch.randint(0, config.type_vocab_size, (batch, length), generator=g)
    mask = torch.ones(batch, length, dtype=torch.long)
    mask[1, 7:] = 0  # padding in one row
    mask[2, 4:] = 0
    ids[mask == 0] = 0
    return ids, types, mask


def hf_pretraining_model(config, seed):
    """An HF model with random, non-default weights (LayerNorm and biases too)."""
    torch.manual_seed(seed)
    hf = transformers.AlbertForPreTraining(config_to_hf(config)).eval()
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                p.add_(0.1 * torch.randn_like(p))
    return hf


@pytest.mark.parametrize("name", CONFIGS)
def test_pretraining_parity_hf_to_ours(name):
    config = AlbertConfig(**CONFIGS[name])
    hf = hf_pretraining_model(config, seed=1)
    ours = from_hf(hf).eval()
    assert isinstance(ours, AlbertForPreTraining)
    ids, types, mask = random_batch(config)
    with torch.no_grad():
        ref = hf(input_ids=ids, token_type_ids=types, attention_mask=mask, output_hidden_states=True)
        out = ours(ids, mask, types, output_hidden_states=True)
    assert (out.mlm_logits - ref.prediction_logits).abs().max() < TOL
    assert (out.sentence_logits - ref.sop_logits).abs().max() < TOL
    # HF records a hidden state after every inner layer; ours after every layer application (group call).
    K = config.inner_group_num
    assert len(out.hidden_states) == config.num_hidden_layers + 1
    for layer, h in enumerate(out.hidden_states):
        assert (h - ref.hidden_states[layer * K]).abs().max() < TOL


@pytest.mark.parametrize("name", CONFIGS)
def test_base_model_and_losses(name):
    config = AlbertConfig(**CONFIGS[name])
    hf = hf_pretraining_model(config, seed=2)
    ours = from_hf(hf).eval()
    ids, types, mask = random_batch(config, seed=3)
    labels = torch.full_like(ids, -100)
    labels[0, 2], labels[1, 5], labels[2, 1] = 7, 11, 13
    sop = torch.tensor([0, 1, 1])
    with torch.no_grad():
        ref = hf(input_ids=ids, token_type_ids=types, attention_mask=mask, labels=labels, sentence_order_label=sop)
        out = ours(ids, mask, types, labels=labels, sentence_order_label=sop)
        base_ref = hf.albert(input_ids=ids, token_type_ids=types, attention_mask=mask)
        base = ours.albert(ids, mask, types)
    assert abs(out.loss - ref.loss) < TOL
    assert out.mlm_logits.shape == (3, 1, config.vocab_size)  # only the masked position of each sequence
    assert (out.mlm_logits[:, 0] - ref.prediction_logits[labels != -100]).abs().max() < TOL
    assert (base.last_hidden_state - base_ref.last_hidden_state).abs().max() < TOL
    assert (base.pooler_output - base_ref.pooler_output).abs().max() < TOL


@pytest.mark.parametrize("name", CONFIGS)
def test_round_trip_state_dicts_identical(name):
    config = AlbertConfig(**CONFIGS[name])
    hf = hf_pretraining_model(config, seed=4)
    back = to_hf(from_hf(hf))
    a, b = hf.state_dict(), back.state_dict()
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


def test_ours_to_hf_gradients_match():
    config = AlbertConfig(**CONFIGS["groups-inner-gelu"])
    torch.manual_seed(0)
    ours = AlbertForPreTraining(config).eval()
    hf = to_hf(ours).eval()
    ids, types, mask = random_batch(config, seed=5)
    labels = torch.where(torch.rand(ids.shape, generator=torch.Generator().manual_seed(1)) < 0.3, ids, -100)
    labels[mask == 0] = -100
    sop = torch.tensor([1, 0, 1])
    ours(ids, mask, types, labels=labels, sentence_order_label=sop).loss.backward()
    hf_out = hf(input_ids=ids, token_type_ids=types, attention_mask=mask, labels=labels, sentence_order_label=sop)
    hf_out.loss.backward()
    hf_grads = dict(hf.named_parameters())
    for name, p in ours.named_parameters():
        assert (p.grad - hf_grads[name].grad).abs().max() < TOL, name


def test_base_model_class_and_directory_round_trip(tmp_path):
    config = AlbertConfig(**CONFIGS["shared-gelu_new"])
    torch.manual_seed(0)
    hf = transformers.AlbertModel(config_to_hf(config)).eval()
    hf.save_pretrained(tmp_path / "hf")
    ours = from_hf(tmp_path / "hf")  # a local save_pretrained directory, as a hub name would be
    assert type(ours) is AlbertModel
    ids, types, mask = random_batch(config)
    with torch.no_grad():
        assert (ours(ids, mask, types).pooler_output - hf(ids, mask, types).pooler_output).abs().max() < TOL


def test_bert_style_model_exports_with_identity_projection():
    config = AlbertConfig.from_preset("bert-mini", vocab_size=50, num_hidden_layers=2, num_hidden_groups=2,
                                      hidden_size=32, embedding_size=32, intermediate_size=64)
    torch.manual_seed(0)
    ours = AlbertForPreTraining(config).eval()
    hf = to_hf(ours).eval()
    ids, types, mask = random_batch(config)
    with torch.no_grad():
        assert (ours(ids, mask, types).mlm_logits - hf(ids, mask, types).prediction_logits).abs().max() < TOL


@pytest.mark.parametrize("sharing", ["attention", "ffn"])
def test_partial_sharing_cannot_be_exported(sharing):
    config = AlbertConfig.from_preset("albert-nano", sharing=sharing)
    with pytest.raises(ValueError, match="cannot be expressed by HF"):
        to_hf(AlbertForPreTraining(config))


def test_attention_weights_match_hf_eager():
    config = AlbertConfig(**CONFIGS["groups-inner-gelu"])
    hf = hf_pretraining_model(config, seed=6)
    hf.config._attn_implementation = "eager"
    for module in hf.modules():
        if hasattr(module, "config"):
            module.config._attn_implementation = "eager"
    ours = from_hf(hf).eval()
    ids, types, mask = random_batch(config)
    with torch.no_grad():
        ref = hf(input_ids=ids, token_type_ids=types, attention_mask=mask, output_attentions=True)
        out = ours(ids, mask, types, output_attentions=True)
    assert len(out.attentions) == config.num_hidden_layers * config.inner_group_num == len(ref.attentions)
    keep = mask.bool()
    for a, b in zip(out.attentions, ref.attentions):
        assert (a - b).transpose(1, 2)[keep].abs().max() < TOL  # (B, T, nh, T): rows of real queries
