"""The model card's statistics and curve reading."""

from __future__ import annotations

import json

import pytest

from albert_mini.study.model_card import module_command, read_curve, wilson_interval


def test_wilson_interval_matches_the_closed_form_at_one_half():
    # p = 1/2, n = 100, z = 1.96: centre 1/2, half-width z * sqrt(1/4n + z^2/4n^2) / (1 + z^2/n) = 0.0962 (by hand).
    lo, hi = wilson_interval(50, 100)
    assert lo == pytest.approx(0.4038, abs=1e-4) and hi == pytest.approx(0.5962, abs=1e-4)


def test_wilson_interval_stays_inside_zero_one_and_refuses_no_examples():
    lo, hi = wilson_interval(0, 10)
    assert lo == pytest.approx(0.0, abs=1e-12) and 0 < hi < 0.35
    with pytest.raises(ValueError, match="at least one example"):
        wilson_interval(0, 0)


def test_read_curve_pairs_each_evaluation_with_the_tokens_seen_by_then(tmp_path):
    lines = [{"type": "train", "step": 10, "tokens_seen": 1000, "elapsed_s": 5},
             {"type": "eval", "step": 10, "mlm_acc": 0.1, "sentence_acc": 0.5, "elapsed_s": 6},
             {"type": "train", "step": 20, "tokens_seen": 2000, "elapsed_s": 11},
             {"type": "eval", "step": 20, "mlm_acc": 0.2, "sentence_acc": 0.55, "elapsed_s": 12}]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in lines))
    curve = read_curve(path)
    assert curve["tokens"] == [1000, 2000] and curve["mlm_acc"] == [0.1, 0.2] and curve["minutes"] == [0.1, 0.2]


def test_recorded_script_paths_become_module_commands():
    assert module_command("/x/y/albert_mini/training/pretrain.py --steps 3") == \
        "python -m albert_mini.training.pretrain --steps 3"
