"""Throughput helpers: the FLOP model and a small measured run (its arithmetic; the speed ratio itself is measured
by benchmarks/preset_speed.py)."""

import pytest

from albert_mini import AlbertConfig
from albert_mini.study.throughput import flops_per_token, relative_throughput


def test_sharing_does_not_change_flops():
    albert = AlbertConfig.from_preset("albert-base")
    unshared = albert.replace(sharing="none", num_hidden_groups=12)
    assert flops_per_token(albert, 128) == flops_per_token(unshared, 128)


def test_flops_closed_form_for_bert_base():
    H, L, T = 768, 12, 128
    expected = 2 * L * (12 * H * H + 2 * T * H)  # no projection when E == H
    assert flops_per_token(AlbertConfig.from_preset("bert-base"), T) == expected


def test_xxlarge_costs_more_compute_than_bert_large():
    ratio = flops_per_token(AlbertConfig.from_preset("albert-xxlarge"), 512) / flops_per_token(
        AlbertConfig.from_preset("bert-large"), 512)
    assert ratio > 2.5  # the paper's 0.3x Speedup column in FLOPs


@pytest.mark.slow
def test_relative_throughput_small_presets():
    result = relative_throughput(["albert-nano", "albert-mini"], reference="albert-nano", batch_size=1, seq_len=16,
                                 steps=1)
    nano, mini = result["albert-nano"], result["albert-mini"]
    assert mini["speedup"] == pytest.approx(mini["tokens_per_second"] / nano["tokens_per_second"])
    # mini does 3 times the layers at 4 times the width: far more FLOPs. How much slower it runs is measured by
    # benchmarks/preset_speed.py, not asserted here: on a shared host any timing can come out either way.
    assert mini["tokens_per_second"] > 0 and nano["tokens_per_second"] > 0 and mini["flop_ratio"] < 0.1
    with pytest.raises(ValueError, match="reference"):
        relative_throughput(["albert-nano"], reference="bert-large")
