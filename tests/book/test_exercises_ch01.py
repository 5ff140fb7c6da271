"""Chapter 1's exercise check: it passes the post-LN order, rejects stubs, the usual wrong orders and cheats, and
its hints point at the idea without giving the order away."""

import runpy
from pathlib import Path

import pytest
import torch
from exercise_helpers import (
    GRADER_SEED,
    AlwaysEqual,
    fails_with,
    gives_nothing_away,
    gives_the_tiers_in_turn,
    reports_a_stub,
)

from albert_mini import AlbertConfig
from albert_mini.book.exercises import ch01, check_post_ln_block
from albert_mini.model.albert import AlbertLayer

SOLUTIONS = Path(__file__).resolve().parents[2] / "chapters" / "solutions" / "01_why_albert.py"
pytestmark = pytest.mark.usefixtures("first_try")  # tests/book/conftest.py


# ------------------------------------------------------------------ the reference agrees with the package's layer
def test_reference_matches_albert_layer():
    """The reference order, fed AlbertLayer's own sub-layers, reproduces AlbertLayer's output."""
    config = AlbertConfig.from_preset("albert-nano")
    torch.manual_seed(0)
    layer = AlbertLayer(config).eval()
    for norm in (layer.attention.LayerNorm, layer.full_layer_layer_norm):  # make the LayerNorms non-trivial
        torch.nn.init.normal_(norm.weight, 1.0, 0.3)
        torch.nn.init.normal_(norm.bias, 0.0, 0.3)
    att = layer.attention

    def attention(h):  # the attention sub-layer without its residual and LayerNorm
        B, T, H = h.shape
        q, k, v = (lin(h).view(B, T, att.num_heads, -1).transpose(1, 2) for lin in (att.query, att.key, att.value))
        context = torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, T, H)
        return att.dense(context)

    def ffn(a):
        return layer.ffn_output(layer.activation(layer.ffn(a)))

    h = torch.randn(2, 6, config.hidden_size, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected, _ = layer(h)
        got = ch01.post_ln_block(h, attention, ffn, att.LayerNorm, layer.full_layer_layer_norm)
    torch.testing.assert_close(got, expected)


# ------------------------------------------------------------------ right answers pass, here and under the grader
def test_check_passes_on_the_reference_and_the_solution(capsys):
    solution = runpy.run_path(str(SOLUTIONS))["post_ln_block"]
    assert check_post_ln_block(ch01.post_ln_block)
    assert check_post_ln_block(solution)
    assert check_post_ln_block(lambda h, attention, ffn, norm_1, norm_2: ch01.post_ln_block(
        h.clone(), attention, ffn, norm_1, norm_2).numpy())  # an array of the right values is as good
    assert "Well done!" in capsys.readouterr().out
    assert ch01.POST_LN.verdict(solution, GRADER_SEED).passed is True


def test_the_grader_draws_cases_the_learner_never_saw():
    learner = ch01.POST_LN.cases()
    grader = ch01.POST_LN.cases(seed=7)
    assert len(grader) == len(learner) > len(ch01.POST_LN.fixed)
    assert [c.args[0].shape for c in grader] != [c.args[0].shape for c in learner]


def test_check_reports_a_stub(capsys):
    reports_a_stub(check_post_ln_block, capsys)


# ------------------------------------------------------------------ wrong orders: each with its own hint
def pre_ln(h, attention, ffn, norm_1, norm_2):
    x = h + attention(norm_1(h))
    return x + ffn(norm_2(x))


def no_residual(h, attention, ffn, norm_1, norm_2):
    return norm_2(ffn(norm_1(attention(h))))


def normalize_then_add(h, attention, ffn, norm_1, norm_2):
    a = h + norm_1(attention(h))
    return a + norm_2(ffn(a))


def swapped_norms(h, attention, ffn, norm_1, norm_2):
    a = norm_2(h + attention(h))
    return norm_1(a + ffn(a))


def residual_from_block_input(h, attention, ffn, norm_1, norm_2):
    a = norm_1(h + attention(h))
    return norm_2(h + ffn(a))  # adds the layer input instead of the attention block's output


def attention_step_only(h, attention, ffn, norm_1, norm_2):
    return norm_1(h + attention(h))


@pytest.mark.parametrize("wrong, hint", [
    (pre_ln, "that is the pre-LN order"),
    (no_residual, "the residual connections are missing"),
    (normalize_then_add, "you normalize the sub-layer's output and then add"),
    (swapped_norms, "the two LayerNorms are swapped"),
    (residual_from_block_input, "the second residual adds the layer's input h"),
    (attention_step_only, "that is the output of the attention step alone"),
], ids=["pre-ln", "no-residual", "normalize-then-add", "swapped-norms", "residual-from-h", "one-step"])
def test_check_rejects_wrong_orders_with_their_own_hint(wrong, hint, capsys):
    printed = fails_with(check_post_ln_block, wrong, capsys, "input:", "expected:", "largest difference",
                         f"hint: {hint}")
    assert printed.startswith("Not yet. post_ln_block: case 1 of")
    assert ch01.POST_LN.verdict(wrong, GRADER_SEED).passed is False


def test_an_in_place_change_of_h_is_named():
    def in_place(h, attention, ffn, norm_1, norm_2):
        h += attention(h)
        a = norm_1(h)
        return norm_2(a + ffn(a))

    verdict = ch01.POST_LN.verdict(in_place, GRADER_SEED)
    assert verdict.passed is False and "changed input 1 in place" in verdict.message


def test_check_reports_a_crash_with_its_input(capsys):
    fails_with(check_post_ln_block, lambda h, attention, ffn, norm_1, norm_2: attention(h, h), capsys,
               "raised TypeError", "<attention seed=0>")


def test_an_unrecognised_wrong_answer_gets_the_tiers_in_turn(capsys):
    def doubled(h, attention, ffn, norm_1, norm_2):
        return 2 * ch01.post_ln_block(h, attention, ffn, norm_1, norm_2)

    gives_the_tiers_in_turn(check_post_ln_block, doubled, ch01.POST_LN, capsys)


# ------------------------------------------------------------------ cheats fail
@pytest.mark.parametrize("cheat, message", [
    (lambda *args: AlwaysEqual(), "not plain data"),
    (lambda h, *parts: h.tolist(), "return the layer's output, a tensor shaped like h"),
    (lambda h, *parts: h, "different answer"),
], ids=["always-equal", "a-list", "the-input-itself"])
def test_cheats_fail(cheat, message, capsys):
    fails_with(check_post_ln_block, cheat, capsys, message)
    assert ch01.POST_LN.verdict(cheat, GRADER_SEED).passed is False


# ------------------------------------------------------------------ hints point at the idea, not at the answer
def test_no_hint_gives_the_order_away():
    gives_nothing_away(ch01.POST_LN, ["norm_1(h+attention(h))", "norm_2(a+ffn(a))", "h+attention(h)", "a+ffn(a)",
                                      "LN(h+", "norm_1(h"])
    assert not any("=" in h or "def " in h for h in ch01.POST_LN.hints)


def test_the_chapter_states_the_equations_only_after_the_exercise():
    """Before the exercise the chapter describes post-LN in words and a figure; the equations follow it."""
    import jupytext

    cells = jupytext.read(Path(__file__).resolve().parents[2] / "chapters" / "01_why_albert.py").cells
    stub = next(i for i, c in enumerate(cells) if "def post_ln_block(" in c.source)
    before = "\n".join(c.source for c in cells[:stub])
    assert "\\mathrm{LN}_1" not in before and "\\mathrm{LN}_1" in "\n".join(c.source for c in cells[stub:])
