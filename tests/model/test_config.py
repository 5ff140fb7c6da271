"""Config validation, presets and JSON round trip."""

import json
import subprocess
import sys

import pytest

from albert_mini import PRESETS, AlbertConfig, ConfigError
from albert_mini.errors import UnknownNameError

PAPER_PRESETS = ["albert-base", "albert-large", "albert-xlarge", "albert-xxlarge", "bert-base", "bert-large",
                 "bert-xlarge"]


def test_every_required_preset_exists_and_validates():
    for name in PAPER_PRESETS + ["albert-nano", "albert-mini", "bert-mini"]:
        assert isinstance(AlbertConfig.from_preset(name), AlbertConfig)


@pytest.mark.parametrize("name,H,L,heads", [
    ("albert-base", 768, 12, 12), ("albert-large", 1024, 24, 16), ("albert-xlarge", 2048, 24, 16),
    ("albert-xxlarge", 4096, 12, 64), ("bert-base", 768, 12, 12), ("bert-large", 1024, 24, 16),
    ("bert-xlarge", 2048, 24, 16),
])
def test_paper_shapes(name, H, L, heads):
    c = AlbertConfig.from_preset(name)
    assert (c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.intermediate_size) == (H, L, heads, 4 * H)
    assert c.vocab_size == 30000
    if name.startswith("bert"):
        assert c.embedding_size == H and c.sharing == "none" and not c.embedding_projection
    else:
        assert c.embedding_size == 128 and c.sharing == "all" and c.num_hidden_groups == 1


def test_bert_mini_is_the_unshared_twin_of_albert_mini():
    a, b = AlbertConfig.from_preset("albert-mini"), AlbertConfig.from_preset("bert-mini")
    assert (a.hidden_size, a.num_hidden_layers, a.vocab_size) == (b.hidden_size, b.num_hidden_layers, b.vocab_size)
    assert b.embedding_size == b.hidden_size and b.sharing == "none" and a.sharing == "all"


def test_overrides_and_unknown_preset():
    c = AlbertConfig.from_preset("albert-base", hidden_dropout_prob=0.1)
    assert c.hidden_dropout_prob == 0.1
    with pytest.raises(UnknownNameError) as err:
        AlbertConfig.from_preset("albert-huge")
    for name in PRESETS:  # the error lists every valid name
        assert name in str(err.value)
    with pytest.raises(ConfigError, match="hiden_size"):
        AlbertConfig.from_preset("albert-base", hiden_size=10)


@pytest.mark.parametrize("changes,message", [
    (dict(hidden_size=100, num_attention_heads=12), "not divisible by num_attention_heads"),
    (dict(num_hidden_layers=12, num_hidden_groups=5), "not divisible by num_hidden_groups"),
    (dict(hidden_size=0), "hidden_size must be a positive integer"),
    (dict(vocab_size=-3), "vocab_size must be a positive integer"),
    (dict(embedding_size=0), "embedding_size must be a positive integer"),
    (dict(num_hidden_layers=0), "num_hidden_layers must be a positive integer"),
    (dict(intermediate_size=0), "intermediate_size must be a positive integer"),
    (dict(hidden_act="swish"), "unknown hidden_act 'swish'"),
    (dict(sharing="none"), "needs num_hidden_groups=12"),
    (dict(sharing="attention", num_hidden_groups=2), "needs num_hidden_groups=1"),
    (dict(sharing="ffn", inner_group_num=2), "needs num_hidden_groups=1 and inner_group_num=1"),
    (dict(embedding_projection=False), "embedding_projection=False needs embedding_size == hidden_size"),
    (dict(hidden_dropout_prob=1.5), "hidden_dropout_prob must be in"),
])
def test_bad_configs_raise_named_errors(changes, message):
    with pytest.raises(ConfigError, match=message):
        AlbertConfig.from_preset("albert-base", **changes)


def test_embedding_larger_than_hidden_is_allowed():
    assert AlbertConfig.from_preset("albert-base", embedding_size=1024).embedding_size == 1024


def test_json_round_trip(tmp_path):
    c = AlbertConfig.from_preset("albert-mini", num_hidden_groups=2, inner_group_num=3, hidden_act="gelu")
    assert AlbertConfig.from_json(c.to_json()) == c
    c.to_json(tmp_path / "config.json")
    assert AlbertConfig.from_json(tmp_path / "config.json") == c
    assert json.loads(c.to_json())["inner_group_num"] == 3


def test_layer_to_group_matches_hf_rule():
    for L in (6, 12, 24):
        for G in [g for g in range(1, L + 1) if L % g == 0]:
            c = AlbertConfig.from_preset("albert-base", num_hidden_layers=L, num_hidden_groups=G)
            assert [c.layer_to_group(i) for i in range(L)] == [int(i / (L / G)) for i in range(L)]


@pytest.mark.parametrize("sharing", ["attention", "ffn"])
def test_layer_to_group_gives_each_layer_its_own_module_when_only_one_block_is_shared(sharing):
    c = AlbertConfig.from_preset("albert-nano", num_hidden_layers=4, sharing=sharing)
    assert c.num_layer_modules == 4 and [c.layer_to_group(i) for i in range(4)] == [0, 1, 2, 3]
    with pytest.raises(IndexError, match="layer 4 outside 0..3"):
        c.layer_to_group(4)


@pytest.mark.slow  # a subprocess or a retrain: make test runs it, test-fast does not
def test_package_imports_without_transformers():
    code = (
        "import sys, importlib.abc\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] == 'transformers': raise ImportError('blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import albert_mini\n"
        "import pkgutil\n"
        "for m in pkgutil.walk_packages(albert_mini.__path__, 'albert_mini.'):\n"
        "    if not m.name.endswith('__main__'): importlib.import_module(m.name)\n"
        "assert 'albert_mini.model.hf' in sys.modules and 'albert_mini.study.paper' in sys.modules\n"
        "assert 'transformers' not in sys.modules\n"
        "m = albert_mini.AlbertModel(albert_mini.AlbertConfig.from_preset('albert-nano'))\n"
        "print('ok')\n"
    ).replace("import pkgutil", "import pkgutil, importlib")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


@pytest.mark.parametrize("changes,message", [
    (dict(layer_norm_eps=float("nan")), "layer_norm_eps must be in (0, 1)"),
    (dict(layer_norm_eps=0.0), "layer_norm_eps must be in (0, 1)"),
    (dict(initializer_range=float("inf")), "initializer_range must be in (0, 1)"),
    (dict(initializer_range=-0.02), "initializer_range must be in (0, 1)"),
    (dict(hidden_dropout_prob=float("nan")), "hidden_dropout_prob must be in [0, 1)"),
    (dict(attention_probs_dropout_prob="0.1"), "attention_probs_dropout_prob must be in [0, 1) (a finite number), "
                                               "got '0.1'"),
    (dict(classifier_dropout_prob=True), "classifier_dropout_prob must be in [0, 1)"),
    (dict(pad_token_id=None), "pad_token_id must be an integer"),
    (dict(sharing=["all"]), "sharing must be a string"),
    (dict(hidden_act=None), "hidden_act must be a string"),
    (dict(embedding_projection="yes"), "embedding_projection must be true or false"),
])
def test_every_field_is_checked_for_its_type_and_range(changes, message):
    """NaN and infinity fail no `<= 0` test, and a string fails with a TypeError: each is a named ConfigError."""
    with pytest.raises(ConfigError) as err:
        AlbertConfig.from_preset("albert-nano", **changes)
    assert message in str(err.value)


def test_the_range_table_covers_every_float_field():
    import dataclasses

    from albert_mini.model.config import FLOAT_RANGES

    floats = {f.name for f in dataclasses.fields(AlbertConfig) if f.type in (float, "float")}
    assert floats == set(FLOAT_RANGES)


def test_config_data_must_be_an_object():
    with pytest.raises(ConfigError, match="must be an object"):
        AlbertConfig.from_dict([])
