"""Pretraining metrics from summed stats, and the check that the sentence loss and accuracy agree."""

import math

from albert_mini.training.objectives import metrics_from_sums, sentence_metrics_warning


def sums(sentence_loss: float, sentence_acc: float, sequences: int) -> dict:
    """Named sums as pretraining_objective sums them: 1,000 masked tokens, then the sentence task."""
    return {"mlm_loss": 2000.0, "mlm_correct": 400.0, "mlm_count": 1000.0, "sentence_loss": sentence_loss * sequences,
            "sentence_correct": sentence_acc * sequences, "sentence_count": sequences}


def test_metrics_carry_the_sentence_count_the_warning_reads():
    metrics = metrics_from_sums(sums(0.6, 0.75, 64))
    assert metrics["sentence_count"] == 64
    assert math.isclose(metrics["sentence_acc"], 0.75) and math.isclose(metrics["loss"], 2.0 + 0.6)
    assert "sentence_count" not in metrics_from_sums(sums(0.0, 0.0, 0))


def test_chance_band_is_two_standard_errors_of_the_sequences_counted():
    # 2 * sqrt(0.25 / 100) = 0.1: an accuracy of 0.58 over 100 sequences is still chance ...
    assert "same labels" in sentence_metrics_warning(metrics_from_sums(sums(0.6, 0.58, 100)))
    # ... over 10,000 sequences (band 0.01) it is not, and neither is 0.62 over 100
    assert sentence_metrics_warning(metrics_from_sums(sums(0.6, 0.58, 10_000))) is None
    assert sentence_metrics_warning(metrics_from_sums(sums(0.6, 0.62, 100))) is None
    # without a count the band falls back to 0.05
    assert sentence_metrics_warning({"sentence_loss": 0.6, "sentence_acc": 0.54}) is not None
    assert sentence_metrics_warning({"sentence_loss": 0.6, "sentence_acc": 0.56}) is None
