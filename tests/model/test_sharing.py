"""The sharing table drives validation, layer building, counting and HF export; a new row needs nothing else."""

import pytest
import torch

from albert_mini import AlbertConfig, AlbertModel, ConfigError, count_parameters
from albert_mini.errors import UnknownNameError
from albert_mini.model.config import embedding_variant, strategy_named
from albert_mini.model.sharing import BLOCK_MODULES, STRATEGIES, whole_layer_sharing


def test_unknown_strategy_is_one_error_listing_the_known_ones():
    with pytest.raises(UnknownNameError, match="unknown sharing 'layers'; choose one of all, attention, ffn, none"):
        strategy_named("layers")
    with pytest.raises(UnknownNameError, match="unknown sharing 'both'; choose one of all, attention, ffn, none"):
        AlbertConfig.from_preset("albert-nano", sharing="both")  # the same lookup checks a config


@pytest.mark.parametrize("name", STRATEGIES)
def test_default_layout_is_valid_and_built_modules_match_the_table(name):
    strategy = STRATEGIES[name]
    groups, inner = strategy.default_groups(4)
    config = AlbertConfig.from_preset("albert-nano", num_hidden_layers=4, sharing=name, num_hidden_groups=groups,
                                      inner_group_num=inner)
    model = AlbertModel(config)
    layers = [model.encoder.albert_layer_groups[g].albert_layers[0] for g in model.encoder.layer_plan()]
    assert len(model.encoder.albert_layer_groups) == config.num_layer_modules
    for block, modules in BLOCK_MODULES.items():
        shared = all(getattr(layer, m) is getattr(layers[0], m) for layer in layers[1:] for m in modules)
        distinct = len({id(getattr(layer, modules[0])) for layer in layers})
        assert shared == (block in strategy.tied_blocks or (strategy.whole_layers and groups == 1))
        assert distinct == config.num_distinct_blocks()[list(BLOCK_MODULES).index(block)]
    assert count_parameters(model) == count_parameters(config)
    assert embedding_variant(config, 32, name).num_hidden_groups == groups


@pytest.mark.parametrize("name", STRATEGIES)
def test_a_strategy_with_a_required_layout_rejects_any_other(name):
    required = STRATEGIES[name].required_groups(4)
    if required is None:
        AlbertConfig.from_preset("albert-nano", num_hidden_layers=4, sharing=name, num_hidden_groups=2)
        return
    wrong = (required[0] % 4 + 1, required[1])
    with pytest.raises(ConfigError, match=f"needs num_hidden_groups={required[0]} and inner_group_num=1"):
        AlbertConfig.from_preset("albert-nano", num_hidden_layers=4, sharing=name, num_hidden_groups=wrong[0])


def test_hf_layout_maps_back_to_its_whole_layer_strategy():
    assert whole_layer_sharing(4, 4, 1) == "none"
    assert whole_layer_sharing(4, 1, 1) == whole_layer_sharing(4, 2, 2) == whole_layer_sharing(4, 4, 2) == "all"
    assert all(STRATEGIES[whole_layer_sharing(6, g, k)].whole_layers for g in (1, 2, 3, 6) for k in (1, 2))


def test_tied_blocks_name_real_layer_modules():
    layer = AlbertModel(AlbertConfig.from_preset("albert-nano")).encoder.albert_layer_groups[0].albert_layers[0]
    for strategy in STRATEGIES.values():
        assert all(isinstance(getattr(layer, m), torch.nn.Module) for m in strategy.tied_modules)
