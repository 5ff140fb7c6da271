"""Chapter 1's exercise check: it passes the post-LN order, and rejects stubs and the usual wrong orders."""

import pytest
import torch

from albert_mini import AlbertConfig
from albert_mini.book.exercises import ExerciseFailed, ch01, check_post_ln_block
from albert_mini.model.albert import AlbertLayer


def not_written(*args):
    raise NotImplementedError("write your solution here")


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


def test_check_passes_on_reference(capsys):
    assert check_post_ln_block(ch01.post_ln_block)
    assert "agree with the reference" in capsys.readouterr().out


def test_check_reports_a_stub(capsys):
    """A stub prints one 'not attempted yet' line and returns False, so the chapter runs on."""
    assert check_post_ln_block(not_written) is False
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and ": not attempted yet;" in printed


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


@pytest.mark.parametrize("wrong", [pre_ln, no_residual, normalize_then_add, swapped_norms, residual_from_block_input])
def test_check_rejects_wrong_orders(wrong):
    with pytest.raises(ExerciseFailed, match="different answer"):
        check_post_ln_block(wrong)


def test_check_reports_a_crash_with_its_input():
    with pytest.raises(ExerciseFailed, match="raised TypeError"):
        check_post_ln_block(lambda h, attention, ffn, norm_1, norm_2: attention(h, h))
