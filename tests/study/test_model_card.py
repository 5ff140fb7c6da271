"""The model card's statistics and curve reading."""

from __future__ import annotations

import json

from albert_mini.study.model_card import module_command, read_curve


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
