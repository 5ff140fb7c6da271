"""Parameter counts: closed form vs modules vs HF, and the paper's tables."""

import pytest
import torch

from albert_mini import AlbertConfig, AlbertForPreTraining, AlbertModel, count_parameters
from albert_mini.study.paper import (KNOWN_DISAGREEMENTS, TABLE1, TABLE3, TABLE4, albert_base_variant,
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


# ---------------------------------------------------------------------------------------------- parameter tables
from albert_mini.model.config import ConfigError  # noqa: E402
from albert_mini.model.counting import COMPONENTS, closed_form_breakdown, format_parameter_table, parameter_table  # noqa: E402


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


def test_parameter_table_reproduces_table3_and_table4_under_paper_rules():
    table3 = {key: albert_base_variant(key[1], key[0]) for key in TABLE3}
    table4 = {key: albert_base_variant(key[0], key[1]) for key in TABLE4}
    for printed, configs in ((TABLE3, table3), (TABLE4, table4)):
        rows = parameter_table({str(key): config for key, config in configs.items()}, paper_convention=True)
        for key, row in zip(configs, rows):
            assert row["paper_convention"] == paper_convention_count(configs[key])
            assert round(row["paper_convention"] / 1e6) == printed[key][0], (key, row["paper_convention"])
            assert row["total"] == count_parameters(configs[key])
    # The exact counts do not match everywhere: the unshared rows carry the pooler the paper leaves out.
    rows = parameter_table({"none-64": table3[("none", 64)]})
    assert round(rows[0]["total"] / 1e6) != TABLE3[("none", 64)][0]


def test_parameter_table_rejects_bad_input():
    with pytest.raises(TypeError, match=r"write \['albert-base'\]"):
        parameter_table("albert-base")
    with pytest.raises(ConfigError, match="unknown preset 'albert-huge'"):
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
    exact = format_parameter_table(parameter_table(["albert-base"], paper_convention=True), unit="exact")
    assert exact.splitlines()[0].endswith("| total | total, paper's rules |")
    assert exact.splitlines()[2].endswith("| 11,683,584 | 11,683,584 |")


def test_format_parameter_table_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown unit 'k'"):
        format_parameter_table(parameter_table(["albert-nano"]), unit="k")
    with pytest.raises(KeyError, match=r"row 1 \(nano\) lacks \['total'\]"):
        format_parameter_table([{k: v for k, v in parameter_table(["albert-nano"])[0].items() if k != "total"}
                                | {"name": "nano"}])
    with pytest.raises(ValueError, match="no rows"):
        format_parameter_table([])


# ---------------------------------------------------------------------------------------------- parameters vs E
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from albert_mini.study.parameter_plots import embedding_variant, plot_parameters_vs_embedding  # noqa: E402


def _artist(ax, gid):
    (found,) = [a for a in [*ax.lines, *ax.collections] if a.get_gid() == gid]
    return found


@pytest.mark.parametrize("base", ["albert-base", "bert-mini"])
def test_plotted_values_are_exact_counts(base):
    sizes = (16, 64, 128, 256, 768)
    fig = plot_parameters_vs_embedding(base, sizes)
    ax = fig.axes[0]
    for sharing in ("none", "all"):
        x, y = _artist(ax, f"curve-{sharing}").get_data()
        assert list(x) == list(sizes)
        expected = [count_parameters(embedding_variant(base, E, sharing)) / 1e6 for E in sizes]
        assert list(y) == pytest.approx(expected, rel=1e-12)
    # Not-shared minus all-shared is the (L - 1) extra copies of one layer, whatever E is.
    config = AlbertConfig.from_preset(base)
    one_layer = sum(closed_form_breakdown(config.replace(num_hidden_layers=1, num_hidden_groups=1,
                                                         sharing="all"))[c] for c in ("attention", "ffn"))
    gap = _artist(ax, "curve-none").get_ydata() - _artist(ax, "curve-all").get_ydata()
    assert gap == pytest.approx([(config.num_hidden_layers - 1) * one_layer / 1e6] * len(sizes), rel=1e-9)
    assert ax.get_xscale() == "log" and "millions" in ax.get_ylabel() and "E" in ax.get_xlabel()
    assert ax.get_title() and ax.get_legend() is not None
    plt.close(fig)


def test_table3_points_marked_for_albert_base_only():
    fig = plot_parameters_vs_embedding("albert-base", (64, 128))
    for sharing in ("none", "all"):
        points = sorted(map(tuple, _artist(fig.axes[0], f"paper-{sharing}").get_offsets().tolist()))
        assert points == sorted((E, TABLE3[(sharing, E)][0]) for s, E in TABLE3 if s == sharing)
    plt.close(fig)
    fig = plot_parameters_vs_embedding("albert-xxlarge", (64, 128))
    assert not [c for c in fig.axes[0].collections if str(c.get_gid()).startswith("paper-")]
    plt.close(fig)


def test_embedding_variant_matches_paper_variants():
    for sharing, E in TABLE3:
        assert embedding_variant("albert-base", E, sharing) == albert_base_variant(E, sharing)
    bert = embedding_variant("bert-base", 128, "none")  # a BERT base needs the projection once E != H
    assert bert.embedding_projection and count_parameters(bert) < count_parameters(AlbertConfig.from_preset("bert-base"))


@pytest.mark.parametrize("bad", [0, -64, 128.0, True])
def test_plot_rejects_non_positive_embedding_sizes(bad):
    figures = plt.get_fignums()
    with pytest.raises(ValueError, match="embedding size E must be a positive integer"):
        plot_parameters_vs_embedding("albert-base", (64, bad))
    assert plt.get_fignums() == figures  # nothing half-drawn is left open


def test_plot_rejects_empty_sizes_and_bad_base():
    with pytest.raises(ValueError, match="no embedding sizes"):
        plot_parameters_vs_embedding("albert-base", ())
    with pytest.raises(TypeError, match="preset name or an AlbertConfig"):
        plot_parameters_vs_embedding(768)
