"""Parameter counts: closed form vs modules vs HF, and parameter tables."""

import pytest
import torch

from albert_mini import AlbertConfig, AlbertForPreTraining, AlbertModel, count_parameters
from albert_mini.errors import UnknownNameError
from albert_mini.model.counting import COMPONENTS, closed_form_breakdown, format_parameter_table, parameter_table

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
            from albert_mini.model.hf import config_to_hf
            hf = transformers.AlbertModel(config_to_hf(config))
    return sum(p.numel() for p in hf.parameters())


@pytest.mark.parametrize("name", PAPER)
def test_counts_equal_hf_for_paper_configs(name):
    config = AlbertConfig.from_preset(name)
    with torch.device("meta"):
        model = AlbertModel(config)
    assert count_parameters(config) == count_parameters(model) == hf_count(name)


def test_known_exact_values():
    # Exact counts of the paper's configs (HF's modules agree: test_counts_equal_hf_for_paper_configs).
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


# ---------------------------------------------------------------------------------------------- parameter tables

def test_parameter_table_rows_from_preset_names():
    rows = parameter_table(["albert-base", "bert-base"])
    assert [row["name"] for row in rows] == ["albert-base", "bert-base"]
    base = rows[0]
    assert (base["V"], base["E"], base["H"], base["L"], base["A"], base["I"], base["sharing"]) == (
        30000, 128, 768, 12, 12, 3072, "all")
    assert base["total"] == 11_683_584 == sum(base[c] for c in COMPONENTS)
    assert rows[1]["projection"] == 0 and rows[1]["total"] == count_parameters(AlbertConfig.from_preset("bert-base"))


def test_parameter_table_components_follow_pooler_and_heads():
    config = AlbertConfig.from_preset("albert-nano")
    (row,) = parameter_table({"nano": config}, pooler=False, heads=True)
    assert {c: row[c] for c in COMPONENTS} == closed_form_breakdown(config, pooler=False, heads=True)
    assert row["pooler"] == 0 and row["mlm_head"] > 0
    assert row["total"] == count_parameters(config, pooler=False, heads=True) == count_parameters(
        AlbertForPreTraining(config)) - (64 * 64 + 64)  # the built model has a pooler; the row does not


def test_parameter_table_rejects_bad_input():
    with pytest.raises(TypeError, match=r"write \['albert-base'\]"):
        parameter_table("albert-base")
    with pytest.raises(UnknownNameError, match="unknown preset 'albert-huge'"):
        parameter_table(["albert-huge"])
    with pytest.raises(TypeError, match="entry 'x' is a str, not an AlbertConfig"):
        parameter_table({"x": "albert-base"})
    with pytest.raises(ValueError, match="no configs"):
        parameter_table([])


def test_format_parameter_table_markdown():
    rows = parameter_table(["albert-base", "albert-nano"])
    text = format_parameter_table(rows)
    lines = text.splitlines()
    assert len(lines) == 2 + len(rows)
    assert all(line.startswith("|") and line.endswith("|") for line in lines)
    assert len({line.count("|") for line in lines}) == 1  # every row has as many cells as the header
    assert "MLM head" not in lines[0]  # the heads were not counted, so their all-zero columns are dropped
    assert "| albert-base | 30,000 | 128 | 768 | 12 | 12 | 3,072 | all |" in text
    assert "11.68M" in lines[2] and "2,112" in lines[3]  # nano's projection is printed exactly, not as 0.00M
    exact = format_parameter_table([{**rows[0], "paper_convention": 1}], unit="exact")
    assert exact.splitlines()[0].endswith("| total | total, paper's rules |")
    assert exact.splitlines()[2].endswith("| 11,683,584 | 1 |")


def test_format_parameter_table_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown unit 'k'"):
        format_parameter_table(parameter_table(["albert-nano"]), unit="k")
    with pytest.raises(KeyError, match=r"row 1 \(nano\) lacks \['total'\]"):
        format_parameter_table([{k: v for k, v in parameter_table(["albert-nano"])[0].items() if k != "total"}
                                | {"name": "nano"}])
    with pytest.raises(ValueError, match="no rows"):
        format_parameter_table([])
