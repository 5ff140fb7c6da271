"""Parameter counts: closed form vs modules vs HF, and the paper's tables."""

import pytest
import torch

from albert_mini import AlbertConfig, AlbertForPreTraining, AlbertModel, count_parameters
from albert_mini.paper import (KNOWN_DISAGREEMENTS, TABLE1, TABLE3, TABLE4, albert_base_variant,
                               paper_convention_count)

PAPER = ["albert-base", "albert-large", "albert-xlarge", "albert-xxlarge", "bert-base", "bert-large", "bert-xlarge"]


def hf_count(name):
    transformers = pytest.importorskip("transformers")
    config = AlbertConfig.from_preset(name)
    with torch.device("meta"):
        if name.startswith("bert"):
            hf = transformers.BertModel(transformers.BertConfig(
                vocab_size=config.vocab_size, hidden_size=config.hidden_size,
                num_hidden_layers=config.num_hidden_layers, num_attention_heads=config.num_attention_heads,
                intermediate_size=config.intermediate_size))
        else:
            from albert_mini.hf import config_to_hf
            hf = transformers.AlbertModel(config_to_hf(config))
    return sum(p.numel() for p in hf.parameters())


@pytest.mark.parametrize("name", PAPER)
def test_counts_equal_hf_for_paper_configs(name):
    config = AlbertConfig.from_preset(name)
    with torch.device("meta"):
        model = AlbertModel(config)
    assert count_parameters(config) == count_parameters(model) == hf_count(name)


def test_known_exact_values():
    # Values derived independently (albert_reference.md section 2 and machine.md).
    assert count_parameters(AlbertConfig.from_preset("albert-base")) == 11_683_584
    assert count_parameters(AlbertConfig.from_preset("albert-xxlarge")) == 222_595_584
    assert count_parameters(AlbertConfig.from_preset("albert-base"), heads=True) == 11_813_810
    assert count_parameters(AlbertConfig.from_preset("bert-large")) == 334_607_360


@pytest.mark.parametrize("sharing", ["all", "attention", "ffn", "none"])
@pytest.mark.parametrize("E", [16, 64])
def test_closed_form_equals_module_count_for_every_strategy(sharing, E):
    config = AlbertConfig.from_preset("albert-nano", num_hidden_layers=4, embedding_size=E, sharing=sharing,
                                      num_hidden_groups=4 if sharing == "none" else 1)
    model = AlbertForPreTraining(config)
    assert count_parameters(config, breakdown=True, heads=True) == count_parameters(model, breakdown=True)
    assert count_parameters(config.replace(), heads=False) == count_parameters(model.albert)


def test_groups_and_inner_groups_counted():
    config = AlbertConfig.from_preset("albert-nano", num_hidden_layers=6, num_hidden_groups=3, inner_group_num=2)
    assert count_parameters(config) == count_parameters(AlbertModel(config))
    one = count_parameters(config.replace(num_hidden_groups=1, inner_group_num=1), breakdown=True)
    six = count_parameters(config, breakdown=True)
    assert six["attention"] == 6 * one["attention"] and six["ffn"] == 6 * one["ffn"]


def test_count_rejects_other_objects():
    with pytest.raises(TypeError, match="AlbertConfig or an nn.Module"):
        count_parameters("albert-base")


def _matches(count, printed_millions):
    unit = 10 if printed_millions >= 1000 else 1  # 1270M is printed to three figures
    return abs(count / 1e6 - printed_millions) < unit / 2


def test_table1_with_documented_exceptions():
    mismatched = {name for name, printed in TABLE1.items()
                  if not _matches(paper_convention_count(AlbertConfig.from_preset(name)), printed)}
    assert mismatched == set(KNOWN_DISAGREEMENTS)


@pytest.mark.parametrize("key", sorted(TABLE3))
def test_table3_counts(key):
    sharing, E = key
    assert _matches(paper_convention_count(albert_base_variant(E, sharing)), TABLE3[key][0])


@pytest.mark.parametrize("key", sorted(TABLE4))
def test_table4_counts(key):
    E, sharing = key
    assert _matches(paper_convention_count(albert_base_variant(E, sharing)), TABLE4[key][0])
