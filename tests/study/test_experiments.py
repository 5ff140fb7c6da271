"""Every registered experiment runs end to end on the fast budget and writes a well-formed result and figure."""

import json
import subprocess

import pytest

from albert_mini import count_parameters
from albert_mini.paths import REPO_ROOT
from albert_mini.study import experiments
from albert_mini.study.experiments.common import FAST, variant


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    return {name: json.loads(experiments.run(name, FAST, out).read_text()) for name in experiments.EXPERIMENTS}


def test_every_experiment_is_a_module_with_run_figure_and_table():
    for name, module in experiments.EXPERIMENTS.items():
        assert module.__name__ == f"albert_mini.study.experiments.{name}"
        assert all(callable(getattr(module, f)) for f in ("run", "figure", "table"))


@pytest.mark.parametrize("name", experiments.EXPERIMENTS)
def test_result_has_provenance_and_a_figure(results, name, tmp_path):
    meta = results[name]["meta"]
    assert meta["experiment"] == name and meta["fast_mode"] is True
    assert meta["command"] == f"python -m albert_mini.study.experiments {name}"
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO_ROOT)
    assert meta["git_revision"] == head.stdout.strip() and len(meta["git_revision"]) >= 7
    assert meta["budget"]["steps"] == FAST.steps
    fig = experiments.EXPERIMENTS[name].figure(results[name])
    assert fig.axes and fig.axes[0].has_data()


def test_sentence_task_scores_every_model_on_every_task(results):
    rows = results["sentence_task"]["rows"]
    assert set(rows) == {"none", "nsp", "sop"}
    for task, row in rows.items():
        for evaluated in ("nsp", "sop"):
            scored = row[evaluated]
            # An accuracy over n examples is k / n for a whole number k of correct ones.
            correct = scored["accuracy"] * scored["examples"]
            assert scored["examples"] == FAST.probe_eval and correct == pytest.approx(round(correct), abs=1e-6)
            assert scored["method"].startswith("trained head" if evaluated == task else "linear probe")
        assert row["mlm_acc"] is not None and len(row["curve"]) == FAST.steps
    nsp = rows["nsp"]["nsp"]
    assert nsp["negatives_other_novel"]["examples"] + nsp["negatives_same_novel"]["examples"] + \
        nsp["positives"]["examples"] == nsp["examples"]


def test_sharing_and_embedding_rows_carry_exact_counts(results):
    for name in ("sharing", "embedding_size"):
        for row in results[name]["rows"].values():
            assert row["params"] == count_parameters(variant(row["sharing"], row["E"]))
    sharing = results["sharing"]["rows"]
    assert sharing["E=128 all"]["params"] < sharing["E=128 ffn"]["params"] < sharing["E=128 attention"]["params"] \
        < sharing["E=128 none"]["params"]


def test_smoothness_has_one_value_per_layer(results):
    models = results["smoothness"]["models"]
    assert len(models) == 4
    for entry in models.values():
        assert len(entry["l2"]) == len(entry["degrees"]) == 6 and entry["tokens"] > 0


def test_throughput_and_memory(results):
    rows = results["throughput"]["rows"]
    assert rows["albert-base"]["paper_speedup"] == 5.6
    # Speeds are relative to the reference's measured speed.
    ratio = rows["albert-base"]["tokens_per_second"] / rows["bert-base"]["tokens_per_second"]
    assert rows["albert-base"]["speedup"] == pytest.approx(ratio)
    assert 0.99 < rows["albert-base"]["flop_ratio"] < 1.0  # ALBERT's E -> H projection is its only extra work
    memory = results["memory"]["rows"]
    albert, bert = memory["albert-mini"], memory["bert-mini"]
    # Same L and H: activations differ only by the embedding width (E = 128 vs 256), parameters by 3.5x.
    assert abs(albert["activations"] - bert["activations"]) < 0.1 * bert["activations"]
    assert 3 * albert["parameters"] < bert["parameters"]


def test_unknown_experiment():
    with pytest.raises(ValueError, match="unknown experiment 'speed'"):
        experiments.run("speed", FAST)


def test_results_tables_put_ours_next_to_the_paper(results, tmp_path):
    for name, result in results.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(result))
    text = experiments.results_tables(tmp_path)
    assert "| sop |" in text and "54.0 / 78.9 / 86.5" in text  # Table 5's SOP row
    assert "| E=128 all | 1.98M |" in text and "12M, 80.1" in text  # Table 4's ALBERT-base row
    assert "| none E=256 |" in text and "108M, 82.3" in text  # Table 3's BERT-base row
    assert "speedup here" in text and "activations (MiB)" in text
    assert [line for line in text.splitlines() if line.startswith("### ")] == [
        line for name in experiments.EXPERIMENTS
        for line in experiments.EXPERIMENTS[name].table(results[name]).splitlines() if line.startswith("### ")]
