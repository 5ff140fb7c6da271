"""The diagrams print numbers computed from their arguments: parameter counts, the layer each step runs, spans."""

from types import SimpleNamespace

import matplotlib
import pytest

from albert_mini import AlbertConfig, count_parameters
from albert_mini.book import diagrams
from albert_mini.settings import STATIC_ENV, static_output

matplotlib.use("Agg")


def texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_embedding_diagram_shows_albert_base_counts():
    config = AlbertConfig.from_preset("albert-base")
    shown = " | ".join(texts(diagrams.embedding_diagram(config)))
    for number in (30000 * 768, 30000 * 128, 128 * 768):  # V x H, V x E, E x H
        assert f"{number:,}" in shown
    assert f"{count_parameters(config):,}" in shown
    assert f"{count_parameters(config.replace(embedding_size=768, embedding_projection=False)):,}" in shown


@pytest.mark.parametrize("groups, inner", [(1, 1), (3, 2), (6, 1)])
def test_sharing_diagram_labels_every_step_with_the_layer_the_model_runs(groups, inner):
    config = AlbertConfig.from_preset("albert-mini").replace(num_hidden_groups=groups, inner_group_num=inner)
    fig = diagrams.sharing_diagram({"x": config})
    labels = [t.get_text() for t in fig.axes[0].texts if t.get_gid() == "step"]  # one box per step, in order
    expected = [config.layer_to_group(i) * inner + k for i in range(config.num_hidden_layers) for k in range(inner)]
    assert [int(t) for t in labels] == expected


def test_masking_diagram_draws_the_input_under_every_chosen_piece_and_marks_each_span():
    pieces = ["▁it", "▁is", "▁a", "▁truth", "▁universal", "ly", "▁known"]
    spans = [SimpleNamespace(start=1, end=2, n=1), SimpleNamespace(start=4, end=6, n=1)]
    shown = ["▁it", "[MASK]", "▁a", "▁truth", "▁cat", "ly", "▁known"]
    fig = diagrams.masking_diagram(pieces, [0, 1, 2, 3, 4, 4, 5], spans, shown)
    drawn = texts(fig)
    assert drawn.count("n = 1") == 2
    assert drawn.count("[MASK]") == 1 and drawn.count("▁cat") == 1 and drawn.count("ly") == 2  # piece and input


def test_sentence_pair_diagram_swaps_for_sop_and_replaces_for_nsp():
    fig = diagrams.sentence_pair_diagram("alpha one", "beta two", "gamma three", {"C": "another novel"})
    drawn = texts(fig)
    order = [t for t in drawn if t in ("alpha one", "beta two", "gamma three")]
    assert order == ["alpha one", "beta two", "beta two", "alpha one", "alpha one", "gamma three"]
    assert "C (another novel)" in drawn


def test_static_output_follows_the_environment(monkeypatch):
    monkeypatch.delenv(STATIC_ENV, raising=False)
    assert not static_output()
    monkeypatch.setenv(STATIC_ENV, "1")
    assert static_output()
    monkeypatch.setenv(STATIC_ENV, "0")
    assert not static_output()


def test_albert_diagram_shows_every_part_of_albert_base_with_its_count():
    from albert_mini.model.counting import closed_form_breakdown

    config = AlbertConfig.from_preset("albert-base")
    shown = " | ".join(texts(diagrams.albert_diagram(config)))
    parts = closed_form_breakdown(config, heads=True)
    for name in ("embeddings", "projection", "attention", "ffn", "pooler", "mlm_head", "sentence_head"):
        assert f"{parts[name]:,}" in shown, name
    assert f"{parts['attention'] + parts['ffn']:,}" in shown  # the one shared layer
    assert f"{count_parameters(config, heads=True):,} parameters" in shown
    assert "x 12" in shown and "30,000 x 128" in shown and "128 x 768" in shown


def test_layer_norm_diagram_puts_the_norms_after_the_adds_in_post_ln_only():
    drawn = [t for t in texts(diagrams.layer_norm_placement_diagram())
             if t in ("attention", "add x", "LayerNorm", "FFN", "add")]
    post, pre = drawn[:6], drawn[6:]
    assert post == ["attention", "add x", "LayerNorm", "FFN", "add", "LayerNorm"]
    assert pre == ["LayerNorm", "attention", "add x", "LayerNorm", "FFN", "add"]


@pytest.mark.parametrize("passage, qa, max_length, max_qa", [(120, 40, 128, 24), (30, 10, 64, 16)])
def test_race_packing_diagram_keeps_what_race_pack_keeps(passage, qa, max_length, max_qa):
    from albert_mini.tasks.features import race_pack

    ids, types = race_pack(list(range(100, 100 + passage)), list(range(5000, 5000 + qa)), max_length, max_qa)
    kept_passage = sum(100 <= i < 5000 for i in ids)
    kept_qa = sum(i >= 5000 for i in ids)
    shown = " | ".join(texts(diagrams.race_packing_diagram(passage, qa, max_length, max_qa)))
    assert f"the passage's first {kept_passage} " in shown
    assert f"the question+option's last {kept_qa} " in shown
    assert f"= {len(ids)} tokens" in shown


def test_squad_windows_diagram_draws_the_windows_the_features_use():
    from albert_mini.tasks.features import window_starts

    window = 64 - 3 - 10
    starts = window_starts(200, window, 24)
    drawn = texts(diagrams.squad_windows_diagram(200, 10, 64, 24, answer=(100, 103)))
    labels = [t for t in drawn if t.startswith("window ")]
    assert labels == [f"window {k + 1}: tokens {s}-{min(s + window, 200) - 1}" for k, s in enumerate(starts)]
    inside = [start <= 100 and 103 < start + window for start in starts]
    assert drawn.count("answer inside") == sum(inside)


def test_pieces_diagram_draws_every_piece_with_the_id_the_tokenizer_gives_it():
    from albert_mini.text.tokenizer import Tokenizer

    tokenizer = Tokenizer.default()
    text = "Emma Woodhouse, handsome, clever, and rich, seemed unaccountably misunderstood."
    fig = diagrams.pieces_diagram(tokenizer, text)
    ids = [tokenizer.cls_id, *tokenizer.encode(text), tokenizer.sep_id]
    drawn = fig.axes[0].texts
    assert [t.get_text() for t in drawn if t.get_gid() == "piece"] == [tokenizer.id_to_piece(i) for i in ids]
    assert [int(t.get_text()) for t in drawn if t.get_gid() == "id"] == ids
