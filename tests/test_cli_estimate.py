"""`experiments ... --estimate` measures the training speed only when a run is left to train: with every run
finished it answers in seconds (sop_escape's took over 100 s timing full batches of albert-mini)."""

import pytest

from albert_mini.harness.experiments import estimate as estimating


def test_an_estimate_with_nothing_left_to_train_measures_no_speed(capsys, monkeypatch, tmp_path):
    from albert_mini.commands.experiments import main

    def never(budget):
        raise AssertionError("the speed was measured with nothing to train")

    monkeypatch.setenv("ALBERT_MINI_FAST", "1")
    monkeypatch.setattr(estimating, "measured_speed", never)
    assert main(["memory", "throughput", "--estimate"]) == 0  # experiments without runs to train
    out = capsys.readouterr().out
    assert "0 runs to train" in out and "not measured, nothing is left to train" in out


@pytest.mark.slow
def test_an_estimate_with_runs_to_train_measures_the_speed_on_small_batches(capsys, monkeypatch, tmp_path):
    from albert_mini.commands.experiments import main

    shapes = []
    real = estimating.step_seconds
    monkeypatch.setattr(estimating, "step_seconds", lambda budget, B, T, steps=3: shapes.append((B, T)) or
                        real(budget, B, T, steps))
    monkeypatch.setenv("ALBERT_MINI_FAST", "1")
    monkeypatch.setattr("albert_mini.harness.experiments.runs.cache_dir", lambda: tmp_path)  # nothing finished
    assert main(["smoothness", "--seeds", "0", "--estimate"]) == 0
    out = capsys.readouterr().out
    assert "3 runs to train" in out and "tokens/s at 64" in out
    assert shapes and all(B <= estimating.MEASURED_BATCH for B, _ in shapes)
