"""Every experiment runs end to end on the fast budget and writes a well-formed result."""

import json

import pytest

from albert_mini.study.experiments import common as experiments


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    return {name: json.loads(experiments.run(name, experiments.FAST, out).read_text())
            for name in experiments.EXPERIMENTS}


@pytest.mark.parametrize("name", experiments.EXPERIMENTS)
def test_result_has_provenance(results, name):
    meta = results[name]["meta"]
    assert meta["experiment"] == name and meta["fast_mode"] is True
    assert meta["command"] == f"python -m albert_mini.study.experiments {name}"
    assert meta["budget"]["steps"] == experiments.FAST.steps and meta["git_revision"]


def test_sentence_task_scores_every_model_on_every_task(results):
    rows = results["sentence_task"]["rows"]
    assert set(rows) == {"none", "nsp", "sop"}
    for task, row in rows.items():
        for evaluated in ("nsp", "sop"):
            assert 0.0 <= row[evaluated]["accuracy"] <= 1.0
            assert row[evaluated]["method"].startswith("trained head" if evaluated == task else "linear probe")
        assert 0.0 <= row["mlm_acc"] <= 1.0
    nsp = rows["nsp"]["nsp"]
    assert nsp["negatives_other_novel"]["examples"] + nsp["negatives_same_novel"]["examples"] + \
        nsp["positives"]["examples"] == nsp["examples"]


def test_sharing_and_embedding_rows_carry_exact_counts(results):
    from albert_mini import count_parameters
    for name in ("sharing", "embedding_size"):
        for row in results[name]["rows"].values():
            config = experiments._variant(row["sharing"], row["E"])
            assert row["params"] == count_parameters(config)
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
    assert rows["bert-base"]["speedup"] == 1.0 and rows["albert-base"]["paper_speedup"] == 5.6
    memory = results["memory"]["rows"]
    albert, bert = memory["albert-mini"], memory["bert-mini"]
    # Same L and H: activations differ only by the embedding width (E = 128 vs 256), parameters by 3.5x.
    assert abs(albert["activations"] - bert["activations"]) < 0.1 * bert["activations"]
    assert 3 * albert["parameters"] < bert["parameters"]


def test_unknown_experiment():
    with pytest.raises(ValueError, match="unknown experiment 'speed'"):
        experiments.run("speed", experiments.FAST)


def test_results_tables_put_ours_next_to_the_paper(results, tmp_path):
    for name, result in results.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(result))
    text = experiments.results_tables(tmp_path)
    assert "| sop |" in text and "54.0 / 78.9 / 86.5" in text  # Table 5's SOP row
    assert "| E=128 all | 1.98M |" in text and "12M, 80.1" in text  # Table 4's ALBERT-base row
    assert "| none E=256 |" in text and "108M, 82.3" in text  # Table 3's BERT-base row
    assert "speedup here" in text and "activations (MiB)" in text
