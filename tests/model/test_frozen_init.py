"""Refactors of the model code must not move a single random draw: seeded inits and outputs are pinned by hash."""

import hashlib

import pytest
import torch

from albert_mini import AlbertConfig, AlbertForPreTraining, AlbertModel
from albert_mini.model.heads import AlbertForMultipleChoice, AlbertForQuestionAnswering, AlbertForSequenceClassification

# Hashes recorded from the code before the sharing table; a change here means the init order, a
# parameter name or a shape moved, which would silently change every seeded experiment run.
NANO_VARIANTS = {
    "all": dict(num_hidden_layers=4),
    "all-groups-inner": dict(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2),
    "attention": dict(num_hidden_layers=4, sharing="attention"),
    "ffn": dict(num_hidden_layers=4, sharing="ffn"),
    "none": dict(num_hidden_layers=4, sharing="none", num_hidden_groups=4),
    "none-no-projection": dict(num_hidden_layers=3, sharing="none", num_hidden_groups=3, embedding_size=64,
                               embedding_projection=False),
}
HEADS = {"pretraining": AlbertForPreTraining, "model": AlbertModel, "classifier": AlbertForSequenceClassification,
         "choice": AlbertForMultipleChoice, "span": AlbertForQuestionAnswering}


def state_hash(model: torch.nn.Module) -> str:
    """sha256 of every state-dict name, shape and value, in state-dict order (shared tensors under each name)."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype};".encode())
        digest.update(tensor.detach().contiguous().cpu().numpy().tobytes())
    return digest.hexdigest()[:16]


def structure_hash(model: torch.nn.Module) -> str:
    """sha256 of parameter names and shapes as named_parameters yields them (each shared tensor once)."""
    text = ";".join(f"{name}:{tuple(p.shape)}" for name, p in model.named_parameters())
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def seeded(cls, config):
    torch.manual_seed(1234)
    return cls(config)


# (variant, head): (state hash, structure hash)
EXPECTED_NANO = {
    ('all', 'pretraining'): ('1504ff27df8c8761', 'd1fdaac5ab0a934c'),
    ('all', 'model'): ('fe9309924da3a85f', '91b78b3451fe70b6'),
    ('all', 'classifier'): ('938fda273c976a2f', '5d9e5edb77e5d769'),
    ('all', 'choice'): ('3566b152d29026b1', '9d2d684199ff9a6a'),
    ('all', 'span'): ('e3a53a718ca7f1bd', 'a2476b1a17e15891'),
    ('all-groups-inner', 'pretraining'): ('3d661415ddf6479d', 'ac7a0e5c29342928'),
    ('all-groups-inner', 'model'): ('66b272b922b74236', 'ce828fcc6b0e1927'),
    ('all-groups-inner', 'classifier'): ('6554e89416364ee7', '4fc9505e8e5a8c59'),
    ('all-groups-inner', 'choice'): ('16c05947be43f65f', '2b69152eaa708504'),
    ('all-groups-inner', 'span'): ('c1bddcc0bc603783', '951d250401ac83d4'),
    ('attention', 'pretraining'): ('9ce7b90938adedbd', '658f0ed9301ae0ce'),
    ('attention', 'model'): ('b3835610c4286927', 'f08d6dfb9f65b115'),
    ('attention', 'classifier'): ('aca3a6bed068e6f7', 'e64be6ccf7e33e98'),
    ('attention', 'choice'): ('bc1085f90e03f404', '4662210a40d4673e'),
    ('attention', 'span'): ('7132dc846823899d', 'ca151ad43cd51aa0'),
    ('ffn', 'pretraining'): ('ecbed9d570a977d1', '19ccffe7579ed864'),
    ('ffn', 'model'): ('f3503d1ca72e31f6', '4dfd7774184303ed'),
    ('ffn', 'classifier'): ('74eb7377675ecd01', '013b786e3aa03789'),
    ('ffn', 'choice'): ('a9024964a8aebcb0', '4e292accfe9ef99e'),
    ('ffn', 'span'): ('79619cc730b1ebe1', '9bde44ab0237c975'),
    ('none', 'pretraining'): ('e3968cfe320ae911', 'fb628b5763af6d09'),
    ('none', 'model'): ('fd478138fd9681a0', '401225b1975e08a5'),
    ('none', 'classifier'): ('e2f89d98bf25847f', '9a874bd151a5c937'),
    ('none', 'choice'): ('8c7b1081cb82f636', 'b53ebf1b350c5ec9'),
    ('none', 'span'): ('9957bda89b8a47e8', 'b0083c32ad2dc960'),
    ('none-no-projection', 'pretraining'): ('2c1f87fbf1d1d871', '76b84b945c84dae9'),
    ('none-no-projection', 'model'): ('4052199f6e14aec8', '2c06ea49b7ac3da7'),
    ('none-no-projection', 'classifier'): ('8a9d52cf3a7e389a', '80b1c9f0943525a0'),
    ('none-no-projection', 'choice'): ('4d288cc66c1fb7c5', 'da9139091903871c'),
    ('none-no-projection', 'span'): ('71afe440a0483ceb', 'e9563d09712958cc'),
}
EXPECTED_PRESETS = {'albert-mini': '2c2c96fce2153e27', 'bert-mini': '9bddb1a5f46adc38'}
# Parameter names and shapes of every preset's pretraining model, built on the meta device.
EXPECTED_PRESET_STRUCTURE = {
    'albert-base': '9b1862edb62aebb0',
    'albert-large': '9c7b802da5572ae3',
    'albert-xlarge': '8f8b2cd2c82baedb',
    'albert-xxlarge': '6137603e1a40daaa',
    'bert-base': '371796009764a44a',
    'bert-large': '3333c821e906e114',
    'bert-xlarge': 'aba9cef8d8d06c4d',
    'albert-nano': 'd1fdaac5ab0a934c',
    'albert-mini': '9e91219cc9a6c161',
    'bert-mini': '0857b8f3dd1afc1b',
}


@pytest.mark.parametrize("variant", NANO_VARIANTS)
@pytest.mark.parametrize("head", HEADS)
def test_seeded_nano_init_is_unchanged(variant, head):
    config = AlbertConfig.from_preset("albert-nano", **NANO_VARIANTS[variant])
    model = seeded(HEADS[head], config)
    assert (state_hash(model), structure_hash(model)) == EXPECTED_NANO[variant, head]


@pytest.mark.parametrize("preset", ["albert-mini", "bert-mini"])
def test_seeded_mini_presets_are_unchanged(preset):
    assert state_hash(seeded(AlbertForPreTraining, AlbertConfig.from_preset(preset))) == EXPECTED_PRESETS[preset]


@pytest.mark.parametrize("preset", EXPECTED_PRESET_STRUCTURE)
def test_every_preset_keeps_its_parameter_names_and_shapes(preset):
    with torch.device("meta"):
        model = AlbertForPreTraining(AlbertConfig.from_preset(preset))
    assert structure_hash(model) == EXPECTED_PRESET_STRUCTURE[preset]
