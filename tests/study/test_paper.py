"""The paper's numbers and its way of counting parameters; the parameters-vs-E plot marks its Table 3."""

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from albert_mini import AlbertConfig, count_parameters  # noqa: E402
from albert_mini.model.counting import closed_form_breakdown, format_parameter_table  # noqa: E402
from albert_mini.study.paper import (  # noqa: E402
    KNOWN_DISAGREEMENTS,
    TABLE1,
    TABLE3,
    TABLE4,
    albert_base_variant,
    paper_convention_count,
    paper_parameter_table,
)
from albert_mini.study.parameter_plots import embedding_variant, plot_parameters_vs_embedding  # noqa: E402


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


def test_parameter_table_reproduces_table3_and_table4_under_paper_rules():
    table3 = {key: albert_base_variant(key[1], key[0]) for key in TABLE3}
    table4 = {key: albert_base_variant(key[0], key[1]) for key in TABLE4}
    for printed, configs in ((TABLE3, table3), (TABLE4, table4)):
        rows = paper_parameter_table({str(key): config for key, config in configs.items()})
        for key, row in zip(configs, rows):
            assert row["paper_convention"] == paper_convention_count(configs[key])
            assert round(row["paper_convention"] / 1e6) == printed[key][0], (key, row["paper_convention"])
            assert row["total"] == count_parameters(configs[key])
    # The exact counts do not match everywhere: the unshared rows carry the pooler the paper leaves out.
    rows = paper_parameter_table({"none-64": table3[("none", 64)]})
    assert round(rows[0]["total"] / 1e6) != TABLE3[("none", 64)][0] == round(rows[0]["paper_convention"] / 1e6)


def test_paper_parameter_table_adds_a_last_column_under_the_papers_rules():
    text = format_parameter_table(paper_parameter_table(iter(["albert-base", "bert-base"])), unit="exact")
    header, _, albert, bert = text.splitlines()
    assert header.endswith("| total | total, paper's rules |")
    assert albert.endswith("| 11,683,584 | 11,683,584 |")
    # BERT-base: the paper counts no pooler for an unshared model.
    assert bert.endswith(f"| {count_parameters(AlbertConfig.from_preset('bert-base')):,} | "
                         f"{paper_convention_count(AlbertConfig.from_preset('bert-base')):,} |")


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
    assert bert.embedding_projection
    assert count_parameters(bert) < count_parameters(AlbertConfig.from_preset("bert-base"))


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
