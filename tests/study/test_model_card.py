"""The model card's statistics and curve reading."""

from __future__ import annotations

import json

import pytest

from albert_mini.harness.research.model_card import sop_verdict, typed_command
from albert_mini.harness.research.time_to_quality import tokens_to_reach_old_final
from albert_mini.training.rundir import read_run


def test_recorded_command_lines_become_the_albert_mini_command_a_reader_types():
    assert typed_command("/x/.venv/bin/albert-mini pretrain --steps 3") == "albert-mini pretrain --steps 3"
    assert typed_command("albert_mini/__main__.py pretrain --steps 3") == "albert-mini pretrain --steps 3"
    # runs recorded before the albert-mini command name the module they ran
    assert typed_command("/x/y/albert_mini/training/pretrain.py --steps 3") == "albert-mini pretrain --steps 3"
    assert typed_command("train.py --steps 3") == "train.py --steps 3"


def write_metrics(folder, lines):
    folder.mkdir()
    (folder / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in lines))
    return folder


def run_lines(accuracies, tokens_per_eval):
    lines = []
    for i, acc in enumerate(accuracies, start=1):
        lines.append({"type": "train", "step": 10 * i, "tokens_seen": tokens_per_eval * i, "elapsed_s": 60.0 * i})
        lines.append({"type": "eval", "step": 10 * i, "mlm_acc": acc, "sentence_acc": 0.5, "elapsed_s": 60.0 * i})
    return lines


def test_read_run_pairs_each_evaluation_with_the_tokens_seen_by_then(tmp_path):
    _, curve = read_run(write_metrics(tmp_path / "r", run_lines([0.1, 0.2], 1000)))
    assert [p["tokens"] for p in curve] == [1000, 2000] and [p["minutes"] for p in curve] == [1.0, 2.0]


def test_tokens_to_reach_the_old_final_accuracy_is_interpolated(tmp_path):
    old = read_run(write_metrics(tmp_path / "old", run_lines([0.10, 0.14, 0.16], 1000)))[1]
    new = read_run(write_metrics(tmp_path / "new", run_lines([0.12, 0.20], 1000)))[1]
    # 0.16 is reached halfway from (1000, 0.12) to (2000, 0.20): 1500 tokens, against the old run's 3000.
    result = tokens_to_reach_old_final(old, new)
    assert result["new_tokens"] == pytest.approx(1500) and result["ratio"] == pytest.approx(2.0)


def test_the_card_calls_sop_better_than_a_coin_only_when_the_interval_clears_half():
    assert "better than a coin" in sop_verdict({"sop_interval": [0.565, 0.618]})
    assert "not distinguishable from a coin" in sop_verdict({"sop_interval": [0.47, 0.524]})
    assert "86.5%" in sop_verdict({"sop_interval": [0.499, 0.55]})  # the paper's number, read from its table


def test_reusing_scores_needs_a_scores_file(tmp_path, capsys):
    from albert_mini.commands import model_card
    write_metrics(tmp_path / "m", run_lines([0.1], 1000))
    (tmp_path / "m" / "run.json").write_text("{}")
    with pytest.raises(SystemExit) as stop:
        model_card.main([str(tmp_path / "m"), "--reuse-scores"])
    assert stop.value.code == 2 and "no scores.json to reuse" in capsys.readouterr().err
